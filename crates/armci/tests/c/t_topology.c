/* Nodes: Same_node, armci_domain_*, Uses_shm / Uses_shm_grp, Set_shm_limit.
 * Usage: t_topology [NODES] — NODES is how many hosts the job spans (default 1);
 * the exact node checks run against ninefold only (ARMCI-MPI's domains are dummies). */
#include "harness.h"

static int expected_nodes = 1;

/* Properties every implementation's domains have, real or not. */
static void test_domains_consistent(void) {
    int count = armci_domain_count(ARMCI_DOMAIN_SMP), total = 0;
    CHECK(count >= 1 && count <= nproc, "domain count %d", count);
    for (int d = 0; d < count; d++) {
        int n = armci_domain_nprocs(ARMCI_DOMAIN_SMP, d);
        CHECK(n >= 1, "domain %d has %d processes", d, n);
        total += n;
        for (int i = 0; i < n; i++) {
            int p = armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, d, i);
            CHECK(p >= 0 && p < nproc, "domain %d process %d is %d", d, i, p);
            CHECK(armci_domain_id(ARMCI_DOMAIN_SMP, p) == d, "process %d is in domain %d", p,
                  armci_domain_id(ARMCI_DOMAIN_SMP, p));
        }
    }
    CHECK(total == nproc, "domains hold %d processes, not %d", total, nproc);
    CHECK(armci_domain_same_id(ARMCI_DOMAIN_SMP, me) == 1, "not in my own domain");
    CHECK(ARMCI_Same_node(me) == 1, "not on my own node");
}

static void test_shm_queries(void) {
    int u = ARMCI_Uses_shm();
    CHECK(u == 0 || u == 1, "ARMCI_Uses_shm() is %d", u);
    ARMCI_Group w;
    ARMCI_Group_get_world(&w);
    int g = ARMCI_Uses_shm_grp(&w);
    CHECK(g == 0 || g == 1, "ARMCI_Uses_shm_grp() is %d", g);
    ARMCI_Set_shm_limit(1UL << 34);
    void **ptr = alloc_all(1 << 16);
    free_all(ptr);
}

#ifdef ARMCI_NINEFOLD
/* The real node layout: EXPECTED nodes, my node holds exactly the same-node peers. */
static void test_nodes_exact(void) {
    CHECK(armci_domain_count(ARMCI_DOMAIN_SMP) == expected_nodes, "%d nodes, want %d",
          armci_domain_count(ARMCI_DOMAIN_SMP), expected_nodes);
    int mine = armci_domain_my_id(ARMCI_DOMAIN_SMP);
    CHECK(mine == armci_domain_id(ARMCI_DOMAIN_SMP, me), "my_id %d, domain_id(me) %d", mine,
          armci_domain_id(ARMCI_DOMAIN_SMP, me));
    int here = 0;
    for (int p = 0; p < nproc; p++) {
        int same = ARMCI_Same_node(p);
        CHECK(same == armci_domain_same_id(ARMCI_DOMAIN_SMP, p), "Same_node(%d)", p);
        CHECK(same == (armci_domain_id(ARMCI_DOMAIN_SMP, p) == mine), "node of %d", p);
        here += same;
    }
    CHECK(here == armci_domain_nprocs(ARMCI_DOMAIN_SMP, mine), "%d on my node", here);
    /* Node numbering follows the lowest world rank of each node. */
    CHECK(armci_domain_id(ARMCI_DOMAIN_SMP, 0) == 0, "world rank 0 is on node %d",
          armci_domain_id(ARMCI_DOMAIN_SMP, 0));
}
#endif

int main(int argc, char **argv) {
    harness_init(&argc, &argv);
    if (argc > 1) expected_nodes = atoi(argv[1]);
    RUN(test_domains_consistent);
    RUN(test_shm_queries);
#ifdef ARMCI_NINEFOLD
    RUN(test_nodes_exact);
#endif
    harness_done();
    return 0;
}
