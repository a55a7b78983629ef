/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * json_read.h - a strict JSON parser (RFC 8259) into a small tree, for reading saved plans.
 *
 * Every value keeps its line and column, so a reader can say "FILE:LINE:COL: error: ..." about
 * the exact value it refuses. Refused with a message at the offending byte: anything outside
 * RFC 8259 (comments, trailing commas, single quotes, NaN), nesting deeper than JSON_MAX_DEPTH,
 * duplicate keys in one object, strings holding U+0000 (C strings could not carry them), and
 * unpaired surrogates. Numbers are read without the locale (blinkc never calls setlocale).
 */
#ifndef BK_JSON_READ_H
#define BK_JSON_READ_H

#include "core/bk.h"
#include "core/diag.h"
#include "core/input.h"

#define JSON_MAX_DEPTH 64 /* containers nested in one another */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_value {
    enum json_type type;
    struct diag_loc loc;      /* where the value starts */
    int boolean;              /* JSON_BOOL */
    double number;            /* JSON_NUMBER */
    int integral;             /* JSON_NUMBER written without fraction or exponent */
    char *string;             /* JSON_STRING: decoded UTF-8, NUL-terminated */
    int n, cap;               /* JSON_ARRAY and JSON_OBJECT: the members */
    struct json_value *items; /* [n], in file order */
    char *key;                /* a member of an object: its key */
};

/* Parse the whole input as one JSON value into *out (free it with json_free). Errors: BK_EINPUT
 * with a diagnostic at FILE:LINE:COL, BK_ENOMEM. */
BK_MUST_USE
enum bk_status json_parse(const struct input *in, struct json_value *out, struct diag *d);

void json_free(struct json_value *v);

/* The member `key` of an object, or NULL (also when v is not an object). */
const struct json_value *json_get(const struct json_value *v, const char *key);

/* "null", "a boolean", "a number", "a string", "an array", "an object", for messages. */
const char *json_type_name(enum json_type t);

#endif
