/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_interp.c - the MSCCL XML interpreter for the tests (see msccl_interp.h).
 *
 * Files are read as the executors read them (msccl_read.c: bytes, tags, values, numbers) and
 * hold to the words and attributes their parser compares with. The lines are those of
 * src/misc/msccl/msccl_parser.cc in msccl-executor-nccl at c6f6b36d1a4c; RCCL's at
 * 0cbce2a7571c are the same up to 710 and two later past 721:
 *  - <algo> needs nchunksperloop, nchannels, ngpus, proto, coll, minBytes, maxBytes, inplace
 *    and outofplace (314-389; the metadata pass again, 728-787); name is not read.
 *  - proto is "Simple", "LL128" or "LL" (290-302).
 *  - coll is "reduce", "broadcast", "allreduce", "reducescatter" or "allgather", which run
 *    here, or "send", "recv", "gather", "scatter", "alltoall" or "alltoallv", which do not
 *    (334-372, 742-771); any other word fails the file and, in the metadata pass, the whole
 *    directory. (SCCL and the older MSCCL fork of NCCL spelled it "reduce_scatter"; these
 *    executors refuse that.)
 *  - <gpu> needs id, i_chunks, o_chunks, s_chunks, s_chunks >= 0 (398-407); <tb> needs id,
 *    recv, send, chan, an id from 0 without gaps and no id twice, peers -1 or another rank,
 *    channel 0..32 (412-453, 684-697); <step> needs s, srcoff, srcbuf, dstoff, dstbuf, cnt,
 *    type, depid, deps, hasdep (472-483), s from 0 to 63 (485-492), a type among s, r, rcs,
 *    rrs, rrc, rrcs, cpy, re, nop (499-545), buffers "i", "o" or "s" (256-268), cnt 0..71
 *    (577-580) and hasdep 0 or 1 (647-650).
 * Limits are those of the executors' src/include/msccl/msccl_struct.h: steps per threadblock
 * below MSCCL_MAX_NUM_STEPS (64, both), threadblock ids below RCCL's
 * MSCCL_MAX_NUM_THREAD_BLOCKS (64; NCCL's is 32 per channel times MAXCHANNELS), dependencies on
 * threadblocks up to 127 (int8_t dependentBid), channels below MAXCHANNELS (32 in NCCL), cnt
 * below MSCCL_MAX_COUNT (72), at most 32 sending and 32 receiving threadblocks per channel
 * (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL), offsets in int16_t. A file must also be
 * well-formed XML, for the other tools that read it.
 */
#include "msccl_interp.h"
#include "msccl_read.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct val {
    int idx;       /* the input chunk it stems from (global index); -1 undefined */
    uint64_t mask; /* ranks summed into it */
};

struct st {
    char type[8];
    char sb, db;
    int so, dof, cnt, depid, deps, hasdep, s;
};

struct tb {
    int id, send, recv, chan;
    struct st *v;
    int n;
    int pc;    /* next step */
    int flag;  /* the last step with hasdep done, -1 */
};

struct gpu {
    int id, ic, oc, sc;
    struct tb *tb;
    int ntb;
    struct val *in, *out, *scr;
};

struct msg {
    struct val *v;
    int cnt;
    int full;
};

struct prog {
    char coll[16];
    int ngpus, nchunks, nchannels, inplace_ok, root, inplace;
    struct gpu *g;
    struct msg *fifo; /* [ngpus][ngpus][nchannels], one message each */
};

static void fail(struct mi_result *r, const char *fmt, ...)
{
    if (!r->ok && r->why[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    r->ok = 0;
}

static void limit(struct mi_result *r, const char *fmt, ...)
{
    if (r->limits++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->limit, sizeof r->limit, fmt, ap);
        va_end(ap);
    }
}

/* One of the words a parser compares a value with, or NULL. */
static const char *one_of(const char *v, const char *const *words)
{
    for (int i = 0; v && words[i]; i++)
        if (strcmp(v, words[i]) == 0)
            return words[i];
    return NULL;
}

/* The executors' words (msccl_parser.cc lines in the file's head). */
static const char *const colls_run[] = {"reduce", "broadcast", "allreduce", "reducescatter",
                                        "allgather", NULL};
static const char *const colls_other[] = {"send", "recv", "gather", "scatter", "alltoall",
                                          "alltoallv", NULL};
static const char *const protos[] = {"Simple", "LL128", "LL", NULL};
static const char *const types[] = {"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop",
                                    NULL};
static const char *const bufs[] = {"i", "o", "s", NULL};

static int read_step(const struct mr_node *n, struct st *s, char *why, size_t cap)
{
    int ok = 1;
    s->s = mr_int(n, "s", &ok);
    s->so = mr_int(n, "srcoff", &ok);
    s->dof = mr_int(n, "dstoff", &ok);
    s->cnt = mr_int(n, "cnt", &ok);
    s->depid = mr_int(n, "depid", &ok);
    s->deps = mr_int(n, "deps", &ok);
    s->hasdep = mr_int(n, "hasdep", &ok);
    const char *ty = mr_attr(n, "type"), *sb = mr_attr(n, "srcbuf"), *db = mr_attr(n, "dstbuf");
    if (!ok || !ty || !sb || !db)
        snprintf(why, cap, "a <step> without one of s, type, srcbuf, srcoff, dstbuf, dstoff, "
                           "cnt, depid, deps, hasdep");
    else if (!one_of(ty, types))
        snprintf(why, cap, "step type \"%s\": the executors refuse it", ty);
    else if (!one_of(sb, bufs) || !one_of(db, bufs))
        snprintf(why, cap, "buffer \"%s\" or \"%s\": the executors know i, o and s", sb, db);
    else if (s->hasdep != 0 && s->hasdep != 1)
        snprintf(why, cap, "hasdep %d: the executors take 0 or 1", s->hasdep);
    else if (s->s < 0 || s->cnt < 0)
        snprintf(why, cap, "a negative step number or cnt");
    else {
        snprintf(s->type, sizeof s->type, "%s", ty);
        s->sb = sb[0];
        s->db = db[0];
        return 1;
    }
    return 0;
}

static int read_tb(const struct mr_node *n, int gpu, struct tb *t, char *why, size_t cap)
{
    int ok = 1;
    t->id = mr_int(n, "id", &ok);
    t->send = mr_int(n, "send", &ok);
    t->recv = mr_int(n, "recv", &ok);
    t->chan = mr_int(n, "chan", &ok);
    t->flag = -1;
    if (!ok) {
        snprintf(why, cap, "gpu %d: a <tb> without id, send, recv or chan", gpu);
        return 0;
    }
    if (t->id < 0 || t->send < -1 || t->recv < -1 || t->send == gpu || t->recv == gpu ||
        t->chan < 0) {
        snprintf(why, cap, "gpu %d tb %d: a negative id or channel, or a bad peer", gpu, t->id);
        return 0;
    }
    t->n = n->nsub;
    t->v = calloc((size_t)t->n + 1, sizeof *t->v);
    for (int i = 0; t->v && i < t->n; i++)
        if (!read_step(&n->sub[i], &t->v[i], why, cap))
            return 0;
    return t->v != NULL;
}

static int read_gpu(const struct mr_node *n, struct gpu *g, char *why, size_t cap)
{
    int ok = 1;
    g->id = mr_int(n, "id", &ok);
    g->ic = mr_int(n, "i_chunks", &ok);
    g->oc = mr_int(n, "o_chunks", &ok);
    g->sc = mr_int(n, "s_chunks", &ok);
    if (!ok || g->sc < 0) {
        snprintf(why, cap, "a <gpu> without id, i_chunks, o_chunks or s_chunks, or s_chunks < 0");
        return 0;
    }
    g->ntb = n->nsub;
    g->tb = calloc((size_t)g->ntb + 1, sizeof *g->tb);
    for (int i = 0; g->tb && i < g->ntb; i++)
        if (!read_tb(&n->sub[i], g->id, &g->tb[i], why, cap))
            return 0;
    return g->tb != NULL;
}

/* The file as the executors read it (msccl_read.h), then as XML (other tools read it too). */
static int read_prog(const char *path, struct prog *p, struct mi_result *r)
{
    char why[256];
    struct mr_node *a = mr_read(path, why, sizeof why);
    if (!a) {
        fail(r, "%s: the executors' parser refuses it: %s", path, why);
        return 0;
    }
    int ok = 1;
    p->ngpus = mr_int(a, "ngpus", &ok);
    p->nchunks = mr_int(a, "nchunksperloop", &ok);
    p->nchannels = mr_int(a, "nchannels", &ok);
    p->inplace_ok = mr_int(a, "inplace", &ok);
    mr_int(a, "outofplace", &ok);
    mr_int64(a, "minBytes", &ok);
    mr_int64(a, "maxBytes", &ok);
    const char *coll = mr_attr(a, "coll"), *proto = mr_attr(a, "proto");
    why[0] = '\0';
    if (!ok || !coll || !proto)
        snprintf(why, sizeof why, "<algo> lacks one of nchunksperloop, nchannels, ngpus, proto, "
                                  "coll, minBytes, maxBytes, inplace, outofplace");
    else if (!one_of(proto, protos))
        snprintf(why, sizeof why, "proto \"%s\": the executors refuse it", proto);
    else if (one_of(coll, colls_other))
        snprintf(why, sizeof why, "coll \"%s\" is not modelled here", coll);
    else if (!one_of(coll, colls_run))
        snprintf(why, sizeof why, "coll \"%s\": the executors refuse it", coll);
    else if (p->ngpus < 1 || p->ngpus > MI_MAX_GPUS || p->nchunks < 1 || p->nchannels < 1)
        snprintf(why, sizeof why, "ngpus, nchunksperloop or nchannels out of range");
    else
        snprintf(p->coll, sizeof p->coll, "%s", coll);
    if (!why[0])
        p->g = calloc((size_t)p->ngpus, sizeof *p->g);
    int ng = 0;
    for (int i = 0; p->g && !why[0] && i < a->nsub; i++) {
        struct gpu g;
        memset(&g, 0, sizeof g);
        if (read_gpu(&a->sub[i], &g, why, sizeof why) &&
            (g.id < 0 || g.id >= p->ngpus || p->g[g.id].tb))
            snprintf(why, sizeof why, "gpu id %d out of range or twice", g.id);
        if (!why[0]) {
            p->g[g.id] = g;
            ng++;
        } else {
            for (int k = 0; g.tb && k < g.ntb; k++)
                free(g.tb[k].v);
            free(g.tb);
        }
    }
    if (!why[0] && ng != p->ngpus)
        snprintf(why, sizeof why, "%d <gpu> elements for %d ranks", ng, p->ngpus);
    mr_free(a);
    if (why[0]) {
        fail(r, "%s: %s", path, why);
        return 0;
    }
    xmlDoc *doc = xmlReadFile(path, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                                              XML_PARSE_NOWARNING);
    if (!doc)
        fail(r, "%s: not well-formed XML", path);
    xmlFreeDoc(doc);
    return r->ok;
}

/* The executors' limits (see the file's head). */
static void check_limits(const struct prog *p, struct mi_result *r)
{
    if (p->nchannels > 32)
        limit(r, "nchannels %d > MAXCHANNELS 32", p->nchannels);
    if (p->nchunks > 32767)
        limit(r, "nchunksperloop %d does not fit int16_t offsets", p->nchunks);
    for (int i = 0; i < p->ngpus; i++) {
        const struct gpu *g = &p->g[i];
        int senders[32] = {0}, receivers[32] = {0};
        for (int k = 0; k < g->ntb; k++) {
            const struct tb *t = &g->tb[k];
            if (t->id >= 64)
                limit(r, "gpu %d: threadblock %d >= 64 (RCCL)", i, t->id);
            if (t->n > 64)
                limit(r, "gpu %d tb %d: %d steps > MSCCL_MAX_NUM_STEPS 64", i, t->id, t->n);
            if (t->chan >= 0 && t->chan < 32) {
                senders[t->chan] += t->send >= 0;
                receivers[t->chan] += t->recv >= 0;
            }
            for (int j = 0; j < t->n; j++) {
                if (t->v[j].cnt >= 72)
                    limit(r, "gpu %d tb %d step %d: cnt %d >= 72", i, t->id, j, t->v[j].cnt);
                if (t->v[j].depid > 127)
                    limit(r, "gpu %d tb %d step %d: depid %d > 127", i, t->id, j,
                          t->v[j].depid);
            }
            for (int m = 0; m < k; m++) /* one threadblock per connection */
                if (g->tb[m].chan == t->chan &&
                    ((t->send >= 0 && g->tb[m].send == t->send) ||
                     (t->recv >= 0 && g->tb[m].recv == t->recv)))
                    limit(r, "gpu %d: tbs %d and %d share a connection", i, g->tb[m].id, t->id);
        }
        for (int c = 0; c < 32; c++)
            if (senders[c] > 32 || receivers[c] > 32)
                limit(r, "gpu %d channel %d: over 32 peers", i, c);
    }
}

static struct val *buf(struct prog *p, struct gpu *g, char b, int off, int cnt, int *size_ok)
{
    struct val *base = b == 'i' ? g->in : b == 'o' ? g->out : b == 's' ? g->scr : NULL;
    int size = b == 'i' ? g->ic : b == 'o' ? g->oc : g->sc;
    *size_ok = base && off >= 0 && cnt >= 0 && off + cnt <= size;
    (void)p;
    return *size_ok ? base + off : NULL;
}

static int reduce(struct val *dst, const struct val *a, const struct val *b)
{
    if (a->idx < 0 || a->idx != b->idx || (a->mask & b->mask))
        return 0;
    dst->idx = a->idx;
    dst->mask = a->mask | b->mask;
    return 1;
}

static struct msg *fifo(struct prog *p, int from, int to, int chan)
{
    return &p->fifo[((size_t)from * p->ngpus + to) * p->nchannels + chan];
}

static int has(const char *type, const char *what) /* "rrcs" has 's', "rcs" has 'c'... */
{
    return strcmp(type, what) == 0;
}

/* Try step t->pc of threadblock t on GPU g: 1 done, 0 blocked, -1 error. */
static int step(struct prog *p, struct gpu *g, struct tb *t, struct mi_result *r)
{
    struct st *s = &t->v[t->pc];
    if (s->s != t->pc) {
        fail(r, "gpu %d tb %d: step numbered %d at position %d", g->id, t->id, s->s, t->pc);
        return -1;
    }
    if (s->depid >= 0) {
        if (s->depid >= g->ntb) {
            fail(r, "gpu %d tb %d step %d: no threadblock %d", g->id, t->id, s->s, s->depid);
            return -1;
        }
        if (g->tb[s->depid].flag < s->deps)
            return 0;
    }
    const char *ty = s->type;
    int recv = ty[0] == 'r' && !has(ty, "re");
    int red = has(ty, "rrs") || has(ty, "rrc") || has(ty, "rrcs") || has(ty, "re");
    int send = has(ty, "s") || has(ty, "rcs") || has(ty, "rrs") || has(ty, "rrcs");
    int store = has(ty, "r") || has(ty, "rcs") || has(ty, "rrc") || has(ty, "rrcs") ||
                has(ty, "cpy") || has(ty, "re");
    int known = send || store || has(ty, "nop");
    if (!known || s->cnt < 0) {
        fail(r, "gpu %d tb %d step %d: bad type '%s' or cnt", g->id, t->id, s->s, ty);
        return -1;
    }
    if ((send && t->send < 0) || (recv && t->recv < 0) || t->chan < 0 ||
        t->chan >= p->nchannels || t->send >= p->ngpus || t->recv >= p->ngpus) {
        fail(r, "gpu %d tb %d step %d: '%s' without its peer or channel", g->id, t->id, s->s, ty);
        return -1;
    }
    struct msg *in = recv ? fifo(p, t->recv, g->id, t->chan) : NULL;
    struct msg *out = send ? fifo(p, g->id, t->send, t->chan) : NULL;
    if ((in && !in->full) || (out && out->full))
        return 0;
    if (in && in->cnt != s->cnt) {
        fail(r, "gpu %d tb %d step %d: receives %d chunks, %d were sent", g->id, t->id, s->s,
             s->cnt, in->cnt);
        return -1;
    }
    int n = s->cnt, ok1 = 1, ok2 = 1;
    /* A source is read by sends without a receive, reductions and copies. */
    int reads_src = (send && !recv) || red || has(ty, "cpy");
    struct val *src = reads_src ? buf(p, g, s->sb, s->so, n, &ok1) : NULL;
    struct val *dst = store ? buf(p, g, s->db, s->dof, n, &ok2) : NULL;
    if (!ok1 || !ok2) {
        fail(r, "gpu %d tb %d step %d: offset out of its buffer", g->id, t->id, s->s);
        return -1;
    }
    struct val *v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; i < n; i++) {
        if (red && has(ty, "re"))
            ok1 = reduce(&v[i], &src[i], &dst[i]);
        else if (red)
            ok1 = reduce(&v[i], &in->v[i], &src[i]);
        else
            v[i] = recv ? in->v[i] : src ? src[i] : v[i];
        if (!ok1 || (known && !has(ty, "nop") && v[i].idx < 0)) {
            fail(r, "gpu %d tb %d step %d: chunk %d undefined or reduced twice", g->id, t->id,
                 s->s, i);
            free(v);
            return -1;
        }
    }
    for (int i = 0; dst && i < n; i++)
        dst[i] = v[i];
    if (in) {
        free(in->v);
        in->v = NULL;
        in->full = 0;
    }
    if (out) {
        out->v = v;
        out->cnt = n;
        out->full = 1;
        r->load[g->id][t->send] += n;
    } else {
        free(v);
    }
    if (s->hasdep)
        t->flag = s->s;
    t->pc++;
    return 1;
}

/* What the input holds and what the output must hold (see msccl_interp.h). */
static struct val expect(const struct prog *p, int rank, int j, int *care)
{
    int m = p->nchunks / p->ngpus;
    uint64_t all = p->ngpus == 64 ? ~0ull : (1ull << p->ngpus) - 1;
    *care = 1;
    if (strcmp(p->coll, "allgather") == 0)
        return (struct val){j, 1ull << (j / m)};
    if (strcmp(p->coll, "reducescatter") == 0)
        return (struct val){rank * m + j, all};
    if (strcmp(p->coll, "broadcast") == 0)
        return (struct val){j, 1ull << p->root};
    *care = strcmp(p->coll, "reduce") != 0 || rank == p->root;
    return (struct val){j, all};
}

static int setup(struct prog *p, struct mi_result *r)
{
    int m = p->nchunks / p->ngpus, ag = strcmp(p->coll, "allgather") == 0,
        rs = strcmp(p->coll, "reducescatter") == 0;
    if (p->nchunks % p->ngpus && (ag || rs)) {
        fail(r, "nchunksperloop %d is not a multiple of ngpus", p->nchunks);
        return 0;
    }
    if (p->inplace && (ag || rs || !p->inplace_ok)) {
        fail(r, "in place asked of a file that does not offer it");
        return 0;
    }
    for (int i = 0; i < p->ngpus; i++) {
        struct gpu *g = &p->g[i];
        if (g->ic != (ag ? m : p->nchunks) || g->oc != (rs ? m : p->nchunks) || g->sc < 0) {
            fail(r, "gpu %d: i_chunks %d, o_chunks %d do not fit %s", i, g->ic, g->oc, p->coll);
            return 0;
        }
        g->in = calloc((size_t)g->ic + 1, sizeof *g->in);
        g->out = p->inplace ? g->in : calloc((size_t)g->oc + 1, sizeof *g->out);
        g->scr = calloc((size_t)g->sc + 1, sizeof *g->scr);
        for (int j = 0; j < g->oc; j++)
            g->out[j] = (struct val){-1, 0};
        for (int j = 0; j < g->sc; j++)
            g->scr[j] = (struct val){-1, 0};
        for (int j = 0; j < g->ic; j++)
            g->in[j] = (struct val){ag ? i * m + j : j, 1ull << i};
    }
    p->fifo = calloc((size_t)p->ngpus * p->ngpus * p->nchannels, sizeof *p->fifo);
    return 1;
}

static void run(struct prog *p, struct mi_result *r)
{
    for (int progress = 1; progress && r->ok;) {
        progress = 0;
        for (int i = 0; i < p->ngpus && r->ok; i++)
            for (int k = 0; k < p->g[i].ntb && r->ok; k++) {
                struct tb *t = &p->g[i].tb[k];
                int e;
                while (t->pc < t->n && (e = step(p, &p->g[i], t, r)) > 0)
                    progress = 1;
            }
    }
    for (int i = 0; i < p->ngpus && r->ok; i++)
        for (int k = 0; k < p->g[i].ntb; k++)
            if (p->g[i].tb[k].pc < p->g[i].tb[k].n) {
                fail(r, "deadlock: gpu %d tb %d stops at step %d", i, p->g[i].tb[k].id,
                     p->g[i].tb[k].pc);
                return;
            }
    for (int i = 0; i < p->ngpus && r->ok; i++)
        for (int j = 0; j < p->g[i].oc; j++) {
            int care;
            struct val want = expect(p, i, j, &care), got = p->g[i].out[j];
            if (care && (got.idx != want.idx || got.mask != want.mask)) {
                fail(r, "gpu %d output chunk %d: chunk %d of ranks %#llx, want %d of %#llx", i,
                     j, got.idx, (unsigned long long)got.mask, want.idx,
                     (unsigned long long)want.mask);
                return;
            }
        }
}

static void free_prog(struct prog *p)
{
    for (int i = 0; p->g && i < p->ngpus; i++) {
        for (int k = 0; k < p->g[i].ntb; k++)
            free(p->g[i].tb[k].v);
        free(p->g[i].tb);
        if (p->g[i].out != p->g[i].in)
            free(p->g[i].out);
        free(p->g[i].in);
        free(p->g[i].scr);
    }
    for (size_t i = 0; p->fifo && i < (size_t)p->ngpus * p->ngpus * p->nchannels; i++)
        free(p->fifo[i].v);
    free(p->fifo);
    free(p->g);
}

int mi_run(const char *path, int root, int inplace, struct mi_result *r)
{
    memset(r, 0, sizeof *r);
    r->ok = 1;
    struct prog p;
    memset(&p, 0, sizeof p);
    p.root = root;
    p.inplace = inplace;
    if (read_prog(path, &p, r)) {
        snprintf(r->coll, sizeof r->coll, "%s", p.coll);
        r->ngpus = p.ngpus;
        r->nchunks = p.nchunks;
        r->nchannels = p.nchannels;
        r->inplace = p.inplace_ok;
        for (int i = 0; i < p.ngpus; i++) {
            r->tbs += p.g[i].ntb;
            r->max_tbs = p.g[i].ntb > r->max_tbs ? p.g[i].ntb : r->max_tbs;
            for (int k = 0; k < p.g[i].ntb; k++) {
                r->steps += p.g[i].tb[k].n;
                r->max_steps = p.g[i].tb[k].n > r->max_steps ? p.g[i].tb[k].n : r->max_steps;
                if (p.g[i].tb[k].id != k)
                    fail(r, "gpu %d: threadblock ids not 0..%d in order", i, p.g[i].ntb - 1);
            }
        }
        check_limits(&p, r);
        if (r->ok && setup(&p, r))
            run(&p, r);
    }
    free_prog(&p);
    return r->ok;
}
