/* armci_msg_*: me / nproc, snd / rcv / rcvany, barrier, bcast / brdcst / bcast_scope,
 * the gop family, sel, bintree, timer; and (ninefold only) absmax / absmin, reduce,
 * SCOPE_NODE. */
#include "harness.h"

static void test_snd_rcv_ring(void) {
    int to = (me + 1) % nproc, from = (me + nproc - 1) % nproc;
    char out[300], in[400];
    for (int i = 0; i < 300; i++) out[i] = (char)pattern(me, (size_t)i, 2);
    int len = -1;
    if (me % 2 == 0) {
        armci_msg_snd(17, out, 300, to);
        armci_msg_rcv(17, in, sizeof in, &len, from);
    } else {
        armci_msg_rcv(17, in, sizeof in, &len, from);
        armci_msg_snd(17, out, 300, to);
    }
    CHECK(len == 300, "received %d bytes", len);
    for (int i = 0; i < 300; i++) CHECK(in[i] == (char)pattern(from, (size_t)i, 2), "byte %d", i);
}

static void test_rcvany(void) {
    if (me == 0) {
        int seen = 0;
        for (int k = 1; k < nproc; k++) {
            int v = -1, len = 0;
            int src = armci_msg_rcvany(23, &v, sizeof v, &len);
            CHECK(src >= 1 && src < nproc && v == src * 11 && len == (int)sizeof v,
                  "rcvany: src %d value %d len %d", src, v, len);
            CHECK(!(seen & (1 << src)), "twice from %d", src);
            seen |= 1 << src;
        }
    } else {
        int v = me * 11;
        armci_msg_snd(23, &v, sizeof v, 0);
    }
}

static void test_barrier_and_timer(void) {
    double t0 = armci_timer();
    for (int i = 0; i < 20; i++) armci_msg_barrier();
    CHECK(armci_timer() >= t0, "armci_timer went backwards");
}

static void test_bcast(void) {
    int root = nproc - 1;
    double v[5] = {0};
    if (me == root)
        for (int i = 0; i < 5; i++) v[i] = i * 1.5;
    armci_msg_bcast(v, sizeof v, root);
    for (int i = 0; i < 5; i++) CHECK(v[i] == i * 1.5, "bcast element %d", i);
    long w = me == 1 ? 77 : 0;
    armci_msg_brdcst(&w, sizeof w, 1);
    CHECK(w == 77, "brdcst gave %ld", w);
    int x = me == 0 ? 5 : 0;
    armci_msg_bcast_scope(SCOPE_ALL, &x, sizeof x, 0);
    CHECK(x == 5, "bcast_scope gave %d", x);
}

static void test_gops(void) {
    int iv[3] = {me, me + 1, -me};
    long lv[3] = {me, me + 1, -me};
    long long llv[2] = {(long long)me << 33, 1};
    float fv[2] = {(float)me, 2.0f};
    double dv[3] = {me * 0.5, me + 1, -me};
    armci_msg_igop(iv, 1, "+");
    armci_msg_igop(iv + 1, 1, "*");
    armci_msg_igop(iv + 2, 1, "min");
    armci_msg_lgop(lv, 1, "max");
    armci_msg_llgop(llv, 2, "+");
    armci_msg_fgop(fv, 2, "*");
    armci_msg_dgop(dv, 1, "+");
    armci_msg_dgop(dv + 1, 1, "max");
    armci_msg_dgop(dv + 2, 1, "min");
    int sum = nproc * (nproc - 1) / 2, fact = 1;
    for (int p = 1; p <= nproc; p++) fact *= p;
    CHECK(iv[0] == sum && iv[1] == fact && iv[2] == -(nproc - 1), "igop %d %d %d", iv[0],
          iv[1], iv[2]);
    CHECK(lv[0] == nproc - 1, "lgop max %ld", lv[0]);
    CHECK(llv[0] == ((long long)sum << 33) && llv[1] == nproc, "llgop %lld", llv[0]);
    float prod = 1;
    for (int p = 0; p < nproc; p++) prod *= 2.0f;
    CHECK(fv[0] == 0.0f && fv[1] == prod, "fgop %g %g", fv[0], fv[1]);
    CHECK(dv[0] == sum * 0.5 && dv[1] == nproc && dv[2] == -(nproc - 1), "dgop %g %g %g", dv[0],
          dv[1], dv[2]);
    double s = me;
    armci_msg_gop_scope(SCOPE_ALL, &s, 1, "+", ARMCI_DOUBLE);
    CHECK(s == sum, "gop_scope %g", s);
}

/* Selection: the element with the smallest / largest leading value, all its bytes. */
static void test_sel(void) {
    struct {
        double value;
        long index;
    } x = {(me - 1.3) * (me - 1.3), 1000 + me};
    int contribute = me != 0; /* rank 0 stays out */
    armci_msg_sel(&x, sizeof x, "min", ARMCI_DOUBLE, contribute);
    double best = 1e300;
    long at = -1;
    for (int p = 1; p < nproc; p++)
        if ((p - 1.3) * (p - 1.3) < best) best = (p - 1.3) * (p - 1.3), at = 1000 + p;
    if (contribute) CHECK(x.value == best && x.index == at, "sel min: %g at %ld", x.value, x.index);
    struct {
        int value;
        int index;
    } y = {me * 3 % 7, me};
    armci_msg_sel_scope(SCOPE_ALL, &y, sizeof y, "max", ARMCI_INT, 1);
    int bv = -1, bi = -1;
    for (int p = 0; p < nproc; p++)
        if (p * 3 % 7 > bv) bv = p * 3 % 7, bi = p;
    CHECK(y.value == bv && y.index == bi, "sel max: %d at %d", y.value, y.index);
}

static void test_bintree(void) {
    int root, up, left, right;
    armci_msg_bintree(SCOPE_ALL, &root, &up, &left, &right);
    CHECK(root == 0, "root %d", root);
    CHECK(up == (me == 0 ? -1 : (me - 1) / 2), "up %d", up);
    CHECK(left == (2 * me + 1 < nproc ? 2 * me + 1 : -1), "left %d", left);
    CHECK(right == (2 * me + 2 < nproc ? 2 * me + 2 : -1), "right %d", right);
}

/* Logical and bitwise operators under every spelling GA and ARMCI-MPI use, on the
 * integer types (rank 0 holds the one false / the one set bit). */
static void test_logical_bitwise_int(void) {
    int t[6] = {1, me == 0 ? 0 : 7, me == nproc - 1 ? 5 : 0, 0, 3, me};
    armci_msg_igop(t, 1, "&&");
    armci_msg_igop(t + 1, 1, "land");
    armci_msg_igop(t + 2, 1, "||");
    armci_msg_igop(t + 3, 1, "lor");
    armci_msg_igop(t + 4, 1, "&& "); /* Fortran pads with blanks */
    armci_msg_igop(t + 5, 1, "||");
    CHECK(t[0] == 1 && t[1] == 0 && t[2] == 1 && t[3] == 0 && t[4] == 1 && t[5] == 1,
          "int logical %d %d %d %d %d %d", t[0], t[1], t[2], t[3], t[4], t[5]);
    long l[2] = {me + 1, 2};
    armci_msg_lgop(l, 1, "&&");
    armci_msg_lgop(l + 1, 1, "lor");
    CHECK(l[0] == 1 && l[1] == 1, "long logical %ld %ld", l[0], l[1]);
    long long ll[2] = {me == 0 ? 0 : 1, 0};
    armci_msg_llgop(ll, 2, "&&");
    CHECK(ll[0] == 0 && ll[1] == 0, "long long logical %lld %lld", ll[0], ll[1]);
    int all = (1 << nproc) - 1;
    int b[4] = {0xff & ~(1 << me), 0xff & ~(1 << me), 1 << me, 1 << me};
    armci_msg_igop(b, 1, "&");
    armci_msg_igop(b + 1, 1, "band");
    armci_msg_igop(b + 2, 1, "|");
    armci_msg_igop(b + 3, 1, "bor");
    CHECK(b[0] == (0xff & ~all) && b[1] == b[0] && b[2] == all && b[3] == all,
          "int bitwise %x %x %x %x", b[0], b[1], b[2], b[3]);
    long lb = 1L << (40 + me);
    armci_msg_lgop(&lb, 1, "|");
    CHECK(lb == (long)all << 40, "long bitwise %lx", lb);
}

#ifdef ARMCI_NINEFOLD
/* Logical operators on float and double (MPI has none; ARMCI-MPI passes MPI_LAND on). */
static void test_logical_floating(void) {
    double d[4] = {0.5, me == 0 ? 0.0 : -2.0, me == nproc - 1 ? 1e-300 : 0.0, 0.0};
    armci_msg_dgop(d, 2, "&&");
    armci_msg_dgop(d + 2, 2, "||");
    CHECK(d[0] == 1.0 && d[1] == 0.0 && d[2] == 1.0 && d[3] == 0.0, "double logical %g %g %g %g",
          d[0], d[1], d[2], d[3]);
    float f[2] = {me + 1.0f, me == 0 ? 3.0f : 0.0f};
    armci_msg_fgop(f, 1, "land");
    armci_msg_fgop(f + 1, 1, "lor");
    CHECK(f[0] == 1.0f && f[1] == 1.0f, "float logical %g %g", f[0], f[1]);
    int flag = me != 0;
    armci_msg_reduce(&flag, 1, "&&", ARMCI_INT);
    if (me == 0) CHECK(flag == 0, "reduce && gave %d", flag);
}

/* Beyond ARMCI-MPI: absmax / absmin, bitwise or, reduce to the first process. */
static void test_abs_ops_and_reduce(void) {
    double d[2] = {-(double)me - 0.5, (double)me + 1};
    armci_msg_dgop(d, 1, "absmax");
    armci_msg_dgop(d + 1, 1, "absmin");
    CHECK(d[0] == nproc - 0.5 && d[1] == 1.0, "absmax %g absmin %g", d[0], d[1]);
    int bits = 1 << me;
    armci_msg_igop(&bits, 1, "or");
    CHECK(bits == (1 << nproc) - 1, "or gave %x", bits);
    long r = me + 1;
    armci_msg_reduce(&r, 1, "+", ARMCI_LONG);
    if (me == 0) CHECK(r == (long)nproc * (nproc + 1) / 2, "reduce gave %ld", r);
    else CHECK(r == me + 1, "reduce changed a non-root's value to %ld", r);
}

/* SCOPE_NODE: the processes on this node (all of them, on one host). */
static void test_scope_node(void) {
    int one = 1;
    armci_msg_gop_scope(SCOPE_NODE, &one, 1, "+", ARMCI_INT);
    int here = armci_domain_nprocs(ARMCI_DOMAIN_SMP, armci_domain_my_id(ARMCI_DOMAIN_SMP));
    CHECK(one == here, "SCOPE_NODE sum %d, processes on this node %d", one, here);
}
#endif

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    RUN(test_snd_rcv_ring);
    RUN(test_rcvany);
    RUN(test_barrier_and_timer);
    RUN(test_bcast);
    RUN(test_gops);
    RUN(test_sel);
    RUN(test_bintree);
    RUN(test_logical_bitwise_int);
#ifdef ARMCI_NINEFOLD
    RUN(test_logical_floating);
    RUN(test_abs_ops_and_reduce);
    RUN(test_scope_node);
#endif
    harness_done();
    return 0;
}
