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

#ifdef ARMCI_NINEFOLD
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
#ifdef ARMCI_NINEFOLD
    RUN(test_abs_ops_and_reduce);
    RUN(test_scope_node);
#endif
    harness_done();
    return 0;
}
