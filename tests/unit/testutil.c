/* SPDX-License-Identifier: GPL-3.0-or-later */
/* testutil.c - see testutil.h. */
#define _DEFAULT_SOURCE /* mkstemps */
#include "testutil.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "input.h"
#include "strbuf.h"

extern char **environ;

static char *env_path(const char *var, const char *fallback, const char *rel)
{
    const char *base = getenv(var);
    return bk_asprintf("%s/%s", base ? base : fallback, rel);
}

char *tu_src_path(const char *rel) { return env_path("BLINKC_SRCDIR", ".", rel); }
char *tu_shared_path(const char *rel) { return env_path("BLINKC_SHARED", "../shared", rel); }

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
