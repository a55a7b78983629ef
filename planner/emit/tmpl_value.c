/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * tmpl_value.c - the template data model (tmpl.h): strings, numbers, booleans, lists and maps.
 *
 * The emitter builds one tree per generated file and frees it after rendering. Maps are small
 * (a dozen keys), so lookups are linear and keep insertion order, which keeps nothing about the
 * output dependent on hashing.
 */
#include <stdlib.h>
#include <string.h>

#include "emit/tmpl.h"

static struct tmpl_value *new_value(enum tmpl_kind k)
{
    struct tmpl_value *v = calloc(1, sizeof *v);
    if (v)
        v->kind = k;
    return v;
}

struct tmpl_value *tv_stringn(const char *s, size_t n)
{
    struct tmpl_value *v = new_value(TV_STRING);
    if (!v)
        return NULL;
    v->s = malloc(n + 1);
    if (!v->s) {
        free(v);
        return NULL;
    }
    if (n)
        memcpy(v->s, s, n);
    v->s[n] = '\0';
    v->len = n;
    return v;
}

struct tmpl_value *tv_string(const char *s)
{
    return tv_stringn(s ? s : "", s ? strlen(s) : 0);
}

struct tmpl_value *tv_int(long long i)
{
    struct tmpl_value *v = new_value(TV_INT);
    if (v)
        v->i = i;
    return v;
}

struct tmpl_value *tv_float(double f)
{
    struct tmpl_value *v = new_value(TV_FLOAT);
    if (v)
        v->f = f;
    return v;
}

struct tmpl_value *tv_bool(int b)
{
    struct tmpl_value *v = new_value(TV_BOOL);
    if (v)
        v->i = b != 0;
    return v;
}

struct tmpl_value *tv_list(void)
{
    return new_value(TV_LIST);
}

struct tmpl_value *tv_map(void)
{
    return new_value(TV_MAP);
}

struct tmpl_value *tv_int_list(const int *v, int n)
{
    struct tmpl_value *l = new_value(TV_LIST);
    if (!l || n <= 0)
        return l;
    l->ints = malloc((size_t)n * sizeof *l->ints);
    if (!l->ints) {
        free(l);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        l->ints[i] = v[i];
    l->n = l->cap = n;
    return l;
}

const struct tmpl_value *tv_item(const struct tmpl_value *v, int k, struct tmpl_value *tmp)
{
    if (!v->ints)
        return v->items[k];
    *tmp = (struct tmpl_value){.kind = TV_INT, .i = v->ints[k]};
    return tmp;
}

void tv_free(struct tmpl_value *v)
{
    if (!v)
        return;
    for (int k = 0; v->items && k < v->n; k++) {
        tv_free(v->items[k]);
        if (v->keys)
            free(v->keys[k]);
    }
    free(v->ints);
    free(v->items);
    free(v->keys);
    free(v->s);
    free(v);
}

/* Room for one more item (and key, for maps). */
static int grow(struct tmpl_value *c)
{
    struct bk_array a[] = {BK_ARRAY(c->items), BK_ARRAY(c->keys)};
    return bk_grow_int_arrays(a, c->kind == TV_MAP ? 2 : 1, &c->cap, c->n) == BK_OK;
}

enum bk_status tv_push(struct tmpl_value *list, struct tmpl_value *v)
{
    if (!list || !v) {
        tv_free(v);
        return BK_ENOMEM;
    }
    if (list->kind != TV_LIST || list->ints) {
        tv_free(v);
        return BK_EINTERNAL;
    }
    if (!grow(list)) {
        tv_free(v);
        return BK_ENOMEM;
    }
    list->items[list->n++] = v;
    return BK_OK;
}

enum bk_status tv_set(struct tmpl_value *map, const char *key, struct tmpl_value *v)
{
    if (!map || !v) {
        tv_free(v);
        return BK_ENOMEM;
    }
    if (map->kind != TV_MAP) {
        tv_free(v);
        return BK_EINTERNAL;
    }
    for (int k = 0; k < map->n; k++)
        if (strcmp(map->keys[k], key) == 0) {
            tv_free(map->items[k]);
            map->items[k] = v;
            return BK_OK;
        }
    char *copy = bk_strndup(key, strlen(key));
    if (!copy || !grow(map)) {
        free(copy);
        tv_free(v);
        return BK_ENOMEM;
    }
    map->keys[map->n] = copy;
    map->items[map->n++] = v;
    return BK_OK;
}

const struct tmpl_value *tv_get(const struct tmpl_value *map, const char *key)
{
    if (!map || map->kind != TV_MAP)
        return NULL;
    for (int k = 0; k < map->n; k++)
        if (strcmp(map->keys[k], key) == 0)
            return map->items[k];
    return NULL;
}
