/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_from_plan.c - blinkc --from-plan (plan_load.h): a plan saved with -o in the same run
 * renders the same bytes again, on every fixture (test_emit_golden does the goldens tuned),
 * on allocations in any rank order and on a cluster; a plan file that breaks a rule is refused
 * at the value with exit 1 and no output file; options that would be ignored are usage errors;
 * and the JSON parser underneath accepts RFC 8259 and nothing else.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json_read.h"
#include "core/strbuf.h"
#include "hostile_fixtures.h"
#include "testutil.h"

static int same_bytes(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = tu_slurp(a, &na), *y = tu_slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x), free(y);
    return same;
}

/* blinkc ARGS -o A --plan-json P, then blinkc --from-plan P -o B: A and B must be equal. */
static void check_round_trip(const char *label, const char *const *args)
{
    char *a = tu_temp_file(".cu", "", 0), *b = tu_temp_file(".cu", "", 0);
    char *p = tu_temp_file(".json", "", 0);
    const char *argv[24] = {"-q", "-o", a, "--plan-json", p};
    int n = 5;
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    struct tu_run r;
    tu_run_blinkc(&r, argv);
    cr_assert_eq(r.status, 0, "%s: %s", label, r.err);
    tu_run_free(&r);
    tu_run_blinkc(&r, (const char *const[]){"-q", "--from-plan", p, "-o", b, NULL});
    cr_assert_eq(r.status, 0, "%s: --from-plan: %s", label, r.err);
    tu_run_free(&r);
    cr_expect(same_bytes(a, b), "%s: --from-plan renders other code than -o", label);
    unlink(a), unlink(b), unlink(p);
    free(a), free(b), free(p);
}

/* Tuned where tuning is cheap; builtin:dgx1v and dgx2 are tuned in test_emit_golden. */
static void check_fixture(int k)
{
    const struct hf_fixture *f = &hf_fixtures[k];
    HF_SKIP_HUGE_UNDER_SANITIZERS(f);
    char *path = hf_path(f);
    int tune = !f->heavy && !strstr(f->rel, "dgx1v.");
    check_round_trip(f->rel, (const char *const[]){path, tune ? NULL : "--no-tune", NULL});
    free(path);
}

#define FIXTURE_TEST(name, k)                                                                      \
    Test(from_plan, name, .timeout = 120) { check_fixture(k); }
HF_EACH(FIXTURE_TEST)

Test(from_plan, every_fixture_is_covered)
{
    cr_assert_eq(HF_NFIXTURES, HF_EACH_N, "add the new fixture to HF_EACH (hostile_fixtures.h)");
    hf_check_complete();
}

/* Device numbers come from the GPU ids (gpu5 runs on device 5) in any rank order. */
Test(from_plan, allocations_in_any_rank_order)
{
    check_round_trip("dgx1v 5,1,4", (const char *const[]){"--gpus", "5,1,4", "builtin:dgx1v",
                                                          NULL});
    check_round_trip("dgx1v 0,2,3 allreduce",
                     (const char *const[]){"--gpus", "0,2,3", "--collective", "allreduce",
                                           "builtin:dgx1v", NULL});
}

/* In a cluster the device is the GPU's number within its server ("local_gpu"). */
Test(from_plan, cluster_ranks_keep_their_servers_and_devices)
{
    check_round_trip("2 x dgx1v", (const char *const[]){"--servers", "2", "--gpus", "9,0,8,1",
                                                        "builtin:dgx1v", NULL});
}

/* A name with quotes, a backslash, a newline and a comment end survives the JSON round trip. */
Test(from_plan, a_hostile_name_comes_back_the_same)
{
    const char *topo = "topology \"a\\\"b\\\\c */ d\"\n"
                       "gpu g0 model=V100\ngpu g1 model=V100\nlink g0 g1 count=2\n";
    char *in = tu_temp_file(".topo", topo, strlen(topo));
    check_round_trip("hostile name", (const char *const[]){in, NULL});
    unlink(in);
    free(in);
}

/* A saved plan, with one substitution, must be refused with `want` at LINE:COL. */
struct bad_case {
    const char *find, *replace; /* in the saved plan; find NULL: replace is the whole file */
    const char *want;
};

/* The plan file of a triangle of V100s for one collective. */
static char *saved_plan_of(const char *collective)
{
    static const char topo[] = "topology small\ngpu g0 model=V100\ngpu g1 model=V100\n"
                               "gpu g2 model=V100\nlink g0 g1\nlink g1 g2\nlink g0 g2\n";
    char *in = tu_temp_file(".topo", topo, sizeof topo - 1);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--no-hybrid", "--collective", collective,
                                            "--plan-json", "-", in, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    unlink(in);
    free(in);
    char *json = r.out;
    r.out = NULL;
    tu_run_free(&r);
    return json;
}

static char *saved_plan(void)
{
    return saved_plan_of("allgather");
}

static char *replace_once(const char *s, const char *find, const char *with)
{
    const char *at = strstr(s, find);
    cr_assert_not_null(at, "the saved plan has no '%s'", find);
    return bk_asprintf("%.*s%s%s", (int)(at - s), s, with, at + strlen(find));
}

static void expect_refused_in(const char *collective, const struct bad_case *c)
{
    char *plan = saved_plan_of(collective);
    char *text = c->find ? replace_once(plan, c->find, c->replace) : strdup(c->replace);
    char *path = tu_temp_file(".json", text, strlen(text));
    char *out = bk_asprintf("%s.cu", path);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"--from-plan", path, "-o", out, NULL});
    cr_expect_eq(r.status, 1, "'%s': exit %d: %s", c->want, r.status, r.err);
    cr_expect(strstr(r.err, c->want), "expected '%s' in: %s", c->want, r.err);
    char *where = bk_asprintf("blinkc: %s:", path);
    cr_expect(strstr(r.err, where), "the message names the file: %s", r.err);
    cr_expect(access(out, F_OK) != 0, "no output file after an error");
    tu_run_free(&r);
    unlink(path), unlink(out);
    free(plan), free(text), free(path), free(out), free(where);
}

static void expect_refused(const struct bad_case *c)
{
    expect_refused_in("allgather", c);
}

/* A root's plan that a symmetry copies names its source and the GPU each of the source's
 * becomes; a map that is no permutation, a source that is not earlier, or a map under which
 * the trees are not this plan's is refused. */
Test(from_plan, a_relabelling_that_does_not_hold_is_refused)
{
    static const char rel[] = "\"relabels\": {\"plan\": 0, \"gpus\": [\"gpu1\", \"gpu0\", \"gpu2\"]}";
    static const struct bad_case cases[] = {
        {rel, "\"relabels\": {\"plan\": 0, \"gpus\": [\"gpu1\", \"gpu1\", \"gpu2\"]}",
         "names GPU \"gpu1\" twice"},
        {rel, "\"relabels\": {\"plan\": 1, \"gpus\": [\"gpu1\", \"gpu0\", \"gpu2\"]}",
         "\"plan\" must be a whole number from 0 to 0"},
        {rel, "\"relabels\": {\"plan\": 0, \"gpus\": [\"gpu1\", \"gpu2\", \"gpu0\"]}",
         "relabelled by \"gpus\", are not this plan's"},
        {rel, "\"relabels\": {\"plan\": 0, \"gpus\": [\"gpu1\", \"gpu0\"]}",
         "must list the image of each of the 3 GPUs"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++)
        expect_refused_in("broadcast", &cases[i]);
}

Test(from_plan, a_plan_that_breaks_a_rule_is_refused_where_it_does)
{
    static const struct bad_case cases[] = {
        {NULL, "{\"format\": \"blink-plan\",", ":1:25: error: JSON: expected a string key"},
        {NULL, "[1, 2]", ":1:1: error: plan file: expected a JSON object"},
        {"\"blink-plan\"", "\"nccl-graph\"", "not a blinkc plan"},
        {"\"version\": 1", "\"version\": 2", "version 2; this blinkc reads version 1"},
        {"\"version\": 1", "\"version\": 1, \"version\": 1", "duplicate key"},
        {"\"dst\": \"gpu1\"", "\"dst\": \"gpu9\"", "\"dst\" names no node"},
        {"\"gbps\": 25.0", "\"gbps\": -25.0", "\"gbps\" must be from 0"},
        {"\"rank\": 1", "\"rank\": 2", "GPUs come first, in rank order"},
        {"\"kind\": \"nvlink\"", "\"kind\": \"warp\"", "unknown link kind"},
        {"\"collective\": \"allgather\"", "\"collective\": \"alltoall\"", "unknown collective"},
        {"\"child\": \"gpu1\"", "\"child\": \"gpu0\"", "the root cannot be a child"},
        {"\"parent\": \"gpu0\", \"child\": \"gpu1\"", "\"parent\": \"gpu1\", \"child\": \"gpu1\"",
         "the tree has a cycle"},
        {", {\"parent\": \"gpu0\", \"child\": \"gpu2\", \"path\": [\"gpu0\", \"gpu2\"]}", "",
         "the tree does not reach GPU rank 2"},
        {"\"trees\": [", "\"trees\": [], \"x\": [", "a plan needs at least one tree"},
        {"\"root\": \"gpu0\"", "\"root\": \"gpu0\", \"x\": \"\\ud800\"", "unpaired UTF-16"},
        /* servers are fewer than nodes (a far one made code generation count to it) */
        {"\"rank\": 1, \"server\": 0", "\"rank\": 1, \"server\": 2147483647",
         "\"server\" must be a whole number from 0 to 2"},
        /* the generated code runs gpu01 on device 1, as gpu1 */
        {"\"id\": \"gpu2\"", "\"id\": \"gpu01\"",
         "GPU ranks 1 and 2 would both run on device 1 of server 0"},
        /* the runtime refuses two schedules of one collective and root */
        {NULL,
         "{\"format\": \"blink-plan\", \"version\": 1, \"topology\": {\"name\": \"t\", "
         "\"nodes\": [{\"id\": \"gpu0\", \"kind\": \"gpu\", \"rank\": 0, \"server\": 0}, "
         "{\"id\": \"gpu1\", \"kind\": \"gpu\", \"rank\": 1, \"server\": 0}], \"links\": []},\n"
         "\"plans\": [{\"collective\": \"allreduce\", \"trees\": [{\"root\": \"gpu0\", \"gbps\": 1, "
         "\"edges\": [{\"parent\": \"gpu0\", \"child\": \"gpu1\"}]}]},\n"
         "{\"collective\": \"allreduce\", \"trees\": [{\"root\": \"gpu1\", \"gbps\": 1, "
         "\"edges\": [{\"parent\": \"gpu1\", \"child\": \"gpu0\"}]}]}]}",
         ":3:1: error: plan file: a second allreduce plan (plan 0 is the first)"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++)
        expect_refused(&cases[i]);
}

/* The runtime's weights: whole 1e-4 GB/s, every shard carried, ranges from 0 upwards. */
Test(from_plan, rates_and_ranges_the_runtime_cannot_carry_are_refused)
{
    /* The first tree of a 3-GPU allgather is rooted at gpu0 (trees come in root order). */
    static const struct bad_case cases[] = {
        {"{\"root\": \"gpu0\", \"gbps\": 25.0", "{\"root\": \"gpu0\", \"gbps\": 0.00001",
         "no tree carries the shard of GPU rank 0"},
        {"\"ring_chains\": [", "\"ranges\": [{\"min_bytes\": 8, \"algo\": \"trees\", "
         "\"chunk_bytes\": 1, \"tree_us\": 1, \"ring_us\": 1}], \"ring_chains\": [",
         "ranges start at 0 bytes and grow"},
        {"\"ring_chains\": [", "\"ranges\": [{\"min_bytes\": 0, \"algo\": \"nvls\", "
         "\"chunk_bytes\": 1, \"tree_us\": 1, \"ring_us\": 1}], \"ring_chains\": [",
         "\"algo\" is \"trees\", \"rings\" or \"hybrid\""},
        {"\"ring_chains\": [", "\"ranges\": [{\"min_bytes\": 0, \"algo\": \"trees\", "
         "\"chunk_bytes\": 1, \"proto\": \"LL128\", \"tree_us\": 1, \"ring_us\": 1}], "
         "\"ring_chains\": [", "\"proto\" is \"simple\" or \"ll\""},
        {"\"ring_chains\": [", "\"ranges\": [{\"min_bytes\": 0, \"algo\": \"hybrid\", "
         "\"chunk_bytes\": 1, \"tree_us\": 1, \"ring_us\": 1, \"fallback\": \"nccl\"}], "
         "\"ring_chains\": [", "\"fallback\" is \"trees\" or \"rings\""},
        {"\"ring_chains\": [", "\"ranges\": [{\"min_bytes\": 0, \"algo\": \"hybrid\", "
         "\"chunk_bytes\": 1, \"tree_us\": 1, \"ring_us\": 1}], \"ring_chains\": [",
         "\"fallback\""},
        {"\"ring_chains\": [", "\"hybrid\": {\"trees\": []}, \"ring_chains\": [",
         "a hybrid needs at least one PCIe tree"},
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++)
        expect_refused(&cases[i]);
}

/* Every occurrence of `find` in s removed. */
static char *remove_all(const char *s, const char *find)
{
    struct strbuf sb;
    sb_init(&sb);
    for (const char *at; (at = strstr(s, find)); s = at + strlen(find))
        sb_printf(&sb, "%.*s", (int)(at - s), s);
    sb_puts(&sb, s);
    return sb.data;
}

/* The protocol of each range: written to the plan file and read back (the code renders LL
 * where the tuner chose it, as -o did); a file without it (written before ranges had one)
 * reads as Simple everywhere; a range whose "proto" is gone no longer renders LL. */
/* The hybrid's PCIe trees and its ranges (with their fallback) render the same code again. */
Test(from_plan, the_hybrid_comes_back, .timeout = 120)
{
    const char *const args[] = {"--gpus", "0,2,3", "builtin:dgx1v", NULL};
    check_round_trip("hybrid ranges", args);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "-o", "-", "--gpus", "0,2,3", "builtin:dgx1v",
                                            NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "_pcie_trees["), "the source carries PCIe trees");
    cr_expect(strstr(r.out, "BLINK_PLAN_HYBRID, 4194304u, BLINK_PLAN_SIMPLE, BLINK_PLAN_TREES }"),
              "a hybrid range whose trees alone beat NCCL too");
    tu_run_free(&r);
}

Test(from_plan, the_protocol_of_a_range_comes_back, .timeout = 120)
{
    const char *const args[] = {"--gpus", "0,1,2,4,5", "--collective", "allreduce",
                                "builtin:dgx1v", NULL};
    check_round_trip("LL ranges", args);
    char *a = tu_temp_file(".cu", "", 0), *p = tu_temp_file(".json", "", 0);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "-o", a, "--plan-json", p, "--gpus",
                                            "0,1,2,4,5", "--collective", "allreduce",
                                            "builtin:dgx1v", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    size_t n = 0;
    char *json = tu_slurp(p, &n), *code = tu_slurp(a, &n);
    cr_assert(json && code);
    cr_expect(strstr(json, "\"proto\": \"ll\""), "the tuner picks LL here: %s", json);
    cr_expect(strstr(json, "\"proto\": \"simple\""));
    cr_expect(strstr(code, "BLINK_PLAN_LL, BLINK_PLAN_TREES }"));
    /* Without the member every range reads as Simple. */
    char *bare = remove_all(json, "\"proto\": \"simple\", ");
    char *none = remove_all(bare, "\"proto\": \"ll\", ");
    cr_assert(!strstr(none, "\"proto\""));
    char *q = tu_temp_file(".json", none, strlen(none)), *b = tu_temp_file(".cu", "", 0);
    tu_run_blinkc(&r, (const char *const[]){"-q", "--from-plan", q, "-o", b, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    char *again = tu_slurp(b, &n);
    cr_assert_not_null(again);
    cr_expect(!strstr(again, "BLINK_PLAN_LL"), "a range without \"proto\" is Simple");
    cr_expect(strstr(again, "BLINK_PLAN_SIMPLE, BLINK_PLAN_TREES }"));
    unlink(a), unlink(p), unlink(q), unlink(b);
    free(a), free(p), free(q), free(b), free(json), free(code), free(bare), free(none);
    free(again);
}

static void expect_usage(const char *const *args, const char *want)
{
    struct tu_run r;
    tu_run_blinkc(&r, args);
    cr_expect_eq(r.status, 2, "'%s': exit %d", want, r.status);
    cr_expect(strstr(r.err, want), "expected '%s' in: %s", want, r.err);
    tu_run_free(&r);
}

Test(from_plan, options_it_would_ignore_are_usage_errors)
{
    expect_usage((const char *const[]){"--from-plan", "p.json", NULL}, "goes with -o");
    expect_usage((const char *const[]){"--from-plan", "p.json", "-o", "x.cu", "builtin:dgx1v",
                                       NULL},
                 "cannot take a TOPOLOGY");
    expect_usage((const char *const[]){"--gpus", "0,1", "--from-plan", "p.json", "-o", "x.cu",
                                       NULL},
                 "cannot take --gpus");
    expect_usage((const char *const[]){"--from-plan", "p.json", "-o", "x.cu", "--epsilon", "0.2",
                                       NULL},
                 "cannot take --epsilon");
    expect_usage((const char *const[]){"--from-plan", "p.json", "-o", "x.cu", "--explain", NULL},
                 "-o/--output and --templates only");
}

/* ---- the parser */

static enum bk_status parse(const char *text, struct json_value *v, struct diag *d)
{
    struct input in;
    cr_assert_eq(input_from_memory("t.json", text, strlen(text), &in), BK_OK);
    enum bk_status st = json_parse(&in, v, d);
    input_free(&in);
    return st;
}

Test(json_read, values_escapes_and_positions)
{
    struct diag d;
    diag_init(&d);
    struct json_value v;
    cr_assert_eq(parse("\xef\xbb\xbf{\"a\": [1, -2.5e1, true, null],\n  \"b\": \"x\\u00e9\\ud83d"
                       "\\ude00\\n\\\"\"}",
                       &v, &d),
                 BK_OK, "%s", diag_first_error(&d));
    const struct json_value *a = json_get(&v, "a"), *b = json_get(&v, "b");
    cr_assert(a && b && a->type == JSON_ARRAY && a->n == 4);
    cr_expect(a->items[0].integral && a->items[0].number == 1);
    cr_expect(!a->items[1].integral && a->items[1].number == -25);
    cr_expect(a->items[2].type == JSON_BOOL && a->items[2].boolean);
    cr_expect(a->items[3].type == JSON_NULL);
    cr_expect_str_eq(b->string, "x\xc3\xa9\xf0\x9f\x98\x80\n\"");
    cr_expect(b->loc.line == 2 && b->loc.col == 8, "b at %d:%d", b->loc.line, b->loc.col);
    cr_expect_null(json_get(&v, "c"));
    json_free(&v);
    diag_free(&d);
}

Test(json_read, everything_outside_rfc_8259_is_refused)
{
    static const char *const bad[] = {
        "{\"a\": 1,}", "[1, 2,]", "{'a': 1}", "[NaN]", "[01]", "[1.]", "[.5]", "[1e]",
        "[\"a\nb\"]", "[\"\\x\"]", "[\"\\u0000\"]", "[\"\\udc00\"]", "// c\n[]", "[] []", "",
        "[1e999]", "{\"a\" 1}", "[tru]", "\"\x01\"",
    };
    for (size_t i = 0; i < BK_ARRAY_LEN(bad); i++) {
        struct diag d;
        diag_init(&d);
        struct json_value v;
        cr_expect_eq(parse(bad[i], &v, &d), BK_EINPUT, "accepted: %s", bad[i]);
        cr_expect_not_null(diag_first_error(&d), "no message for: %s", bad[i]);
        diag_free(&d);
    }
}

static enum bk_status parse_nested(int levels, struct diag *d)
{
    struct strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < levels; i++)
        sb_putc(&sb, '[');
    for (int i = 0; i < levels; i++)
        sb_putc(&sb, ']');
    struct json_value v;
    enum bk_status st = parse(sb.data, &v, d);
    if (st == BK_OK)
        json_free(&v);
    sb_free(&sb);
    return st;
}

Test(json_read, nesting_is_bounded)
{
    struct diag d;
    diag_init(&d);
    cr_expect_eq(parse_nested(JSON_MAX_DEPTH, &d), BK_OK, "%s", diag_first_error(&d));
    cr_expect_eq(parse_nested(JSON_MAX_DEPTH + 1, &d), BK_EINPUT);
    cr_expect(diag_first_error(&d) && strstr(diag_first_error(&d), "deeper than 64"));
    diag_free(&d);
}
