/* Global Arrays on libarmci: the patch operations whose flags GA reduces with "&&"
 * (NGA_Add_patch, NGA_Ddot_patch, GA_Elem_multiply_patch) and the step functions of
 * GA's optimisation helpers (GA_Step_max_patch, GA_Step_bound_info_patch). Results
 * are checked against a serial model where GA documents the operation, and printed
 * as "value NAME X" lines, which the driver compares between libarmci and ARMCI-MPI.
 * Values are multiples of 1/4 with short sums, so they are exact in any order. */
#include <math.h>

#include "ga_harness.h"

enum { R = 24, C = 20 };

/* An R x C array of doubles set from cell(seed, i, j) + shift by process 0. */
static int filled(const char *name, int seed, double shift) {
    int dims[2] = {R, C}, chunk[2] = {-1, -1};
    int g = NGA_Create(C_DBL, 2, dims, (char *)name, chunk);
    CHECK(g != 0, "NGA_Create %s", name);
    if (me == 0) {
        static double buf[R * C];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) buf[i * C + j] = cell(seed, i, j) + shift;
        int lo[2] = {0, 0}, hi[2] = {R - 1, C - 1}, ld[1] = {C};
        NGA_Put(g, lo, hi, buf, ld);
    }
    GA_Sync();
    return g;
}

static double at(int g, int i, int j) {
    double v;
    int lo[2] = {i, j}, hi[2] = {i, j}, ld[1] = {1};
    NGA_Get(g, lo, hi, &v, ld);
    return v;
}

static void print_value(const char *name, double v) {
    if (me == 0) printf("value %s %.17g\n", name, v);
}

/* The patch rows 2..17, columns 3..14 of every array. */
static int plo[2] = {2, 3}, phi[2] = {17, 14};

static void test_add_patch(void) {
    int a = filled("A", 1, 0), b = filled("B", 2, 0), c = filled("C", 3, 0);
    double alpha = 0.5, beta = -2.0;
    NGA_Add_patch(&alpha, a, plo, phi, &beta, b, plo, phi, c, plo, phi);
    double sum = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            int in = i >= plo[0] && i <= phi[0] && j >= plo[1] && j <= phi[1];
            double want = in ? alpha * cell(1, i, j) + beta * cell(2, i, j) : cell(3, i, j);
            double got = at(c, i, j);
            CHECK(got == want, "C(%d,%d) = %g, serial %g", i, j, got, want);
            sum += got;
        }
    print_value("add_patch_sum", sum);
    GA_Destroy(a);
    GA_Destroy(b);
    GA_Destroy(c);
}

static void test_ddot_patch(void) {
    int a = filled("A", 4, 0), b = filled("B", 5, 0);
    double got = NGA_Ddot_patch(a, 'N', plo, phi, b, 'N', plo, phi), want = 0;
    for (int i = plo[0]; i <= phi[0]; i++)
        for (int j = plo[1]; j <= phi[1]; j++) want += cell(4, i, j) * cell(5, i, j);
    CHECK(got == want, "NGA_Ddot_patch %g, serial %g", got, want);
    print_value("ddot_patch", got);
    GA_Destroy(a);
    GA_Destroy(b);
}

static void test_elem_multiply_patch(void) {
    int a = filled("A", 6, 0), b = filled("B", 7, 0), c = filled("C", 8, 0);
    GA_Elem_multiply_patch(a, plo, phi, b, plo, phi, c, plo, phi);
    double sum = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            int in = i >= plo[0] && i <= phi[0] && j >= plo[1] && j <= phi[1];
            double want = in ? cell(6, i, j) * cell(7, i, j) : cell(8, i, j);
            double got = at(c, i, j);
            CHECK(got == want, "C(%d,%d) = %g, serial %g", i, j, got, want);
            sum += got;
        }
    print_value("elem_multiply_patch_sum", sum);
    GA_Destroy(a);
    GA_Destroy(b);
    GA_Destroy(c);
}

/* The whole arrays (GA's step functions select over the temporary array they make,
 * which is only set inside the patch). */
static int wlo[2] = {0, 0}, whi[2] = {R - 1, C - 1};

/* x > 0 everywhere (cell() >= -50, shifted by 60); v has both signs. The largest
 * step keeping x + step v >= 0 is the least x / -v over the negative v. */
static void test_step_max_patch(void) {
    int x = filled("X", 9, 60), v = filled("V", 10, 0);
    double step = -1, want = 1e300;
    GA_Step_max_patch(x, wlo, whi, v, wlo, whi, &step);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            if (cell(10, i, j) < 0) {
                double s = (cell(9, i, j) + 60) / -cell(10, i, j);
                if (s < want) want = s;
            }
    CHECK(fabs(step - want) <= 1e-12 * want, "GA_Step_max_patch gave %.17g, serial %.17g",
          step, want);
    print_value("step_max_patch", step);
    GA_Destroy(x);
    GA_Destroy(v);
}

/* Bounds lower = x - 20, upper = x + 30 around x; v has both signs. */
static void test_step_bound_info_patch(void) {
    int x = filled("X", 11, 60), v = filled("V", 12, 0);
    int lower = filled("L", 11, 40), upper = filled("U", 11, 90);
    double boundmin = -1, wolfemin = -1, boundmax = -1;
    GA_Step_bound_info_patch(x, wlo, whi, v, wlo, whi, lower, wlo, whi, upper, wlo, whi,
                             &boundmin, &wolfemin, &boundmax);
    CHECK(boundmin >= 0 && boundmin <= boundmax, "bound info %g %g %g", boundmin, wolfemin,
          boundmax);
    print_value("step_bound_min", boundmin);
    print_value("step_bound_wolfe", wolfemin);
    print_value("step_bound_max", boundmax);
    GA_Destroy(x);
    GA_Destroy(v);
    GA_Destroy(lower);
    GA_Destroy(upper);
}

int main(int argc, char **argv) {
    ga_init(&argc, &argv);
    RUN(test_add_patch);
    RUN(test_ddot_patch);
    RUN(test_elem_multiply_patch);
    RUN(test_step_max_patch);
    RUN(test_step_bound_info_patch);
    ga_done();
    return 0;
}
