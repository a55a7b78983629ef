/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * blink_trace.c - blink-trace: read the files BLINK_TRACE made (runtime/core/trace.h; one per
 * rank, given as files or as the directory that holds them) and say where the calls spent
 * their time, per collective:
 *   call    last exit minus first entry over every rank and block of one call;
 *   skew    the last rank's entry minus the first's, in one call (how far apart the ranks'
 *           kernels started: the host's launches, where one thread issues them all);
 *   entry   a rank's first decided step minus its entry (its start-up, and its wait for the
 *           peers it needs first);
 *   hop     going up, a rank's post of a chunk minus the latest post of the same chunk by its
 *           children (the wait for the slowest child's flag, the combine and the post); going
 *           down, a rank's post minus its parent's (the same, one edge);
 *   wait    decide minus the previous post of the same block: how long the block looked for
 *           a ready step;
 *   move    start to post of one step (the data, the fence, the flag stores);
 *   exit    a rank's last exit minus its last post (the end of a launch).
 * Times are the medians (and largest) in microseconds. Clocks: %globaltimer of one GPU for the
 * CUDA backend (ranks on several GPUs compare clocks that may differ by a little), the
 * monotonic clock for the host backend.
 *
 *   blink-trace [-v] DIR|FILE...    -v also prints one line per call
 * Exit 0, 1 for a file it cannot read or parse (FILE:LINE: error: ...), 2 for usage.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { ENTER, UP_DECIDE, UP_START, UP_POST, DOWN_DECIDE, DOWN_START, DOWN_POST, EXIT, NKINDS };
static const char *const kind_names[NKINDS] = {
    "enter", "up-decide", "up-start", "up-post", "down-decide", "down-start", "down-post", "exit",
};
#define NCOLLS 5
static const char *const coll_names[NCOLLS] = {
    "broadcast", "reduce", "allreduce", "allgather", "reducescatter",
};

struct ev {
    unsigned long long t;
    unsigned seq, chunk;
    int rank, block, tree, kind, coll, peer;
};

static struct ev *evs;
static size_t nev, cap_ev;
static unsigned long long dropped;
static int nfiles;

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static int fail(const char *file, long line, const char *msg)
{
    fprintf(stderr, "blink-trace: %s:%ld: error: %s\n", file, line, msg);
    return 1;
}

static int read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "blink-trace: %s: error: %s\n", path, strerror(errno));
        return 1;
    }
    char buf[512];
    long line = 0;
    int rank = -1, r = 0;
    while (!r && fgets(buf, sizeof buf, f)) {
        line++;
        if (!strchr(buf, '\n') && !feof(f)) {
            r = fail(path, line, "line too long");
            break;
        }
        if (line == 1) {
            if (strcmp(buf, "# blink-trace 1\n"))
                r = fail(path, line, "not a BLINK_TRACE file (no '# blink-trace 1')");
            continue;
        }
        if (line == 2) {
            unsigned long long rec = 0, drop = 0;
            if (sscanf(buf, "# rank %d prank %*d nranks %*d device %*d backend %*s clock %*s "
                       "records %llu dropped %llu", &rank, &rec, &drop) != 3 || rank < 0)
                r = fail(path, line, "a header line '# rank R prank P nranks N device D "
                         "backend B clock C records K dropped X' was expected");
            dropped += drop;
            continue;
        }
        if (line == 3)
            continue; /* the column names */
        struct ev e = {0};
        char coll[32], kind[32];
        int n = 0;
        if (sscanf(buf, "%u\t%31s\t%d\t%d\t%31s\t%u\t%d\t%llu%n", &e.seq, coll, &e.block,
                   &e.tree, kind, &e.chunk, &e.peer, &e.t, &n) != 8 || buf[n] != '\n' ||
            (e.coll = lookup(coll, coll_names, NCOLLS)) < 0 ||
            (e.kind = lookup(kind, kind_names, NKINDS)) < 0) {
            r = fail(path, line, "an event 'seq coll block tree kind chunk peer t_ns' was "
                     "expected");
            break;
        }
        e.rank = rank;
        if (nev == cap_ev) {
            size_t c = cap_ev ? 2 * cap_ev : 4096;
            struct ev *p = realloc(evs, c * sizeof *p);
            if (!p) {
                r = fail(path, line, "out of memory");
                break;
            }
            evs = p;
            cap_ev = c;
        }
        evs[nev++] = e;
    }
    if (!r && line < 3)
        r = fail(path, line, "no header: not a BLINK_TRACE file");
    if (!r && ferror(f))
        r = fail(path, line, strerror(errno));
    fclose(f);
    nfiles += !r;
    return r;
}

static int is_trace_name(const char *s)
{
    size_t n = strlen(s);
    return !strncmp(s, "blink-trace.", 12) && n > 4 && !strcmp(s + n - 4, ".tsv");
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every blink-trace.*.tsv in dir, in name order (so the output does not depend on readdir). */
static int read_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "blink-trace: %s: error: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    int r = 0;
    for (struct dirent *de; !r && (de = readdir(d));) {
        if (!is_trace_name(de->d_name))
            continue;
        char **p = realloc(names, (n + 1) * sizeof *p);
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *s = malloc(len);
        if (!p || !s) {
            free(s);
            r = fail(dir, 0, "out of memory");
            names = p ? p : names;
            break;
        }
        names = p;
        snprintf(s, len, "%s/%s", dir, de->d_name);
        names[n++] = s;
    }
    closedir(d);
    if (names)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (!r)
            r = read_file(names[i]);
        free(names[i]);
    }
    free(names);
    return r;
}

/* ------------------------------------------------------------------ statistics */

struct series {
    double *v;
    size_t n, cap;
};

static void add(struct series *s, double x)
{
    if (s->n == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 64;
        double *p = realloc(s->v, c * sizeof *p);
        if (!p)
            return; /* a sample fewer: the summary stays honest about what it counted */
        s->v = p;
        s->cap = c;
    }
    s->v[s->n++] = x;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "median (max)" in microseconds, or "-". */
static void put_stat(struct series *s)
{
    if (!s->n) {
        printf(" - |");
        return;
    }
    qsort(s->v, s->n, sizeof *s->v, by_value);
    double med = s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
    printf(" %.2f (%.2f) |", med / 1e3, s->v[s->n - 1] / 1e3);
}

/* ------------------------------------------------------------------ matching events */

/* Order: the step a post belongs to, then the rank. */
static int by_step(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
#define CMP(f)                                                                                \
    if (x->f != y->f)                                                                         \
        return x->f < y->f ? -1 : 1
    CMP(seq);
    CMP(tree);
    CMP(kind);
    CMP(chunk);
    CMP(rank);
    CMP(block);
    CMP(t);
#undef CMP
    return 0;
}

/* The post of (seq, tree, kind, chunk) by rank, in the sorted posts, or NULL. */
static const struct ev *find_post(const struct ev *posts, size_t n, const struct ev *like,
                                  int rank)
{
    struct ev key = *like;
    key.rank = rank;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        struct ev m = posts[mid];
        m.block = key.block = 0;
        m.t = key.t = 0;
        if (by_step(&m, &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct ev *e = lo < n ? &posts[lo] : NULL;
    return e && e->seq == like->seq && e->tree == like->tree && e->kind == like->kind &&
                   e->chunk == like->chunk && e->rank == rank
               ? e : NULL;
}

struct per_coll {
    struct series call, skew, entry, up_hop, down_hop, wait, move, exit;
    size_t calls;
};

/* The summary's columns of one collective, in the table's order. */
#define NCOLS 8
static void columns(struct per_coll *p, struct series *cols[NCOLS])
{
    struct series *c[NCOLS] = {&p->call, &p->skew,     &p->entry, &p->up_hop,
                               &p->down_hop, &p->wait, &p->move,  &p->exit};
    memcpy(cols, c, sizeof c);
}

/* A rank's part of one call: its first entry. */
struct rank_call {
    unsigned seq;
    int coll;
    unsigned long long enter;
};

static int by_seq(const void *a, const void *b)
{
    const struct rank_call *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Entry, exit (per rank and call) and skew (per call) from evs sorted by_block_time. */
static void rank_phases(struct per_coll *pc)
{
    struct rank_call *rc = malloc((nev ? nev : 1) * sizeof *rc);
    size_t nrc = 0;
    for (size_t i = 0; rc && i < nev;) {
        const struct ev *g = &evs[i];
        unsigned long long enter = ~0ull, decide = ~0ull, post = 0, exit_t = 0;
        for (; i < nev && evs[i].rank == g->rank && evs[i].seq == g->seq; i++) {
            const struct ev *e = &evs[i];
            if (e->kind == ENTER && e->t < enter)
                enter = e->t;
            if ((e->kind == UP_DECIDE || e->kind == DOWN_DECIDE) && e->t < decide)
                decide = e->t;
            if ((e->kind == UP_POST || e->kind == DOWN_POST) && e->t > post)
                post = e->t;
            if (e->kind == EXIT && e->t > exit_t)
                exit_t = e->t;
        }
        if (enter == ~0ull)
            continue;
        if (decide != ~0ull && decide >= enter)
            add(&pc[g->coll].entry, (double)(decide - enter));
        if (post && exit_t >= post)
            add(&pc[g->coll].exit, (double)(exit_t - post));
        rc[nrc++] = (struct rank_call){g->seq, g->coll, enter};
    }
    if (rc)
        qsort(rc, nrc, sizeof *rc, by_seq);
    for (size_t i = 0; rc && i < nrc;) {
        size_t j = i;
        unsigned long long lo = rc[i].enter, hi = rc[i].enter;
        for (; j < nrc && rc[j].seq == rc[i].seq; j++) {
            lo = rc[j].enter < lo ? rc[j].enter : lo;
            hi = rc[j].enter > hi ? rc[j].enter : hi;
        }
        add(&pc[rc[i].coll].skew, (double)(hi - lo));
        i = j;
    }
    free(rc);
}

/* Order for one block's own sequence of events. */
static int by_block_time(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->block != y->block)
        return x->block < y->block ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

static void summarize(int verbose)
{
    struct per_coll pc[NCOLLS];
    memset(pc, 0, sizeof pc);

    /* Calls: by sequence number over every rank. */
    qsort(evs, nev, sizeof *evs, by_block_time);
    rank_phases(pc);
    if (verbose)
        printf("| call | collective | ranks | us |\n| --- | --- | --- | --- |\n");
    /* seq values are dense per run; walk them through a sort by seq instead of an array. */
    struct ev *byseq = malloc((nev ? nev : 1) * sizeof *byseq);
    if (byseq) {
        memcpy(byseq, evs, nev * sizeof *evs);
        qsort(byseq, nev, sizeof *byseq, by_step);
        for (size_t i = 0; i < nev;) {
            size_t j = i;
            unsigned long long lo = ~0ull, hi = 0;
            int have_in = 0, have_out = 0, coll = byseq[i].coll;
            unsigned long long ranks = 0;
            while (j < nev && byseq[j].seq == byseq[i].seq) {
                const struct ev *e = &byseq[j++];
                if (e->kind == ENTER && e->t < lo)
                    lo = e->t, have_in = 1;
                if (e->kind == EXIT && e->t > hi)
                    hi = e->t, have_out = 1;
                if (e->rank < 64)
                    ranks |= 1ull << e->rank;
            }
            if (have_in && have_out && hi >= lo) {
                add(&pc[coll].call, (double)(hi - lo));
                pc[coll].calls++;
                if (verbose)
                    printf("| %u | %s | %d | %.2f |\n", byseq[i].seq, coll_names[coll],
                           __builtin_popcountll(ranks), (double)(hi - lo) / 1e3);
            }
            i = j;
        }
    }
    if (verbose)
        printf("\n");

    /* Within each block: wait (previous post or entry to decide), move (start to post). */
    for (size_t i = 0; i < nev; i++) {
        const struct ev *e = &evs[i];
        if (e->kind != UP_POST && e->kind != DOWN_POST)
            continue;
        int start = e->kind == UP_POST ? UP_START : DOWN_START;
        int decide = e->kind == UP_POST ? UP_DECIDE : DOWN_DECIDE;
        /* The start and decide of this post are the nearest earlier ones of its block. */
        const struct ev *s = NULL, *d = NULL, *prev = NULL;
        for (size_t k = i; k-- > 0;) {
            const struct ev *q = &evs[k];
            if (q->rank != e->rank || q->seq != e->seq || q->block != e->block)
                break;
            if (!s && q->kind == start && q->tree == e->tree && q->chunk == e->chunk)
                s = q;
            else if (s && !d && q->kind == decide && q->tree == e->tree && q->chunk == e->chunk)
                d = q;
            else if (d && (q->kind == UP_POST || q->kind == DOWN_POST || q->kind == ENTER)) {
                prev = q;
                break;
            }
        }
        if (s)
            add(&pc[e->coll].move, (double)(e->t - s->t));
        if (d && prev)
            add(&pc[e->coll].wait, (double)(d->t - prev->t));
    }

    /* Hops: posts sorted by step and rank. */
    size_t np = 0;
    for (size_t i = 0; i < nev; i++)
        if (evs[i].kind == UP_POST || evs[i].kind == DOWN_POST)
            byseq[np++] = evs[i];
    qsort(byseq, np, sizeof *byseq, by_step);
    double *latest_child = calloc(np ? np : 1, sizeof *latest_child);
    for (size_t i = 0; latest_child && i < np; i++) {
        const struct ev *e = &byseq[i];
        if (e->peer < 0)
            continue;
        const struct ev *p = find_post(byseq, np, e, e->peer);
        if (!p)
            continue;
        if (e->kind == DOWN_POST)
            add(&pc[e->coll].down_hop, (double)e->t - (double)p->t);
        else if ((double)e->t > latest_child[p - byseq])
            latest_child[p - byseq] = (double)e->t;
    }
    for (size_t i = 0; latest_child && i < np; i++)
        if (latest_child[i] > 0)
            add(&pc[byseq[i].coll].up_hop, (double)byseq[i].t - latest_child[i]);
    free(latest_child);
    free(byseq);

    printf("| collective | calls | call us | skew us | entry us | up hop us | down hop us | wait us "
           "| move us | exit us |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int c = 0; c < NCOLLS; c++) {
        if (!pc[c].calls && !pc[c].move.n)
            continue;
        printf("| %s | %zu |", coll_names[c], pc[c].calls);
        struct series *cols[NCOLS];
        columns(&pc[c], cols);
        for (int k = 0; k < NCOLS; k++)
            put_stat(cols[k]);
        printf("\n");
    }
    for (int c = 0; c < NCOLLS; c++) {
        struct series *cols[NCOLS];
        columns(&pc[c], cols);
        for (int k = 0; k < NCOLS; k++)
            free(cols[k]->v);
    }
    printf("\nmedian (largest) in microseconds; %d files, %zu events", nfiles, nev);
    if (dropped)
        printf(", %llu dropped (raise BLINK_TRACE_RECORDS)", dropped);
    printf("\n");
}

int main(int argc, char **argv)
{
    int verbose = 0, first = 1;
    if (argc > 1 && !strcmp(argv[1], "-v"))
        verbose = 1, first = 2;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("Usage: blink-trace [-v] DIR|FILE...\nSummarise the files BLINK_TRACE=DIR "
               "wrote: call latency and the cost of each hop, per collective.\n");
        return 0;
    }
    if (first >= argc) {
        fprintf(stderr, "blink-trace: no trace given\nUsage: blink-trace [-v] DIR|FILE...\n");
        return 2;
    }
    for (int i = first; i < argc; i++) {
        struct stat st;
        int r = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? read_dir(argv[i])
                                                                : read_file(argv[i]);
        if (r) {
            free(evs);
            return 1;
        }
    }
    if (!nfiles) {
        fprintf(stderr, "blink-trace: no blink-trace.*.tsv file found\n");
        free(evs);
        return 1;
    }
    summarize(verbose);
    free(evs);
    return 0;
}
