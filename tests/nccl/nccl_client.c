/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * nccl_client.c - an MPI program written against NCCL's C API only (plus MPI and libc), in the
 * manner of nccl-tests' MPI mode, for checking a drop-in NCCL such as libblink-nccl-host.so
 * under LD_PRELOAD. Rank 0 makes the unique id, MPI broadcasts it, every rank joins with
 * ncclCommInitRank; then broadcast, reduce, allreduce, allgather and reduce-scatter run over
 * datatypes, operations, roots, counts and in or out of place, each checked on every rank
 * against a reference that the rank computes on its own from the same input formula. Inputs
 * are small integers chosen so that every result is exact in every type and reduction order.
 * Other modes: one NCCL call that must fail with a given code (-X), a split communicator
 * (--split), and buffers registered with ncclCommRegister (--register). It compiles against NVIDIA's nccl.h and against runtime/nccl/nccl.h alike, so it
 * may use no name that only one of them has; it never learns which library it runs on.
 * For the fault tests, NCCL_CLIENT_FAULT=absent keeps a rank from joining, =exit makes it
 * exit (status 3) right after joining, and =mute makes it call no MPI after joining until every
 * rank has returned from ncclCommInitRank, as a rank busy in a call that waits for the others
 * without MPI would (the real NCCL's own init, say): ranks say they have returned by creating
 * joined.RANK in the directory NCCL_CLIENT_MARKS.
 * Usage: nccl_client --help. Exit status: 0 all right, 1 wrong results or errors, 2 usage.
 */
#include "client.h"

/* The name comes first in each table: parse_names reads it through the stride. */
const struct coll_name colls[NCOLLS] = {
    {"broadcast", "ncclBroadcast"}, {"reduce", "ncclReduce"}, {"allreduce", "ncclAllReduce"},
    {"allgather", "ncclAllGather"}, {"reducescatter", "ncclReduceScatter"},
};

const struct dtype dtypes[NTYPES] = {
    {"int8", ncclInt8, K_INT, 1, 8},          {"uint8", ncclUint8, K_UINT, 1, 8},
    {"int32", ncclInt32, K_INT, 4, 32},       {"uint32", ncclUint32, K_UINT, 4, 32},
    {"int64", ncclInt64, K_INT, 8, 64},       {"uint64", ncclUint64, K_UINT, 8, 64},
    {"float16", ncclFloat16, K_HALF, 2, 11},  {"float32", ncclFloat32, K_FLOAT, 4, 24},
    {"float64", ncclFloat64, K_DOUBLE, 8, 53}, {"bfloat16", ncclBfloat16, K_BF16, 2, 8},
};

const struct op_name ops[NOPS] = {
    {"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg},
};

const size_t split_counts[NSPLIT] = {0, 1, 31, 1021, 65537};

int world_rank;
struct tally st;

/* ------------------------------------------------------------------ one case */

static void nccl_failed(ncclComm_t comm, const char *what, ncclResult_t res)
{
    printf("rank %d: %s: %s: %s\n", world_rank, what, ncclGetErrorString(res),
           ncclGetLastError(comm));
    fflush(stdout);
    st.errors++;
    /* Argument and usage errors are found before anything runs; NCCL leaves the communicator
     * usable after them. Anything else may have aborted it. */
    if (res != ncclInvalidArgument && res != ncclInvalidUsage)
        st.broken = 1;
}

static void wrong(const struct ctx *cx, const struct tcase *c, size_t j, const char *where,
                  union num got, union num want)
{
    char g[32], w[32];
    show(c->t, got, g, sizeof g);
    show(c->t, want, w, sizeof w);
    printf("rank %d: wrong: %s %s %s root %d count %zu %s: index %zu%s: got %s, expected %s\n",
           world_rank, colls[c->coll].name, c->t->name, c->op >= 0 ? ops[c->op].name : "-",
           c->root, c->count, c->inplace ? "in-place" : "out-of-place", j, where, g, w);
    fflush(stdout);
    st.wrong++;
}

static ncclResult_t call(const struct ctx *cx, const struct tcase *c, const void *s, void *r)
{
    ncclDataType_t dt = c->t->dt;
    ncclRedOp_t op = c->op >= 0 ? ops[c->op].op : ncclSum;
    switch (c->coll) {
    case BCAST: return ncclBroadcast(s, r, c->count, dt, c->root, cx->comm, NULL_STREAM);
    case REDUCE: return ncclReduce(s, r, c->count, dt, op, c->root, cx->comm, NULL_STREAM);
    case ALLREDUCE: return ncclAllReduce(s, r, c->count, dt, op, cx->comm, NULL_STREAM);
    case ALLGATHER: return ncclAllGather(s, r, c->count, dt, cx->comm, NULL_STREAM);
    default: return ncclReduceScatter(s, r, c->count, dt, op, cx->comm, NULL_STREAM);
    }
}

/*
 * Buffer b holds the output and its guard; in place, NCCL's layouts: allgather's input is this
 * rank's slice of the output, reduce-scatter's output is this rank's slice of the input (the
 * guard then follows the whole input). Returns after the first wrong element, guard element or
 * changed input element: one line per wrong case.
 */
static void run_case(const struct ctx *cx, const struct bufs *b, const struct tcase *c0)
{
    static uint64_t key[MAX_RANKS];
    struct tcase cc = *c0;
    const struct tcase *c = &cc;
    const struct dtype *t = c->t;
    /* One hash per element: the reference computes n inputs for each output element. */
    for (int r = 0; r < cx->n; r++)
        key[r] = mix(mix(cx->seed ^ mix(c->id)) + mix((uint64_t)cx->world[r] + 1));
    cc.key = key;
    input_range(t, c->op, (uint64_t)cx->n, &cc.lo, &cc.span);
    size_t sz = (size_t)t->size, n = (size_t)cx->n, me = (size_t)cx->rank;
    size_t nsend = c->coll == REDUCESCATTER ? n * c->count : c->count;
    size_t nrecv = c->coll == ALLGATHER ? n * c->count : c->count;
    size_t area = c->inplace && c->coll == REDUCESCATTER ? nsend : nrecv, at = 0;
    char *send = b->a, *recv = b->b;
    for (size_t i = 0; i < nsend; i++)
        store(t, b->hsend + i * sz, input(c, cx->rank, i));
    memset(b->hrecv, SENTINEL, (area + GUARD) * sz);
    if (c->inplace) {
        send = b->b;
        if (c->coll == ALLGATHER) {
            memcpy(b->hrecv + me * c->count * sz, b->hsend, nsend * sz);
            send = b->b + me * c->count * sz;
        } else if (c->coll != BCAST || c->root == cx->rank) {
            memcpy(b->hrecv, b->hsend, nsend * sz);
        }
        if (c->coll == REDUCESCATTER) {
            at = me * c->count;
            recv = b->b + at * sz;
        }
    } else if (to_buf(b->a, b->hsend, nsend * sz)) {
        return;
    }
    if (to_buf(b->b, b->hrecv, (area + GUARD) * sz))
        return;
    st.cases++;
    ncclResult_t res = call(cx, c, send, recv);
    if (res != ncclSuccess) {
        nccl_failed(cx->comm, colls[c->coll].fn, res);
        return;
    }
    if (sync_stream() || from_buf(b->hrecv, b->b, (area + GUARD) * sz))
        return;
    if (c->coll != REDUCE || c->root == cx->rank)
        for (size_t j = 0; j < nrecv; j++) {
            union num got = load(t, b->hrecv + (at + j) * sz), want = expected(cx, c, j);
            if (!same(t, c->op, got, want)) {
                wrong(cx, c, j, "", got, want);
                return;
            }
        }
    unsigned char fill[8];
    memset(fill, SENTINEL, sizeof fill);
    for (size_t g = 0; g < GUARD; g++)
        if (memcmp(b->hrecv + (area + g) * sz, fill, sz) != 0) {
            wrong(cx, c, nrecv + g, " (guard)", load(t, b->hrecv + (area + g) * sz),
                  load(t, fill));
            return;
        }
    /* sendbuff is const: out of place, the input must be as it was. */
    if (!c->inplace && !from_buf(b->hrecv, b->a, nsend * sz))
        for (size_t i = 0; i < nsend; i++)
            if (memcmp(b->hrecv + i * sz, b->hsend + i * sz, sz) != 0) {
                wrong(cx, c, i, " (sendbuff)", load(t, b->hrecv + i * sz),
                      load(t, b->hsend + i * sz));
                return;
            }
}

/* ------------------------------------------------------------------ the sweep */

/* Whether no rank has seen an error: after one, a communicator may be aborted, so every rank
 * leaves the sweep together and none waits in a call for a rank that left. */
static int all_ok(void)
{
    int mine = st.errors == 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

int type_counts(const struct opts *o, const struct dtype *t, size_t *out)
{
    int k = 0;
    for (; k < o->ncounts; k++)
        out[k] = o->counts[k];
    if (o->big && t->dt == ncclFloat32)
        out[k++] = BIG_COUNT;
    return k;
}

/* Roots x counts x places of one collective, type and op; 0 once the sweep must stop. */
static int run_group(const struct ctx *cx, const struct bufs *b, const struct opts *o,
                     struct tcase *c)
{
    int rooted = c->coll == BCAST || c->coll == REDUCE;
    int nroots = !rooted ? 1 : o->nroots ? o->nroots : cx->n;
    size_t counts[MAX_LIST + 1];
    int ncounts = type_counts(o, c->t, counts);
    for (int ri = 0; ri < nroots; ri++)
        for (int k = 0; k < ncounts; k++)
            for (int place = 0; place < 2; place++) {
                if (!(o->places & (1u << place)))
                    continue;
                c->root = !rooted ? -1 : o->nroots ? o->roots[ri] : ri;
                c->count = counts[k];
                c->inplace = place;
                run_case(cx, b, c);
                c->id++;
                if (!all_ok())
                    return 0;
            }
    return 1;
}

static void renew_bufs(ncclComm_t comm, struct bufs *b, const struct opts *o);

static void run_sweep(const struct ctx *cx, struct bufs *b, const struct opts *o)
{
    struct tcase c = {0};
    for (int k = 0; k < NCOLLS; k++) {
        if (!(o->colls & (1u << k)))
            continue;
        int has_op = k != BCAST && k != ALLGATHER;
        for (int ti = 0; ti < NTYPES; ti++)
            for (int op = has_op ? 0 : OP_NONE; op < (has_op ? NOPS : 0); op++) {
                if (!(o->types & (1u << ti)) || (op >= 0 && !(o->ops & (1u << op))))
                    continue;
                c.coll = (enum coll)k;
                c.t = &dtypes[ti];
                c.op = op;
                if (o->fresh)
                    renew_bufs(cx->comm, b, o);
                if (!all_ok() || !run_group(cx, b, o, &c))
                    return;
            }
    }
}

/* ------------------------------------------------------------------ teardown, split, -X */

/* Finalize and destroy, or abort where some rank saw its communicator broken: every rank
 * makes the same choice, so none finalizes against a peer that aborted. */
static void close_comm(ncclComm_t comm)
{
    int mine = st.broken, any = 0;
    ncclResult_t res;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!comm)
        return;
    if (any) {
        if ((res = ncclCommAbort(comm)) != ncclSuccess)
            nccl_failed(NULL, "ncclCommAbort", res);
        return;
    }
    if ((res = ncclCommFinalize(comm)) != ncclSuccess)
        nccl_failed(comm, "ncclCommFinalize", res);
    if ((res = ncclCommDestroy(comm)) != ncclSuccess)
        nccl_failed(NULL, "ncclCommDestroy", res);
}

/* The communicator's size and rank must be the ones MPI and the split say. */
static int check_comm(ncclComm_t comm, int n, int rank, const char *what)
{
    int cn = -1, cr = -1;
    ncclResult_t res;
    if ((res = ncclCommCount(comm, &cn)) != ncclSuccess)
        return nccl_failed(comm, "ncclCommCount", res), 0;
    if ((res = ncclCommUserRank(comm, &cr)) != ncclSuccess)
        return nccl_failed(comm, "ncclCommUserRank", res), 0;
    if (cn != n || cr != rank) {
        printf("rank %d: wrong: %s: ncclCommCount %d, ncclCommUserRank %d; expected %d, %d\n",
               world_rank, what, cn, cr, n, rank);
        st.wrong++;
    }
    return 1;
}

/* ncclCommSplit by parity, then allreduce sum float32 on the half, against its own reference. */
static void run_split(const struct ctx *cx, const struct bufs *b, const struct opts *o)
{
    int world[MAX_RANKS], half = 0;
    struct ctx sub = *cx;
    for (int r = cx->rank % 2; r < cx->n && half < (int)LEN(world); r += 2)
        world[half++] = r;
    sub.world = world;
    sub.n = half;
    sub.rank = cx->rank / 2;
    sub.comm = NULL;
    ncclResult_t res = ncclCommSplit(cx->comm, cx->rank % 2, cx->rank, &sub.comm, NULL);
    if (res != ncclSuccess) {
        nccl_failed(cx->comm, "ncclCommSplit", res);
        sub.comm = NULL;
    } else {
        check_comm(sub.comm, sub.n, sub.rank, "split");
    }
    struct tcase c = {ALLREDUCE, &dtypes[7], OP_SUM, -1, 0, 0, 0x5b1170000ull, NULL, 0, 0};
    for (size_t k = 0; k < LEN(split_counts) && all_ok(); k++)
        for (int place = 0; place < 2; place++)
            if ((o->places & (1u << place)) && all_ok()) {
                c.count = split_counts[k];
                c.inplace = place;
                run_case(&sub, b, &c);
                c.id++;
            }
    close_comm(sub.comm);
}

/* One call that must give --expect: each rank says what it got. */
static void run_xfail(const struct ctx *cx, const struct bufs *b, const struct opts *o)
{
    ncclResult_t res = ncclInvalidArgument, r2;
    const char *what = o->xfail;
    int n = cx->n, me = cx->rank;
    memset(b->hsend, 0, (size_t)(4 * n + 16) * sizeof(float));
    if (to_buf(b->a, b->hsend, (size_t)(4 * n + 16) * sizeof(float)))
        return;
    if (strcmp(what, "p2p") == 0) {
        res = ncclGroupStart();
        r2 = ncclSend(b->a, 16, ncclFloat32, (me + 1) % n, cx->comm, NULL_STREAM);
        res = res != ncclSuccess ? res : r2;
        r2 = ncclRecv(b->b, 16, ncclFloat32, (me + n - 1) % n, cx->comm, NULL_STREAM);
        res = res != ncclSuccess ? res : r2;
        r2 = ncclGroupEnd();   /* always: the group must be closed */
        res = res != ncclSuccess ? res : r2;
    } else if (strcmp(what, "alltoall") == 0) {
        res = ncclAlltoAll(b->a, b->b, 4, ncclFloat32, cx->comm, NULL_STREAM);
    } else if (strcmp(what, "premulsum") == 0) {
        float scalar = 0.5f;
        ncclRedOp_t op;
        res = ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate,
                                       cx->comm);
        if (res == ncclSuccess) {
            res = ncclAllReduce(b->a, b->b, 16, ncclFloat32, op, cx->comm, NULL_STREAM);
            r2 = ncclRedOpDestroy(op, cx->comm);
            res = res != ncclSuccess ? res : r2;
        }
    } else if (strcmp(what, "fp8") == 0) {
        res = ncclAllReduce(b->a, b->b, 16, ncclFloat8e4m3, ncclSum, cx->comm, NULL_STREAM);
    } else if (strcmp(what, "allreduce") == 0) {
        res = ncclAllReduce(b->a, b->b, 16, ncclFloat32, ncclSum, cx->comm, NULL_STREAM);
    }
    if (res == ncclSuccess)
        sync_stream();
    printf("rank %d: %s: result %d (%s): %s\n", world_rank, what, (int)res,
           ncclGetErrorString(res), ncclGetLastError(cx->comm));
    fflush(stdout);
    st.cases++;
    st.wrong += (int)res != o->expect;
    if (res != ncclSuccess && res != ncclInvalidArgument && res != ncclInvalidUsage)
        st.broken = 1;
}

/* ------------------------------------------------------------------ main */

static void alloc_bufs(struct bufs *b, size_t bytes)
{
    void *p = NULL, *q = NULL;
    ncclResult_t res;
    if ((res = ncclMemAlloc(&p, bytes)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemAlloc", res);
    else if ((res = ncclMemAlloc(&q, bytes)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemAlloc", res);
    b->a = p;
    b->b = q;
    b->bytes = bytes;
    b->hsend = malloc(bytes);
    b->hrecv = malloc(bytes);
    if (!b->hsend || !b->hrecv) {
        printf("rank %d: out of memory (%zu bytes)\n", world_rank, bytes);
        st.errors++;
    }
}

static void free_bufs(struct bufs *b)
{
    ncclResult_t res;
    if (b->a && (res = ncclMemFree(b->a)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemFree", res);
    if (b->b && (res = ncclMemFree(b->b)) != ncclSuccess)
        nccl_failed(NULL, "ncclMemFree", res);
    free(b->hsend);
    free(b->hrecv);
}

/* --register: both buffers registered with comm (register 1) or deregistered (0). */
static void register_bufs(ncclComm_t comm, struct bufs *b, int reg)
{
    ncclResult_t res;
    for (int k = 0; k < 2; k++) {
        if (reg && (res = ncclCommRegister(comm, k ? b->b : b->a, b->bytes, &b->reg[k])) !=
                       ncclSuccess)
            nccl_failed(comm, "ncclCommRegister", res);
        else if (!reg && b->reg[k] && (res = ncclCommDeregister(comm, b->reg[k])) != ncclSuccess)
            nccl_failed(comm, "ncclCommDeregister", res);
        if (!reg)
            b->reg[k] = NULL;
    }
}

/* --fresh: the buffers freed and others allocated (and registered, with --register), as a
 * caching allocator hands a program other memory from call to call. */
static void renew_bufs(ncclComm_t comm, struct bufs *b, const struct opts *o)
{
    size_t bytes = b->bytes;
    if (o->reg)
        register_bufs(comm, b, 0);
    free_bufs(b);
    alloc_bufs(b, bytes);
    if (o->reg && all_ok())
        register_bufs(comm, b, 1);
}

/* NCCL_CLIENT_MARKS/joined.RANK: this rank has returned from ncclCommInitRank. */
static void mark_joined(void)
{
    const char *dir = getenv("NCCL_CLIENT_MARKS");
    char path[4096];
    if (!dir || snprintf(path, sizeof path, "%s/joined.%d", dir, world_rank) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* NCCL_CLIENT_FAULT=mute: no MPI until every rank's mark is there, for at most MUTE_S. */
#define MUTE_S 30
static void wait_for_joined(int n)
{
    const char *dir = getenv("NCCL_CLIENT_MARKS");
    if (!dir) {
        printf("rank %d: NCCL_CLIENT_FAULT=mute needs NCCL_CLIENT_MARKS\n", world_rank);
        st.errors++;
        return;
    }
    int missing = n;
    for (int tries = 0; missing && tries < MUTE_S * 20; tries++) {
        missing = 0;
        for (int r = 0; r < n; r++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/joined.%d", dir, r);
            missing += access(path, F_OK) != 0;
        }
        struct timespec ts = {0, 50000000};
        if (missing)
            nanosleep(&ts, NULL);
    }
    if (missing) {
        printf("rank %d: NCCL_CLIENT_FAULT=mute: %d of %d ranks had not returned from "
               "ncclCommInitRank after %d s without MPI calls here\n", world_rank, missing, n,
               MUTE_S);
        st.errors++;
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    int n, rc, version = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if ((rc = parse(argc, argv, n, &o)) >= 0) {
        MPI_Finalize();
        return rc;
    }
    if (world_rank == 0 && !o.quiet && ncclGetVersion(&version) == ncclSuccess)
        printf("# nccl-client: NCCL version %d.%d.%d (%d), ranks %d\n",
               version >= 10000 ? version / 10000 : version / 1000,
               version >= 10000 ? version / 100 % 100 : version / 100 % 10, version % 100,
               version, n);
    pick_device();
    /* The id and whether rank 0 got one, in one broadcast. */
    struct { int res; ncclUniqueId id; } msg;
    memset(&msg, 0, sizeof msg);
    if (world_rank == 0 && (msg.res = ncclGetUniqueId(&msg.id)) != ncclSuccess)
        nccl_failed(NULL, "ncclGetUniqueId", (ncclResult_t)msg.res);
    MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD);
    int *world = malloc((size_t)n * sizeof *world);
    for (int r = 0; world && r < n; r++)
        world[r] = r;
    if (!world || n > MAX_RANKS) {
        printf("rank %d: %d ranks: out of memory, or over %d\n", world_rank, n, MAX_RANKS);
        st.errors++;
    }
    struct ctx cx = {NULL, world_rank, n, world, o.seed};
    struct bufs b = {0};
    ncclResult_t res;
    /* Faults for the tests: a rank that never joins, or one that dies after joining. */
    const char *fault = getenv("NCCL_CLIENT_FAULT");
    int absent = fault && strcmp(fault, "absent") == 0;
    if (absent)
        printf("rank %d: NCCL_CLIENT_FAULT=absent: not joining\n", world_rank);
    else if (msg.res == ncclSuccess && (res = ncclCommInitRank(&cx.comm, n, msg.id, world_rank))) {
        nccl_failed(NULL, "ncclCommInitRank", res);
        cx.comm = NULL;
    }
    if (cx.comm)
        mark_joined();
    if (fault && strcmp(fault, "mute") == 0 && cx.comm)
        wait_for_joined(n);
    if (fault && strcmp(fault, "exit") == 0) {
        printf("rank %d: NCCL_CLIENT_FAULT=exit: exiting\n", world_rank);
        fflush(stdout);
        _Exit(3);
    }
    if (all_ok() && !absent && check_comm(cx.comm, n, world_rank, "ncclCommInitRank"))
        alloc_bufs(&b, need_bytes(&o, n));
    if (all_ok() && !absent && o.reg)
        register_bufs(cx.comm, &b, 1);
    if (all_ok() && !absent) {
        if (o.xfail) {
            run_xfail(&cx, &b, &o);
        } else {
            run_sweep(&cx, &b, &o);
            if (o.split && all_ok())
                run_split(&cx, &b, &o);
        }
    }
    if (cx.comm && o.reg)
        register_bufs(cx.comm, &b, 0);
    close_comm(cx.comm);
    free_bufs(&b);
    free(world);

    long mine[2] = {st.wrong, st.errors}, sum[2] = {0, 0}, cases = 0;
    MPI_Reduce(&st.cases, &cases, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("# nccl-client: ranks %d, cases %ld, wrong %ld, errors %ld\n", n, cases, sum[0],
               sum[1]);
    fflush(stdout);
    int bad = st.wrong || st.errors, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
