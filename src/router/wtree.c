/* SPDX-License-Identifier: MIT */
/*
 * The writer's route tree (wtree.h): editing it.  freeze.c makes the
 * frozen tables of it.
 *
 * Build nodes form a compressed radix tree per host: insertion splits
 * static prefixes, parameters and catch-alls hang off their parent.  Each
 * knows its parent, how many routes its subtree holds (`sub`: a subtree
 * without routes is pruned at the next freezing) and its frozen node.  A
 * change is staged here (the edit and the counts, undoable without
 * allocating); a whole build makes a fresh tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/wtree_impl.h"

/* ---- build nodes ------------------------------------------------------------ */

static hr__bnode_t *bnode_new(hr__mem_t *m, hr_span_t prefix, hr__bnode_t *parent) {
  hr__bnode_t *n = hr__mem_alloc(m, sizeof(*n) + prefix.len);
  if (n == NULL) return NULL;
  memset(n, 0, sizeof(*n));
  if (prefix.len) memcpy(n + 1, prefix.ptr, prefix.len);
  n->prefix.ptr = (const char *)(n + 1);
  n->prefix.len = prefix.len;
  n->parent = parent;
  n->dirty = 1;
  return n;
}

static void bnode_free(hr__mem_t *m, hr__bnode_t *n) {
  size_t i;
  if (n == NULL) return;
  for (i = 0; i < n->nkids; i++) bnode_free(m, n->kids[i]);
  bnode_free(m, n->param);
  bnode_free(m, n->catchall);
  hr__mem_free(m, n->kids);
  hr__mem_free(m, n->routes);
  hr__mem_free(m, n);
}

static int add_kid(hr__mem_t *m, hr__bnode_t *n, hr__bnode_t *kid) {
  size_t i;
  if (n->nkids == n->kcap) {
    size_t cap = n->kcap ? n->kcap * 2 : 4;
    hr__bnode_t **k = hr__mem_realloc(m, n->kids, cap * sizeof(*k));
    if (k == NULL) return HR_ENOMEM;
    n->kids = k;
    n->kcap = cap;
  }
  i = n->nkids;
  while (i > 0 && (unsigned char)n->kids[i - 1]->prefix.ptr[0] >
                      (unsigned char)kid->prefix.ptr[0]) {
    n->kids[i] = n->kids[i - 1];
    i--;
  }
  n->kids[i] = kid;
  n->nkids++;
  kid->parent = n;
  return 0;
}

static hr__bnode_t *kid_by_byte(const hr__bnode_t *n, unsigned char c) {
  size_t lo = 0, hi = n->nkids;
  while (lo < hi) { /* kids are sorted by first byte */
    size_t mid = (lo + hi) / 2;
    unsigned char k = (unsigned char)n->kids[mid]->prefix.ptr[0];
    if (k == c) return n->kids[mid];
    if (k < c) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

/* Descends from `n` along literal bytes `t`, splitting and adding nodes
 * (each new or changed one dirty); stores the node where `t` ends.  On
 * HR_ENOMEM the tree may hold new nodes without routes, which the next
 * freezing prunes, and a split, which changes no lookup. */
static int insert_static(hr__mem_t *m, hr__bnode_t *n, hr_span_t t, hr__bnode_t **out) {
  while (t.len > 0) {
    hr__bnode_t *k = kid_by_byte(n, (unsigned char)t.ptr[0]), *mid;
    size_t common = 0, i;
    if (k == NULL) {
      k = bnode_new(m, t, n);
      if (k == NULL || add_kid(m, n, k) != 0) {
        hr__mem_free(m, k);
        return HR_ENOMEM;
      }
      *out = k;
      return 0;
    }
    while (common < k->prefix.len && common < t.len && k->prefix.ptr[common] == t.ptr[common])
      common++;
    if (common < k->prefix.len) {
      /* Split k: a new node holds the shared part, k keeps the rest. */
      hr_span_t head = {k->prefix.ptr, common};
      mid = bnode_new(m, head, n);
      if (mid == NULL) return HR_ENOMEM;
      mid->kids = hr__mem_alloc(m, 4 * sizeof(*mid->kids));
      if (mid->kids == NULL) {
        hr__mem_free(m, mid);
        return HR_ENOMEM;
      }
      mid->kcap = 4;
      for (i = 0; n->kids[i] != k; i++) continue;
      k->prefix.ptr += common;
      k->prefix.len -= common;
      k->parent = mid;
      k->dirty = 1; /* its prefix changed */
      mid->kids[0] = k;
      mid->nkids = 1;
      mid->sub = k->sub;
      n->kids[i] = mid;
      k = mid;
    }
    n = k;
    t.ptr += common;
    t.len -= common;
  }
  *out = n;
  return 0;
}

/* The node at `core`'s place under `root`, made when `create` (HR_ENOMEM
 * possible), else NULL when there is none. */
static int place(hr__mem_t *m, hr__bnode_t *root, const hr__core_t *core, int create,
                 hr__bnode_t **out) {
  hr__bnode_t *n = root;
  size_t i;
  int rc;
  *out = NULL;
  for (i = 0; i < core->ntoks && n != NULL; i++) {
    const hr__tok_t *t = &core->toks[i];
    hr__bnode_t **slot;
    if (t->kind == HR__TOK_STATIC) {
      if (create) {
        if ((rc = insert_static(m, n, t->text, &n)) != 0) return rc;
        continue;
      }
      /* Follow without splitting: the text must cover whole prefixes. */
      hr_span_t s = t->text;
      while (n != NULL && s.len > 0) {
        hr__bnode_t *k = kid_by_byte(n, (unsigned char)s.ptr[0]);
        if (k == NULL || k->prefix.len > s.len || memcmp(k->prefix.ptr, s.ptr, k->prefix.len) != 0)
          return 0;
        s.ptr += k->prefix.len;
        s.len -= k->prefix.len;
        n = k;
      }
      continue;
    }
    slot = t->kind == HR__TOK_PARAM ? &n->param : &n->catchall;
    if (*slot == NULL && create) {
      hr_span_t none = {NULL, 0};
      if ((*slot = bnode_new(m, none, n)) == NULL) return HR_ENOMEM;
    }
    n = *slot;
  }
  *out = n;
  return 0;
}

/* Room for one more route at `n`. */
static int route_room(hr__mem_t *m, hr__bnode_t *n) {
  if (n->nroutes == n->rcap) {
    size_t cap = n->rcap ? n->rcap * 2 : 2;
    const hr_route_t **r = hr__mem_realloc(m, n->routes, cap * sizeof(*r));
    if (r == NULL) return HR_ENOMEM;
    n->routes = r;
    n->rcap = cap;
  }
  return 0;
}

/* Marks `n` and every node above it dirty and adds `delta` routes to their
 * subtree counts. */
static void touch_path(hr__bnode_t *n, long delta) {
  for (; n != NULL; n = n->parent) {
    n->dirty = 1;
    n->sub = (size_t)((long)n->sub + delta);
  }
}

/* ---- errors ----------------------------------------------------------------- */

static int conflict(hr_route_error_t *err, const hr_route_t *with) {
  const hr__core_t *c = with->core;
  if (err == NULL) return HR_EEXIST;
  err->code = HR_EEXIST;
  err->reason = "a route with this method and pattern exists";
  err->offset = 0;
  err->conflict_len = c->methods_text.len + 1 + c->pattern.len;
  snprintf(err->conflict, sizeof(err->conflict), "%.*s %.*s", (int)c->methods_text.len,
           c->methods_text.ptr, (int)c->pattern.len, c->pattern.ptr);
  return HR_EEXIST;
}

/* The route at `n` in the way of `add` (one sharing a method), other than
 * `besides`, or NULL. */
static const hr_route_t *in_the_way(const hr__bnode_t *n, const hr_route_t *add,
                                    const hr_route_t *besides) {
  size_t i;
  for (i = 0; i < n->nroutes; i++)
    if (n->routes[i] != besides && hr__methods_overlap(n->routes[i]->core, add->core))
      return n->routes[i];
  return NULL;
}

/* ---- methods and hosts ------------------------------------------------------- */

static long ext_index(const hr__wtree_t *wt, hr_span_t method) {
  const hr_span_t *hit = bsearch(&method, wt->ext, wt->n_ext, sizeof(*wt->ext), hr__span_cmp);
  return hit ? hit - wt->ext : -1;
}

/* Adds `delta` (1 or -1) of `core`'s methods to its host's counts. */
static void count(hr__wtree_t *wt, whost_t *h, const hr__core_t *core, int delta) {
  int id;
  size_t k;
  for (id = 0; id < HR__M_STD; id++)
    if (core->std_methods & (1u << id)) h->std[id] += (uint32_t)delta;
  for (k = 0; k < core->n_ext; k++) h->ext[ext_index(wt, core->ext_methods[k])] += (uint32_t)delta;
  if (core->any_method) wt->any += (size_t)(long)delta;
  h->nroutes += (size_t)(long)delta;
  wt->nroutes += (size_t)(long)delta;
}

static whost_t *host_of(const hr__wtree_t *wt, hr_span_t name) {
  size_t i;
  for (i = 0; i < wt->nhosts; i++)
    if (wt->hosts[i].len == name.len && memcmp(wt->hosts[i].name, name.ptr, name.len) == 0)
      return &wt->hosts[i];
  return NULL;
}

/* The distinct extension methods of `routes`, sorted and copied into the
 * tree.  Returns 0, HR_ENOMEM or HR_ETOOLARGE. */
static int collect_ext(hr__wtree_t *wt, hr_route_t *const *routes, size_t n) {
  size_t i, k, j, bytes = 0;
  char *w;
  for (i = 0; i < n; i++) {
    const hr__core_t *c = routes[i]->core;
    for (k = 0; k < c->n_ext; k++) {
      for (j = 0; j < wt->n_ext; j++)
        if (hr_span_eq(wt->ext[j], c->ext_methods[k])) break;
      if (j < wt->n_ext) continue;
      if (wt->n_ext == HR__MAX_EXT_METHODS) return HR_ETOOLARGE;
      wt->ext[wt->n_ext++] = c->ext_methods[k];
      bytes += c->ext_methods[k].len;
    }
  }
  qsort(wt->ext, wt->n_ext, sizeof(*wt->ext), hr__span_cmp);
  if ((wt->ext_text = hr__mem_alloc(wt->m, bytes ? bytes : 1)) == NULL) return HR_ENOMEM;
  for (w = wt->ext_text, j = 0; j < wt->n_ext; j++) {
    memcpy(w, wt->ext[j].ptr, wt->ext[j].len);
    wt->ext[j].ptr = w;
    w += wt->ext[j].len;
  }
  return 0;
}

static int too_many_ext(hr_route_error_t *err) {
  if (err != NULL) { /* no other route is in the way */
    memset(err, 0, sizeof(*err));
    err->code = HR_ETOOLARGE;
    err->reason = "more than 64 extension methods (not GET, POST...) in one router";
  }
  return HR_ETOOLARGE;
}

/* ---- whole builds ------------------------------------------------------------ */

int hr__wtree_build(hr__mem_t *m, hr_route_t *const *routes, size_t n, hr__wtree_t **out,
                    hr_route_error_t *err) {
  hr__wtree_t *wt = hr__mem_alloc(m, sizeof(*wt));
  hr_span_t none = {NULL, 0};
  size_t i;
  int rc = 0;
  *out = NULL;
  if (wt == NULL) return HR_ENOMEM;
  memset(wt, 0, sizeof(*wt));
  wt->m = m;
  /* hosts: the default one first, the others in order of appearance */
  wt->hosts = hr__mem_alloc(m, (n + 1) * sizeof(*wt->hosts));
  if (wt->hosts == NULL) rc = HR_ENOMEM;
  else memset(wt->hosts, 0, (n + 1) * sizeof(*wt->hosts));
  if (rc == 0) {
    wt->nhosts = 1;
    rc = collect_ext(wt, routes, n);
    if (rc == HR_ETOOLARGE) too_many_ext(err);
  }
  if (rc == 0 && ((wt->hosts[0].name = hr__mem_alloc(m, 1)) == NULL ||
                  (wt->hosts[0].root = bnode_new(m, none, NULL)) == NULL))
    rc = HR_ENOMEM;
  for (i = 0; i < n && rc == 0; i++) {
    const hr__core_t *c = routes[i]->core;
    whost_t *h = host_of(wt, c->host);
    hr__bnode_t *at;
    const hr_route_t *way;
    if (h == NULL) {
      h = &wt->hosts[wt->nhosts];
      if ((h->name = hr__mem_alloc(m, c->host.len + 1)) == NULL ||
          (h->root = bnode_new(m, none, NULL)) == NULL) {
        hr__mem_free(m, h->name); /* not counted in nhosts yet */
        h->name = NULL;
        rc = HR_ENOMEM;
        break;
      }
      memcpy(h->name, c->host.ptr, c->host.len);
      h->name[c->host.len] = '\0';
      h->len = c->host.len;
      wt->nhosts++;
    }
    if ((rc = place(m, h->root, c, 1, &at)) != 0) break;
    if ((way = in_the_way(at, routes[i], NULL)) != NULL) {
      rc = conflict(err, way);
      break;
    }
    if ((rc = route_room(m, at)) != 0) break;
    at->routes[at->nroutes++] = routes[i];
    touch_path(at, 1);
    count(wt, h, c, 1);
  }
  if (rc != 0) {
    hr__wtree_free(wt);
    return rc;
  }
  *out = wt;
  return 0;
}

hr_route_t *hr__wtree_find(const hr__wtree_t *wt, const hr__core_t *probe) {
  const whost_t *h = host_of(wt, probe->host);
  hr__bnode_t *at;
  size_t i;
  if (h == NULL || place(wt->m, h->root, probe, 0, &at) != 0 || at == NULL) return NULL;
  for (i = 0; i < at->nroutes; i++)
    if (hr__methods_equal(at->routes[i]->core, probe))
      return (hr_route_t *)at->routes[i];
  return NULL;
}

size_t hr__wtree_routes(const hr__wtree_t *wt) { return wt->nroutes; }

void hr__wtree_bytes(const hr__wtree_t *wt, size_t *live, size_t *allocated) {
  *live = wt->live_bytes;
  *allocated = wt->block_bytes;
}

int hr__wtree_wasteful(const hr__wtree_t *wt) {
  return wt->block_bytes > 2 * wt->live_bytes + 65536 || wt->removed > wt->nroutes / 2 + 64;
}

/* ---- changes ----------------------------------------------------------------- */

/* Whether taking `old` out (and putting `add` in) leaves an extension
 * method no route names, or `add` names one the tree does not know. */
static int ext_set_changes(const hr__wtree_t *wt, const hr_route_t *old, const hr_route_t *add) {
  size_t k, j, total;
  long x;
  if (add != NULL)
    for (k = 0; k < add->core->n_ext; k++)
      if (ext_index(wt, add->core->ext_methods[k]) < 0) return 1;
  if (old == NULL) return 0;
  for (k = 0; k < old->core->n_ext; k++) {
    hr_span_t e = old->core->ext_methods[k];
    x = ext_index(wt, e);
    for (total = 0, j = 0; j < wt->nhosts; j++) total += wt->hosts[j].ext[x];
    if (total > 1) continue;
    if (add == NULL) return 1;
    for (j = 0; j < add->core->n_ext; j++)
      if (hr_span_eq(add->core->ext_methods[j], e)) break;
    if (j == add->core->n_ext) return 1;
  }
  return 0;
}

int hr__wtree_stage(hr__wtree_t *wt, hr_route_t *old, hr_route_t *add, hr__change_t *c,
                    hr_route_error_t *err) {
  const hr__core_t *core = (add ? add : old)->core;
  const hr_route_t *way;
  int rc;
  memset(c, 0, sizeof(*c));
  c->old = old;
  c->add = add;
  if ((c->host = host_of(wt, core->host)) == NULL) return HR__REBUILD;
  if (add == NULL && c->host->nroutes == 1 && c->host != &wt->hosts[0]) return HR__REBUILD;
  if (ext_set_changes(wt, old, add)) return HR__REBUILD;
  if ((rc = place(wt->m, c->host->root, core, add != NULL, &c->at)) != 0) return rc;
  if (old != NULL) {
    for (c->slot = 0; c->slot < c->at->nroutes && c->at->routes[c->slot] != old; c->slot++)
      continue;
    if (c->slot == c->at->nroutes) return HR_ENOTFOUND; /* not the writer's route */
  }
  if (add != NULL && (way = in_the_way(c->at, add, old)) != NULL) return conflict(err, way);
  if (old == NULL && (rc = route_room(wt->m, c->at)) != 0) return rc;
  /* Nothing fails from here on. */
  if (old != NULL && add != NULL) {
    c->at->routes[c->slot] = add;
    touch_path(c->at, 0);
  } else if (old != NULL) {
    memmove(&c->at->routes[c->slot], &c->at->routes[c->slot + 1],
            (c->at->nroutes - c->slot - 1) * sizeof(*c->at->routes));
    c->at->nroutes--;
    touch_path(c->at, -1);
    wt->removed++;
  } else {
    c->at->routes[c->at->nroutes++] = add;
    touch_path(c->at, 1);
  }
  if (old != NULL) count(wt, c->host, old->core, -1);
  if (add != NULL) count(wt, c->host, add->core, 1);
  return 0;
}

void hr__wtree_unstage(hr__wtree_t *wt, hr__change_t *c) {
  hr__bnode_t *at = c->at;
  if (c->add != NULL) count(wt, c->host, c->add->core, -1);
  if (c->old != NULL) count(wt, c->host, c->old->core, 1);
  if (c->old != NULL && c->add != NULL) {
    at->routes[c->slot] = c->old;
  } else if (c->old != NULL) { /* the room it had is still there */
    memmove(&at->routes[c->slot + 1], &at->routes[c->slot],
            (at->nroutes - c->slot) * sizeof(*at->routes));
    at->routes[c->slot] = c->old;
    at->nroutes++;
    touch_path(at, 1);
    wt->removed--;
  } else {
    at->nroutes--;
    touch_path(at, -1); /* left dirty: the next freezing prunes what it made */
  }
}

/* Frees a tree's build nodes and its own memory, not its blocks. */
void hr__wtree_free_shape(hr__wtree_t *wt) {
  size_t i;
  for (i = 0; i < wt->nhosts; i++) {
    bnode_free(wt->m, wt->hosts[i].root);
    hr__mem_free(wt->m, wt->hosts[i].name);
  }
  hr__mem_free(wt->m, wt->hosts);
  hr__mem_free(wt->m, wt->ext_text);
  hr__mem_free(wt->m, wt);
}
