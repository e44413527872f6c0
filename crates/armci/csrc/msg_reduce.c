/*
 * ninefold libarmci: armci_msg_* reductions (the gop family, reduce) and the
 * selection collective armci_msg_sel, over MPI.
 *
 * "absmax" / "absmin" reduce absolute values (the result is |x|), "or" / "and"
 * are bitwise and only for integer types; MPI has no built-in for the first two,
 * so they and the selection are user operations created on first use (and freed
 * with the process: MPI frees them at MPI_Finalize).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Operator names up to this long are recognised; longer ones are errors. */
#define OP_MAX 16

static MPI_Datatype mpi_type_of(const char *call, int type) {
    switch (type) {
    case ARMCI_INT: return MPI_INT;
    case ARMCI_LONG: return MPI_LONG;
    case ARMCI_LONG_LONG: return MPI_LONG_LONG;
    case ARMCI_FLOAT: return MPI_FLOAT;
    case ARMCI_DOUBLE: return MPI_DOUBLE;
    default:
        nfa_fatal(call, "argument 'type' is %d; it must be ARMCI_INT, ARMCI_LONG, "
                        "ARMCI_LONG_LONG, ARMCI_FLOAT or ARMCI_DOUBLE (0 .. 4)",
                  type);
    }
}

/* Applies fold(|a|, |b|) element-wise for each ARMCI type; `pick_max` selects max. */
#define ABS_FOLD(T, ABS)                                                                  \
    do {                                                                                  \
        T *a = in, *b = inout;                                                            \
        for (int i = 0; i < *len; i++) {                                                  \
            T x = ABS(a[i]), y = ABS(b[i]);                                               \
            b[i] = pick_max ? (x > y ? x : y) : (x < y ? x : y);                          \
        }                                                                                 \
    } while (0)

static void abs_fold(void *in, void *inout, int *len, MPI_Datatype *dt, int pick_max) {
    if (*dt == MPI_INT) ABS_FOLD(int, abs);
    else if (*dt == MPI_LONG) ABS_FOLD(long, labs);
    else if (*dt == MPI_LONG_LONG) ABS_FOLD(long long, llabs);
    else if (*dt == MPI_FLOAT) ABS_FOLD(float, fabsf);
    else ABS_FOLD(double, fabs);
}

static void absmax_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    abs_fold(in, inout, len, dt, 1);
}

static void absmin_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    abs_fold(in, inout, len, dt, 0);
}

static MPI_Op absmax_op = MPI_OP_NULL, absmin_op = MPI_OP_NULL;

/* Copies a possibly unterminated operator name and drops trailing blanks (Fortran). */
static void op_name(const char *call, const char *op, size_t oplen, char out[OP_MAX]) {
    if (op == NULL) nfa_fatal(call, "argument 'op' is NULL");
    size_t n = strnlen(op, oplen);
    while (n > 0 && op[n - 1] == ' ') n--;
    if (n == 0 || n >= OP_MAX)
        nfa_fatal(call, "argument 'op' (\"%.*s\") is not an operator; use \"+\", \"*\", "
                        "\"max\", \"min\", \"absmax\", \"absmin\", \"or\" or \"and\"",
                  (int)(n < 40 ? n : 40), op);
    memcpy(out, op, n);
    out[n] = '\0';
}

static MPI_Op mpi_op_of(const char *call, const char *op, int type) {
    int integer = type == ARMCI_INT || type == ARMCI_LONG || type == ARMCI_LONG_LONG;
    if (!strcmp(op, "+")) return MPI_SUM;
    if (!strcmp(op, "*")) return MPI_PROD;
    if (!strcmp(op, "max")) return MPI_MAX;
    if (!strcmp(op, "min")) return MPI_MIN;
    if (!strcmp(op, "absmax")) {
        if (absmax_op == MPI_OP_NULL) MPI_Op_create(absmax_fn, 1, &absmax_op);
        return absmax_op;
    }
    if (!strcmp(op, "absmin")) {
        if (absmin_op == MPI_OP_NULL) MPI_Op_create(absmin_fn, 1, &absmin_op);
        return absmin_op;
    }
    if (integer && !strcmp(op, "or")) return MPI_BOR;
    if (integer && !strcmp(op, "and")) return MPI_BAND;
    nfa_fatal(call, "argument 'op' is \"%s\"; use \"+\", \"*\", \"max\", \"min\", "
                    "\"absmax\", \"absmin\" (and \"or\", \"and\" for integer types)",
              op);
}

static void check_vector(const char *call, const void *x, int n) {
    if (n < 0) nfa_fatal(call, "argument 'n' is %d; it must be >= 0", n);
    if (x == NULL && n > 0) nfa_fatal(call, "argument 'x' is NULL");
}

void nfa_allreduce(const char *call, void *x, int n, const char *op, int type,
                   MPI_Comm comm) {
    char name[OP_MAX];
    check_vector(call, x, n);
    MPI_Datatype dt = mpi_type_of(call, type);
    op_name(call, op, OP_MAX, name);
    MPI_Op mop = mpi_op_of(call, name, type);
    if (n > 0) MPI_Allreduce(MPI_IN_PLACE, x, n, dt, mop, comm);
}

void armci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type,
                               ARMCI_Group *group) {
    const char *call = "armci_msg_gop";
    nfa_group_check(call, group);
    int must_free = 0;
    MPI_Comm comm = nfa_scope_comm(call, scope, group, &must_free);
    nfa_allreduce(call, x, n, op, type, comm);
    if (must_free) MPI_Comm_free(&comm);
}

void armci_msg_gop_scope(int scope, void *x, int n, char *op, int type) {
    nfa_require_init("armci_msg_gop");
    armci_msg_group_gop_scope(scope, x, n, op, type, &nfa.world);
}

void armci_msg_igop(int *x, int n, char *op) { armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_INT); }
void armci_msg_lgop(long *x, int n, char *op) { armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG); }
void armci_msg_llgop(long long *x, int n, char *op) { armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG_LONG); }
void armci_msg_fgop(float *x, int n, char *op) { armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_FLOAT); }
void armci_msg_dgop(double *x, int n, char *op) { armci_msg_gop_scope(SCOPE_ALL, x, n, op, ARMCI_DOUBLE); }

void armci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_INT, group);
}
void armci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG, group);
}
void armci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_LONG_LONG, group);
}
void armci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_FLOAT, group);
}
void armci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group) {
    armci_msg_group_gop_scope(SCOPE_ALL, x, n, op, ARMCI_DOUBLE, group);
}

/* Reduction to the scope's first process (rank 0 there); the others' x is unchanged. */
void armci_msg_reduce_scope(int scope, void *x, int n, char *op, int type) {
    const char *call = "armci_msg_reduce";
    char name[OP_MAX];
    nfa_require_init(call);
    check_vector(call, x, n);
    MPI_Datatype dt = mpi_type_of(call, type);
    op_name(call, op, OP_MAX, name);
    MPI_Op mop = mpi_op_of(call, name, type);
    int must_free = 0, me;
    MPI_Comm comm = nfa_scope_comm(call, scope, &nfa.world, &must_free);
    MPI_Comm_rank(comm, &me);
    if (n > 0) {
        if (me == 0) MPI_Reduce(MPI_IN_PLACE, x, n, dt, mop, 0, comm);
        else MPI_Reduce(x, NULL, n, dt, mop, 0, comm);
    }
    if (must_free) MPI_Comm_free(&comm);
}

void armci_msg_reduce(void *x, int n, char *op, int type) {
    armci_msg_reduce_scope(SCOPE_ALL, x, n, op, type);
}

/* ---- selection ---------------------------------------------------------- */

/* One process's candidate: whether it takes part, the value's type, its n bytes. */
struct sel_item {
    int contribute;
    int type;
    unsigned char data[];
};

/* True when a's leading value is below b's (as `type`). */
static int sel_less(const struct sel_item *a, const struct sel_item *b) {
    switch (a->type) {
#define LESS(T)                                                                           \
    {                                                                                     \
        T x, y;                                                                           \
        memcpy(&x, a->data, sizeof x);                                                    \
        memcpy(&y, b->data, sizeof y);                                                    \
        return x < y;                                                                     \
    }
    case ARMCI_INT: LESS(int)
    case ARMCI_LONG: LESS(long)
    case ARMCI_LONG_LONG: LESS(long long)
    case ARMCI_FLOAT: LESS(float)
    default: LESS(double)
#undef LESS
    }
}

static void sel_fold(void *in, void *inout, MPI_Datatype *dt, int pick_max) {
    struct sel_item *a = in, *b = inout;
    int size;
    MPI_Type_size(*dt, &size);
    if (!a->contribute) return;
    if (!b->contribute || (pick_max ? sel_less(b, a) : sel_less(a, b)))
        memcpy(b, a, (size_t)size);
}

static void sel_min_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)len; /* always one item of type *dt */
    sel_fold(in, inout, dt, 0);
}

static void sel_max_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)len;
    sel_fold(in, inout, dt, 1);
}

static MPI_Op sel_min_op = MPI_OP_NULL, sel_max_op = MPI_OP_NULL;

void armci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute) {
    const char *call = "armci_msg_sel";
    char name[OP_MAX];
    nfa_require_init(call);
    check_vector(call, x, n);
    MPI_Datatype elem = mpi_type_of(call, type);
    int elem_size;
    MPI_Type_size(elem, &elem_size);
    if (n < elem_size)
        nfa_fatal(call, "argument 'n' is %d bytes, less than one value of the type (%d)", n,
                  elem_size);
    op_name(call, op, OP_MAX, name);
    int pick_max = !strcmp(name, "max");
    if (!pick_max && strcmp(name, "min"))
        nfa_fatal(call, "argument 'op' is \"%s\"; selection takes \"min\" or \"max\"", name);
    MPI_Op *mop = pick_max ? &sel_max_op : &sel_min_op;
    if (*mop == MPI_OP_NULL) MPI_Op_create(pick_max ? sel_max_fn : sel_min_fn, 1, mop);
    size_t bytes = sizeof(struct sel_item) + (size_t)n;
    struct sel_item *item = calloc(1, bytes);
    if (item == NULL) nfa_fatal(call, "out of memory for a %d-byte selection", n);
    item->contribute = contribute != 0;
    item->type = type;
    if (contribute) memcpy(item->data, x, (size_t)n);
    MPI_Datatype whole;
    MPI_Type_contiguous((int)bytes, MPI_BYTE, &whole);
    MPI_Type_commit(&whole);
    int must_free = 0;
    MPI_Comm comm = nfa_scope_comm(call, scope, &nfa.world, &must_free);
    MPI_Allreduce(MPI_IN_PLACE, item, 1, whole, *mop, comm);
    if (must_free) MPI_Comm_free(&comm);
    MPI_Type_free(&whole);
    if (item->contribute) memcpy(x, item->data, (size_t)n);
    free(item);
}

void armci_msg_sel(void *x, int n, char *op, int type, int contribute) {
    armci_msg_sel_scope(SCOPE_ALL, x, n, op, type, contribute);
}
