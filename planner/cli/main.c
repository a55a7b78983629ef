/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * main.c - the blinkc command: parse options, read the topology (replicated into a cluster for
 * --servers), restrict it to the allocation, write what was asked for. Only this file prints
 * diagnostics and chooses exit codes.
 *
 * Data flows one way: input -> model -> (plan) -> outputs. Every output is rendered in memory
 * and written atomically, so a failing run leaves no partial file.
 */
#include <hwloc.h>
#include <libxml/xmlversion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/builtin.h"
#include "cli/cli.h"
#include "config.h"
#include "core/diag.h"
#include "emit/emit.h"
#include "ilp/ilp.h"
#include "core/input.h"
#include "core/outfile.h"
#include "core/progress.h"
#include "plan/plan.h"
#include "plan/plan_load.h"
#include "out/msccl_xml.h"
#include "out/plan_dot.h"
#include "out/plan_explain.h"
#include "tune/allocations.h"
#include "tune/plan_tune.h"
#include "out/sim_report.h"
#include "out/plan_json.h"
#include "core/strbuf.h"
#include "topo/topo.h"
#include "topo/topo_join.h"
#include "topo/topo_print.h"
#include "read/topo_read.h"
#include "core/trail.h"

/* Plans made by this run, for the summary line. */
static int plans_made;

static int exit_code(enum bk_status st)
{
    switch (st) {
    case BK_OK: return 0;
    case BK_EUSAGE: return 2;
    case BK_ENOMEM:
    case BK_EINTERNAL: return 3;
    default: return 1;
    }
}

static void print_version(void)
{
    printf("blinkc %s\n", PACKAGE_VERSION);
    printf("built with hwloc %s, libxml2 %s, %s\n", HWLOC_VERSION, LIBXML_DOTTED_VERSION,
           ilp_solver_version());
}

/* Load the TOPOLOGY argument: a file, "-", builtin:NAME, or the built-in default. */
BK_MUST_USE
static enum bk_status load_input(const char *arg, struct input *in, struct diag *d)
{
    const char *name = NULL;
    if (!arg) {
        name = BUILTIN_DEFAULT;
        diag_note(d, NULL, DIAG_NOWHERE,
                  "no TOPOLOGY given; using the built-in DGX-1V (builtin:%s)", BUILTIN_DEFAULT);
    } else if (strncmp(arg, BUILTIN_PREFIX, strlen(BUILTIN_PREFIX)) == 0) {
        name = arg + strlen(BUILTIN_PREFIX);
    }
    if (!name)
        return input_read(arg, in, d);
    const struct builtin_file *f = builtin_topo_find(name);
    if (!f) {
        struct strbuf sb;
        sb_init(&sb);
        for (const struct builtin_file *b = builtin_topos; b->name; b++)
            sb_printf(&sb, "%s%.*s", b == builtin_topos ? "" : ", ",
                      (int)(strlen(b->name) - strlen(".topo")), b->name);
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "no built-in topology '%s' (built in: %s)",
                 name, sb.data ? sb.data : "none");
        sb_free(&sb);
        return BK_EUSAGE;
    }
    char *label = bk_asprintf("%s%s", BUILTIN_PREFIX, f->name);
    if (!label)
        return BK_ENOMEM;
    enum bk_status st = input_from_memory(label, f->data, f->size, in);
    free(label);
    return st;
}

/* Give the reserved output `path` its contents. */
BK_MUST_USE
static enum bk_status fill(struct outfile_set *outs, const char *path, struct strbuf *sb,
                           struct diag *d)
{
    if (sb->failed && sb->err) { /* a streaming buffer's write (sb_stream) */
        diag_add(d, DIAG_ERROR, path, DIAG_NOWHERE, "cannot write output: %s",
                 strerror(sb->err));
        return BK_EIO;
    }
    if (sb->failed)
        return BK_ENOMEM;
    return outfile_fill(outs, path, sb->data ? sb->data : "", sb->len, d);
}

/* Print to standard output (the table, --explain, --print-topology, --simulate). */
BK_MUST_USE
static enum bk_status print(struct strbuf *sb, struct diag *d)
{
    enum bk_status st = sb->failed ? BK_ENOMEM
                                   : outfile_write("-", sb->data ? sb->data : "", sb->len, d);
    sb_free(sb);
    return st;
}

/* "rank 0 is gpu4, rank 1 is gpu5, ...": tables name GPUs, --root takes either. */
static void put_ranks(struct strbuf *sb, const struct topo *t)
{
    for (int r = 0; r < t->ngpus && r < 16; r++)
        sb_printf(sb, "%srank %d is %s", r ? ", " : "", r, t->nodes[topo_gpu_node(t, r)].id);
    if (t->ngpus > 16)
        sb_puts(sb, ", ...");
}

/* --root RANK or gpuN, checked against the allocation. */
BK_MUST_USE
static enum bk_status resolve_root(const struct cli *c, const struct topo *t, int *root,
                                   struct diag *d)
{
    int r = c->root_gpu ? -2 : c->plan.root; /* -1: every rank; -2: no such GPU */
    for (int k = 0; c->root_gpu && k < t->ngpus; k++)
        if (strcmp(t->nodes[topo_gpu_node(t, k)].id, c->root_gpu) == 0)
            r = k;
    if (r >= -1 && r < t->ngpus) {
        *root = r;
        return BK_OK;
    }
    struct strbuf sb;
    sb_init(&sb);
    put_ranks(&sb, t);
    if (c->root_gpu)
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "--root %s: not a GPU of the allocation (%s)",
                 c->root_gpu, sb.data ? sb.data : "");
    else
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "--root %d: the allocation has %d GPUs (%s)",
                 c->plan.root, t->ngpus, sb.data ? sb.data : "");
    sb_free(&sb);
    return BK_EUSAGE;
}

/* --msccl-xml DIR holds this export's files only (outfile_dir_only): before planning, none of
 * another allocation (`suffix`, ".gpu0-3.xml"); after it, none but the ones written now. */
BK_MUST_USE
static enum bk_status check_msccl_dir(const char *dir, const char *const *names, int n,
                                      const char *suffix, struct diag *d)
{
    char *hint = bk_asprintf("which this export does not write; the MSCCL executors load every "
                             "file of their directory, so remove what is not this export's "
                             "(rm %s/*.xml clears an earlier one) or give an empty directory",
                             dir);
    enum bk_status st = hint ? outfile_dir_only(dir, names, n, suffix, hint, d) : BK_ENOMEM;
    free(hint);
    return st;
}

/* --msccl-xml DIR: a file per plan and per run of sizes where the trees run (msccl_xml.h).
 * The executors parse every file in their directory, and take the first that fits a call's
 * rank count, collective and size, so DIR may hold only this export's files (an earlier run's
 * with the same names are replaced). A plan that runs NCCL at every size gets no file, and a
 * note names it. */
BK_MUST_USE
static enum bk_status write_msccl(const char *dir, const struct plan_set *ps,
                                  struct outfile_set *outs, struct diag *d)
{
    int n = 0;
    for (int k = 0; k < ps->n; k++)
        n += msccl_xml_count(ps, k);
    struct strbuf *text = calloc((size_t)n + 1, sizeof *text);
    char(*name)[MSCCL_XML_NAME_MAX] = calloc((size_t)n + 1, sizeof *name);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    enum bk_status st = text && name && names ? BK_OK : BK_ENOMEM;
    for (int k = 0, i = 0; st == BK_OK && k < ps->n; k++)
        for (int j = 0; st == BK_OK && j < msccl_xml_count(ps, k); j++, i++) {
            st = msccl_xml_render(&text[i], name[i], sizeof name[i], ps, k, j);
            names[i] = name[i];
        }
    if (st == BK_OK)
        st = check_msccl_dir(dir, names, n, NULL, d);
    for (int i = 0; st == BK_OK && i < n; i++) {
        char *path = bk_asprintf("%s/%s", dir, name[i]);
        st = path ? outfile_reserve(outs, path, d) : BK_ENOMEM;
        if (st == BK_OK)
            st = fill(outs, path, &text[i], d);
        free(path);
    }
    struct strbuf none;
    sb_init(&none);
    if (st == BK_OK)
        msccl_xml_none(&none, ps);
    if (st == BK_OK && none.data)
        diag_add(d, DIAG_NOTE, dir, DIAG_NOWHERE,
                 "no MSCCL file for %s: NCCL runs at every size, and the executors run the "
                 "library's own algorithms for sizes no file covers", none.data);
    sb_free(&none);
    for (int i = 0; text && i < n; i++)
        sb_free(&text[i]);
    free(text), free(name), free(names);
    return st;
}

/* Plan (unless only the topology was asked for), fill every reserved output, put them in place,
 * then print what goes to the terminal. */
BK_MUST_USE
static enum bk_status write_outputs(const struct cli *c, const struct topo *t,
                                    struct outfile_set *outs, struct diag *d)
{
    struct strbuf sb;
    sb_init(&sb);
    struct plan_set ps;
    memset(&ps, 0, sizeof ps);
    struct plan_opts po = c->plan;
    po.keep_ilp = c->dump_ilp != NULL;
    int any_output = c->plan_json || c->dump_ilp || c->output || c->dot || c->msccl_xml;
    /* Everything but the matrix needs the plans, --simulate included. */
    int only_topology = c->print_topology && !c->explain && !c->simulate && !any_output;
    enum bk_status st = BK_OK;
    BK_CHECK(resolve_root(c, t, &po.root, d));
    int table = c->explain || (!any_output && !c->print_topology && !c->simulate);
    /* The table alone reads no trees: a root's plan that is another's relabelled keeps only
     * its numbers (1,024 roots of a cluster would otherwise hold 1,024 copies of the trees). */
    po.numbers_only_copies = table && !c->explain && !c->simulate && !any_output;
    if (table && !c->explain) { /* what was read comes first, before the planning's wait */
        topo_print_summary(&sb, t);
        BK_CHECK_GOTO(print(&sb, d), st, out);
    }
    if (c->msccl_xml) { /* a directory that cannot take the export fails before the planning */
        char tag[MSCCL_XML_TAG_MAX + 16], suffix[MSCCL_XML_TAG_MAX + 24];
        msccl_xml_alloc_tag(tag, sizeof tag, t);
        snprintf(suffix, sizeof suffix, ".%s.xml", tag);
        BK_CHECK_GOTO(check_msccl_dir(c->msccl_xml, NULL, 0, suffix, d), st, out);
    }
    if (!only_topology)
        BK_CHECK_GOTO(plan_all(t, &po, &ps, d), st, out);
    plans_made = ps.n;
    if (c->tune && (c->output || table || c->simulate || c->msccl_xml))
        BK_CHECK_GOTO(plan_tune_sets(&(struct plan_set *){&ps}, 1, &c->sim.params, c->jobs, d),
                      st, out);
    const char *model = NULL; /* --dump-ilp: the one plan's (cli.c checks there is one) */
    for (int i = 0; i < ps.n && !model; i++)
        model = ps.v[i].ilp_model;
    if (c->dump_ilp && !model) {
        diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE,
                 "--dump-ilp: no ILP was solved for this plan, so there is no model to write");
        st = BK_ESOLVE;
        goto out;
    }
    if (c->output) {
        BK_CHECK_GOTO(emit_render(&sb, &(struct emit_alloc){t, &ps, 0, NULL}, 1, c->templates,
                                  d),
                      st, out);
        BK_CHECK_GOTO(fill(outs, c->output, &sb, d), st, out);
        sb_free(&sb);
    }
    if (c->dump_ilp) {
        sb_puts(&sb, model);
        BK_CHECK_GOTO(fill(outs, c->dump_ilp, &sb, d), st, out);
        sb_free(&sb);
    }
    if (c->dot && outfile_is_dir(c->dot)) { /* --dot DIR: a file per plan */
        for (int k = 0; k < ps.n; k++) {
            char name[64];
            plan_dot_name(name, sizeof name, &ps, k);
            char *path = bk_asprintf("%s/%s", c->dot, name);
            st = path ? outfile_reserve(outs, path, d) : BK_ENOMEM;
            plan_dot_one(&sb, &ps, k, c->dot_collapse);
            if (st == BK_OK)
                st = fill(outs, path, &sb, d);
            free(path);
            sb_free(&sb);
            if (st != BK_OK)
                goto out;
        }
    } else if (c->dot) {
        plan_dot(&sb, &ps, c->dot_collapse);
        BK_CHECK_GOTO(fill(outs, c->dot, &sb, d), st, out);
        sb_free(&sb);
    }
    if (c->msccl_xml)
        BK_CHECK_GOTO(write_msccl(c->msccl_xml, &ps, outs, d), st, out);
    if (c->plan_json) {
        /* Gigabytes for every root of a large cluster: written as they are made. */
        int fd = outfile_fd(outs, c->plan_json);
        if (fd >= 0)
            sb_stream(&sb, fd);
        plan_json_render(&sb, t, &ps);
        BK_CHECK_GOTO(fill(outs, c->plan_json, &sb, d), st, out);
        sb_free(&sb);
    }
    BK_CHECK_GOTO(outfile_commit(outs, d), st, out);
    if (c->print_topology) {
        topo_print_matrix(&sb, t);
        BK_CHECK_GOTO(print(&sb, d), st, out);
    }
    if (c->simulate) {
        BK_CHECK_GOTO(sim_report(&sb, &ps, &c->sim, d), st, out);
        BK_CHECK_GOTO(print(&sb, d), st, out);
    }
    if (table) {
        plan_explain(&sb, &ps, c->explain);
        st = print(&sb, d);
    }
out:
    sb_free(&sb);
    plan_set_free(&ps);
    return st;
}

/* --all-allocations: every allocation's plans rendered into one source (allocations.h). */
BK_MUST_USE
static enum bk_status write_library(const struct cli *c, const struct topo *full,
                                    struct outfile_set *outs, struct diag *d)
{
    struct allocations a;
    BK_CHECK(plan_allocations(full, &c->plan, c->tune ? &c->sim.params : NULL, c->jobs, &a, d));
    for (int i = 0; i < a.n; i++)
        plans_made += a.sets[i].n;
    struct emit_alloc *allocs = calloc((size_t)a.n + 1, sizeof *allocs);
    enum bk_status st = allocs ? BK_OK : BK_ENOMEM;
    for (int i = 0; st == BK_OK && i < a.n; i++)
        allocs[i] = (struct emit_alloc){&a.topos[i], &a.sets[i], a.same[i] != i ? a.same[i] + 1 : 0,
                                        a.devices ? &a.devices[(size_t)i * ALLOCATIONS_MAX_GPUS]
                                                  : NULL};
    struct emit_blocks blocks = {a.ndevices, a.block};
    struct strbuf code;
    sb_init(&code);
    if (st == BK_OK)
        st = emit_render_classes(&code, allocs, a.n, a.block ? &blocks : NULL, c->templates, d);
    if (st == BK_OK)
        st = fill(outs, c->output, &code, d);
    if (st == BK_OK)
        st = outfile_commit(outs, d);
    sb_free(&code);
    free(allocs);
    allocations_free(&a);
    return st;
}

/* --from-plan: the code of a saved plan, rendered as -o renders it after planning. */
BK_MUST_USE
static enum bk_status render_saved_plan(const struct cli *c, struct outfile_set *outs,
                                        struct diag *d)
{
    struct input in;
    BK_CHECK(input_read(c->from_plan, &in, d));
    struct topo t;
    struct plan_set ps;
    enum bk_status st = plan_load(&in, &t, &ps, d);
    input_free(&in);
    if (st != BK_OK)
        return st;
    int tuned = 0;
    for (int i = 0; i < ps.n; i++)
        tuned |= ps.v[i].tune.n > 0;
    if (!tuned && ps.n > 0 && t.nservers == 1) /* cluster plans are not tuned (plan_tune.h) */
        diag_note(d, c->from_plan, DIAG_NOWHERE, "the plan has no per-size ranges (it was saved "
                  "without -o, or with --no-tune): the code runs the trees at every size");
    struct strbuf code;
    sb_init(&code);
    st = emit_render(&code, &(struct emit_alloc){&t, &ps, 0, NULL}, 1, c->templates, d);
    if (st == BK_OK)
        st = fill(outs, c->output, &code, d);
    if (st == BK_OK)
        st = outfile_commit(outs, d);
    sb_free(&code);
    plan_set_free(&ps);
    topo_free(&t);
    return st;
}

/* Read the topology (or build the cluster of --servers) and cut out the allocation. */
BK_MUST_USE
static enum bk_status read_topology(const struct cli *c, struct topo *out, struct diag *d)
{
    struct input in;
    BK_CHECK(load_input(c->topology, &in, d));
    struct topo full;
    enum bk_status st = topo_read(&in, &c->read, &full, d);
    input_free(&in);
    if (st != BK_OK)
        return st;
    if (c->servers) {
        /* --servers: the topology read is one server; the cluster replaces it. */
        char what[80];
        snprintf(what, sizeof what, "--nic-gbps %.40s", c->nic_arg ? c->nic_arg : "");
        struct topo_join_opts jo = {NULL, DIAG_NOWHERE, c->nic_gbps, &c->read.rates, what,
                                    NULL, DIAG_NOWHERE};
        struct topo cluster;
        st = topo_replicate(&full, c->servers, &jo, &cluster, d);
        topo_free(&full);
        if (st != BK_OK)
            return st;
        full = cluster;
    }
    if (c->all_allocations || !c->ngpus) {
        *out = full;
        return BK_OK;
    }
    st = topo_restrict(&full, c->gpus, c->ngpus, out, d);
    topo_free(&full);
    return st;
}

BK_MUST_USE
static enum bk_status run(const struct cli *c, struct diag *d)
{
    const char *outs[] = {c->plan_json, c->dump_ilp, c->output, c->dot, c->msccl_xml};
    const char *opt_names[] = {"--plan-json", "--dump-ilp", "--output", "--dot", "--msccl-xml"};
    const char *input = c->from_plan ? c->from_plan : c->topology;
    for (size_t i = 0; i < BK_ARRAY_LEN(outs); i++)
        if (input && outs[i] && outfile_same_file(outs[i], input)) {
            diag_add(d, DIAG_ERROR, NULL, DIAG_NOWHERE, "%s %s would overwrite the input %s",
                     opt_names[i], outs[i], c->from_plan ? "plan" : "topology");
            return BK_EUSAGE;
        }
    /* Every output is reserved before the work, so an unwritable path fails at once. */
    struct outfile_set files;
    outfile_set_init(&files);
    enum bk_status st = BK_OK;
    for (size_t i = 0; st == BK_OK && i < BK_ARRAY_LEN(outs); i++)
        st = outs[i] == c->msccl_xml && c->msccl_xml ? outfile_check_dir(c->msccl_xml, d)
             : outs[i] == c->dot && c->dot && outfile_is_dir(c->dot) /* its files come later */
                 ? outfile_check_dir(c->dot, d) : outfile_reserve(&files, outs[i], d);
    struct topo t;
    if (st == BK_OK && c->from_plan) {
        st = render_saved_plan(c, &files, d);
    } else if (st == BK_OK && (st = read_topology(c, &t, d)) == BK_OK) {
        st = c->all_allocations ? write_library(c, &t, &files, d)
                                : write_outputs(c, &t, &files, d);
        topo_free(&t);
    }
    outfile_set_free(&files);
    return st;
}

/* The one-line summary that ends a long job whose progress was shown. */
static void say_done(const struct cli *c)
{
    const char *what = c->output ? c->output : c->plan_json ? c->plan_json
                     : c->dot ? c->dot : c->msccl_xml;
    fprintf(stderr, "blinkc: %s %d plan%s%s%s in %.0f s\n", what ? "wrote" : "made", plans_made,
            plans_made == 1 ? "" : "s", what ? " to " : "",
            what ? (strcmp(what, "-") ? what : "standard output") : "", progress_elapsed());
}

/* The simulator allocates and frees its arrays once per run, thousands of runs a job. glibc
 * maps blocks over 128 KiB afresh each time and trims the heap's top, so every run paid page
 * faults and the kernel's zeroing again: a fifth of the NVL72's tuning. Freed memory stays in
 * the process instead (the peak grows by what the largest run's arrays took). */
static void keep_freed_memory(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

int main(int argc, char **argv)
{
    keep_freed_memory();
    struct cli c;
    char why_buf[256];
    const char *why = NULL;
    if (cli_parse(&c, argc, argv, why_buf, sizeof why_buf, &why) != BK_OK) {
        fprintf(stderr, "blinkc: error: %s\nTry 'blinkc --help' for more information.\n", why);
        return 2;
    }
    if (c.help) {
        cli_print_help(stdout);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (c.version) {
        print_version();
        return fflush(stdout) == 0 ? 0 : 1;
    }
    struct diag d;
    diag_init(&d);
    d.echo = stderr; /* warnings as they are found, not after the table */
    d.echo_from = c.quiet ? DIAG_ERROR : DIAG_NOTE;
    progress_enable(c.quiet ? PROGRESS_OFF
                    : isatty(STDERR_FILENO) ? PROGRESS_TERMINAL : PROGRESS_LINES);
    bk_trail_clear();
    enum bk_status st = run(&c, &d);
    progress_clear();
    diag_print_lost(&d, stderr);
    if (st == BK_OK && progress_enabled() && progress_elapsed() >= 2)
        say_done(&c);
    const char *env = getenv("BLINKC_DEBUG");
    if (st != BK_OK && (c.debug || (env && strcmp(env, "1") == 0)))
        bk_trail_print(stderr);
    const char *file, *func;
    int line;
    if (st == BK_ENOMEM) {
        fputs("blinkc: error: out of memory\n", stderr);
    } else if (st != BK_OK && d.nerrors == 0 && bk_trail_first(&file, &line, &func)) {
        fprintf(stderr, "blinkc: error: internal error: a failure with no diagnostic, first "
                "seen at %s:%d (%s); please report it with the output of 'blinkc --debug'\n",
                file, line, func);
    } else if (st != BK_OK && d.nerrors == 0) {
        fputs("blinkc: error: internal error (no diagnostic was recorded; please report)\n",
              stderr);
    }
    if (st == BK_EUSAGE)
        fputs("Try 'blinkc --help' for more information.\n", stderr);
    diag_free(&d);
    return exit_code(st);
}
