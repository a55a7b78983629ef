/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * comm.c - communicators: one rank's init (meet the others, choose the plan for their devices,
 * export and map the segments), NCCL's two ways in (blinkCommInitRank, and blinkCommInitAll
 * as one thread per rank), destruction, abort, and the queries.
 *
 * Init of one rank: read the environment; rendezvous round 0 (who is where); choose the plan
 * for the set of devices and relabel the ranks onto it; check the plan; compute roles and the
 * staging layout; create this rank's segment; round 1 (segment handles); map every peer's;
 * round 2 (all mapped); remove the segment's name. A failure after the rendezvous opened tells
 * the other ranks at once, so they fail too instead of waiting out BLINK_TIMEOUT_S.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "net.h"
#include "rendezvous.h"
#include "rt.h"

#define DEFAULT_CHUNK_BYTES ((size_t)1 << 20)

/* Round 1's record. */
struct seg_rec {
    unsigned char handle[BK_HANDLE_BYTES];
    uint64_t ptr;        /* the segment's address in its owner (same-process peers) */
    uint64_t bytes;
    int32_t has_nccl;    /* user rank 0: nccl_id is an ncclUniqueId */
    unsigned char nccl_id[BK_NCCL_ID_BYTES];
    uint64_t channels;   /* channel_print: how this rank cut the plan's trees */
};

_Static_assert(sizeof(struct seg_rec) <= BK_RV_REC, "round 1's record must fit");

/* FNV-1a over every set's slots' plan trees: ranks whose environments cut the trees into
 * other channels (roles.c) would disagree about every offset, so they must not meet. */
static uint64_t channel_print(blinkComm_t c)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < BK_SETS * c->plan->nschedules; i++)
        for (int ti = -1; ti < c->sets[i].ntrees; ti++) {
            h ^= (uint64_t)(uint32_t)(ti < 0 ? c->sets[i].ntrees : c->sets[i].tree_of[ti]);
            h *= 0x100000001b3ull;
        }
    return h;
}

void bk_comm_free(blinkComm_t c)
{
    if (!c)
        return;
    if (c->be)
        bk_backend()->rank_free(c);
    bk_nccl_free(c);
    bk_net_comm_free(c->net);
    if (c->plan)
        bk_roles_free(c);
    bk_plan_release(c->held);
    free(c->plan_of);
    free(c->user_of);
    free(c->peer);
    free(c->said);
    bk_reg_free(c);
    pthread_mutex_destroy(&c->reg_mu);
    free(c);
}

static void say_info(blinkComm_t c)
{
    const struct bk_peer *me = &c->peer[c->prank];
    size_t slots = c->layout.slot_bytes ? (c->layout.seg_bytes[c->prank] -
                                           c->layout.slots_off[c->prank]) / c->layout.slot_bytes : 0;
    bk_log(BK_LOG_INFO, me->phys_dev, "rank %d/%d: plan rank %d of '%s' (fingerprint %s), "
           "device %d (physical %d, bus %s) of server %d, %d of %d peers there, on %s pid %d; "
           "%d stream%s, %d thread%s; staging %zu bytes (%zu slots of %zu bytes); timeout %g s",
           c->rank, c->nranks, c->prank, c->plan->topology ? c->plan->topology : "?",
           c->plan->fingerprint ? c->plan->fingerprint : "?", me->topo_dev, me->phys_dev,
           me->busid[0] ? me->busid : "-", me->server, c->nranks - 1 - c->nremote,
           c->nranks - 1, me->host, me->pid, c->nstreams,
           c->nstreams == 1 ? "" : "s", c->nworkers, c->nworkers == 1 ? "" : "s",
           c->layout.seg_bytes[c->prank], slots, c->layout.slot_bytes, c->env.timeout_s);
}

/* lib is one plan of several servers, for n ranks. */
static int one_cluster_plan(const struct blink_plan_library *lib, int n)
{
    return lib && lib->abi == BLINK_PLAN_ABI && lib->nplans == 1 && lib->plans &&
           lib->plans[0] && lib->plans[0]->nservers > 1 && lib->plans[0]->nranks == n &&
           lib->plans[0]->devices;
}

/* A cluster plan's edges between servers go over MPI: on a backend that moves them, with ranks
 * that met over MPI, and an MPI that lets the executor's threads call it. Else NCCL alone runs
 * the calls where flags allow it. */
static blinkResult_t cluster_ready(blinkComm_t c, unsigned flags, const char *fn)
{
    const char *level = "";
    char why[BK_MSG_MAX] = "";
    if (!bk_backend()->net)
        snprintf(why, sizeof why, "the plan spans %d servers, and the %s backend does not move "
                 "data between servers yet", c->plan->nservers, bk_backend()->name);
    else if (c->mpi_root < 0)
        snprintf(why, sizeof why, "the plan spans %d servers, but the unique id was not made in "
                 "an MPI job (%s%smake it with MPI running: the ranks meet and move data over "
                 "MPI)", c->plan->nservers, bk_net_why(), bk_net_why()[0] ? "; " : "");
    else if (!bk_net_threads_ok(&level))
        snprintf(why, sizeof why, "the plan spans %d servers, and MPI was started with %s "
                 "(start it with MPI_Init_thread and MPI_THREAD_SERIALIZED or more)",
                 c->plan->nservers, level);
    if (!why[0])
        return blinkSuccess;
    if (!(flags & BK_INIT_PLANLESS))
        return bk_error(blinkInvalidUsage, "%s: %s", fn, why);
    bk_set_last_error(why);
    c->plan = NULL;
    return blinkSuccess;
}

/* The plan for the ranks' devices and the relabelling onto it; or, where flags allow, no plan:
 * the ranks keep their numbers and the communicator is NCCL's alone. */
static blinkResult_t choose_plan(const struct blink_plan_library *lib, blinkComm_t c,
                                 const struct bk_rv_who *who, unsigned flags, const char *fn)
{
    int n = c->nranks, ngroups = 0;
    int *topo = malloc(sizeof *topo * (size_t)n), *group = malloc(sizeof *group * (size_t)n);
    if (!topo || !group) {
        free(topo);
        free(group);
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    }
    /* Ranks that name one server share it; servers are numbered as their first rank comes. */
    for (int u = 0; u < n; u++) {
        topo[u] = who[u].topo_dev;
        group[u] = -1;
        for (int v = 0; v < u && group[u] < 0; v++)
            if (!strncmp(who[u].server, who[v].server, sizeof who[u].server))
                group[u] = group[v];
        if (group[u] < 0)
            group[u] = ngroups++;
    }
    blinkResult_t r = blinkSuccess;
    if ((flags & BK_INIT_ONE_PROCESS) && one_cluster_plan(lib, n)) {
        /* A cluster emulated by threads: rank u plays plan rank u, all in shared memory. */
        c->plan = lib->plans[0];
        for (int u = 0; u < n; u++)
            c->plan_of[u] = u;
    } else if (!(flags & BK_INIT_NCCL_ONLY)) {
        r = bk_pick_plan(lib, n, topo, group, ngroups, &c->plan, c->plan_of);
    }
    free(topo);
    free(group);
    c->plan_index = -1;
    for (int k = 0; c->plan && k < lib->nplans && c->plan_index < 0; k++)
        if (lib->plans[k] == c->plan)
            c->plan_index = k;
    if (r == blinkSuccess && c->plan && (r = bk_plan_hold(c->plan, &c->held, fn)) == blinkSuccess)
        c->plan = c->held;
    if (r == blinkSuccess && c->plan && c->plan->nservers > 1 && !(flags & BK_INIT_ONE_PROCESS))
        r = cluster_ready(c, flags, fn);
    if (r != blinkSuccess)
        return r;
    if (!c->plan && !(flags & (BK_INIT_PLANLESS | BK_INIT_NCCL_ONLY)))
        return blinkInvalidUsage; /* bk_pick_plan stored why */
    if (!c->plan) {
        snprintf(c->plan_why, sizeof c->plan_why, "%s", (flags & BK_INIT_NCCL_ONLY) ?
                 "the communicator's config asks for NCCL" : bk_last_error());
        for (int u = 0; u < n; u++)
            c->plan_of[u] = u;
    }
    for (int u = 0; u < n; u++) {
        c->user_of[c->plan_of[u]] = u;
        struct bk_peer *p = &c->peer[c->plan_of[u]];
        p->pid = who[u].pid;
        p->topo_dev = who[u].topo_dev;
        p->phys_dev = who[u].phys_dev;
        p->world = who[u].world;
        p->server = c->plan && c->plan->servers ? c->plan->servers[c->plan_of[u]] : 0;
        memcpy(p->host, who[u].host, sizeof p->host);
        memcpy(p->busid, who[u].busid, sizeof p->busid);
    }
    c->prank = c->plan_of[c->rank];
    for (int q = 0; q < n && !(flags & BK_INIT_ONE_PROCESS); q++) {
        c->peer[q].remote = c->peer[q].server != c->peer[c->prank].server;
        c->nremote += c->peer[q].remote;
    }
    return c->plan ? bk_check_plan(c->plan, fn) : blinkSuccess;
}

/* What a plan needs of this rank before round 1: roles, layout, resources, the segment. */
static blinkResult_t prepare(blinkComm_t c, const char *name, void **seg, struct seg_rec *mine,
                             const char *fn)
{
    const struct bk_backend *be = bk_backend();
    c->chunk_bytes = c->plan->chunk_bytes ? c->plan->chunk_bytes : DEFAULT_CHUNK_BYTES;
    c->said_stride = 1;
    for (int i = 0; i < c->plan->nschedules; i++)
        if (c->plan->schedules[i].nranges + 1 > c->said_stride)
            c->said_stride = c->plan->schedules[i].nranges + 1;
    c->said = calloc((size_t)c->plan->nschedules * (size_t)c->said_stride + 1, 1);
    blinkResult_t r = c->said ? blinkSuccess : bk_error(blinkSystemError, "%s: out of memory",
                                                        fn);
    if (r == blinkSuccess)
        r = bk_roles_build(c);
    if (r == blinkSuccess)
        r = bk_layout_build(c);
    if (r == blinkSuccess)
        r = be->rank_init(c);
    if (r == blinkSuccess) {
        mine->channels = channel_print(c);
        mine->bytes = c->layout.seg_bytes[c->prank];
        r = be->seg_create(c, name, (size_t)mine->bytes, seg, mine->handle);
    }
    if (r == blinkSuccess) {
        c->peer[c->prank].seg = *seg;
        mine->ptr = (uint64_t)(uintptr_t)*seg;
    }
    return r;
}

/* The MPI communicator of a cluster plan's ranks, rank q being plan rank q. */
static blinkResult_t open_net(blinkComm_t c, const char *fn)
{
    int *world = malloc(sizeof *world * (size_t)c->nranks);
    if (!world)
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    for (int q = 0; q < c->nranks; q++)
        world[q] = c->peer[q].world;
    char msg[BK_MSG_MAX];
    int tag = (int)(bk_rv_token_hash(c->token) % BK_NET_TAG_MAX);
    int rc = bk_net_comm_create(world, c->nranks, tag, &c->net, msg, sizeof msg);
    free(world);
    return rc ? bk_error(blinkSystemError, "%s: %s", fn, msg) : blinkSuccess;
}

/* Everything after round 0: plan, relabelling, roles, layout, segments; *first gets user rank
 * 0's record (NCCL's id). */
static blinkResult_t join(const struct blink_plan_library *lib, blinkComm_t c, struct bk_rv *rv,
                          const char *token, const struct bk_rv_who *who, unsigned flags,
                          struct seg_rec *first, const char *fn)
{
    const struct bk_backend *be = bk_backend();
    int n = c->nranks;
    c->plan_of = malloc(sizeof *c->plan_of * (size_t)n);
    c->user_of = malloc(sizeof *c->user_of * (size_t)n);
    c->peer = calloc((size_t)n, sizeof *c->peer);
    unsigned char *all = malloc((size_t)n * BK_RV_REC);
    blinkResult_t r = blinkSuccess;
    if (!c->plan_of || !c->user_of || !c->peer || !all)
        r = bk_error(blinkSystemError, "%s: out of memory", fn);
    c->one_process = (flags & BK_INIT_ONE_PROCESS) != 0;
    if (r == blinkSuccess)
        r = choose_plan(lib, c, who, flags, fn);
    char name[64];
    bk_rv_seg_name(token, c->prank, name, sizeof name);
    struct seg_rec mine = {{0}, 0, 0, 0, {0}, 0};
    void *seg = NULL;
    if (r == blinkSuccess && c->plan)
        r = prepare(c, name, &seg, &mine, fn);
    if (r == blinkSuccess && c->rank == 0)
        mine.has_nccl = bk_nccl_id(mine.nccl_id);
    unsigned char rec[BK_RV_REC] = {0};
    memcpy(rec, &mine, sizeof mine);
    if (r == blinkSuccess)
        r = bk_rv_allgather(rv, 1, rec, all, fn);
    for (int u = 0; u < n && r == blinkSuccess && c->plan; u++) {
        int q = c->plan_of[u];
        struct seg_rec peer;
        memcpy(&peer, all + (size_t)u * BK_RV_REC, sizeof peer);
        char pname[64];
        bk_rv_seg_name(token, q, pname, sizeof pname);
        void *p = NULL;
        if (peer.channels != mine.channels) {
            r = bk_error(blinkInvalidUsage, "%s: rank %d cut the plan's trees into other channels "
                         "than rank %d (BLINK_NCHANNELS and BLINK_CHANNEL_GBPS must be the same on "
                         "every rank)", fn, u, c->rank);
            break;
        }
        if (q != c->prank && !c->peer[q].remote) {
            r = be->seg_open(c, q, pname, peer.handle, (size_t)peer.bytes,
                             c->peer[q].pid == getpid(), (void *)(uintptr_t)peer.ptr, &p);
            c->peer[q].seg = p;
        }
    }
    if (r == blinkSuccess)
        memcpy(first, all, sizeof *first);
    if (r == blinkSuccess) {
        memset(rec, 0, sizeof rec);
        r = bk_rv_allgather(rv, 2, rec, all, fn);
    }
    if (seg)
        be->seg_unlink(name);
    free(all);
    /* Every rank has passed round 2 with the same plan: all make its MPI communicator. */
    if (r == blinkSuccess && c->plan && c->plan->nservers > 1 && !(flags & BK_INIT_ONE_PROCESS))
        r = open_net(c, fn);
    return r;
}

/* After the rendezvous has closed (its last messages gone: the others may need them to get
 * here), NCCL's init, a collective of its own that waits for every rank without our help. */
static blinkResult_t join_nccl(blinkComm_t c, const struct seg_rec *first, const char *fn)
{
    if (first->has_nccl)
        bk_nccl_init(c, first->nccl_id);
    /* One rank needs no one: its collectives are copies (libblink-nccl). */
    if (!c->plan && !c->nccl && c->nranks > 1)
        return bk_error(blinkInvalidUsage, "%s: %s; and there is no NCCL to hand the calls to "
                        "(%s)", fn, c->plan_why, bk_nccl_missing(c));
    return blinkSuccess;
}

blinkResult_t bk_init_rank(const struct blink_plan_library *lib, blinkComm_t *out, int nranks,
                           const blinkUniqueId *id, int rank, int topo_dev, int phys_dev,
                           unsigned flags, const char *fn)
{
    const struct bk_backend *be = bk_backend();
    if (!out)
        return bk_error(blinkInvalidArgument, "%s: comm is NULL", fn);
    *out = NULL;
    if (nranks < 1 || nranks > 4096 || rank < 0 || rank >= nranks)
        return bk_error(blinkInvalidArgument, "%s: rank %d of nranks %d is out of range", fn,
                        rank, nranks);
    char token[BK_TOKEN_CHARS + 1];
    blinkComm_t c = calloc(1, sizeof *c);
    if (!c)
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    pthread_mutex_init(&c->reg_mu, NULL);
    c->nranks = nranks;
    c->rank = rank;
    blinkResult_t r = bk_read_env(&c->env, fn);
    c->seq = c->env.seq_start - 1; /* the last call's number: the first is seq_start */
    if (r == blinkSuccess)
        r = be->configure();
    if (r == blinkSuccess)
        r = bk_rv_token(id, token, &c->mpi_root, fn);
    snprintf(c->token, sizeof c->token, "%s", r == blinkSuccess ? token : "");
    struct bk_rv *rv = NULL;
    if (r == blinkSuccess)
        r = bk_rv_open(token, c->mpi_root, nranks, rank, c->env.timeout_s, &rv, fn);
    if (r != blinkSuccess) {
        bk_comm_free(c);
        return r;
    }
    int current = be->current_device();
    unsigned char rec[BK_RV_REC] = {0};
    struct bk_rv_who me = {getpid(), 0, 0, c->mpi_root >= 0 ? bk_net_world_rank() : -1, "", "",
                           ""};
    me.topo_dev = topo_dev >= 0 ? topo_dev : c->env.device >= 0 ? c->env.device
                : current >= 0 ? current : rank;
    me.phys_dev = phys_dev >= 0 ? phys_dev : current >= 0 ? current : me.topo_dev;
    if (gethostname(me.host, sizeof me.host - 1) != 0)
        snprintf(me.host, sizeof me.host, "?");
    snprintf(me.server, sizeof me.server, "%s", c->env.server[0] ? c->env.server : me.host);
    be->bus_id(me.phys_dev, me.busid, sizeof me.busid);
    /* NCCL's first lines: its version (rank 0) and the variables set, once per process. */
    if (rank == 0)
        bk_log_version(c->env.log_level, c->env.log_mask, me.phys_dev, be->name);
    bk_log_env(c->env.log_level, c->env.log_mask, me.phys_dev);
    memcpy(rec, &me, sizeof me);
    struct seg_rec first = {{0}, 0, 0, 0, {0}, 0};
    struct bk_rv_who *who = malloc((size_t)nranks * BK_RV_REC);
    if (!who)
        r = bk_error(blinkSystemError, "%s: out of memory", fn);
    else
        r = bk_rv_allgather(rv, 0, rec, who, fn);
    if (r == blinkSuccess) {
        /* Records are BK_RV_REC apart; pack them into an array of struct bk_rv_who. */
        for (int u = 1; u < nranks; u++)
            memmove(&who[u], (unsigned char *)who + (size_t)u * BK_RV_REC, sizeof *who);
        r = join(lib, c, rv, token, who, flags, &first, fn);
    }
    free(who);
    if (r == blinkSuccess) {
        bk_rv_close(rv); /* NCCL's init may need the others past it */
        rv = NULL;
        r = join_nccl(c, &first, fn);
    }
    if (r != blinkSuccess) {
        char msg[BK_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", bk_last_error());
        if (rv) /* still open: the others learn of the failure */
            bk_rv_fail(rv, msg);
        bk_rv_close(rv);
        bk_comm_free(c);
        bk_set_last_error(msg);
        return r;
    }
    if (bk_logs(&c->env, BK_LOG_INFO, BK_SUB_INIT) && c->plan)
        say_info(c);
    else if (bk_logs(&c->env, BK_LOG_INFO, BK_SUB_INIT))
        bk_log(BK_LOG_INFO, bk_log_dev(c), "rank %d/%d: every call goes to NCCL: %s", c->rank,
               c->nranks, c->plan_why);
    *out = c;
    return blinkSuccess;
}

blinkResult_t blinkrtCommInitRankFrom(const struct blink_plan_library *lib, blinkComm_t *comm,
                                      int nranks, blinkUniqueId id, int rank)
{
    return bk_init_rank(lib, comm, nranks, &id, rank, -1, -1, 0, "blinkCommInitRank");
}

/* ------------------------------------------------------------------ ranks as threads */

/* BLINK_DEVICE_MAP: exactly n non-negative integers separated by commas. */
static blinkResult_t parse_device_map(const char *s, int n, int *devs)
{
    const char *p = s;
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > 1 << 20 || (*end != ',' && *end != '\0') ||
            (*end == '\0' && i != n - 1) || (*end == ',' && i == n - 1))
            return bk_error(blinkInvalidArgument, "blinkCommInitAll: BLINK_DEVICE_MAP='%s' "
                            "must list %d device ordinals separated by commas", s, n);
        devs[i] = (int)v;
        p = end + 1;
    }
    return blinkSuccess;
}

struct init_job {
    const struct blink_plan_library *lib;
    blinkComm_t *out;
    int n, rank, topo_dev, phys_dev;
    unsigned flags;
    const char *fn;
    blinkUniqueId id;
    blinkResult_t res;
    char msg[BK_MSG_MAX];
};

static void *init_thread(void *arg)
{
    struct init_job *j = arg;
    j->res = bk_init_rank(j->lib, j->out, j->n, &j->id, j->rank, j->topo_dev, j->phys_dev,
                          j->flags, j->fn);
    snprintf(j->msg, sizeof j->msg, "%s", j->res == blinkSuccess ? "" : bk_last_error());
    return NULL;
}

blinkResult_t bk_init_all(const struct blink_plan_library *lib, blinkComm_t *comms, int ndev,
                          const int *devlist, unsigned flags, const char *fn)
{
    if (!comms)
        return bk_error(blinkInvalidArgument, "%s: comms is NULL", fn);
    if (ndev < 1 || ndev > 4096)
        return bk_error(blinkInvalidArgument, "%s: ndev is %d", fn, ndev);
    int *phys = malloc(sizeof *phys * (size_t)ndev);
    struct init_job *jobs = calloc((size_t)ndev, sizeof *jobs);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    blinkUniqueId id;
    blinkResult_t r = phys && jobs && th ? blinkGetUniqueId(&id)
                      : bk_error(blinkSystemError, "%s: out of memory", fn);
    /* Threads of one process meet in shared memory, even in an MPI job. */
    char token[BK_TOKEN_CHARS + 1];
    int mpi_root = -1;
    if (r == blinkSuccess && bk_rv_token(&id, token, &mpi_root, fn) == blinkSuccess)
        bk_rv_make_id(token, -1, &id);
    const char *map = getenv("BLINK_DEVICE_MAP");
    for (int i = 0; i < ndev && r == blinkSuccess; i++)
        phys[i] = -1;
    if (r == blinkSuccess && map && *map)
        r = parse_device_map(map, ndev, phys);
    /* Virtual ranks on a one-plan source: rank i plays the plan's rank i, wherever it runs;
     * so do the ranks of a cluster plan, whose devices repeat on every server. */
    int virt = (map && *map && lib && lib->nplans == 1 && lib->plans && lib->plans[0] &&
                lib->plans[0]->nranks == ndev && lib->plans[0]->devices) ||
               one_cluster_plan(lib, ndev);
    int started = 0;
    for (int i = 0; i < ndev && r == blinkSuccess; i++) {
        int topo = virt ? lib->plans[0]->devices[i] : devlist ? devlist[i] : i;
        jobs[i] = (struct init_job){lib, &comms[i], ndev, i, topo, phys[i],
                                    flags | BK_INIT_ONE_PROCESS, fn, id, blinkSuccess, ""};
        if (pthread_create(&th[i], NULL, init_thread, &jobs[i]) != 0) {
            r = bk_error(blinkSystemError, "%s: cannot start a thread", fn);
            /* The ranks already started time out; give them an id no one else has. */
        } else {
            started++;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    char msg[BK_MSG_MAX] = "";
    for (int i = 0; i < started && r == blinkSuccess; i++)
        if (jobs[i].res != blinkSuccess) {
            r = jobs[i].res;
            /* The first cause, not a rank that only heard another rank give up. */
            for (int k = 0; k < started; k++)
                if (jobs[k].res != blinkSuccess && jobs[k].res != blinkRemoteError) {
                    r = jobs[k].res;
                    i = k;
                    break;
                }
            snprintf(msg, sizeof msg, "%s", jobs[i].msg);
        }
    if (r != blinkSuccess) {
        if (!msg[0])
            snprintf(msg, sizeof msg, "%s", bk_last_error());
        for (int i = 0; i < started; i++)
            if (jobs[i].res == blinkSuccess) {
                bk_comm_free(comms[i]);
                comms[i] = NULL;
            }
        bk_set_last_error(msg);
    }
    free(phys);
    free(jobs);
    free(th);
    return r;
}

blinkResult_t blinkrtCommInitAllFrom(const struct blink_plan_library *lib, blinkComm_t *comms,
                                     int ndev, const int *devlist)
{
    return bk_init_all(lib, comms, ndev, devlist, 0, "blinkCommInitAll");
}

blinkResult_t blinkrtCommInitAll(const struct blink_plan *plan, blinkComm_t *comms, int ndev,
                                 const int *devlist)
{
    if (!plan)
        return bk_error(blinkInvalidArgument, "blinkCommInitAll: plan is NULL");
    const struct blink_plan *one[1] = {plan};
    struct blink_plan_library lib = {BLINK_PLAN_ABI, 1, one, 0, NULL};
    if (plan->abi != BLINK_PLAN_ABI)
        return bk_check_plan(plan, "blinkCommInitAll");
    return blinkrtCommInitAllFrom(&lib, comms, ndev, devlist);
}

/* ------------------------------------------------------------------ the rest of the API */

blinkResult_t blinkCommDestroy(blinkComm_t comm)
{
    if (!comm)
        return bk_error(blinkInvalidArgument, "blinkCommDestroy: comm is NULL");
    bk_comm_free(comm);
    return blinkSuccess;
}

blinkResult_t blinkCommAbort(blinkComm_t comm)
{
    if (!comm)
        return bk_error(blinkInvalidArgument, "blinkCommAbort: comm is NULL");
    char msg[128];
    snprintf(msg, sizeof msg, "blinkCommAbort was called on rank %d", comm->rank);
    if (comm->be)
        bk_backend()->abort(comm, msg);
    bk_nccl_abort(comm);
    bk_comm_free(comm);
    return blinkSuccess;
}

blinkResult_t blinkCommGetAsyncError(blinkComm_t comm, blinkResult_t *asyncError)
{
    if (!comm || !asyncError)
        return bk_error(blinkInvalidArgument, "blinkCommGetAsyncError: %s is NULL",
                        comm ? "asyncError" : "comm");
    /* A communicator without a plan has no backend state: its errors are NCCL's. */
    *asyncError = comm->be ? bk_backend()->async_error(comm) : blinkSuccess;
    return blinkSuccess;
}

blinkResult_t blinkCommCount(const blinkComm_t comm, int *count)
{
    if (!comm || !count)
        return bk_error(blinkInvalidArgument, "blinkCommCount: %s is NULL",
                        comm ? "count" : "comm");
    *count = comm->nranks;
    return blinkSuccess;
}

blinkResult_t blinkCommCuDevice(const blinkComm_t comm, int *device)
{
    if (!comm || !device)
        return bk_error(blinkInvalidArgument, "blinkCommCuDevice: %s is NULL",
                        comm ? "device" : "comm");
    *device = comm->peer[comm->prank].phys_dev;
    return blinkSuccess;
}

blinkResult_t blinkCommUserRank(const blinkComm_t comm, int *rank)
{
    if (!comm || !rank)
        return bk_error(blinkInvalidArgument, "blinkCommUserRank: %s is NULL",
                        comm ? "rank" : "comm");
    *rank = comm->rank;
    return blinkSuccess;
}

blinkResult_t blinkrtCommStats(const blinkComm_t comm, struct blinkrt_stats *s)
{
    if (!comm || !s)
        return bk_error(blinkInvalidArgument, "blinkrtCommStats: %s is NULL",
                        comm ? "stats" : "comm");
    s->plan_rank = comm->prank;
    s->plan_index = comm->plan ? comm->plan_index : -1;
    s->streams = comm->nstreams;
    s->threads = comm->nworkers;
    s->staging_bytes = comm->layout.seg_bytes[comm->prank];
    s->slot_bytes = comm->layout.slot_bytes;
    s->last_call_ops = comm->ops;
    s->last_call_edge_bytes[0] = comm->edge_bytes[0];
    s->last_call_edge_bytes[1] = comm->edge_bytes[1];
    return blinkSuccess;
}
