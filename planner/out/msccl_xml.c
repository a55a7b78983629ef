/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_xml.c - writing MSCCL algorithm files (see msccl_xml.h, msccl_map.h).
 *
 * The executors' parser reads attribute values up to the next quote into a fixed buffer
 * (NCCL's xml reader, 255 bytes) and knows no declaration or comments, so a file is the bare
 * <algo> element and the one text attribute is escaped and kept short.
 */
#include "out/msccl_xml.h"

#include <stdio.h>

#include "out/msccl_map.h"

#define NAME_MAX_BYTES 64 /* of the topology's name, before escaping (at most 6 bytes each) */

/* A range run [a, b) of plan k's tuning, with one algorithm. */
struct run {
    double min_bytes, end_bytes; /* end 0: no limit */
    enum plan_algo algo;
};

/* The algorithm a range runs: rings need chains (none across several servers). */
static enum plan_algo algo_of(const struct plan *p, int i)
{
    enum plan_algo a = p->tune.r[i].algo;
    return a == PLAN_ALGO_RINGS && p->ring_chains.n == 0 ? PLAN_ALGO_TREES : a;
}

/* Run j of plan p (when out is not NULL); returns how many runs there are. */
static int runs(const struct plan *p, int j, struct run *out)
{
    if (p->tune.n == 0) {
        if (out)
            *out = (struct run){0, 0, PLAN_ALGO_TREES};
        return 1;
    }
    int n = 0;
    for (int i = 0; i < p->tune.n; i++) {
        if (i > 0 && algo_of(p, i) == algo_of(p, i - 1))
            continue;
        if (out && n == j)
            *out = (struct run){p->tune.r[i].min_bytes, 0, algo_of(p, i)};
        if (out && n == j + 1)
            out->end_bytes = p->tune.r[i].min_bytes;
        n++;
    }
    return n;
}

int msccl_xml_count(const struct plan_set *ps, int k)
{
    return runs(&ps->v[k], 0, NULL);
}

static void size_word(char *out, size_t cap, double bytes)
{
    long long b = (long long)bytes;
    const char *sfx = "KMG";
    int i = -1;
    while (i < 2 && b > 0 && b % 1024 == 0) {
        b /= 1024;
        i++;
    }
    if (i >= 0)
        snprintf(out, cap, "%lld%c", b, sfx[i]);
    else
        snprintf(out, cap, "%lld", b);
}

/* Attribute text: XML's five specials as entities; control bytes and non-ASCII as '?', since
 * XML 1.0 forbids most controls even as references and a byte of broken UTF-8 makes the file
 * unreadable. */
static void put_attr_text(struct strbuf *sb, const char *s)
{
    for (size_t i = 0; s[i] && i < NAME_MAX_BYTES; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&': sb_puts(sb, "&amp;"); break;
        case '<': sb_puts(sb, "&lt;"); break;
        case '>': sb_puts(sb, "&gt;"); break;
        case '"': sb_puts(sb, "&quot;"); break;
        case '\'': sb_puts(sb, "&apos;"); break;
        default: sb_putc(sb, c >= 0x20 && c < 0x7f ? (char)c : '?');
        }
    }
}

static const char *coll_word(enum collective c) /* the executors' "coll" names */
{
    switch (c) {
    case COLL_BROADCAST: return "broadcast";
    case COLL_REDUCE: return "reduce";
    case COLL_ALLGATHER: return "allgather";
    case COLL_REDUCESCATTER: return "reducescatter";
    default: return "allreduce";
    }
}

static void put_prog(struct strbuf *sb, const struct mprog *g)
{
    int i = 0;
    for (int gpu = 0; gpu < g->ngpus; gpu++) {
        sb_printf(sb, "  <gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"%d\">\n", gpu,
                  g->in_chunks, g->out_chunks, g->scratch_chunks);
        for (int tb = 0; tb < g->ntb[gpu]; tb++) {
            const struct mstep *h = &g->st[g->order[i]];
            sb_printf(sb, "    <tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"%d\">\n", tb,
                      h->dir == 0 ? h->peer : -1, h->dir == 1 ? h->peer : -1, h->chan);
            for (; i < g->n && g->st[g->order[i]].gpu == gpu && g->st[g->order[i]].tb == tb;
                 i++) {
                const struct mstep *m = &g->st[g->order[i]];
                const struct mstep *dep = m->dep >= 0 ? &g->st[m->dep] : NULL;
                sb_printf(sb, "      <step s=\"%d\" type=\"%s\" srcbuf=\"%c\" srcoff=\"%d\" "
                              "dstbuf=\"%c\" dstoff=\"%d\" cnt=\"%d\" depid=\"%d\" deps=\"%d\" "
                              "hasdep=\"%d\"/>\n",
                          m->s, m->type, m->srcbuf, m->srcoff, m->dstbuf, m->dstoff, m->cnt,
                          dep ? dep->tb : -1, dep ? dep->s : -1, m->hasdep);
            }
            sb_puts(sb, "    </tb>\n");
        }
        sb_puts(sb, "  </gpu>\n");
    }
}

enum bk_status msccl_xml_render(struct strbuf *sb, char *name, size_t cap,
                                const struct plan_set *ps, int k, int j)
{
    const struct plan *p = &ps->v[k];
    struct run run;
    int nr = runs(p, j, &run);
    if (j < 0 || j >= nr)
        return BK_EINTERNAL;
    const char *algo = run.algo == PLAN_ALGO_RINGS ? "rings" : "trees";
    char root[48] = "", lo[24], hi[24], sizes[56] = "";
    if (p->root >= 0)
        snprintf(root, sizeof root, "-%s", ps->topo->nodes[p->root].id);
    size_word(lo, sizeof lo, run.min_bytes);
    if (run.end_bytes > 0)
        size_word(hi, sizeof hi, run.end_bytes);
    else
        snprintf(hi, sizeof hi, "inf");
    if (nr > 1)
        snprintf(sizes, sizeof sizes, "-%s-%s", lo, hi);
    snprintf(name, cap, "%s%s-%s%s.xml", collective_name(p->coll), root, algo, sizes);
    struct mprog g;
    BK_CHECK(msccl_map(run.algo == PLAN_ALGO_RINGS ? &p->ring_chains : &p->main.trees, p->coll,
                       ps->topo->ngpus, &g));
    /* In place: allreduce's sums and broadcast's copies land where the input was read, and
     * reduce keeps partial sums in scratch; allgather and reduce-scatter are out of place only
     * (their in-place buffers overlap in a way these programs do not model). */
    int inplace = p->coll == COLL_ALLREDUCE || p->coll == COLL_BROADCAST ||
                  p->coll == COLL_REDUCE;
    sb_printf(sb, "<algo name=\"blinkc %s%s %s on ", collective_name(p->coll), root, algo);
    put_attr_text(sb, ps->topo->name);
    sb_printf(sb, "\" proto=\"Simple\" nchannels=\"%d\" nchunksperloop=\"%d\" ngpus=\"%d\" "
                  "coll=\"%s\" inplace=\"%d\" outofplace=\"1\" minBytes=\"%lld\" "
                  "maxBytes=\"%lld\">\n",
              g.nchannels, g.nchunks, g.ngpus, coll_word(p->coll), inplace,
              (long long)run.min_bytes,
              run.end_bytes > 0 ? (long long)run.end_bytes - 1 : 0LL);
    put_prog(sb, &g);
    sb_puts(sb, "</algo>\n");
    mprog_free(&g);
    return BK_OK;
}
