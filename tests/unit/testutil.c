/* SPDX-License-Identifier: GPL-3.0-or-later */
/* testutil.c - see testutil.h. */
#define _DEFAULT_SOURCE /* mkstemps */
#include "plan/plan.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/input.h"
#include "core/strbuf.h"

extern char **environ;

static char *env_path(const char *var, const char *fallback, const char *rel)
{
    const char *base = getenv(var);
    return bk_asprintf("%s/%s", base ? base : fallback, rel);
}

char *tu_src_path(const char *rel) { return env_path("BLINKC_SRCDIR", ".", rel); }
char *tu_shared_path(const char *rel)
{
    char *path = env_path("BLINKC_SHARED", "../shared", rel);
    if (access(path, R_OK) != 0) {
        /* A clone of the project alone has no ../shared: what needs it skips, and says so. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s is absent (this test reads the real files of ../shared "
                 "beside the checkout, or of BLINKC_SHARED)", path);
        free(path);
        cr_skip_test("%s", msg);
    }
    return path;
}

static enum bk_status read_input(const struct input *in, enum topo_format fmt,
                                 const char *gpu_model, struct topo *t, struct diag *d)
{
    struct topo_read_opts o;
    topo_read_opts_default(&o);
    o.format = fmt;
    o.gpu_model = gpu_model;
    return topo_read(in, &o, t, d);
}

enum bk_status tu_read_file(const char *path, enum topo_format fmt, const char *gpu_model,
                            struct topo *t, struct diag *d)
{
    struct input in;
    enum bk_status st = input_read(path, &in, d);
    if (st != BK_OK)
        return st;
    st = read_input(&in, fmt, gpu_model, t, d);
    input_free(&in);
    return st;
}

enum bk_status tu_read_string(const char *name, const char *text, enum topo_format fmt,
                              const char *gpu_model, struct topo *t, struct diag *d)
{
    struct input in;
    enum bk_status st = input_from_memory(name, text, strlen(text), &in);
    if (st != BK_OK)
        return st;
    st = read_input(&in, fmt, gpu_model, t, d);
    input_free(&in);
    return st;
}

int tu_count_links(const struct topo *t, enum topo_link_kind kind)
{
    int n = 0;
    for (int i = 0; i < t->nlinks; i++)
        n += t->links[i].kind == kind;
    return n;
}

int tu_count_nodes(const struct topo *t, enum topo_node_kind kind)
{
    int n = 0;
    for (int i = 0; i < t->nnodes; i++)
        n += t->nodes[i].kind == kind;
    return n;
}

const struct topo_link *tu_link(const struct topo *t, const char *a, const char *b)
{
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (strcmp(t->nodes[l->src].id, a) == 0 && strcmp(t->nodes[l->dst].id, b) == 0)
            return l;
    }
    return NULL;
}

int tu_node(const struct topo *t, const char *id)
{
    for (int i = 0; i < t->nnodes; i++)
        if (strcmp(t->nodes[i].id, id) == 0)
            return i;
    cr_assert_fail("no node %s", id);
    return -1;
}

/* Links are stored once per direction, and a reader could get one direction wrong: check both. */
static void expect_duplex(const struct topo *t, const char *a, const char *b,
                          enum topo_link_kind kind, int count, double gbps)
{
    const char *const end[2] = {a, b};
    for (int rev = 0; rev < 2; rev++) {
        const char *x = end[rev], *y = end[!rev];
        const struct topo_link *l = tu_link(t, x, y);
        cr_assert_not_null(l, "no link %s -> %s", x, y);
        cr_assert_eq(l->kind, kind, "%s -> %s is %s, expected %s", x, y,
                     topo_link_kind_name(l->kind), topo_link_kind_name(kind));
        cr_assert_eq(l->count, count, "%s -> %s: %d links, expected %d", x, y, l->count, count);
        cr_assert_float_eq(l->gbps, gbps, 1e-9, "%s -> %s: %g GB/s, expected %g", x, y, l->gbps,
                           gbps);
    }
}

void tu_expect_dgx1v(const struct topo *t)
{
    /* Indexed by enum topo_node_kind and enum topo_link_kind. */
    static const int nodes[TOPO_NODE_KINDS] = {8, 0, 4, 2, 4, 0};
    static const int links[TOPO_LINK_KINDS] = {32, 32, 2, 0};
    static const int dbl[8][2] = {{0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {4, 7}, {5, 6}, {6, 7}};
    static const int sgl[8][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 6}, {5, 7}};
    for (int k = 0; k < TOPO_NODE_KINDS; k++) {
        int n = tu_count_nodes(t, (enum topo_node_kind)k);
        cr_assert_eq(n, nodes[k], "%d %s nodes, expected %d", n,
                     topo_node_kind_name((enum topo_node_kind)k), nodes[k]);
    }
    /*
     * With these totals the lists below are exhaustive: 16 NVLink pairs and 16 PCIe hops, each
     * both ways, make all 32 + 32 directed links. So no other link exists, every GPU has 6
     * NVLinks (150 GB/s), every PCIe link is 12 GB/s and each GPU or NIC has one switch.
     */
    for (int k = 0; k < TOPO_LINK_KINDS; k++) {
        int n = tu_count_links(t, (enum topo_link_kind)k);
        cr_assert_eq(n, links[k], "%d %s links, expected %d", n,
                     topo_link_kind_name((enum topo_link_kind)k), links[k]);
    }
    char a[16], b[16];
    for (int g = 0; g < 8; g++) {
        snprintf(a, sizeof a, "gpu%d", g);
        int gen = t->nodes[tu_node(t, a)].nvlink_gen;
        cr_assert_eq(gen, 2, "%s: NVLink generation %d, expected 2 (V100)", a, gen);
    }
    for (int p = 0; p < 8; p++) {
        snprintf(a, sizeof a, "gpu%d", dbl[p][0]), snprintf(b, sizeof b, "gpu%d", dbl[p][1]);
        expect_duplex(t, a, b, TOPO_NVLINK, 2, 50.0);
        snprintf(a, sizeof a, "gpu%d", sgl[p][0]), snprintf(b, sizeof b, "gpu%d", sgl[p][1]);
        expect_duplex(t, a, b, TOPO_NVLINK, 1, 25.0);
    }
    for (int k = 0; k < 4; k++) {
        char sw[16];
        snprintf(sw, sizeof sw, "pcisw%d", k);
        snprintf(a, sizeof a, "gpu%d", 2 * k), expect_duplex(t, a, sw, TOPO_PCIE, 1, 12.0);
        snprintf(a, sizeof a, "gpu%d", 2 * k + 1), expect_duplex(t, a, sw, TOPO_PCIE, 1, 12.0);
        snprintf(a, sizeof a, "nic%d", k), expect_duplex(t, a, sw, TOPO_PCIE, 1, 12.0);
        snprintf(a, sizeof a, "cpu%d", k / 2), expect_duplex(t, sw, a, TOPO_PCIE, 1, 12.0);
    }
    for (int c = 0; c < 2; c++) {
        snprintf(a, sizeof a, "cpu%d", c);
        int socket = t->nodes[tu_node(t, a)].socket;
        cr_assert_eq(socket, c, "%s on socket %d, expected %d", a, socket, c);
    }
    expect_duplex(t, "cpu0", "cpu1", TOPO_SMP, 1, 6.0);
}

static char *slurp_fd(int fd)
{
    struct strbuf sb;
    sb_init(&sb);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        sb_putn(&sb, buf, (size_t)n);
    return sb_take(&sb);
}

void tu_run_argv(struct tu_run *r, const char *const *argv)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    /* Capture through temporary files: no pipe can fill up and deadlock. */
    char out_path[] = "/tmp/blinkc-test-out-XXXXXX", err_path[] = "/tmp/blinkc-test-err-XXXXXX";
    int ofd = mkstemp(out_path), efd = mkstemp(err_path);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, ofd, 1);
    posix_spawn_file_actions_adddup2(&fa, efd, 2);
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) == 0) {
        int ws;
        if (waitpid(pid, &ws, 0) == pid && WIFEXITED(ws))
            r->status = WEXITSTATUS(ws);
    }
    posix_spawn_file_actions_destroy(&fa);
    lseek(ofd, 0, SEEK_SET);
    lseek(efd, 0, SEEK_SET);
    r->out = slurp_fd(ofd);
    r->err = slurp_fd(efd);
    close(ofd), close(efd);
    unlink(out_path), unlink(err_path);
}

void tu_run_blinkc(struct tu_run *r, const char *const *args)
{
    const char *bin = getenv("BLINKC_BIN");
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 2, sizeof *argv);
    argv[0] = bin ? bin : "planner/blinkc";
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = args[i];
    tu_run_argv(r, argv);
    free(argv);
}

void tu_run_free(struct tu_run *r)
{
    free(r->out);
    free(r->err);
}

char *tu_nvswitch_text(const char *name, int ngpus, int count)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "topology %s\nnvswitch nvs0\n", name);
    for (int g = 0; g < ngpus; g++)
        sb_printf(&sb, "gpu gpu%d model=\"NVIDIA H100 80GB HBM3\"\nlink gpu%d nvs0 count=%d\n",
                  g, g, count);
    char *text = sb_take(&sb);
    cr_assert_not_null(text);
    return text;
}

char *tu_temp_file(const char *suffix, const char *text, size_t len)
{
    char *path = bk_asprintf("/tmp/blinkc-test-XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0) {
        free(path);
        return NULL;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd);
    return path;
}

void tu_load_alloc(const char *fixture, const int *gpus, int ngpus, struct topo *out)
{
    char rel[256];
    snprintf(rel, sizeof rel, "topologies/%s", fixture);
    char *path = tu_src_path(rel);
    struct topo whole;
    struct diag d;
    diag_init(&d);
    enum bk_status st = tu_read_file(path, TOPO_FMT_AUTO, NULL, &whole, &d);
    cr_assert_eq(st, BK_OK, "%s: %s", path, diag_first_error(&d) ? diag_first_error(&d) : "?");
    free(path);
    if (ngpus > 0) {
        st = topo_restrict(&whole, gpus, ngpus, out, &d);
        cr_assert_eq(st, BK_OK, "restrict: %s", diag_first_error(&d) ? diag_first_error(&d) : "?");
        topo_free(&whole);
    } else {
        *out = whole;
    }
    diag_free(&d);
}

/* The directed topology link a->b (node indices), found by a plain scan; -1 if none. */
static int find_link(const struct topo *t, int a, int b, unsigned kinds)
{
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == a && t->links[i].dst == b && (kinds & (1u << t->links[i].kind)))
            return i;
    return -1;
}

/*
 * plan-json.md's rules, checked on node sequences: each non-root GPU is the child of exactly one
 * edge, parents lead to the root, paths run parent..child over listed links with only non-GPU
 * nodes inside, and the summed load on every directed link stays within its capacity.
 */
void tu_check_trees(const struct topo *t, const struct plan_trees *pt, int c)
{
    double *load = calloc((size_t)t->nlinks, sizeof *load);
    int n = t->ngpus;
    for (int i = 0; i < pt->trees.n; i++) {
        const struct ptree *tr = &pt->trees.t[i];
        cr_assert(tr->rate > 0);
        for (int v = 0; v < n; v++) {
            int steps = 0;
            for (int u = v; u != tr->root; u = tr->parent[u])
                cr_assert(u >= 0 && ++steps <= n, "gpu%d does not reach the root", v);
            if (v == tr->root)
                continue;
            int at = tr->parent[v];
            for (int k = tr->path_off[v]; k < tr->path_off[v + 1]; k++) {
                int next = pgraph_node(pt->g, pt->g->dst[tr->path_arc[k]]);
                cr_assert(k == tr->path_off[v] || t->nodes[at].kind != TOPO_GPU,
                          "a path passes through a GPU");
                /* Data flows parent to child, or child to parent for reduce-like collectives. */
                int down = c == COLL_BROADCAST || c == COLL_ALLGATHER || c == COLL_ALLREDUCE;
                int up = c == COLL_REDUCE || c == COLL_REDUCESCATTER || c == COLL_ALLREDUCE;
                int l_down = find_link(t, at, next, pt->kinds);
                int l_up = find_link(t, next, at, pt->kinds);
                cr_assert(l_down >= 0 || l_up >= 0, "no link %s-%s", t->nodes[at].id,
                          t->nodes[next].id);
                if (down) {
                    cr_assert(l_down >= 0);
                    load[l_down] += tr->rate;
                }
                if (up) {
                    cr_assert(l_up >= 0);
                    load[l_up] += tr->rate;
                }
                at = next;
            }
            cr_assert_eq(at, v, "the path to gpu%d ends elsewhere", v);
        }
    }
    for (int i = 0; i < t->nlinks; i++)
        cr_assert(load[i] <= t->links[i].gbps * (1 + 1e-9) + 1e-6, "link %s->%s: %g > %g",
                  t->nodes[t->links[i].src].id, t->nodes[t->links[i].dst].id, load[i],
                  t->links[i].gbps);
    free(load);
}

void tu_plan_alloc(const char *fixture, const int *gpus, int ngpus, unsigned collectives,
                   int root, struct topo *t, struct plan_set *ps)
{
    tu_load_alloc(fixture, gpus, ngpus, t);
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = collectives;
    o.root = root;
    struct diag d;
    diag_init(&d);
    enum bk_status st = plan_all(t, &o, ps, &d);
    cr_assert_eq(st, BK_OK, "%s: %s", fixture, diag_first_error(&d) ? diag_first_error(&d) : "?");
    diag_free(&d);
}

const struct plan *tu_find_plan(const struct plan_set *ps, int c, int root)
{
    for (int i = 0; i < ps->n; i++)
        if ((int)ps->v[i].coll == c && (root < 0 || ps->v[i].root == root))
            return &ps->v[i];
    cr_assert_fail("no %s plan for root %d", collective_name((enum collective)c), root);
    return NULL;
}

char *tu_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct strbuf sb;
    sb_init(&sb);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_putn(&sb, buf, n);
    fclose(f);
    if (len)
        *len = sb.len;
    return sb.data ? sb_take(&sb) : bk_strndup("", 0);
}

/* The C token stream, one token per line: string and character literals become STR, comments
 * are kept whole (input text must never reach them), everything else is split into identifier,
 * number and punctuation tokens. Literal texts are appended to lits. */
char *tu_c_tokens(const char *s, struct strbuf *lits)
{
    struct strbuf sb;
    sb_init(&sb);
    for (const char *p = s; *p;) {
        if (*p == ' ' || *p == '\n' || *p == '\t') {
            p++;
        } else if (p[0] == '/' && (p[1] == '*' || p[1] == '/')) {
            const char *e = p[1] == '*' ? strstr(p + 2, "*/") : strchr(p, '\n');
            cr_assert(e, "unterminated comment");
            e += p[1] == '*' ? 2 : 0;
            sb_putn(&sb, p, (size_t)(e - p));
            sb_putc(&sb, '\n');
            p = e;
        } else if (*p == '"' || *p == '\'') {
            const char *q = p + 1;
            while (*q && *q != *p && *q != '\n')
                q += *q == '\\' && q[1] ? 2 : 1;
            cr_assert_eq(*q, *p, "unterminated literal");
            sb_putn(lits, p, (size_t)(q + 1 - p));
            sb_putc(lits, '\n');
            sb_puts(&sb, "STR\n");
            p = q + 1;
        } else {
            size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.");
            sb_putn(&sb, p, n ? n : 1);
            sb_putc(&sb, '\n');
            p += n ? n : 1;
        }
    }
    return sb_take(&sb);
}
