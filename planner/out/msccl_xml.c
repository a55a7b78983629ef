/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_xml.c - writing MSCCL algorithm files (see msccl_xml.h, msccl_map.h).
 *
 * The executors' parser reads an attribute value up to the next double quote into a 256-byte
 * buffer without bounds, decodes no entity, and wants the <algo> tag first (no declaration) and
 * on one line (tests/unit/msccl_read.c cites the lines). So a file is the bare <algo> element,
 * and the one text attribute, name, is escaped for other XML readers and kept to 255 bytes.
 */
#include "out/msccl_xml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/msccl_map.h"

#define NAME_ATTR_MAX 255 /* the executors' value buffer, less its terminator */

/* A run [min, end) of plan p's sizes where the trees run with one protocol (end 0: no limit). */
struct run {
    double min_bytes, end_bytes;
    enum plan_proto proto;
};

/* Sizes the trees run alone, or with the hybrid's PCIe trees where they alone would beat NCCL
 * too: MSCCL's programs cannot name edges through host memory, so they carry the trees alone. */
static int trees_run(const struct plan_range *r)
{
    return r->algo == PLAN_ALGO_TREES ||
           (r->algo == PLAN_ALGO_HYBRID && r->fallback == PLAN_ALGO_TREES);
}

static int same_run(const struct plan_range *a, const struct plan_range *b)
{
    return trees_run(a) && trees_run(b) && a->proto == b->proto;
}

/* Run j of plan p (when out is not NULL); returns how many there are. Sizes where the per-size
 * choice runs NCCL (or the hybrid, whose fallback is NCCL) get no file: for a size no file covers, the executors call the library's
 * own collective (msccl_lifecycle.cc, mscclFallBackSavedParams), which keeps its LL and LL128
 * protocols where our programs would replace them. Where the trees change protocol a new run,
 * and file, begins: a file names one protocol. */
static int runs(const struct plan *p, int j, struct run *out)
{
    if (p->tune.n == 0) {
        if (out)
            *out = (struct run){0, 0, PLAN_PROTO_SIMPLE};
        return 1;
    }
    int n = 0;
    const struct plan_range *r = p->tune.r;
    for (int i = 0; i < p->tune.n; i++) {
        if (!trees_run(&r[i]) || (i > 0 && same_run(&r[i - 1], &r[i])))
            continue;
        int e = i + 1;
        while (e < p->tune.n && same_run(&r[i], &r[e]))
            e++;
        if (out && n == j)
            *out = (struct run){r[i].min_bytes, e < p->tune.n ? r[e].min_bytes : 0, r[i].proto};
        n++;
    }
    return n;
}

int msccl_xml_count(const struct plan_set *ps, int k)
{
    return runs(&ps->v[k], 0, NULL);
}

void msccl_xml_none(struct strbuf *sb, const struct plan_set *ps)
{
    int first = 1;
    for (int k = 0; k < ps->n; k++) {
        enum collective c = ps->v[k].coll;
        int seen = 0, total = 0, none = 0;
        for (int i = 0; i < ps->n; i++) {
            if (ps->v[i].coll != c)
                continue;
            seen += i < k;
            total++;
            none += msccl_xml_count(ps, i) == 0;
        }
        if (!none || (seen && none == total))
            continue; /* named already, with the collective's first plan */
        if (msccl_xml_count(ps, k) > 0)
            continue;
        sb_printf(sb, "%s%s", first ? "" : ", ", collective_name(c));
        if (total > 1 && none == total)
            sb_puts(sb, " (every root)");
        else if (ps->v[k].root >= 0)
            sb_printf(sb, " from %s", ps->topo->nodes[topo_gpu_node(ps->topo, ps->v[k].root)].id);
        first = 0;
    }
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

/* Attribute text into at most `room` bytes: XML's five specials as entities; control bytes
 * and non-ASCII as '?', since XML 1.0 forbids most controls even as references and a byte of
 * broken UTF-8 makes the file unreadable. An entity that does not fit ends the text. */
static void put_attr_text(struct strbuf *sb, const char *s, size_t room)
{
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;"
                      : c == '"' ? "&quot;" : c == '\'' ? "&apos;" : NULL;
        size_t len = e ? strlen(e) : 1;
        if (len > room)
            return;
        room -= len;
        if (e)
            sb_puts(sb, e);
        else
            sb_putc(sb, c >= 0x20 && c < 0x7f ? (char)c : '?');
    }
}

/* The allocation in rank order, for file names and the name attribute: "gpu5.4.7.6" (rank 0 on
 * gpu5, ...), with three or more consecutive GPUs as a range ("gpu0-7", "gpu0-3.8-11"). The
 * executors pick a file by rank count, never by GPUs, so this is what tells the exports of
 * two allocations apart. Past MSCCL_XML_TAG_MAX bytes the tag is cut and a hash of all of it
 * appended. */
void msccl_xml_alloc_tag(char *out, size_t cap, const struct topo *t)
{
    struct strbuf sb;
    sb_init(&sb);
    int numeric = 1;
    for (int r = 0; r < t->ngpus; r++)
        numeric &= topo_gpu_number(t->nodes[topo_gpu_node(t, r)].id) >= 0;
    for (int r = 0; r < t->ngpus;) {
        const char *id = t->nodes[topo_gpu_node(t, r)].id;
        if (!numeric) { /* canonical ids are ASCII letters and digits */
            sb_printf(&sb, "%s%s", r ? "." : "", id);
            r++;
            continue;
        }
        long v = topo_gpu_number(id);
        int e = r + 1;
        while (e < t->ngpus && topo_gpu_number(t->nodes[topo_gpu_node(t, e)].id) == v + (e - r))
            e++;
        sb_printf(&sb, "%s%ld", r ? "." : "gpu", v);
        if (e - r >= 3)
            sb_printf(&sb, "-%ld", v + (e - r - 1));
        else
            e = r + 1;
        r = e;
    }
    const char *tag = sb.data ? sb.data : "";
    if (strlen(tag) <= MSCCL_XML_TAG_MAX) {
        snprintf(out, cap, "%s", tag);
    } else {
        uint32_t h = 2166136261u; /* FNV-1a */
        for (const char *q = tag; *q; q++)
            h = (h ^ (unsigned char)*q) * 16777619u;
        snprintf(out, cap, "%.*s-h%08x", MSCCL_XML_TAG_MAX - 10, tag, (unsigned)h);
    }
    sb_free(&sb);
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
    char root[48] = "", lo[24], hi[24], sizes[56] = "", tag[MSCCL_XML_TAG_MAX + 16];
    if (p->root >= 0)
        snprintf(root, sizeof root, "-%s", ps->topo->nodes[topo_gpu_node(ps->topo, p->root)].id);
    size_word(lo, sizeof lo, run.min_bytes);
    if (run.end_bytes > 0)
        size_word(hi, sizeof hi, run.end_bytes);
    else
        snprintf(hi, sizeof hi, "inf");
    if (run.min_bytes > 0 || run.end_bytes > 0) /* the name says when some sizes are left out */
        snprintf(sizes, sizeof sizes, "-%s-%s", lo, hi);
    msccl_xml_alloc_tag(tag, sizeof tag, ps->topo);
    snprintf(name, cap, "%s%s-trees%s.%s.xml", collective_name(p->coll), root, sizes, tag);
    struct mprog g;
    BK_CHECK(msccl_map(&p->main.trees, p->coll, ps->topo->ngpus, &g));
    /* In place: allreduce's sums and broadcast's copies land where the input was read, and
     * reduce keeps partial sums in scratch; allgather and reduce-scatter are out of place only
     * (their in-place buffers overlap in a way these programs do not model). */
    int inplace = p->coll == COLL_ALLREDUCE || p->coll == COLL_BROADCAST ||
                  p->coll == COLL_REDUCE;
    /* name: what, for which sizes, and the ranks' GPUs in order; the topology's name last,
     * cut to keep the value within NAME_ATTR_MAX. */
    struct strbuf nm;
    sb_init(&nm);
    sb_printf(&nm, "blinkc %s%s%s trees%s%s, ranks 0-%d on %s of ", collective_name(p->coll),
              root[0] ? " from " : "", root[0] ? root + 1 : "", sizes[0] ? " for " : "",
              sizes[0] ? sizes + 1 : "", ps->topo->ngpus - 1, tag);
    size_t used = nm.data ? nm.len : 0;
    put_attr_text(&nm, ps->topo->name, used < NAME_ATTR_MAX ? NAME_ATTR_MAX - used : 0);
    sb_printf(sb, "<algo name=\"%s\"", nm.data ? nm.data : "");
    sb_free(&nm);
    sb_printf(sb, " proto=\"%s\" nchannels=\"%d\" nchunksperloop=\"%d\" ngpus=\"%d\" "
                  "coll=\"%s\" inplace=\"%d\" outofplace=\"1\" minBytes=\"%lld\" "
                  "maxBytes=\"%lld\">\n",
              run.proto == PLAN_PROTO_LL ? "LL" : "Simple", g.nchannels, g.nchunks, g.ngpus,
              coll_word(p->coll), inplace, (long long)run.min_bytes,
              run.end_bytes > 0 ? (long long)run.end_bytes - 1 : 0LL);
    put_prog(sb, &g);
    sb_puts(sb, "</algo>\n");
    mprog_free(&g);
    return BK_OK;
}
