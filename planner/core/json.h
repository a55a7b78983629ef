/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * json.h - the small deterministic JSON emitter behind --plan-json.
 *
 * Strings are escaped to valid UTF-8 JSON whatever bytes the input held (invalid UTF-8 becomes
 * U+FFFD); numbers are rendered without printf's locale (strbuf.h). Layout is fixed so golden
 * files diff byte for byte.
 */
#ifndef BK_JSON_H
#define BK_JSON_H

#include "core/strbuf.h"

/* A JSON string literal, quotes included. */
void json_put_string(struct strbuf *sb, const char *s);

/* A finite number with up to 6 decimals ("25.0"); callers validate finiteness first. */
void json_put_number(struct strbuf *sb, double v);

#endif
