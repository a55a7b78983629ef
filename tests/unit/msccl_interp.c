/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_interp.c - the MSCCL XML interpreter for the tests (see msccl_interp.h).
 *
 * Limits are those of the executors' sources: steps per threadblock below MSCCL_MAX_NUM_STEPS
 * (64, both), threadblock ids below RCCL's MSCCL_MAX_NUM_THREAD_BLOCKS (64; NCCL's is 1024),
 * dependencies on threadblocks up to 127 (int8_t dependentBid), channels below MAXCHANNELS (32
 * in NCCL), cnt below MSCCL_MAX_COUNT (72), at most 32 sending and 32 receiving threadblocks
 * per channel (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL), offsets in int16_t.
 */
#include "msccl_interp.h"

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

/* An integer attribute; 0 and *ok = 0 when missing or not a number. */
static long attr_int(xmlNode *n, const char *name, int *ok)
{
    xmlChar *s = xmlGetProp(n, (const xmlChar *)name);
    if (!s) {
        *ok = 0;
        return 0;
    }
    char *end;
    long v = strtol((const char *)s, &end, 10);
    if (end == (char *)s || *end)
        *ok = 0;
    xmlFree(s);
    return v;
}

static void attr_str(xmlNode *n, const char *name, char *out, size_t cap, int *ok)
{
    xmlChar *s = xmlGetProp(n, (const xmlChar *)name);
    if (!s || strlen((const char *)s) >= cap)
        *ok = 0;
    snprintf(out, cap, "%s", s ? (const char *)s : "");
    xmlFree(s);
}

static int is(xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static int read_step(xmlNode *n, struct st *s)
{
    int ok = 1;
    char b[8];
    s->s = (int)attr_int(n, "s", &ok);
    attr_str(n, "type", s->type, sizeof s->type, &ok);
    attr_str(n, "srcbuf", b, sizeof b, &ok);
    s->sb = b[0];
    attr_str(n, "dstbuf", b, sizeof b, &ok);
    s->db = b[0];
    s->so = (int)attr_int(n, "srcoff", &ok);
    s->dof = (int)attr_int(n, "dstoff", &ok);
    s->cnt = (int)attr_int(n, "cnt", &ok);
    s->depid = (int)attr_int(n, "depid", &ok);
    s->deps = (int)attr_int(n, "deps", &ok);
    s->hasdep = (int)attr_int(n, "hasdep", &ok);
    return ok;
}

static int read_tb(xmlNode *n, struct tb *t)
{
    int ok = 1;
    t->id = (int)attr_int(n, "id", &ok);
    t->send = (int)attr_int(n, "send", &ok);
    t->recv = (int)attr_int(n, "recv", &ok);
    t->chan = (int)attr_int(n, "chan", &ok);
    t->flag = -1;
    for (xmlNode *c = n->children; c; c = c->next)
        if (is(c, "step"))
            t->n++;
    t->v = calloc((size_t)t->n + 1, sizeof *t->v);
    int i = 0;
    for (xmlNode *c = n->children; c && ok; c = c->next)
        if (is(c, "step"))
            ok = read_step(c, &t->v[i++]);
    return ok;
}

static int read_gpu(xmlNode *n, struct gpu *g)
{
    int ok = 1;
    g->id = (int)attr_int(n, "id", &ok);
    g->ic = (int)attr_int(n, "i_chunks", &ok);
    g->oc = (int)attr_int(n, "o_chunks", &ok);
    g->sc = (int)attr_int(n, "s_chunks", &ok);
    for (xmlNode *c = n->children; c; c = c->next)
        if (is(c, "tb"))
            g->ntb++;
    g->tb = calloc((size_t)g->ntb + 1, sizeof *g->tb);
    int i = 0;
    for (xmlNode *c = n->children; c && ok; c = c->next)
        if (is(c, "tb"))
            ok = read_tb(c, &g->tb[i++]);
    return ok;
}

static int read_prog(const char *path, struct prog *p, struct mi_result *r)
{
    xmlDoc *doc = xmlReadFile(path, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                                              XML_PARSE_NOWARNING);
    if (!doc) {
        fail(r, "%s: not well-formed XML", path);
        return 0;
    }
    xmlNode *a = xmlDocGetRootElement(doc);
    int ok = a && is(a, "algo");
    char proto[16];
    attr_str(a, "coll", p->coll, sizeof p->coll, &ok);
    attr_str(a, "proto", proto, sizeof proto, &ok);
    p->ngpus = (int)attr_int(a, "ngpus", &ok);
    p->nchunks = (int)attr_int(a, "nchunksperloop", &ok);
    p->nchannels = (int)attr_int(a, "nchannels", &ok);
    p->inplace_ok = (int)attr_int(a, "inplace", &ok);
    attr_int(a, "outofplace", &ok);
    attr_int(a, "minBytes", &ok); /* the executors skip a file without them */
    attr_int(a, "maxBytes", &ok);
    if (ok && (p->ngpus < 1 || p->ngpus > MI_MAX_GPUS || p->nchunks < 1 || p->nchannels < 1))
        ok = 0;
    if (ok)
        p->g = calloc((size_t)p->ngpus, sizeof *p->g);
    int ng = 0;
    for (xmlNode *c = ok ? a->children : NULL; c && ok; c = c->next)
        if (is(c, "gpu")) {
            struct gpu g;
            memset(&g, 0, sizeof g);
            ok = read_gpu(c, &g) && g.id >= 0 && g.id < p->ngpus && !p->g[g.id].tb && ng++ >= 0;
            if (ok)
                p->g[g.id] = g;
            else
                free(g.tb);
        }
    xmlFreeDoc(doc);
    if (!ok || ng != p->ngpus)
        fail(r, "%s: missing or bad attributes, or not one <gpu> per rank", path);
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
