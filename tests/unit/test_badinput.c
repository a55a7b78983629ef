/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_badinput.c - the bad-input catalogue, end to end through the blinkc binary: each case must
 * exit with the documented status, print "blinkc: FILE:LINE:COL: error: ..." (or name the XML
 * element), and leave no output file behind.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "testutil.h"

/* Run blinkc on `text` (written to a temp file) with --plan-json; check status and message. */
static void expect_error(const char *suffix, const char *text, size_t len, const char *extra_opt,
                         const char *extra_arg, int status, const char *where, const char *what)
{
    char *in = tu_temp_file(suffix, text, len);
    cr_assert_not_null(in);
    char *out = bk_asprintf("%s.plan.json", in);
    struct tu_run r;
    const char *args[8] = {"--plan-json", out};
    int n = 2;
    if (extra_opt) {
        args[n++] = extra_opt;
        args[n++] = extra_arg;
    }
    args[n++] = in;
    args[n] = NULL;
    tu_run_blinkc(&r, args);
    cr_assert_eq(r.status, status, "exit %d, expected %d; stderr: %s", r.status, status, r.err);
    char *prefix = bk_asprintf("blinkc: %s%s", where ? in : "", where ? where : "");
    cr_assert(strstr(r.err, prefix), "expected '%s' in: %s", prefix, r.err);
    cr_assert(strstr(r.err, what), "expected '%s' in: %s", what, r.err);
    cr_assert_neq(access(out, F_OK), 0, "a failed run must not leave %s", out);
    tu_run_free(&r);
    unlink(in);
    free(prefix), free(out), free(in);
}

#define EXPECT(suffix, text, status, where, what)                                                  \
    expect_error(suffix, text, strlen(text), NULL, NULL, status, where, what)

Test(badinput, empty_file)
{
    EXPECT(".topo", "", 1, ": error: ", "empty file");
    EXPECT(".topo", "  \n\t\n", 1, ": error: ", "empty file");
}

Test(badinput, unknown_format)
{
    EXPECT(".txt", "hello world\nthis is not a topology\n", 1, ":1: error: ", "unknown format");
    EXPECT(".xml", "<?xml version=\"1.0\"?>\n<graph/>\n", 1, ":2:1: error: ", "root element <graph>");
}

Test(badinput, gpu_with_no_links)
{
    EXPECT(".topo", "gpu a model=V100\ngpu b model=V100\ngpu c model=V100\nlink a b count=2\n", 1,
           ":3:1: error: ", "GPU 'c' has no links");
}

Test(badinput, link_to_undeclared_node)
{
    EXPECT(".topo", "gpu a model=V100\nlink a ghost kind=nvlink\n", 1, ":2:8: error: ",
           "undeclared node 'ghost'");
}

Test(badinput, bad_bandwidths)
{
    const char *head = "gpu a model=V100\ngpu b model=V100\n";
    const char *bad[][2] = {
        {"link a b bw=0\n", "positive"},           {"link a b bw=-5GB/s\n", "positive"},
        {"link a b bw=fast\n", "not a number"},    {"link a b bw=1e12\n", "absurd"},
        {"link a b bw=nan\n", "not a number"},     {"link a b bw=inf\n", "not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = bk_asprintf("%s%s", head, bad[i][0]);
        EXPECT(".topo", text, 1, ":3:13: error: ", bad[i][1]); /* the value's column */
        free(text);
    }
}

Test(badinput, duplicate_ids)
{
    EXPECT(".topo", "gpu a model=V100\ngpu a model=V100\n", 1, ":2:5: error: ", "'a'");
}

Test(badinput, disconnected_allocation)
{
    /* GPU 0 and GPU 2 meet only through GPU 1, which the job does not own. */
    const char *text = "gpu a model=V100\ngpu b model=V100\ngpu c model=V100\n"
                       "link a b\nlink b c\n";
    expect_error(".topo", text, strlen(text), "--gpus", "0,2", 1, ": error: ", "disconnected");
}

Test(badinput, gpus_out_of_range)
{
    const char *text = "gpu a model=V100\ngpu b model=V100\nlink a b\n";
    expect_error(".topo", text, strlen(text), "--gpus", "0,5", 2, NULL, "GPU 5 is out of range");
}

Test(badinput, xml_entity_bomb_and_external_entity)
{
    const char *bomb = "<?xml version=\"1.0\"?>\n"
                       "<!DOCTYPE system [\n"
                       " <!ENTITY a \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\">\n"
                       " <!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">\n"
                       " <!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">\n"
                       "]>\n<system version=\"1\"><cpu numaid=\"&c;\"/></system>\n";
    EXPECT(".xml", bomb, 1, ":3:2: error: ", "entity declarations are not allowed");
    const char *xxe = "<?xml version=\"1.0\"?>\n"
                      "<!DOCTYPE topology [ <!ENTITY x SYSTEM \"file:///etc/passwd\"> ]>\n"
                      "<topology version=\"2.0\">&x;</topology>\n";
    EXPECT(".xml", xxe, 1, ":2:22: error: ", "entity declarations are not allowed");
}

Test(badinput, hwloc_version_3)
{
    const char *v3 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<topology version=\"3.0\">\n"
                     "  <object type=\"Machine\" os_index=\"0\" gp_index=\"1\" id=\"obj1\"/>\n"
                     "</topology>\n";
    EXPECT(".xml", v3, 1, ":2", "version 3.0");
}

Test(badinput, ten_megabytes_of_random_bytes)
{
    size_t len = 10u << 20;
    char *noise = malloc(len);
    cr_assert_not_null(noise);
    unsigned long long x = 0x9e3779b97f4a7c15ull; /* fixed seed: the same bytes every run */
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        noise[i] = (char)(x >> 56);
    }
    expect_error(".bin", noise, len, NULL, NULL, 1, ":", "unknown format");
    free(noise);
}

Test(badinput, unreadable_file_and_existing_output_untouched)
{
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"/nonexistent/topo.xml", NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "blinkc: /nonexistent/topo.xml: error: cannot open"), "%s", r.err);
    tu_run_free(&r);

    /* A failed run must leave an existing output exactly as it was. */
    char *in = tu_temp_file(".topo", "gpu a\n", 6);
    char *out = tu_temp_file(".json", "precious\n", 9);
    tu_run_blinkc(&r, (const char *const[]){"--plan-json", out, in, NULL});
    cr_assert_eq(r.status, 1);
    FILE *f = fopen(out, "r");
    char buf[32] = {0};
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(buf, sizeof buf, f));
    fclose(f);
    cr_assert_str_eq(buf, "precious\n");
    tu_run_free(&r);
    unlink(in), unlink(out);
    free(in), free(out);
}

Test(badinput, output_may_not_overwrite_the_input)
{
    char *in = tu_temp_file(".topo", "gpu a\ngpu b\nlink a b kind=nvlink gen=2\n", 36);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"--plan-json", in, in, NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "would overwrite the input"));
    tu_run_free(&r);
    unlink(in);
    free(in);
}

Test(badinput, malformed_xml_names_the_first_error)
{
    /* libxml2 also reports "premature end of data" at the end; the mismatch is what to fix. */
    EXPECT(".xml", "<system version=\"1\">\n<cpu numaid=\"0\">\n</pci>\n</cpu>\n</system>\n", 1,
           ":3:7: error: ", "tag mismatch");
}

Test(badinput, output_to_a_pipe_is_written_in_place)
{
    /* Renaming over a FIFO (or /dev/null) would replace the node itself: write into it. */
    char path[] = "/tmp/blinkc-test-fifo-XXXXXX";
    cr_assert_not_null(mkdtemp(path));
    char *fifo = bk_asprintf("%s/plan", path);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int keep = open(fifo, O_RDWR | O_NONBLOCK); /* a reader, so the writer's open never blocks */
    cr_assert_geq(keep, 0);
    struct tu_run r;
    /* A small plan: the pipe's buffer must hold all of it, as nobody reads until blinkc exits. */
    tu_run_blinkc(&r, (const char *const[]){"-q", "--gpus", "0,1", "--collective", "broadcast",
                                            "--root", "0", "--plan-json", fifo, "builtin:dgx1v", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    char buf[64] = {0};
    cr_assert_gt(read(keep, buf, sizeof buf - 1), 0);
    cr_assert(strncmp(buf, "{\n  \"format\": \"blink-plan\"", 26) == 0, "%s", buf);
    struct stat st;
    cr_assert_eq(stat(fifo, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced by a regular file");
    tu_run_free(&r);
    close(keep);
    unlink(fifo);
    rmdir(path);
    free(fifo);
}

/* Cluster files: their own errors at the cluster file's LINE:COL; a server file that cannot be
 * read, or cannot be a server, at its `server` line; an error inside a server file at that
 * file's position, with a note at the `server` line. */
Test(badinput, cluster_files)
{
    char *dgx = tu_src_path("topologies/dgx1v.topo");
    char *four = tu_src_path("topologies/cluster-4x-dgx1v.topo");
    const char *bad_text = "gpu a\ngpu b\nlink a b bogus=1\n";
    char *bad = tu_temp_file(".topo", bad_text, strlen(bad_text));
    struct {
        char *text;
        const char *where, *what;
    } cases[] = {
        {bk_asprintf("cluster c\nserver a %s\nserver b nosuch.topo\n", dgx), ":3:10: error: ",
         "server 'b': cannot read '/tmp/nosuch.topo': cannot open"},
        {bk_asprintf("cluster c\nserver a %s\n", dgx), ":1:1: error: ", "the cluster has 1 server"},
        {bk_asprintf("cluster c\nserver a.b %s\n", dgx), ":2:8: error: ", "cannot contain '.'"},
        {bk_asprintf("cluster c\nserver a %s\nserver a %s\n", dgx, dgx), ":3:8: error: ",
         "already named on line 2"},
        {bk_asprintf("cluster c\nnic-speed fast\n"), ":2:11: error: ", "bad bandwidth 'fast'"},
        {bk_asprintf("cluster c\nserver a %s extra\n", dgx), ":2:", "unexpected 'extra'"},
        {bk_asprintf("cluster c\ngpu g0\n"), ":2:1: error: ", "unknown statement 'gpu'"},
        {bk_asprintf("cluster c\nserver a %s\nserver b %s\n", four, dgx), ":2:10: error: ",
         "describes 4 servers"},
        {bk_asprintf("cluster c\nserver a %s\nserver b %s\n", bad, dgx), ":2:10: note: ",
         "in server 'a'"},
        {bk_asprintf("cluster c\nserver a -\n"), ":2:10: error: ", "standard input"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        EXPECT(".cluster", cases[i].text, 1, cases[i].where, cases[i].what);
        free(cases[i].text);
    }
    /* An error inside the server file names that file's own position. */
    char *text = bk_asprintf("cluster c\nserver a %s\nserver b %s\n", bad, dgx);
    char *bad_at = bk_asprintf("%s:3:10: error: ", bad);
    expect_error(".cluster", text, strlen(text), NULL, NULL, 1, NULL, bad_at);
    /* --format cluster on a .topo file, and a cluster file as a server: refused. */
    expect_error(".topo", "gpu a\n", 6, "--format", "cluster", 1, ":1:1: error: ",
                 "a cluster file starts with 'cluster NAME'");
    char *inner = tu_temp_file(".cluster", text, strlen(text));
    char *outer = bk_asprintf("cluster c\nserver a %s\nserver b %s\n", inner, dgx);
    EXPECT(".cluster", outer, 1, ":2:10: error: ", "is a cluster file");
    unlink(inner), unlink(bad);
    free(outer), free(inner), free(bad_at), free(text), free(bad), free(four), free(dgx);
}
