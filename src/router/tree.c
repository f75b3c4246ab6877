/* SPDX-License-Identifier: MIT */
/*
 * The route table as readers see it: a frozen compressed radix tree per
 * host (wtree.c builds it and keeps it up to date, sharing unchanged
 * subtrees between tables), its leaves, Allow values, and a table's end.
 *
 * Lookup walks literal bytes, trying at each node its static child (chosen
 * by first byte), then its parameter child (one non-empty segment), then its
 * catch-all (the non-empty rest), backtracking when a branch fails.  The
 * bytes a node consumes are fixed by its place in the tree, so every node is
 * entered at most once per lookup: the walk is linear in the tree size even
 * in the worst case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/zconf.h"
#include "router/route.h"
#include "router/walk.h"

/* ---- Allow values ---------------------------------------------------------- */

int hr__span_cmp(const void *a, const void *b) {
  const hr_span_t *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->ptr, y->ptr, n);
  if (c != 0) return c;
  return (x->len > y->len) - (x->len < y->len);
}

/* The standard methods in byte order of their names. */
static const int std_sorted[HR__M_STD] = {
    HR__M_CONNECT, HR__M_DELETE, HR__M_GET,  HR__M_HEAD, HR__M_OPTIONS,
    HR__M_PATCH,   HR__M_POST,   HR__M_PUT,  HR__M_TRACE,
};

/* Writes the Allow value (RFC 9110 §10.2.1) for the standard methods in
 * `std` and the extension methods ext[j] with bit j of `ext_bits`: sorted,
 * ", " between them.  With w NULL only measures.  Returns the length. */
size_t hr__allow_render(uint16_t std, uint64_t ext_bits, const hr_span_t *ext, char *w) {
  size_t len = 0, i = 0, j = 0;
  for (;;) {
    hr_span_t next, sn = {NULL, 0};
    while (i < HR__M_STD && !(std & (1u << std_sorted[i]))) i++;
    while (j < HR__MAX_EXT_METHODS && !((ext_bits >> j) & 1)) j++;
    if (i == HR__M_STD && j == HR__MAX_EXT_METHODS) break;
    if (i < HR__M_STD) sn = hr__method_name(std_sorted[i]);
    /* merge the two sorted lists (no extension method is a standard one) */
    if (j == HR__MAX_EXT_METHODS || (i < HR__M_STD && hr__span_cmp(&sn, &ext[j]) < 0)) {
      next = sn;
      i++;
    } else {
      next = ext[j++];
    }
    if (len) {
      if (w) memcpy(w + len, ", ", 2);
      len += 2;
    }
    if (w) memcpy(w + len, next.ptr, next.len);
    len += next.len;
  }
  return len;
}

/* What a set of routes names in Allow: their standard methods, HEAD with
 * GET, and OPTIONS (the router answers it); their extension methods as
 * bits of the table's list. */
void hr__named_methods(const hr_route_t *const *routes, size_t n, const hr_span_t *ext,
                       size_t n_ext, uint16_t *std, uint64_t *ext_bits) {
  size_t i, k;
  *std = 1u << HR__M_OPTIONS;
  *ext_bits = 0;
  for (i = 0; i < n; i++) {
    const hr__core_t *c = routes[i]->core;
    *std |= c->std_methods;
    for (k = 0; k < c->n_ext; k++) {
      const hr_span_t *hit = bsearch(&c->ext_methods[k], ext, n_ext, sizeof(*ext), hr__span_cmp);
      if (hit != NULL) *ext_bits |= (uint64_t)1 << (hit - ext);
    }
  }
  if (*std & (1u << HR__M_GET)) *std |= 1u << HR__M_HEAD;
}

/* ---- tables ---------------------------------------------------------------- */

void hr__table_free(hr__table_t *t) {
  size_t i;
  if (t->def.fallback != NULL) hr__invoker_unref(t->def.fallback);
  for (i = 0; i < t->nhosts; i++)
    if (t->hosts[i].fallback != NULL) hr__invoker_unref(t->hosts[i].fallback);
  /* Its hosts' compression settings (published tables only: install). */
  hr__zconf_drop(t->def.zconf);
  for (i = 0; i < t->nhosts; i++) hr__zconf_drop(t->hosts[i].zconf);
  if (t->garbage != NULL) {
    hr__block_t *b, *next;
    for (i = 0; i < t->garbage->ninv; i++) hr__invoker_unref(t->garbage->inv[i]);
    for (b = t->garbage->blocks; b != NULL; b = next) {
      next = b->next;
      hr__mem_free(t->mem, b);
    }
    hr__mem_free(t->mem, t->garbage);
  }
  hr__mem_free(t->mem, t);
}

void hr__table_discard(hr__table_t *t) {
  t->garbage = NULL;
  hr__table_free(t);
}

static void each_in(const hr__node_t *n, void (*fn)(void *, hr_route_t *), void *ctx) {
  size_t i;
  if (n == NULL) return;
  if (n->leaf != NULL)
    for (i = 0; i < n->leaf->nroutes; i++) fn(ctx, n->leaf->routes[i]);
  for (i = 0; i < n->nstatic; i++) each_in(n->statics[i], fn, ctx);
  each_in(n->param, fn, ctx);
  each_in(n->catchall, fn, ctx);
}

void hr__table_each_route(const hr__table_t *t, void (*fn)(void *ctx, hr_route_t *route),
                          void *ctx) {
  size_t i;
  each_in(t->def.root, fn, ctx);
  for (i = 0; i < t->nhosts; i++) each_in(t->hosts[i].root, fn, ctx);
}

/* ---- lookup ---------------------------------------------------------------- */

int hr__leaf_accepts(const hr__leaf_t *leaf, hr_span_t method, int id) {
  size_t i, j;
  if (id >= 0) return (leaf->accept >> id) & 1;
  if (leaf->any.route != NULL) return 1;
  for (i = 0; i < leaf->n_ext; i++)
    for (j = 0; j < leaf->ext[i]->core->n_ext; j++)
      if (hr_span_eq(leaf->ext[i]->core->ext_methods[j], method)) return 1;
  return 0;
}

const hr_span_t *hr__leaf_names(const hr__leaf_t *leaf, const hr_route_t *route) {
  int id;
  if (route == leaf->any.route) return leaf->any.names;
  for (id = 0; id < HR__M_STD; id++)
    if (leaf->std[id].route == route) return leaf->std[id].names;
  return route->core->pnames; /* an extension-method route */
}

const hr_route_t *hr__leaf_route(const hr__leaf_t *leaf, hr_span_t method,
                                 int id) {
  size_t i, j;
  if (id >= 0) {
    if (leaf->std[id].route != NULL) return leaf->std[id].route;
  } else {
    for (i = 0; i < leaf->n_ext; i++)
      for (j = 0; j < leaf->ext[i]->core->n_ext; j++)
        if (hr_span_eq(leaf->ext[i]->core->ext_methods[j], method))
          return leaf->ext[i];
  }
  /* A route naming GET is more specific for HEAD than a "*" route. */
  if (id == HR__M_HEAD && leaf->std[HR__M_GET].route != NULL)
    return leaf->std[HR__M_GET].route;
  if (leaf->any.route != NULL) return leaf->any.route;
  return NULL;
}

/* The union of what the missed leaves name. */
typedef struct allow_union_s {
  uint16_t std;
  uint64_t ext;
} allow_union_t;

static void add_to_union(hr__walk_t *w, const hr__leaf_t *leaf) {
  allow_union_t *u = w->ctx;
  u->std |= leaf->named;
  u->ext |= leaf->ext_named;
}

size_t hr__tree_allow(const hr__table_t *t, const hr__node_t *root, hr__walk_t *w,
                      int ci, char *buf) {
  allow_union_t u = {0, 0};
  hr__walk_t again = *w;
  hr_param_t scratch[HR_MAX_PARAMS];
  size_t np;
  /* The same walk finds the same leaves, none of which answers the method;
   * this time each is added to the union. */
  again.params = scratch;
  again.misses = 0;
  again.on_miss = add_to_union;
  again.ctx = &u;
  (void)hr__tree_find(root, &again, ci, &np);
  return hr__allow_render(u.std, u.ext, t->ext_methods, buf);
}

/* ---- dump ------------------------------------------------------------------ */

typedef struct dump_s {
  void (*write)(void *ctx, const char *p, size_t n);
  void *ctx;
} dump_t;

static void dump_str(dump_t *d, const char *s, size_t n) { d->write(d->ctx, s, n); }

static void dump_node(dump_t *d, const hr__node_t *n, int depth, const char *kind) {
  size_t i;
  for (i = 0; i < (size_t)depth; i++) dump_str(d, "  ", 2);
  if (kind[0] != '\0') {
    dump_str(d, kind, 1);
    if (n->plen) { /* a parameter and the literal after it (param_target) */
      dump_str(d, " \"", 2);
      dump_str(d, n->prefix, n->plen);
      dump_str(d, "\"", 1);
    }
  } else {
    dump_str(d, "\"", 1);
    dump_str(d, n->prefix, n->plen);
    dump_str(d, "\"", 1);
  }
  if (n->leaf != NULL) {
    const hr__leaf_t *l = n->leaf;
    const hr_route_t *r = l->any.route;
    int id;
    for (id = 0; r == NULL && id < HR__M_STD; id++) r = l->std[id].route;
    if (r == NULL && l->n_ext) r = l->ext[0];
    dump_str(d, "  => ", 5);
    if (r != NULL) dump_str(d, r->core->pattern.ptr, r->core->pattern.len);
    dump_str(d, "  [", 3);
    if (l->any.route != NULL)
      dump_str(d, "*", 1); /* every method: a "*" route stands alone */
    else
      dump_str(d, l->allow.ptr, l->allow.len);
    dump_str(d, "]", 1);
  }
  dump_str(d, "\n", 1);
  for (i = 0; i < n->nstatic; i++) dump_node(d, n->statics[i], depth + 1, "");
  if (n->param) dump_node(d, n->param, depth + 1, ":");
  if (n->catchall) dump_node(d, n->catchall, depth + 1, "*");
}

int hr__tree_dump(const hr__table_t *t,
                  void (*write)(void *ctx, const char *p, size_t n), void *ctx) {
  dump_t d = {write, ctx};
  size_t i;
  if (t == NULL) return 0;
  dump_str(&d, "host *\n", 7);
  if (t->def.root) dump_node(&d, t->def.root, 1, "");
  for (i = 0; i < t->nhosts; i++) {
    dump_str(&d, "host ", 5);
    dump_str(&d, t->hosts[i].name.ptr, t->hosts[i].name.len);
    dump_str(&d, "\n", 1);
    if (t->hosts[i].root) dump_node(&d, t->hosts[i].root, 1, "");
  }
  return 0;
}
