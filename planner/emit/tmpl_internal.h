/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tmpl_internal.h - the parsed form of a template, shared by the parser (tmpl_parse.c) and the
 * renderer (tmpl.c). Nothing outside the template engine includes it.
 */
#ifndef BK_TMPL_INTERNAL_H
#define BK_TMPL_INTERNAL_H

#include "emit/tmpl.h"

enum tnode_kind { TN_TEXT, TN_VAR, TN_EACH, TN_IF, TN_PARTIAL };

struct tnode;

struct tnode_list {
    struct tnode *v;
    int n, cap;
};

struct tnode {
    enum tnode_kind kind;
    int line, col;          /* of the opening "{{" */
    const char *text;       /* TN_TEXT: into the template's own copy */
    size_t len;
    char *name;             /* key (TN_VAR, TN_EACH, TN_IF) or template name (TN_PARTIAL) */
    enum tmpl_filter filter;
    struct tnode_list body; /* TN_EACH, TN_IF */
    struct tnode_list alt;  /* TN_IF: the {{else}} part */
};

struct tmpl {
    char *name, *label;
    char *src; /* the text the TN_TEXT nodes point into */
    struct tnode_list nodes;
};

/* Parse src[len] (already copied into t->src) into t->nodes. Errors: BK_EINPUT with a
 * diagnostic at label:LINE:COL, BK_ENOMEM. */
BK_MUST_USE
enum bk_status tmpl_parse(struct tmpl *t, const char *const *raw_ok, struct diag *d);

void tnode_list_free(struct tnode_list *l);

#endif
