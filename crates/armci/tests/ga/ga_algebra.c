/* Global Arrays on libarmci: GA_Dgemm (plain and transposed) and GA_Ddot, checked
 * against serial products computed in the same program. The values are multiples of
 * 1/4 and the sums short, so every result is exact whatever the summation order. */
#include "ga_harness.h"

enum { M = 40, K = 30, N = 24 };

/* A rows x cols array filled from the model by process 0. */
static int filled(const char *name, int rows, int cols, int seed) {
    int dims[2] = {rows, cols}, chunk[2] = {-1, -1};
    int g = NGA_Create(C_DBL, 2, dims, (char *)name, chunk);
    CHECK(g != 0, "NGA_Create %s", name);
    if (me == 0) {
        double *buf = malloc(sizeof(double) * (size_t)(rows * cols));
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) buf[i * cols + j] = cell(seed, i, j);
        int lo[2] = {0, 0}, hi[2] = {rows - 1, cols - 1}, ld[1] = {cols};
        NGA_Put(g, lo, hi, buf, ld);
        free(buf);
    }
    GA_Sync();
    return g;
}

/* Compares all of g (rows x cols) with want[i * cols + j]. */
static void check_all(int g, int rows, int cols, const double *want, const char *what) {
    double *got = malloc(sizeof(double) * (size_t)(rows * cols));
    int lo[2] = {0, 0}, hi[2] = {rows - 1, cols - 1}, ld[1] = {cols};
    NGA_Get(g, lo, hi, got, ld);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            CHECK(got[i * cols + j] == want[i * cols + j], "%s (%d,%d): %g, serial %g", what, i,
                  j, got[i * cols + j], want[i * cols + j]);
    free(got);
}

static void test_dgemm(void) {
    int a = filled("A", M, K, 1), b = filled("B", K, N, 2), c = filled("C", M, N, 3);
    double alpha = 0.5, beta = 2.0;
    GA_Dgemm('N', 'N', M, N, K, alpha, a, b, beta, c);
    static double want[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += cell(1, i, k) * cell(2, k, j);
            want[i * N + j] = alpha * s + beta * cell(3, i, j);
        }
    check_all(c, M, N, want, "C = 0.5 A B + 2 C");
    GA_Destroy(a);
    GA_Destroy(b);
    GA_Destroy(c);
}

static void test_dgemm_transposed(void) {
    /* A stored K x M, B stored N x K: C = A^T B^T */
    int a = filled("At", K, M, 4), b = filled("Bt", N, K, 5), c = filled("C", M, N, 6);
    GA_Dgemm('T', 'T', M, N, K, 1.0, a, b, 0.0, c);
    static double want[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += cell(4, k, i) * cell(5, j, k);
            want[i * N + j] = s;
        }
    check_all(c, M, N, want, "C = A^T B^T");
    GA_Destroy(a);
    GA_Destroy(b);
    GA_Destroy(c);
}

static void test_ddot(void) {
    int a = filled("x", M, K, 7), b = filled("y", M, K, 8);
    double serial = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < K; j++) serial += cell(7, i, j) * cell(8, i, j);
    double dot = GA_Ddot(a, b);
    CHECK(dot == serial, "GA_Ddot %g, serial %g", dot, serial);
    double self = GA_Ddot(a, a), sq = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < K; j++) sq += cell(7, i, j) * cell(7, i, j);
    CHECK(self == sq, "GA_Ddot(x, x) %g, serial %g", self, sq);
    GA_Destroy(a);
    GA_Destroy(b);
}

int main(int argc, char **argv) {
    ga_init(&argc, &argv);
    RUN(test_dgemm);
    RUN(test_dgemm_transposed);
    RUN(test_ddot);
    ga_done();
    return 0;
}
