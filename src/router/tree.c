/* SPDX-License-Identifier: MIT */
/*
 * The route table: a compressed radix tree per host.  Built from the route
 * list in two steps: an editable tree of build nodes (insertion splits
 * static prefixes, parameters and catch-alls hang off their parent), then a
 * frozen copy in one block, which is what readers see: the nodes depth-first
 * (each with its static children inline), then the leaves (routes by method
 * and the Allow text), apart so that the nodes stay dense in the cache.
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

#include "router/route.h"
#include "router/walk.h"

/* ---- build tree ---------------------------------------------------------- */

typedef struct bnode_s bnode_t;
struct bnode_s {
  hr_span_t prefix; /* into a route's token text */
  bnode_t **kids;
  size_t nkids, kcap;
  bnode_t *param, *catchall;
  const hr_route_t **routes; /* routes ending here */
  size_t nroutes, rcap;
};

typedef struct build_s {
  hr__mem_t *m;
  size_t nodes;
  size_t bytes;
  size_t allow_bytes;
} build_t;

static bnode_t *bnode_new(build_t *b, hr_span_t prefix) {
  bnode_t *n = hr__mem_alloc(b->m, sizeof(*n));
  if (n == NULL) return NULL;
  memset(n, 0, sizeof(*n));
  n->prefix = prefix;
  b->nodes++;
  return n;
}

static void bnode_free(hr__mem_t *m, bnode_t *n) {
  size_t i;
  if (n == NULL) return;
  for (i = 0; i < n->nkids; i++) bnode_free(m, n->kids[i]);
  bnode_free(m, n->param);
  bnode_free(m, n->catchall);
  hr__mem_free(m, n->kids);
  hr__mem_free(m, n->routes);
  hr__mem_free(m, n);
}

static int add_kid(build_t *b, bnode_t *n, bnode_t *kid) {
  size_t i;
  if (n->nkids == n->kcap) {
    size_t cap = n->kcap ? n->kcap * 2 : 4;
    bnode_t **k = hr__mem_realloc(b->m, n->kids, cap * sizeof(*k));
    if (k == NULL) return HR_ENOMEM;
    n->kids = k;
    n->kcap = cap;
  }
  /* Keep kids sorted by first byte. */
  i = n->nkids;
  while (i > 0 && (unsigned char)n->kids[i - 1]->prefix.ptr[0] >
                      (unsigned char)kid->prefix.ptr[0]) {
    n->kids[i] = n->kids[i - 1];
    i--;
  }
  n->kids[i] = kid;
  n->nkids++;
  return 0;
}

/* Descends from `n` along literal bytes `t`, splitting and adding nodes;
 * stores the node where `t` ends. */
static int insert_static(build_t *b, bnode_t *n, hr_span_t t, bnode_t **out) {
  while (t.len > 0) {
    bnode_t *k = NULL;
    size_t i, common = 0;
    for (i = 0; i < n->nkids; i++)
      if (n->kids[i]->prefix.ptr[0] == t.ptr[0]) {
        k = n->kids[i];
        break;
      }
    if (k == NULL) {
      k = bnode_new(b, t);
      if (k == NULL || add_kid(b, n, k) != 0) {
        if (k != NULL) bnode_free(b->m, k);
        return HR_ENOMEM;
      }
      *out = k;
      return 0;
    }
    while (common < k->prefix.len && common < t.len &&
           k->prefix.ptr[common] == t.ptr[common])
      common++;
    if (common < k->prefix.len) {
      /* Split k: a new node holds the shared part, k keeps the rest. */
      hr_span_t head = {k->prefix.ptr, common};
      bnode_t *mid = bnode_new(b, head);
      if (mid == NULL) return HR_ENOMEM;
      mid->kids = hr__mem_alloc(b->m, 4 * sizeof(*mid->kids));
      if (mid->kids == NULL) {
        hr__mem_free(b->m, mid);
        b->nodes--;
        return HR_ENOMEM;
      }
      mid->kcap = 4;
      k->prefix.ptr += common;
      k->prefix.len -= common;
      mid->kids[0] = k;
      mid->nkids = 1;
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

/* "METHODS pattern" of `r`, cut to the array (conflict_len says so). */
static void describe(const hr_route_t *r, hr_route_error_t *err) {
  const hr__core_t *c = r->core;
  err->conflict_len = c->methods_text.len + 1 + c->pattern.len;
  snprintf(err->conflict, sizeof(err->conflict), "%.*s %.*s",
           (int)c->methods_text.len, c->methods_text.ptr, (int)c->pattern.len,
           c->pattern.ptr);
}

static int conflict(hr_route_error_t *err, int code, const char *reason,
                    const hr_route_t *with, size_t offset) {
  if (err != NULL) {
    err->code = code;
    err->reason = reason;
    err->offset = offset;
    describe(with, err);
  }
  return code;
}

/* Adds a route.  Parameters hang off their node whatever their names:
 * each route keeps its own names (core->pnames). */
static int insert_route(build_t *b, bnode_t *root, const hr_route_t *rt,
                        hr_route_error_t *err) {
  bnode_t *n = root;
  size_t i;
  int rc;
  for (i = 0; i < rt->core->ntoks; i++) {
    const hr__tok_t *t = &rt->core->toks[i];
    bnode_t **slot;
    if (t->kind == HR__TOK_STATIC) {
      if ((rc = insert_static(b, n, t->text, &n)) != 0) return rc;
      continue;
    }
    slot = t->kind == HR__TOK_PARAM ? &n->param : &n->catchall;
    if (*slot == NULL) {
      hr_span_t none = {NULL, 0};
      *slot = bnode_new(b, none);
      if (*slot == NULL) return HR_ENOMEM;
    }
    n = *slot;
  }
  for (i = 0; i < n->nroutes; i++)
    if (hr__methods_overlap(n->routes[i]->core, rt->core))
      return conflict(err, HR_EEXIST,
                      "a route with this method and pattern exists",
                      n->routes[i], 0);
  if (n->nroutes == n->rcap) {
    size_t cap = n->rcap ? n->rcap * 2 : 2;
    const hr_route_t **r = hr__mem_realloc(b->m, n->routes, cap * sizeof(*r));
    if (r == NULL) return HR_ENOMEM;
    n->routes = r;
    n->rcap = cap;
  }
  n->routes[n->nroutes++] = rt;
  return 0;
}

/* ---- Allow values ---------------------------------------------------------- */

static int span_cmp(const void *a, const void *b) {
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
static size_t allow_render(uint16_t std, uint64_t ext_bits, const hr_span_t *ext,
                           char *w) {
  size_t len = 0, i = 0, j = 0;
  for (;;) {
    hr_span_t next, sn = {NULL, 0};
    while (i < HR__M_STD && !(std & (1u << std_sorted[i]))) i++;
    while (j < HR__MAX_EXT_METHODS && !((ext_bits >> j) & 1)) j++;
    if (i == HR__M_STD && j == HR__MAX_EXT_METHODS) break;
    if (i < HR__M_STD) sn = hr__method_name(std_sorted[i]);
    /* merge the two sorted lists (no extension method is a standard one) */
    if (j == HR__MAX_EXT_METHODS || (i < HR__M_STD && span_cmp(&sn, &ext[j]) < 0)) {
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
static void named_methods(const hr_route_t *const *routes, size_t n, const hr_span_t *ext,
                          size_t n_ext, uint16_t *std, uint64_t *ext_bits) {
  size_t i, k;
  *std = 1u << HR__M_OPTIONS;
  *ext_bits = 0;
  for (i = 0; i < n; i++) {
    const hr__core_t *c = routes[i]->core;
    *std |= c->std_methods;
    for (k = 0; k < c->n_ext; k++) {
      const hr_span_t *hit = bsearch(&c->ext_methods[k], ext, n_ext, sizeof(*ext), span_cmp);
      if (hit != NULL) *ext_bits |= (uint64_t)1 << (hit - ext);
    }
  }
  if (*std & (1u << HR__M_GET)) *std |= 1u << HR__M_HEAD;
}

/* The distinct extension methods of `routes`, sorted, into ext (room for
 * HR__MAX_EXT_METHODS).  Returns the count, or HR__MAX_EXT_METHODS + 1
 * when there are more. */
static size_t collect_ext(const hr_route_t *const *routes, size_t n, hr_span_t *ext) {
  size_t i, k, j, count = 0;
  for (i = 0; i < n; i++) {
    const hr__core_t *c = routes[i]->core;
    for (k = 0; k < c->n_ext; k++) {
      for (j = 0; j < count; j++)
        if (hr_span_eq(ext[j], c->ext_methods[k])) break;
      if (j < count) continue;
      if (count == HR__MAX_EXT_METHODS) return count + 1;
      ext[count++] = c->ext_methods[k];
    }
  }
  qsort(ext, count, sizeof(*ext), span_cmp);
  return count;
}

/* ---- freezing -------------------------------------------------------------- */

#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

/* Bump allocation inside the table block (sized exactly beforehand). */
typedef struct bump_s {
  char *p;
  char *end;
} bump_t;

static void *bump(bump_t *b, size_t n) {
  void *r = b->p;
  b->p += ALIGN8(n);
  return r;
}

/* What freezing needs besides the block: the table's extension methods. */
typedef struct freeze_s {
  bump_t nodes, leaves;
  const hr_span_t *ext;
  size_t n_ext;
  size_t nodes_count; /* frozen so far */
} freeze_t;

static size_t leaf_allow_len(const bnode_t *n, const hr_span_t *ext, size_t n_ext) {
  uint16_t std;
  uint64_t bits;
  named_methods(n->routes, n->nroutes, ext, n_ext, &std, &bits);
  return allow_render(std, bits, ext, NULL);
}

/* What a parameter slot freezes to.  A parameter is always followed by
 * '/' or the end of the path, so a parameter node without routes of its
 * own has exactly one static child, starting with '/': the frozen tree
 * points straight at that child, whose prefix the walk then compares right
 * after the segment (its '/' is where segment_end stopped).  One node less
 * per such parameter on every lookup. */
static const bnode_t *param_target(const bnode_t *param) {
  if (param->nroutes == 0 && param->nkids == 1 && param->param == NULL &&
      param->catchall == NULL && param->kids[0]->prefix.ptr[0] == '/')
    return param->kids[0];
  return param;
}

/* Bytes of the frozen nodes of a subtree; the bytes of its leaves are added
 * to *leaf_bytes: leaves live apart, after every node, so that the nodes a
 * walk reads stay dense in the cache. */
static size_t node_size(const bnode_t *n, const hr_span_t *ext, size_t n_ext,
                        size_t *leaf_bytes) {
  size_t s = ALIGN8(sizeof(hr__node_t) + n->nkids * sizeof(hr__node_t *)) +
             ALIGN8(n->prefix.len) + (n->nkids >= HR__INDEX_MIN ? 256 : 0);
  size_t i;
  if (n->nroutes) {
    *leaf_bytes += ALIGN8(sizeof(hr__leaf_t)) + ALIGN8(n->nroutes * sizeof(hr_route_t *)) +
                   ALIGN8(leaf_allow_len(n, ext, n_ext) + 1);
    for (i = 0; i < n->nroutes; i++)
      *leaf_bytes += ALIGN8(n->routes[i]->core->nparams * sizeof(hr_span_t));
  }
  for (i = 0; i < n->nkids; i++) s += node_size(n->kids[i], ext, n_ext, leaf_bytes);
  if (n->param) s += node_size(param_target(n->param), ext, n_ext, leaf_bytes);
  if (n->catchall) s += node_size(n->catchall, ext, n_ext, leaf_bytes);
  return s;
}

static const hr__leaf_t *freeze_leaf(freeze_t *fz, const bnode_t *n) {
  hr__leaf_t *leaf = bump(&fz->leaves, sizeof(*leaf));
  size_t i;
  char *text;
  leaf->ext = bump(&fz->leaves, n->nroutes * sizeof(hr_route_t *));
  for (i = 0; i < n->nroutes; i++) {
    const hr_route_t *r = n->routes[i];
    /* A copy of the spans next to the leaf, read at every match.  The
     * bytes they point to are the core's pattern, which a request keeps
     * alive through its route when the table is gone: a match copies the
     * spans themselves into the request. */
    hr_span_t *names = bump(&fz->leaves, r->core->nparams * sizeof(hr_span_t));
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
  }
  if (leaf->accept & (1u << HR__M_GET)) leaf->accept |= 1u << HR__M_HEAD;
  named_methods(n->routes, n->nroutes, fz->ext, fz->n_ext, &leaf->named, &leaf->ext_named);
  leaf->allow.len = allow_render(leaf->named, leaf->ext_named, fz->ext, NULL);
  text = bump(&fz->leaves, leaf->allow.len + 1);
  allow_render(leaf->named, leaf->ext_named, fz->ext, text);
  leaf->allow.ptr = text;
  return leaf;
}

/* Freezes a subtree: its nodes go to fz->nodes, depth-first, its leaves to
 * fz->leaves. */
static hr__node_t *freeze(freeze_t *fz, const bnode_t *n) {
  hr__node_t *f = bump(&fz->nodes, sizeof(*f) + n->nkids * sizeof(hr__node_t *));
  size_t i;
  fz->nodes_count++;
  char *prefix = bump(&fz->nodes, n->prefix.len);
  /* The block is zeroed, so the prefix's padding is zero. */
  if (n->prefix.len) memcpy(prefix, n->prefix.ptr, n->prefix.len);
  memcpy(&f->head, prefix, n->prefix.len < 8 ? n->prefix.len : 8);
  f->prefix = prefix;
  f->plen = (uint32_t)n->prefix.len;
  f->nstatic = (uint32_t)n->nkids;
  /* The child index sits right after the node, before its subtrees. */
  if (n->nkids >= HR__INDEX_MIN) {
    /* child + 1, or with 256 children (one per byte) the child itself */
    unsigned char *ix = bump(&fz->nodes, 256);
    for (i = 0; i < n->nkids; i++)
      ix[(unsigned char)n->kids[i]->prefix.ptr[0]] =
          (unsigned char)(n->nkids == 256 ? i : i + 1);
    f->index = ix;
  } else {
    for (i = 0; i < n->nkids; i++)
      f->first[i] = (unsigned char)n->kids[i]->prefix.ptr[0];
  }
  if (n->nroutes) f->leaf = freeze_leaf(fz, n);
  for (i = 0; i < n->nkids; i++) f->statics[i] = freeze(fz, n->kids[i]);
  if (n->param) f->param = freeze(fz, param_target(n->param));
  if (n->catchall) f->catchall = freeze(fz, n->catchall);
  return f;
}

/* ---- table ----------------------------------------------------------------- */

void hr__table_free(hr__table_t *t) {
  size_t i;
  for (i = 0; i < t->ninvokers; i++) hr__invoker_unref(t->invokers[i]);
  if (t->def.fallback != NULL) hr__invoker_unref(t->def.fallback);
  for (i = 0; i < t->nhosts; i++)
    if (t->hosts[i].fallback != NULL) hr__invoker_unref(t->hosts[i].fallback);
  hr__mem_free(t->mem, t); /* one block */
}

void hr__table_discard(hr__table_t *t) {
  size_t i;
  /* The references the build took, given back without freeing: the
   * caller still owns the invokers as they were before. */
  for (i = 0; i < t->ninvokers; i++)
    atomic_fetch_sub_explicit(&t->invokers[i]->refs, 1, memory_order_relaxed);
  t->ninvokers = 0;
  hr__table_free(t);
}

typedef struct host_build_s {
  hr_span_t name;
  bnode_t *root;
  bnode_t *top;              /* what is frozen: root, or its lone "/" child */
  const hr_route_t **routes; /* for allow_all */
  size_t nroutes;
} host_build_t;

/* Groups the routes by host and inserts them into one build tree each. */
static int build_hosts(build_t *b, hr_route_t *const *routes, size_t n, host_build_t *hb,
                       size_t *nh_out, hr_route_error_t *err) {
  size_t nh = 1, i, j; /* hb[0]: the default host; the others in order */
  int rc = 0;
  for (i = 0; i < n && rc == 0; i++) {
    host_build_t *h = NULL;
    for (j = 0; j < nh; j++)
      if (hr_span_eq(hb[j].name, routes[i]->core->host)) {
        h = &hb[j];
        break;
      }
    if (h == NULL) {
      h = &hb[nh++];
      h->name = routes[i]->core->host;
    }
    if (h->root == NULL) {
      hr_span_t none = {NULL, 0};
      h->root = bnode_new(b, none);
      h->routes = hr__mem_alloc(b->m, n * sizeof(*h->routes));
      if (h->root == NULL || h->routes == NULL) {
        rc = HR_ENOMEM;
        break;
      }
    }
    rc = insert_route(b, h->root, routes[i], err);
    if (rc == 0) h->routes[h->nroutes++] = routes[i];
  }
  *nh_out = nh;
  return rc;
}

int hr__table_build(hr__mem_t *m, hr_route_t *const *routes, size_t n,
                    int ci, hr__table_t **out, hr_route_error_t *err) {
  build_t b = {m, 0, 0, 0};
  host_build_t *hb = NULL;
  size_t nh = 0, i, size = 0, n_ext = 0, leaf_bytes = 0;
  hr_span_t ext[HR__MAX_EXT_METHODS + 1];
  hr__table_t *t = NULL;
  freeze_t fz;
  int rc = 0;
  *out = NULL;
  (void)ci;
  n_ext = collect_ext((const hr_route_t *const *)routes, n, ext);
  if (n_ext > HR__MAX_EXT_METHODS) {
    if (err != NULL) { /* no other route is in the way */
      err->code = HR_ETOOLARGE;
      err->reason = "more than 64 extension methods (not GET, POST...) in one router";
      err->offset = 0;
      err->conflict[0] = '\0';
      err->conflict_len = 0;
    }
    return HR_ETOOLARGE;
  }
  hb = hr__mem_alloc(m, (n + 1) * sizeof(*hb));
  if (hb == NULL) return HR_ENOMEM;
  memset(hb, 0, (n + 1) * sizeof(*hb));
  rc = build_hosts(&b, routes, n, hb, &nh, err);
  if (rc == 0) {
    size = ALIGN8(sizeof(hr__table_t)) + ALIGN8((nh - 1) * sizeof(hr__host_t)) +
           ALIGN8(n * sizeof(hr_route_t *)) + ALIGN8(n_ext * sizeof(hr_span_t));
    for (i = 0; i < nh; i++) {
      bnode_t *top = hb[i].root;
      uint16_t std;
      uint64_t bits;
      /* The build root (empty prefix) has one child, "/", and nothing else:
       * the frozen tree starts there, one step less for every lookup. */
      if (top != NULL && top->prefix.len == 0 && top->nkids == 1 &&
          top->param == NULL && top->catchall == NULL && top->nroutes == 0) {
        top = top->kids[0];
        b.nodes--;
      }
      hb[i].top = top;
      if (top) size += node_size(top, ext, n_ext, &leaf_bytes);
      size += ALIGN8(hb[i].name.len + 1);
      named_methods(hb[i].routes, hb[i].nroutes, ext, n_ext, &std, &bits);
      size += ALIGN8(allow_render(std, bits, ext, NULL) + 1);
    }
    size += leaf_bytes;
    t = hr__mem_alloc(m, size);
    if (t == NULL) rc = HR_ENOMEM;
  }
  if (rc == 0) {
    hr__host_t *hosts;
    hr_span_t *text_ext;
    memset(t, 0, size);
    fz.nodes.p = (char *)t;
    fz.nodes.end = (char *)t + size - leaf_bytes;
    fz.leaves.p = fz.nodes.end;
    fz.leaves.end = (char *)t + size;
    bump(&fz.nodes, sizeof(*t));
    hosts = bump(&fz.nodes, (nh - 1) * sizeof(hr__host_t));
    t->mem = m;
    t->invokers = bump(&fz.nodes, n * sizeof(hr_route_t *));
    text_ext = bump(&fz.nodes, n_ext * sizeof(hr_span_t));
    if (n_ext) memcpy(text_ext, ext, n_ext * sizeof(*ext));
    fz.ext = text_ext;
    fz.n_ext = n_ext;
    fz.nodes_count = 0;
    t->ext_methods = text_ext;
    t->n_ext_methods = n_ext;
    for (i = 0; i < n; i++) t->any_method |= routes[i]->core->any_method;
    for (i = 0; i < nh; i++) {
      hr__host_t *h = i == 0 ? &t->def : &hosts[i - 1];
      char *name = bump(&fz.nodes, hb[i].name.len + 1), *text;
      uint16_t std;
      uint64_t bits;
      if (hb[i].name.len) memcpy(name, hb[i].name.ptr, hb[i].name.len);
      h->name.ptr = name;
      h->name.len = hb[i].name.len;
      h->root = hb[i].top ? freeze(&fz, hb[i].top) : NULL;
      named_methods(hb[i].routes, hb[i].nroutes, ext, n_ext, &std, &bits);
      h->allow_all.len = allow_render(std, bits, text_ext, NULL);
      text = bump(&fz.nodes, h->allow_all.len + 1);
      allow_render(std, bits, text_ext, text);
      h->allow_all.ptr = text;
      /* Any union of leaves' methods is within the host's. */
      if (h->allow_all.len > t->allow_max) t->allow_max = h->allow_all.len;
    }
    t->hosts = hosts;
    t->nhosts = nh - 1;
    t->nodes = fz.nodes_count;
    t->bytes = size;
    for (i = 0; i < n; i++) {
      hr__invoker_ref(routes[i]);
      t->invokers[i] = routes[i];
    }
    t->ninvokers = n;
  }
  for (i = 0; i < nh; i++) {
    bnode_free(m, hb[i].root);
    hr__mem_free(m, hb[i].routes);
  }
  hr__mem_free(m, hb);
  if (rc == 0) *out = t;
  return rc;
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
  return allow_render(u.std, u.ext, t->ext_methods, buf);
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
