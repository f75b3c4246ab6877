/* SPDX-License-Identifier: MIT */
/*
 * The writer's route tree and its freezing (wtree.h).
 *
 * Build nodes form a compressed radix tree per host: insertion splits
 * static prefixes, parameters and catch-alls hang off their parent.  Each
 * knows its parent, how many routes its subtree holds (`sub`: a subtree
 * without routes is pruned at the next freezing) and its frozen node.
 *
 * Freezing walks only dirty nodes: for each it lays out a new frozen node
 * (64 bytes, the static children's pointers inline, the prefix, a 256-byte
 * child index from HR__INDEX_MIN children on) and its leaf apart, after
 * every node of the block, so that the nodes a walk reads stay dense; a
 * clean child is pointed at as it is.  The same walk runs twice, first to
 * measure (so that one allocation covers the block and nothing can fail
 * once nodes start to die), then to fill.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/wtree.h"

struct bnode_s {
  hr_span_t prefix; /* into its own copy, after the struct (a route's text
                       may go before the node does) */
  hr__bnode_t *parent;
  hr__bnode_t **kids; /* sorted by first byte */
  size_t nkids, kcap;
  hr__bnode_t *param, *catchall;
  const hr_route_t **routes; /* routes ending here, in the order added */
  size_t nroutes, rcap;
  size_t sub;               /* routes in this subtree */
  int dirty;                /* it or a node below changed since frozen */
  const hr__node_t *frozen; /* what readers see of it, or NULL */
  hr__block_t *block;       /* frozen's block */
  size_t fbytes;            /* bytes of frozen and its leaf */
};

typedef struct whost_s {
  char *name; /* lower-cased, owned; "" for the default host */
  size_t len;
  hr__bnode_t *root;
  size_t nroutes;
  uint32_t std[HR__M_STD];            /* routes naming each standard method */
  uint32_t ext[HR__MAX_EXT_METHODS];  /* routes naming each extension method */
} whost_t;

struct hr__wtree_s {
  hr__mem_t *m;
  whost_t *hosts; /* hosts[0]: the default host */
  size_t nhosts;
  hr_span_t ext[HR__MAX_EXT_METHODS]; /* sorted, text in ext_text */
  size_t n_ext;
  char *ext_text;
  size_t any;     /* "*" routes */
  size_t nroutes;
  size_t nodes;   /* frozen nodes live */
  size_t live_bytes, block_bytes;
  size_t removed;      /* routes removed since the whole build: each may
                          leave a split that only a whole build merges */
  hr__block_t *blocks; /* live blocks */
  int frozen;          /* ever frozen (its leaves hold references) */
};

#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

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

/* ---- freezing ---------------------------------------------------------------- */

/* One walk of the dirty nodes: measuring (fill 0) or filling. */
typedef struct fz_s {
  hr__wtree_t *wt;
  int fill;
  size_t node_bytes, leaf_bytes; /* measured */
  size_t dead_inv;               /* measured: references dead leaves give back */
  char *np, *lp;                 /* filling: next node, next leaf */
  hr__block_t *block;
  hr__garbage_t *g;
} fz_t;

static int present(const hr__bnode_t *n) { return n != NULL && n->sub > 0; }

static void *take(char **p, size_t n) {
  void *r = *p;
  *p += ALIGN8(n);
  return r;
}

/* n's frozen node leaves the tree: its leaf's references and, with its
 * block's last node, the block go to the garbage. */
static void bury(fz_t *fz, hr__bnode_t *n) {
  const hr__leaf_t *leaf;
  hr__block_t *b;
  size_t i;
  if (n->frozen == NULL) return;
  leaf = n->frozen->leaf;
  if (!fz->fill) {
    if (leaf != NULL) fz->dead_inv += leaf->nroutes;
    return;
  }
  if (leaf != NULL)
    for (i = 0; i < leaf->nroutes; i++) fz->g->inv[fz->g->ninv++] = leaf->routes[i];
  fz->wt->live_bytes -= n->fbytes;
  fz->wt->nodes--;
  b = n->block;
  if (--b->live == 0) {
    if (b->prev) b->prev->next = b->next;
    else fz->wt->blocks = b->next;
    if (b->next) b->next->prev = b->prev;
    fz->wt->block_bytes -= b->bytes;
    b->next = fz->g->blocks;
    fz->g->blocks = b;
    fz->g->bytes += b->bytes;
  }
  n->frozen = NULL;
  n->block = NULL;
}

/* A subtree without routes leaves the tree (when filling, its build nodes
 * are freed; the caller unlinks it). */
static void drop(fz_t *fz, hr__bnode_t *n) {
  size_t i;
  bury(fz, n);
  for (i = 0; i < n->nkids; i++) drop(fz, n->kids[i]);
  if (n->param) drop(fz, n->param);
  if (n->catchall) drop(fz, n->catchall);
  if (fz->fill) {
    hr__mem_free(fz->wt->m, n->kids);
    hr__mem_free(fz->wt->m, n->routes);
    hr__mem_free(fz->wt->m, n);
  }
}

/* Drops n's children without routes (unlinking them when filling);
 * returns how many static children stay. */
static size_t prune(fz_t *fz, hr__bnode_t *n) {
  size_t i, k = 0;
  for (i = 0; i < n->nkids; i++) {
    if (present(n->kids[i])) {
      if (fz->fill) n->kids[k] = n->kids[i];
      k++;
    } else {
      drop(fz, n->kids[i]);
    }
  }
  if (fz->fill) n->nkids = k;
  if (n->param != NULL && !present(n->param)) {
    drop(fz, n->param);
    if (fz->fill) n->param = NULL;
  }
  if (n->catchall != NULL && !present(n->catchall)) {
    drop(fz, n->catchall);
    if (fz->fill) n->catchall = NULL;
  }
  return k;
}

/* The one child of n with routes, when n has no routes, no parameter or
 * catch-all with routes and exactly one such static child; else NULL. */
static hr__bnode_t *lone_kid(const hr__bnode_t *n) {
  hr__bnode_t *only = NULL;
  size_t i;
  if (n->nroutes || present(n->param) || present(n->catchall)) return NULL;
  for (i = 0; i < n->nkids; i++)
    if (present(n->kids[i])) {
      if (only != NULL) return NULL;
      only = n->kids[i];
    }
  return only;
}

/* What a parameter slot freezes to.  A parameter is always followed by
 * '/' or the end of the path, so a parameter node without routes of its
 * own has exactly one static child, starting with '/': the frozen tree
 * points straight at that child, whose prefix the walk then compares right
 * after the segment (its '/' is where segment_end stopped).  One node less
 * per such parameter on every lookup. */
static hr__bnode_t *param_target(hr__bnode_t *param) {
  hr__bnode_t *k = lone_kid(param);
  return k != NULL && k->prefix.ptr[0] == '/' ? k : param;
}

static size_t leaf_allow(const hr__wtree_t *wt, const hr__bnode_t *n, uint16_t *std,
                         uint64_t *bits) {
  hr__named_methods(n->routes, n->nroutes, wt->ext, wt->n_ext, std, bits);
  return hr__allow_render(*std, *bits, wt->ext, NULL);
}

static size_t leaf_size(const hr__wtree_t *wt, const hr__bnode_t *n) {
  uint16_t std;
  uint64_t bits;
  size_t s, i;
  if (n->nroutes == 0) return 0;
  s = ALIGN8(sizeof(hr__leaf_t)) + 2 * ALIGN8(n->nroutes * sizeof(hr_route_t *)) +
      ALIGN8(leaf_allow(wt, n, &std, &bits) + 1);
  for (i = 0; i < n->nroutes; i++) s += ALIGN8(n->routes[i]->core->nparams * sizeof(hr_span_t));
  return s;
}

static const hr__leaf_t *fill_leaf(fz_t *fz, const hr__bnode_t *n) {
  hr__leaf_t *leaf = take(&fz->lp, sizeof(*leaf));
  size_t i;
  char *text;
  leaf->ext = take(&fz->lp, n->nroutes * sizeof(hr_route_t *));
  leaf->routes = take(&fz->lp, n->nroutes * sizeof(hr_route_t *));
  for (i = 0; i < n->nroutes; i++) {
    hr_route_t *r = (hr_route_t *)n->routes[i];
    /* A copy of the spans next to the leaf, read at every match.  The
     * bytes they point to are the core's pattern, which a request keeps
     * alive through its route when the table is gone: a match copies the
     * spans themselves into the request. */
    hr_span_t *names = take(&fz->lp, r->core->nparams * sizeof(hr_span_t));
    int id;
    if (r->core->nparams) memcpy(names, r->core->pnames, r->core->nparams * sizeof(hr_span_t));
    if (r->core->any_method) {
      leaf->any.route = r;
      leaf->any.names = names;
      leaf->accept = 0xFFFFu;
    }
    for (id = 0; id < HR__M_STD; id++)
      if (r->core->std_methods & (1u << id)) {
        leaf->std[id].route = r;
        leaf->std[id].names = names;
      }
    leaf->accept |= r->core->std_methods;
    if (r->core->n_ext) leaf->ext[leaf->n_ext++] = r;
    hr__invoker_ref(r); /* the leaf's, given back when it is reclaimed */
    leaf->routes[leaf->nroutes++] = r;
  }
  if (leaf->accept & (1u << HR__M_GET)) leaf->accept |= 1u << HR__M_HEAD;
  leaf->allow.len = leaf_allow(fz->wt, n, &leaf->named, &leaf->ext_named);
  text = take(&fz->lp, leaf->allow.len + 1);
  hr__allow_render(leaf->named, leaf->ext_named, fz->wt->ext, text);
  leaf->allow.ptr = text;
  return leaf;
}

static const hr__node_t *refreeze(fz_t *fz, hr__bnode_t *n);

/* Freezes the parameter and catch-all children of n (present ones). */
static void refreeze_alts(fz_t *fz, hr__bnode_t *n, hr__node_t *f) {
  const hr__node_t *p = NULL, *c = NULL;
  if (present(n->param)) {
    hr__bnode_t *t = param_target(n->param);
    if (t != n->param) { /* skipped: its own frozen node, if any, dies */
      bury(fz, n->param);
      n->param->dirty = 0;
    }
    p = refreeze(fz, t);
  }
  if (present(n->catchall)) c = refreeze(fz, n->catchall);
  if (f != NULL) {
    f->param = p;
    f->catchall = c;
  }
}

/* Freezes n when it is dirty (a new node in fz's block, its children
 * frozen or shared); returns its frozen node (NULL when measuring). */
static const hr__node_t *refreeze(fz_t *fz, hr__bnode_t *n) {
  size_t i, nk, nb, lb;
  hr__node_t *f;
  char *prefix;
  if (!n->dirty && n->frozen != NULL) return n->frozen;
  nk = prune(fz, n);
  nb = ALIGN8(sizeof(hr__node_t) + nk * sizeof(hr__node_t *)) + ALIGN8(n->prefix.len) +
       (nk >= HR__INDEX_MIN ? 256 : 0);
  lb = leaf_size(fz->wt, n);
  bury(fz, n);
  if (!fz->fill) {
    fz->node_bytes += nb;
    fz->leaf_bytes += lb;
    for (i = 0; i < n->nkids; i++)
      if (present(n->kids[i])) refreeze(fz, n->kids[i]);
    refreeze_alts(fz, n, NULL);
    return NULL;
  }
  f = take(&fz->np, sizeof(*f) + nk * sizeof(hr__node_t *));
  prefix = take(&fz->np, n->prefix.len);
  /* The block is zeroed, so the prefix's padding is zero. */
  if (n->prefix.len) memcpy(prefix, n->prefix.ptr, n->prefix.len);
  memcpy(&f->head, prefix, n->prefix.len < 8 ? n->prefix.len : 8);
  f->prefix = prefix;
  f->plen = (uint32_t)n->prefix.len;
  f->nstatic = (uint32_t)nk;
  if (nk >= HR__INDEX_MIN) {
    /* child + 1, or with 256 children (one per byte) the child itself */
    unsigned char *ix = take(&fz->np, 256);
    for (i = 0; i < nk; i++)
      ix[(unsigned char)n->kids[i]->prefix.ptr[0]] = (unsigned char)(nk == 256 ? i : i + 1);
    f->index = ix;
  } else {
    for (i = 0; i < nk; i++) f->first[i] = (unsigned char)n->kids[i]->prefix.ptr[0];
  }
  if (n->nroutes) f->leaf = fill_leaf(fz, n);
  n->frozen = f;
  n->block = fz->block;
  n->fbytes = nb + lb;
  n->dirty = 0;
  fz->block->live++;
  fz->wt->live_bytes += nb + lb;
  fz->wt->nodes++;
  for (i = 0; i < nk; i++) f->statics[i] = refreeze(fz, n->kids[i]);
  refreeze_alts(fz, n, f);
  return f;
}

/* Freezes a host's tree; returns its frozen root (NULL when it has no
 * routes, or when measuring).  The build root (empty prefix) with one
 * child, "/", and nothing else is not frozen itself: the frozen tree
 * starts at the child, one step less for every lookup. */
static const hr__node_t *freeze_host(fz_t *fz, whost_t *h) {
  hr__bnode_t *root = h->root, *top;
  if (!present(root) || (top = lone_kid(root)) == NULL) {
    if (present(root)) return refreeze(fz, root);
    bury(fz, root);
    prune(fz, root);
    root->dirty = 0;
    return NULL;
  }
  bury(fz, root);
  prune(fz, root);
  root->dirty = 0;
  return refreeze(fz, top);
}

/* ---- prepare, commit -------------------------------------------------------- */

/* The Allow value of a whole host ("OPTIONS *"), from its counts. */
static size_t host_allow(const hr__wtree_t *wt, const whost_t *h, char *w) {
  uint16_t std = 1u << HR__M_OPTIONS;
  uint64_t bits = 0;
  size_t j;
  int id;
  for (id = 0; id < HR__M_STD; id++)
    if (h->std[id]) std |= (uint16_t)(1u << id);
  if (std & (1u << HR__M_GET)) std |= 1u << HR__M_HEAD;
  for (j = 0; j < wt->n_ext; j++)
    if (h->ext[j]) bits |= (uint64_t)1 << j;
  return hr__allow_render(std, bits, wt->ext, w);
}

static size_t ext_bytes(const hr__wtree_t *wt) {
  size_t j, n = 0;
  for (j = 0; j < wt->n_ext; j++) n += wt->ext[j].len;
  return n;
}

/* The references a tree's frozen leaves hold (a whole build kills them). */
static size_t frozen_refs(const hr__bnode_t *n) {
  size_t s = n->frozen && n->frozen->leaf ? n->frozen->leaf->nroutes : 0, i;
  for (i = 0; i < n->nkids; i++) s += frozen_refs(n->kids[i]);
  if (n->param) s += frozen_refs(n->param);
  if (n->catchall) s += frozen_refs(n->catchall);
  return s;
}

static size_t table_size(const hr__wtree_t *wt) {
  size_t s = ALIGN8(sizeof(hr__table_t)) + ALIGN8((wt->nhosts - 1) * sizeof(hr__host_t)) +
             ALIGN8(wt->n_ext * sizeof(hr_span_t)) + ALIGN8(ext_bytes(wt)), i;
  for (i = 0; i < wt->nhosts; i++)
    s += ALIGN8(wt->hosts[i].len + 1) + ALIGN8(host_allow(wt, &wt->hosts[i], NULL) + 1);
  return s;
}

int hr__wtree_prepare(hr__wtree_t *wt, hr__wtree_t *replaced, hr__plan_t *p) {
  fz_t fz;
  size_t i, ninv, tsize = table_size(wt);
  char *w;
  hr__table_t *t;
  hr__host_t *hosts;
  memset(p, 0, sizeof(*p));
  memset(&fz, 0, sizeof(fz));
  fz.wt = wt;
  for (i = 0; i < wt->nhosts; i++) freeze_host(&fz, &wt->hosts[i]);
  ninv = fz.dead_inv;
  if (replaced != NULL)
    for (i = 0; i < replaced->nhosts; i++) ninv += frozen_refs(replaced->hosts[i].root);
  p->wt = wt;
  p->replaced = replaced;
  p->node_bytes = fz.node_bytes;
  p->leaf_bytes = fz.leaf_bytes;
  p->garbage = hr__mem_alloc(wt->m, sizeof(hr__garbage_t) + ninv * sizeof(hr_route_t *));
  p->table = hr__mem_alloc(wt->m, tsize);
  if (fz.node_bytes)
    p->block = hr__mem_alloc(wt->m, ALIGN8(sizeof(hr__block_t)) + fz.node_bytes + fz.leaf_bytes);
  if (p->garbage == NULL || p->table == NULL || (fz.node_bytes && p->block == NULL)) {
    hr__mem_free(wt->m, p->garbage);
    hr__mem_free(wt->m, p->table);
    hr__mem_free(wt->m, p->block);
    memset(p, 0, sizeof(*p));
    return HR_ENOMEM;
  }
  p->garbage->blocks = NULL;
  p->garbage->bytes = 0;
  p->garbage->ninv = 0;
  if (p->block != NULL) {
    memset(p->block, 0, ALIGN8(sizeof(hr__block_t)) + fz.node_bytes + fz.leaf_bytes);
    p->block->bytes = ALIGN8(sizeof(hr__block_t)) + fz.node_bytes + fz.leaf_bytes;
  }
  /* The table: hosts named now (fallbacks are attached before commit). */
  t = p->table;
  memset(t, 0, tsize);
  w = (char *)t;
  take(&w, sizeof(*t));
  hosts = take(&w, (wt->nhosts - 1) * sizeof(hr__host_t));
  t->mem = wt->m;
  t->hosts = hosts;
  t->nhosts = wt->nhosts - 1;
  t->bytes = tsize;
  for (i = 0; i < wt->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : &hosts[i - 1];
    char *name = take(&w, wt->hosts[i].len + 1);
    memcpy(name, wt->hosts[i].name, wt->hosts[i].len);
    h->name.ptr = name;
    h->name.len = wt->hosts[i].len;
  }
  return 0;
}

void hr__wtree_abort(hr__plan_t *p) {
  if (p->table != NULL) hr__table_discard(p->table);
  hr__mem_free(p->wt->m, p->garbage);
  hr__mem_free(p->wt->m, p->block);
  memset(p, 0, sizeof(*p));
}

/* A replaced tree's frozen leaves give their references to the garbage. */
static void give_refs(hr__garbage_t *g, const hr__bnode_t *n) {
  const hr__leaf_t *leaf = n->frozen ? n->frozen->leaf : NULL;
  size_t i;
  if (leaf != NULL)
    for (i = 0; i < leaf->nroutes; i++) g->inv[g->ninv++] = leaf->routes[i];
  for (i = 0; i < n->nkids; i++) give_refs(g, n->kids[i]);
  if (n->param) give_refs(g, n->param);
  if (n->catchall) give_refs(g, n->catchall);
}

/* Frees a tree's build nodes and its own memory, not its blocks. */
static void free_shape(hr__wtree_t *wt) {
  size_t i;
  for (i = 0; i < wt->nhosts; i++) {
    bnode_free(wt->m, wt->hosts[i].root);
    hr__mem_free(wt->m, wt->hosts[i].name);
  }
  hr__mem_free(wt->m, wt->hosts);
  hr__mem_free(wt->m, wt->ext_text);
  hr__mem_free(wt->m, wt);
}

void hr__wtree_commit(hr__plan_t *p) {
  hr__wtree_t *wt = p->wt;
  hr__table_t *t = p->table;
  char *w = (char *)t;
  hr_span_t *ext;
  fz_t fz;
  size_t i;
  memset(&fz, 0, sizeof(fz));
  fz.wt = wt;
  fz.fill = 1;
  fz.g = p->garbage;
  fz.block = p->block;
  if (p->block != NULL) {
    fz.np = (char *)p->block + ALIGN8(sizeof(hr__block_t));
    fz.lp = fz.np + p->node_bytes;
  }
  for (i = 0; i < wt->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : (hr__host_t *)&t->hosts[i - 1];
    h->root = freeze_host(&fz, &wt->hosts[i]);
  }
  if (p->block != NULL) { /* live: at least one node was made in it */
    p->block->prev = NULL;
    p->block->next = wt->blocks;
    if (wt->blocks) wt->blocks->prev = p->block;
    wt->blocks = p->block;
    wt->block_bytes += p->block->bytes;
  }
  if (p->replaced != NULL) {
    hr__block_t *b, *next;
    for (i = 0; i < p->replaced->nhosts; i++) give_refs(p->garbage, p->replaced->hosts[i].root);
    for (b = p->replaced->blocks; b != NULL; b = next) {
      next = b->next;
      b->next = p->garbage->blocks;
      p->garbage->blocks = b;
      p->garbage->bytes += b->bytes;
    }
    free_shape(p->replaced);
  }
  wt->frozen = 1;
  /* The table's own block, after the hosts and their names. */
  take(&w, sizeof(*t));
  take(&w, t->nhosts * sizeof(hr__host_t));
  for (i = 0; i < wt->nhosts; i++) take(&w, wt->hosts[i].len + 1);
  ext = take(&w, wt->n_ext * sizeof(hr_span_t));
  {
    char *text = take(&w, ext_bytes(wt));
    for (i = 0; i < wt->n_ext; i++) {
      memcpy(text, wt->ext[i].ptr, wt->ext[i].len);
      ext[i].ptr = text;
      ext[i].len = wt->ext[i].len;
      text += wt->ext[i].len;
    }
  }
  t->ext_methods = ext;
  t->n_ext_methods = wt->n_ext;
  t->any_method = wt->any > 0;
  for (i = 0; i < wt->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : (hr__host_t *)&t->hosts[i - 1];
    char *text;
    h->allow_all.len = host_allow(wt, &wt->hosts[i], NULL);
    text = take(&w, h->allow_all.len + 1);
    host_allow(wt, &wt->hosts[i], text);
    h->allow_all.ptr = text;
    /* Any union of leaves' methods is within the host's. */
    if (h->allow_all.len > t->allow_max) t->allow_max = h->allow_all.len;
  }
  t->nroutes = wt->nroutes;
  t->nodes = wt->nodes;
  t->bytes += wt->block_bytes;
}

/* Gives back the references of a tree's frozen leaves. */
static void unref_leaves(const hr__bnode_t *n) {
  const hr__leaf_t *leaf = n->frozen ? n->frozen->leaf : NULL;
  size_t i;
  if (leaf != NULL)
    for (i = 0; i < leaf->nroutes; i++) hr__invoker_unref(leaf->routes[i]);
  for (i = 0; i < n->nkids; i++) unref_leaves(n->kids[i]);
  if (n->param) unref_leaves(n->param);
  if (n->catchall) unref_leaves(n->catchall);
}

void hr__wtree_free(hr__wtree_t *wt) {
  hr__block_t *b, *next;
  size_t i;
  if (wt == NULL) return;
  if (wt->frozen) {
    for (i = 0; i < wt->nhosts; i++) unref_leaves(wt->hosts[i].root);
    for (b = wt->blocks; b != NULL; b = next) {
      next = b->next;
      hr__mem_free(wt->m, b);
    }
  }
  free_shape(wt);
}

hr__garbage_t *hr__wtree_retire(hr__wtree_t *wt) {
  hr__garbage_t *g;
  hr__block_t *b, *next;
  size_t i, n = 0;
  for (i = 0; i < wt->nhosts; i++) n += frozen_refs(wt->hosts[i].root);
  g = hr__mem_alloc(wt->m, sizeof(*g) + n * sizeof(hr_route_t *));
  if (g == NULL) return NULL; /* the tree leaks: never a free under a reader */
  g->ninv = 0;
  g->blocks = NULL;
  g->bytes = 0;
  for (i = 0; i < wt->nhosts; i++) give_refs(g, wt->hosts[i].root);
  for (b = wt->blocks; b != NULL; b = next) {
    next = b->next;
    b->next = g->blocks;
    g->blocks = b;
    g->bytes += b->bytes;
  }
  free_shape(wt);
  return g;
}
