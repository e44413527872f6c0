/*
 * ninefold libarmci: armci_msg_* reductions (the gop family, reduce) and the
 * selection collective armci_msg_sel, over MPI, or for all-reduces of the world the
 * nodes' shared memory (coll.c; the same operators, folded in src/reduce.rs).
 *
 * Operator names are ARMCI-MPI's, matched as it matches them: trailing blanks
 * (Fortran) dropped, then the first entry of `op_names` the name starts with, so
 * "&&" is tried before "&" and "maxval" means "max". Logical operators ("&&" /
 * "land", "||" / "lor") take every type: a value is true when non-zero and the
 * result is 1 or 0 in the element's type (MPI_LAND / MPI_LOR for the integer
 * types; a user operation for float and double, where MPI defines none). Bitwise
 * ones ("&" / "band" / "and", "|" / "bor" / "or") take integer types only.
 * "absmax" / "absmin" reduce absolute values (the result is |x|, also on one
 * process). MPI has no built-in for those, so they and the selection are user
 * operations created on first use (MPI frees them at MPI_Finalize); their handles
 * are exported under ARMCI-MPI's names (ARMCI_MPI_ABSMAX_OP, ...).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Operator names up to this long are recognised; longer ones are errors. */
#define OP_MAX 32

MPI_Op ARMCI_MPI_ABSMAX_OP = MPI_OP_NULL, ARMCI_MPI_ABSMIN_OP = MPI_OP_NULL;
MPI_Op ARMCI_MPI_SELMAX_OP = MPI_OP_NULL, ARMCI_MPI_SELMIN_OP = MPI_OP_NULL;
static MPI_Op float_land_op = MPI_OP_NULL, float_lor_op = MPI_OP_NULL;

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

/* Logical and / or of float or double elements: 1 when true, 0 when false. */
#define LOGIC_FOLD(T)                                                                     \
    do {                                                                                  \
        T *a = in, *b = inout;                                                            \
        for (int i = 0; i < *len; i++)                                                    \
            b[i] = is_and ? (a[i] != 0 && b[i] != 0) : (a[i] != 0 || b[i] != 0);          \
    } while (0)

static void logic_fold(void *in, void *inout, int *len, MPI_Datatype *dt, int is_and) {
    if (*dt == MPI_FLOAT) LOGIC_FOLD(float);
    else LOGIC_FOLD(double);
}

static void float_land_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    logic_fold(in, inout, len, dt, 1);
}

static void float_lor_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
    logic_fold(in, inout, len, dt, 0);
}

/* The commutative user operation in *slot, created on first use. */
static MPI_Op user_op(MPI_Op *slot, MPI_User_function *fn) {
    if (*slot == MPI_OP_NULL) MPI_Op_create(fn, 1, slot);
    return *slot;
}

/* Operator names in matching order (a name matches the first entry it starts with). */
static const struct {
    const char *name;
    enum nfa_gop op;
} op_names[] = {
    {"+", GOP_SUM},       {"*", GOP_PROD},      {"max", GOP_MAX},   {"min", GOP_MIN},
    {"or", GOP_BOR},      {"absmax", GOP_ABSMAX}, {"absmin", GOP_ABSMIN},
    {"land", GOP_LAND},   {"&&", GOP_LAND},     {"lor", GOP_LOR},   {"||", GOP_LOR},
    {"band", GOP_BAND},   {"&", GOP_BAND},      {"bor", GOP_BOR},   {"|", GOP_BOR},
    {"and", GOP_BAND},
};

#define OP_LIST                                                                           \
    "\"+\", \"*\", \"max\", \"min\", \"absmax\", \"absmin\", \"&&\" / \"land\", \"||\" / "   \
    "\"lor\", and for integer types \"&\" / \"band\" / \"and\", \"|\" / \"bor\" / "           \
    "\"or\""

/* Copies a possibly unterminated operator name and drops trailing blanks (Fortran). */
static void op_name(const char *call, const char *op, size_t oplen, char out[OP_MAX]) {
    if (op == NULL) nfa_fatal(call, "argument 'op' is NULL");
    size_t n = strnlen(op, oplen);
    while (n > 0 && op[n - 1] == ' ') n--;
    if (n == 0 || n >= OP_MAX)
        nfa_fatal(call, "argument 'op' (\"%.*s\") is not an operator; use " OP_LIST,
                  (int)(n < 40 ? n : 40), op);
    memcpy(out, op, n);
    out[n] = '\0';
}

/* The operator `name` stands for; an unknown name aborts naming `call`. */
static enum nfa_gop gop_of(const char *call, const char *name) {
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
        if (!strncmp(name, op_names[i].name, strlen(op_names[i].name)))
            return op_names[i].op;
    nfa_fatal(call, "argument 'op' is \"%s\"; use " OP_LIST, name);
}

static MPI_Op mpi_op_of(const char *call, enum nfa_gop op, const char *name, int type) {
    int integer = type == ARMCI_INT || type == ARMCI_LONG || type == ARMCI_LONG_LONG;
    switch (op) {
    case GOP_SUM: return MPI_SUM;
    case GOP_PROD: return MPI_PROD;
    case GOP_MAX: return MPI_MAX;
    case GOP_MIN: return MPI_MIN;
    case GOP_ABSMAX: return user_op(&ARMCI_MPI_ABSMAX_OP, absmax_fn);
    case GOP_ABSMIN: return user_op(&ARMCI_MPI_ABSMIN_OP, absmin_fn);
    case GOP_LAND: return integer ? MPI_LAND : user_op(&float_land_op, float_land_fn);
    case GOP_LOR: return integer ? MPI_LOR : user_op(&float_lor_op, float_lor_fn);
    case GOP_BAND:
    case GOP_BOR:
        if (integer) return op == GOP_BAND ? MPI_BAND : MPI_BOR;
        break;
    }
    nfa_fatal(call, "argument 'op' is \"%s\", a bitwise operator, and argument 'type' is "
                    "%s; bitwise operators take ARMCI_INT, ARMCI_LONG or ARMCI_LONG_LONG",
              name, type == ARMCI_FLOAT ? "ARMCI_FLOAT" : "ARMCI_DOUBLE");
}

static void check_vector(const char *call, const void *x, int n) {
    if (n < 0) nfa_fatal(call, "argument 'n' is %d; it must be >= 0", n);
    if (x == NULL && n > 0) nfa_fatal(call, "argument 'x' is NULL");
}

/* Reduces x in place over comm, to every member (root < 0) or to rank `root` only. */
static void reduce(const char *call, void *x, int n, const char *op, int type,
                   MPI_Comm comm, int root) {
    char name[OP_MAX];
    check_vector(call, x, n);
    MPI_Datatype dt = mpi_type_of(call, type);
    op_name(call, op, OP_MAX, name);
    enum nfa_gop gop = gop_of(call, name);
    MPI_Op mop = mpi_op_of(call, gop, name, type);
    int me = root;
    if (root >= 0) MPI_Comm_rank(comm, &me);
    if (n == 0) return;
    /* Where the result lands, start from |x|: MPI calls no operation with one process,
     * and with more the operation folds absolute values anyway. */
    if ((gop == GOP_ABSMAX || gop == GOP_ABSMIN) && me == root)
        abs_fold(x, x, &n, &dt, gop == GOP_ABSMAX);
    if (root < 0 && nfa_allreduce_shm(call, x, n, type, gop, dt, mop, comm)) return;
    if (root < 0) MPI_Allreduce(MPI_IN_PLACE, x, n, dt, mop, comm);
    else if (me == root) MPI_Reduce(MPI_IN_PLACE, x, n, dt, mop, root, comm);
    else MPI_Reduce(x, NULL, n, dt, mop, root, comm);
}

void nfa_allreduce(const char *call, void *x, int n, const char *op, int type,
                   MPI_Comm comm) {
    reduce(call, x, n, op, type, comm, -1);
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
    armci_msg_group_gop_scope(scope, x, n, op, type, &ARMCI_GROUP_WORLD);
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
    nfa_require_init(call);
    int must_free = 0;
    MPI_Comm comm = nfa_scope_comm(call, scope, &ARMCI_GROUP_WORLD, &must_free);
    reduce(call, x, n, op, type, comm, 0);
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
    int pick_max = !strncmp(name, "max", 3);
    if (!pick_max && strncmp(name, "min", 3))
        nfa_fatal(call, "argument 'op' is \"%s\"; selection takes \"min\" or \"max\"", name);
    MPI_Op mop = pick_max ? user_op(&ARMCI_MPI_SELMAX_OP, sel_max_fn)
                          : user_op(&ARMCI_MPI_SELMIN_OP, sel_min_fn);
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
    MPI_Comm comm = nfa_scope_comm(call, scope, &ARMCI_GROUP_WORLD, &must_free);
    MPI_Allreduce(MPI_IN_PLACE, item, 1, whole, mop, comm);
    if (must_free) MPI_Comm_free(&comm);
    MPI_Type_free(&whole);
    if (item->contribute) memcpy(x, item->data, (size_t)n);
    free(item);
}

void armci_msg_sel(void *x, int n, char *op, int type, int contribute) {
    armci_msg_sel_scope(SCOPE_ALL, x, n, op, type, contribute);
}
