/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * bk.h - the one status type of the blinkc compiler and its checking macros.
 *
 * Every fallible internal function returns enum bk_status; BK_OK is 0. The library never prints,
 * exits or aborts: it returns a status and leaves a diagnostic in a struct diag (diag.h). Only
 * main.c turns statuses into text and exit codes.
 */
#ifndef BK_H
#define BK_H

enum bk_status {
    BK_OK = 0,
    BK_EINPUT,    /* the input is malformed or unusable (exit 1) */
    BK_EUSAGE,    /* the command line is wrong (exit 2) */
    BK_EIO,       /* a file could not be read or written (exit 1) */
    BK_ESOLVE,    /* planning failed (exit 1) */
    BK_ENOMEM,    /* out of memory (exit 3) */
    BK_EINTERNAL  /* a bug in blinkc (exit 3) */
};

#if defined(__GNUC__)
#define BK_MUST_USE __attribute__((warn_unused_result))
#else
#define BK_MUST_USE
#endif

/* The trail (trail.c): every BK_CHECK that passes a failure on adds its place, so a failure
 * that left no diagnostic still says where it started and how it came up (blinkc --debug). */
void bk_trail_add(enum bk_status st, const char *file, int line, const char *func);

/* Return a failure to the caller unchanged, adding this place to the trail. */
#define BK_CHECK(call)                                                                             \
    do {                                                                                           \
        enum bk_status bk_st_ = (call);                                                            \
        if (bk_st_ != BK_OK) {                                                                     \
            bk_trail_add(bk_st_, __FILE__, __LINE__, __func__);                                    \
            return bk_st_;                                                                         \
        }                                                                                          \
    } while (0)

/* Record a failure in st, add this place to the trail, and jump to a cleanup label. */
#define BK_CHECK_GOTO(call, st, label)                                                             \
    do {                                                                                           \
        (st) = (call);                                                                             \
        if ((st) != BK_OK) {                                                                       \
            bk_trail_add((st), __FILE__, __LINE__, __func__);                                      \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#define BK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define BK_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define BK_PRINTF(fmt, args)
#endif

#endif
