/* Calls of the C11 generic forms with a context that must not compile (built with
 * -std=c11 and one of the -D names below; with -DNF_GOOD it builds): a type the
 * family does not have is no association of its _Generic, with or without a
 * context, and a source of another type than dest is a constraint violation. */
#include <shmem.h>

struct pair {
    int a, b;
};

int main(void) {
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    static long l[2], ls[2];
    static double d;
    static struct pair p, ps;
    static int is[2];
    (void)ctx, (void)l, (void)ls, (void)d, (void)p, (void)ps, (void)is;
#if defined(NF_GOOD)
    shmem_put(ctx, l, ls, 2, 0);
    shmem_put(l, ls, 2, 0);
    (void)shmem_atomic_fetch_add(ctx, l, 1L, 0);
    shmem_atomic_set(ctx, &d, 1.0, 0);
#elif defined(NF_STRUCT_PUT)
    shmem_put(ctx, &p, &ps, 1, 0); /* no struct RMA family */
#elif defined(NF_DOUBLE_FETCH_ADD)
    (void)shmem_atomic_fetch_add(ctx, &d, 1.0, 0); /* fetch_add is not on double */
#elif defined(NF_DOUBLE_AND)
    shmem_atomic_and(ctx, &d, 1.0, 0); /* bitwise atomics are not on double */
#elif defined(NF_MIXED_PUT)
    shmem_put(ctx, l, is, 2, 0); /* long dest, int source */
#elif defined(NF_PLAIN_STRUCT_PUT)
    shmem_put(&p, &ps, 1, 0); /* the context-free form refuses it too */
#else
#error "build with one of the -D names"
#endif
    return 0;
}
