/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * rendezvous.c - blinkGetUniqueId and the shared-memory meeting behind it (rendezvous.h), or
 * the meeting over MPI (rendezvous_mpi.h) for an id made in an MPI job.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "rendezvous.h"
#include "rendezvous_mpi.h"

#define ID_MAGIC "blinkid1"
#define ID_MAGIC_MPI "blinkid2" /* the token, then ":" and the maker's MPI world rank */
#define RV_MAGIC 0x626c696e6b727631ull /* "blinkrv1" */
#define FAILING UINT32_MAX              /* failed, while the first failer writes its message */

struct rv_header {
    uint64_t magic;                 /* stored last by the creator */
    uint32_t nranks;
    uint32_t failed;                /* 1 + the rank that gave up */
    uint32_t arrived[BK_RV_ROUNDS];
    uint32_t pad;
    char fail_msg[384];
};

struct bk_rv {
    struct bk_rvm *mpi;             /* the ranks meet over MPI instead (rendezvous_mpi.h) */
    char token[BK_TOKEN_CHARS + 1];
    char name[64];
    int nranks, rank;
    double timeout_s;
    struct rv_header *h;
    size_t bytes;
    int passed;                     /* round 2 done */
};

/* The records: [round][rank], each a presence word and then BK_RV_REC bytes. */
#define SLOT_BYTES (8 + BK_RV_REC)
static unsigned char *slot(struct bk_rv *rv, int round, int rank)
{
    return (unsigned char *)(rv->h + 1) +
           ((size_t)round * (size_t)rv->nranks + (size_t)rank) * SLOT_BYTES;
}
static size_t total_bytes(int nranks)
{
    return sizeof(struct rv_header) + (size_t)BK_RV_ROUNDS * (size_t)nranks * SLOT_BYTES;
}

static void pause_a_little(int *spins)
{
    struct timespec ts = {0, *spins < 100 ? 50000 : 2000000};
    (*spins)++;
    nanosleep(&ts, NULL);
}

blinkResult_t blinkGetUniqueId(blinkUniqueId *id)
{
    if (!id)
        return bk_error(blinkInvalidArgument, "blinkGetUniqueId: uniqueId is NULL");
    unsigned char rnd[BK_TOKEN_CHARS / 2];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, rnd, sizeof rnd) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof rnd)
        return bk_error(blinkSystemError, "blinkGetUniqueId: cannot read /dev/urandom: %s",
                        strerror(errno));
    char token[BK_TOKEN_CHARS + 1];
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(token + 2 * i, 3, "%02x", rnd[i]);
    /* In an MPI job the ranks may be on several servers: they meet through this process. */
    bk_rv_make_id(token, bk_net_world_size() > 1 ? bk_net_world_rank() : -1, id);
    return blinkSuccess;
}

void bk_rv_make_id(const char *token, int mpi_root, blinkUniqueId *id)
{
    memset(id, 0, sizeof *id);
    memcpy(id->internal, mpi_root >= 0 ? ID_MAGIC_MPI : ID_MAGIC, 8);
    snprintf(id->internal + 8, BK_TOKEN_CHARS + 1, "%s", token);
    if (mpi_root >= 0)
        snprintf(id->internal + 8 + BK_TOKEN_CHARS, 16, ":%d", mpi_root);
}

blinkResult_t bk_rv_token(const blinkUniqueId *id, char *token, int *mpi_root, const char *fn)
{
    int mpi = memcmp(id->internal, ID_MAGIC_MPI, 8) == 0;
    if (!mpi && memcmp(id->internal, ID_MAGIC, 8) != 0)
        return bk_error(blinkInvalidArgument, "%s: the unique id was not made by "
                        "blinkGetUniqueId (or was damaged on the way)", fn);
    for (int i = 0; i < BK_TOKEN_CHARS; i++) {
        char ch = id->internal[8 + i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return bk_error(blinkInvalidArgument, "%s: the unique id is damaged", fn);
        token[i] = ch;
    }
    token[BK_TOKEN_CHARS] = '\0';
    *mpi_root = -1;
    if (mpi) {
        const char *p = id->internal + 8 + BK_TOKEN_CHARS;
        long v = 0;
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
            v = v * 10 + (*p - '0');
        if (id->internal[8 + BK_TOKEN_CHARS] != ':' || digits == 0 || *p != '\0')
            return bk_error(blinkInvalidArgument, "%s: the unique id is damaged", fn);
        *mpi_root = (int)v;
    }
    return blinkSuccess;
}

void bk_rv_derive_id(const char *token, const char *salt, uint64_t a, uint64_t b,
                     int mpi_root, blinkUniqueId *id)
{
    /* FNV-1a over the parent's token, the salt and the numbers: the same on every rank. */
    uint64_t h = 0xcbf29ce484222325ull;
    char text[128];
    int len = snprintf(text, sizeof text, "%s/%s/%llu/%llu", token, salt, (unsigned long long)a,
                       (unsigned long long)b);
    for (int i = 0; i < len && i < (int)sizeof text - 1; i++)
        h = (h ^ (unsigned char)text[i]) * 0x100000001b3ull;
    char derived[BK_TOKEN_CHARS + 1];
    snprintf(derived, sizeof derived, "%016llx", (unsigned long long)h);
    bk_rv_make_id(derived, mpi_root, id);
}

blinkResult_t bk_rv_exchange(const char *token, int mpi_root, int nranks, int rank,
                             double timeout_s, const void *rec, void *all, const char *fn)
{
    struct bk_rv *rv = NULL;
    blinkResult_t r = bk_rv_open(token, mpi_root, nranks, rank, timeout_s, &rv, fn);
    if (r != blinkSuccess)
        return r;
    unsigned char *none = calloc((size_t)nranks + 1, BK_RV_REC);
    r = none ? bk_rv_allgather(rv, 0, rec, all, fn)
             : bk_error(blinkSystemError, "%s: out of memory", fn);
    /* Rounds 1 and 2 are empty: after round 2 every rank removes the name. */
    for (int k = 1; k < BK_RV_ROUNDS && r == blinkSuccess; k++)
        r = bk_rv_allgather(rv, k, none, none + BK_RV_REC, fn);
    free(none);
    if (r != blinkSuccess)
        bk_rv_fail(rv, bk_last_error()); /* neither fail nor close touches the last error */
    bk_rv_close(rv);
    return r;
}

void bk_rv_seg_name(const char *token, int rank, char *name, size_t len)
{
    snprintf(name, len, "/blink-%s-%d", token, rank);
}

static blinkResult_t sys_fail(const char *fn, const char *what, const char *name)
{
    return bk_error(blinkSystemError, "%s: %s %s: %s", fn, what, name, strerror(errno));
}

/* Create the object (first rank) or open it once its creator has sized and marked it. */
static blinkResult_t attach(struct bk_rv *rv, const char *fn)
{
    size_t want = total_bytes(rv->nranks);
    int fd = shm_open(rv->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    int creator = fd >= 0;
    if (!creator && errno == EEXIST)
        fd = shm_open(rv->name, O_RDWR, 0600);
    if (fd < 0)
        return sys_fail(fn, "cannot open the rendezvous", rv->name);
    if (creator && ftruncate(fd, (off_t)want) != 0) {
        close(fd);
        shm_unlink(rv->name);
        return sys_fail(fn, "cannot size the rendezvous", rv->name);
    }
    double start = bk_now();
    int spins = 0;
    struct stat st;
    /* A joiner waits for the creator's ftruncate; the header says the creator's rank count. */
    while (!creator && (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct rv_header))) {
        if (bk_now() - start > rv->timeout_s) {
            close(fd);
            return bk_error(blinkSystemError, "%s: rank %d: the rendezvous %s was never set up "
                            "(BLINK_TIMEOUT_S)", fn, rv->rank, rv->name);
        }
        pause_a_little(&spins);
    }
    size_t have = creator ? want : (size_t)st.st_size;
    void *p = mmap(NULL, have, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return sys_fail(fn, "cannot map the rendezvous", rv->name);
    rv->h = p;
    rv->bytes = have;
    if (creator) {
        rv->h->nranks = (uint32_t)rv->nranks;
        __atomic_store_n(&rv->h->magic, RV_MAGIC, __ATOMIC_RELEASE);
        return blinkSuccess;
    }
    while (__atomic_load_n(&rv->h->magic, __ATOMIC_ACQUIRE) != RV_MAGIC) {
        if (bk_now() - start > rv->timeout_s)
            return bk_error(blinkSystemError, "%s: rank %d: the rendezvous %s was never set up "
                            "(BLINK_TIMEOUT_S)", fn, rv->rank, rv->name);
        pause_a_little(&spins);
    }
    if (rv->h->nranks != (uint32_t)rv->nranks || have < want)
        return bk_error(blinkInvalidUsage, "%s: rank %d was given nranks %d, but the ranks that "
                        "joined first were given %u", fn, rv->rank, rv->nranks, rv->h->nranks);
    return blinkSuccess;
}

blinkResult_t bk_rv_open(const char *token, int mpi_root, int nranks, int rank,
                         double timeout_s, struct bk_rv **out, const char *fn)
{
    struct bk_rv *rv = calloc(1, sizeof *rv);
    if (!rv)
        return bk_error(blinkSystemError, "%s: out of memory", fn);
    snprintf(rv->token, sizeof rv->token, "%s", token);
    snprintf(rv->name, sizeof rv->name, "/blink-%s", token);
    rv->nranks = nranks;
    rv->rank = rank;
    rv->timeout_s = timeout_s;
    blinkResult_t r = mpi_root >= 0
                      ? bk_rvm_open(token, mpi_root, nranks, rank, timeout_s, &rv->mpi, fn)
                      : attach(rv, fn);
    if (r != blinkSuccess) {
        if (rv->h)
            munmap(rv->h, rv->bytes);
        free(rv);
        return r;
    }
    *out = rv;
    return blinkSuccess;
}

/* A rank whose round-0 record names a process that is gone. */
static int dead_rank(struct bk_rv *rv)
{
    for (int q = 0; q < rv->nranks; q++) {
        unsigned char *s = slot(rv, 0, q);
        if (q == rv->rank || !__atomic_load_n((uint64_t *)s, __ATOMIC_ACQUIRE))
            continue;
        const struct bk_rv_who *w = (const struct bk_rv_who *)(s + 8);
        if (w->pid != getpid() && bk_pid_gone(w->pid))
            return q;
    }
    return -1;
}

static blinkResult_t failed_error(struct bk_rv *rv, const char *fn)
{
    uint32_t f;
    while ((f = __atomic_load_n(&rv->h->failed, __ATOMIC_ACQUIRE)) == FAILING)
        ; /* its message is being written */
    return bk_error(blinkRemoteError, "%s: rank %d: rank %u gave up: %.*s", fn, rv->rank, f - 1,
                    (int)sizeof rv->h->fail_msg, rv->h->fail_msg);
}

blinkResult_t bk_rv_allgather(struct bk_rv *rv, int round, const void *rec, void *all,
                              const char *fn)
{
    if (rv->mpi)
        return bk_rvm_allgather(rv->mpi, round, rec, all, fn);
    unsigned char *mine = slot(rv, round, rv->rank);
    uint64_t was = 0;
    memcpy(mine + 8, rec, BK_RV_REC);
    if (!__atomic_compare_exchange_n((uint64_t *)mine, &was, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        bk_error(blinkInvalidUsage, "%s: rank %d joined twice with the same id (every rank "
                 "must have its own rank number)", fn, rv->rank);
        bk_rv_fail(rv, bk_last_error());
        return blinkInvalidUsage;
    }
    __atomic_add_fetch(&rv->h->arrived[round], 1, __ATOMIC_ACQ_REL);
    double start = bk_now(), checked = start;
    int spins = 0;
    while (__atomic_load_n(&rv->h->arrived[round], __ATOMIC_ACQUIRE) < (uint32_t)rv->nranks) {
        if (__atomic_load_n(&rv->h->failed, __ATOMIC_ACQUIRE))
            return failed_error(rv, fn);
        double now = bk_now();
        if (now - checked > 0.05) {
            checked = now;
            int q = dead_rank(rv);
            /* A rank that gave up may have exited since: its reason, not its exit, counts. */
            if (q >= 0 && __atomic_load_n(&rv->h->failed, __ATOMIC_ACQUIRE))
                return failed_error(rv, fn);
            if (q >= 0) {
                bk_error(blinkRemoteError, "%s: rank %d: rank %d (pid %d) exited during init",
                         fn, rv->rank, q, ((const struct bk_rv_who *)(slot(rv, 0, q) + 8))->pid);
                bk_rv_fail(rv, bk_last_error());
                return blinkRemoteError;
            }
        }
        if (now - start > rv->timeout_s) {
            int n = 0;
            char missing[128] = "";
            for (int q = 0; q < rv->nranks; q++)
                if (!__atomic_load_n((uint64_t *)slot(rv, round, q), __ATOMIC_ACQUIRE)) {
                    size_t at = strlen(missing);
                    if (n++ < 8 && at + 16 < sizeof missing)
                        snprintf(missing + at, sizeof missing - at, "%s%d", at ? "," : "", q);
                }
            bk_error(blinkSystemError, "%s: rank %d waited %g s for %d of %d ranks (%s%s) "
                     "(BLINK_TIMEOUT_S)", fn, rv->rank, rv->timeout_s, n, rv->nranks, missing,
                     n > 8 ? ",..." : "");
            bk_rv_fail(rv, bk_last_error());
            return blinkSystemError;
        }
        pause_a_little(&spins);
    }
    for (int q = 0; q < rv->nranks; q++)
        memcpy((unsigned char *)all + (size_t)q * BK_RV_REC, slot(rv, round, q) + 8, BK_RV_REC);
    if (round == BK_RV_ROUNDS - 1)
        rv->passed = 1;
    return blinkSuccess;
}

void bk_rv_fail(struct bk_rv *rv, const char *msg)
{
    if (rv->mpi)
        bk_rvm_fail(rv->mpi, msg);
    /* Nothing of this token may outlive the failure, whoever created it. */
    for (int q = 0; q < rv->nranks; q++) {
        char name[64];
        bk_rv_seg_name(rv->token, q, name, sizeof name);
        shm_unlink(name);
    }
    if (rv->mpi)
        return;
    uint32_t none = 0;
    if (__atomic_compare_exchange_n(&rv->h->failed, &none, FAILING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        snprintf(rv->h->fail_msg, sizeof rv->h->fail_msg, "%s", msg);
        __atomic_store_n(&rv->h->failed, (uint32_t)rv->rank + 1, __ATOMIC_RELEASE);
    }
    shm_unlink(rv->name);
}

void bk_rv_close(struct bk_rv *rv)
{
    if (!rv)
        return;
    if (rv->mpi) {
        bk_rvm_close(rv->mpi);
        free(rv);
        return;
    }
    if (rv->passed)
        shm_unlink(rv->name); /* the first rank past round 2 removes it; the rest find none */
    munmap(rv->h, rv->bytes);
    free(rv);
}
