/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * msccl_read.h - MSCCL algorithm files read by the executors' own rules, for the tests'
 * interpreter (msccl_interp.h): which bytes may stand between and inside tags, how an attribute
 * value ends, which elements count and which are skipped, how numbers are read. msccl_read.c's
 * head says which lines of the executors' parser each rule comes from. Shares nothing with
 * blinkc's exporter.
 */
#ifndef BK_MSCCL_READ_H
#define BK_MSCCL_READ_H

#include <stdint.h>

#define MR_STR 255  /* MAX_STR_LEN: the executors' name and value buffers hold 255 bytes */
#define MR_ATTRS 16 /* MAX_ATTR_COUNT: attributes past the 16th are not found */

struct mr_node {
    char *name;
    char *key[MR_ATTRS + 1], *val[MR_ATTRS + 1]; /* one spare, as the executors keep */
    int nattr;
    struct mr_node *sub; /* the kept children: <gpu> of <algo>, <tb> of <gpu>, <step> of <tb> */
    int nsub;
};

/* Read path as the executors would. Returns the <algo> element (free with mr_free), or NULL
 * with the reason in why[cap]. */
struct mr_node *mr_read(const char *path, char *why, int cap);
void mr_free(struct mr_node *algo);

/* An attribute's value as the executors look it up (the first of that key among the kept
 * ones), NULL when missing. */
const char *mr_attr(const struct mr_node *n, const char *key);

/* As mscclXmlGetAttrInt / GetAttrInt64 read them: strtol/strtoll with base 0 (so "010" is 8)
 * and anything after the number ignored. *ok = 0 when the attribute is missing. */
int mr_int(const struct mr_node *n, const char *key, int *ok);
int64_t mr_int64(const struct mr_node *n, const char *key, int *ok);

#endif
