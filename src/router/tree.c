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

/* ---- build tree ---------------------------------------------------------- */

typedef struct bnode_s bnode_t;
struct bnode_s {
  hr_span_t prefix; /* into a route's token text */
  bnode_t **kids;
  size_t nkids, kcap;
  bnode_t *param, *catchall;
  hr_span_t name;
  const hr_route_t *owner;   /* the route that created this parameter */
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

static int insert_route(build_t *b, bnode_t *root, const hr_route_t *rt,
                        hr_route_error_t *err) {
  bnode_t *n = root;
  const bnode_t *renamed = NULL; /* first parameter bound to another name */
  size_t i, renamed_at = 0;
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
      (*slot)->name = t->text;
      (*slot)->owner = rt;
    } else if (!hr_span_eq((*slot)->name, t->text) && renamed == NULL) {
      /* Keep walking: the same method on the same path is reported as the
       * duplicate it is; otherwise this is a naming conflict. */
      renamed = *slot;
      renamed_at = t->offset;
    }
    n = *slot;
  }
  for (i = 0; i < n->nroutes; i++)
    if (hr__methods_overlap(n->routes[i]->core, rt->core))
      return conflict(err, HR_EEXIST,
                      "a route with this method and pattern exists",
                      n->routes[i], 0);
  if (renamed != NULL)
    return conflict(err, HR_ECONFLICT,
                    "this position is bound to another parameter name",
                    renamed->owner, renamed_at);
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

/* Collects the methods of `routes` (plus HEAD with GET, and OPTIONS, which
 * the router answers) into `ms` (room for HR__M_STD + all extension methods),
 * sorted and without duplicates.  Returns the count. */
static size_t collect_methods(const hr_route_t *const *routes, size_t n,
                              hr_span_t *ms) {
  size_t k = 0, i, j, out = 0;
  uint16_t std = 1u << HR__M_OPTIONS;
  for (i = 0; i < n; i++) {
    std |= routes[i]->core->std_methods;
    for (j = 0; j < routes[i]->core->n_ext; j++)
      ms[k++] = routes[i]->core->ext_methods[j];
  }
  if (std & (1u << HR__M_GET)) std |= 1u << HR__M_HEAD;
  for (i = 0; i < HR__M_STD; i++)
    if (std & (1u << i)) ms[k++] = hr__method_name((int)i);
  qsort(ms, k, sizeof(*ms), span_cmp);
  for (i = 0; i < k; i++)
    if (out == 0 || !hr_span_eq(ms[i], ms[out - 1])) ms[out++] = ms[i];
  return out;
}

static size_t allow_len(const hr_span_t *ms, size_t n) {
  size_t i, len = 0;
  for (i = 0; i < n; i++) len += ms[i].len + (i ? 2 : 0);
  return len;
}

static void allow_write(const hr_span_t *ms, size_t n, char *w) {
  size_t i;
  for (i = 0; i < n; i++) {
    if (i) {
      *w++ = ',';
      *w++ = ' ';
    }
    memcpy(w, ms[i].ptr, ms[i].len);
    w += ms[i].len;
  }
}

static size_t count_ext(const hr_route_t *const *routes, size_t n) {
  size_t i, k = 0;
  for (i = 0; i < n; i++) k += routes[i]->core->n_ext;
  return k;
}

/* ---- freezing -------------------------------------------------------------- */

#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

/* Bump allocation inside the table block (sized exactly beforehand). */
typedef struct bump_s {
  char *p;
  char *end;
  hr__mem_t *m; /* for scratch arrays */
} bump_t;

static void *bump(bump_t *b, size_t n) {
  void *r = b->p;
  b->p += ALIGN8(n);
  return r;
}

/* Bytes of the frozen nodes of a subtree; the bytes of its leaves are added
 * to *leaf_bytes: leaves live apart, after every node, so that the nodes a
 * walk reads stay dense in the cache. */
static size_t node_size(const bnode_t *n, size_t *leaf_bytes) {
  size_t s = ALIGN8(sizeof(hr__node_t) + n->nkids * sizeof(hr__node_t *)) +
             ALIGN8(n->prefix.len) +
             (n->nkids >= HR__INDEX_MIN ? 256 : 0);
  size_t i, l = 0;
  if (n->nroutes) {
    size_t next = count_ext(n->routes, n->nroutes);
    l += ALIGN8(sizeof(hr__leaf_t)) + ALIGN8(n->nroutes * sizeof(hr_route_t *)) +
         ALIGN8((HR__M_STD + next) * 12); /* Allow text, bounded below */
    /* Allow: each method ≤ its length + 2; extension methods measured. */
    for (i = 0; i < n->nroutes; i++) {
      size_t j;
      for (j = 0; j < n->routes[i]->core->n_ext; j++)
        l += ALIGN8(n->routes[i]->core->ext_methods[j].len + 2);
    }
  }
  *leaf_bytes += l;
  for (i = 0; i < n->nkids; i++) s += node_size(n->kids[i], leaf_bytes);
  if (n->param) s += node_size(n->param, leaf_bytes);
  if (n->catchall) s += node_size(n->catchall, leaf_bytes);
  return s;
}

static const hr__leaf_t *freeze_leaf(bump_t *bp, const bnode_t *n, int *rc) {
  hr__leaf_t *leaf = bump(bp, sizeof(*leaf));
  size_t i, next = count_ext(n->routes, n->nroutes), k;
  hr_span_t small[HR__M_STD + 16], *ms = small;
  char *text;
  memset(leaf, 0, sizeof(*leaf));
  leaf->ext = bump(bp, n->nroutes * sizeof(hr_route_t *));
  for (i = 0; i < n->nroutes; i++) {
    const hr_route_t *r = n->routes[i];
    int id;
    if (r->core->any_method) leaf->any = r;
    for (id = 0; id < HR__M_STD; id++)
      if (r->core->std_methods & (1u << id)) leaf->std[id] = r;
    if (r->core->n_ext) leaf->ext[leaf->n_ext++] = r;
  }
  if (HR__M_STD + next > sizeof(small) / sizeof(small[0])) {
    ms = hr__mem_alloc(bp->m, (HR__M_STD + next) * sizeof(*ms));
    if (ms == NULL) {
      *rc = HR_ENOMEM;
      return leaf;
    }
  }
  k = collect_methods(n->routes, n->nroutes, ms);
  text = bump(bp, allow_len(ms, k) + 1);
  allow_write(ms, k, text);
  leaf->allow.ptr = text;
  leaf->allow.len = allow_len(ms, k);
  if (ms != small) hr__mem_free(bp->m, ms);
  return leaf;
}

/* Freezes a subtree: its nodes go to `bp`, depth-first, its leaves to `lp`. */
static hr__node_t *freeze(bump_t *bp, bump_t *lp, const bnode_t *n, int *rc) {
  hr__node_t *f = bump(bp, sizeof(*f) + n->nkids * sizeof(hr__node_t *));
  size_t i;
  char *prefix = bump(bp, n->prefix.len);
  /* The block is zeroed, so the prefix's padding is zero. */
  if (n->prefix.len) memcpy(prefix, n->prefix.ptr, n->prefix.len);
  f->prefix = prefix;
  f->plen = (uint32_t)n->prefix.len;
  f->name = n->name;
  f->nstatic = (uint32_t)n->nkids;
  /* The child index sits right after the node, before its subtrees. */
  if (n->nkids >= HR__INDEX_MIN) {
    /* child + 1, or with 256 children (one per byte) the child itself */
    unsigned char *ix = bump(bp, 256);
    for (i = 0; i < n->nkids; i++)
      ix[(unsigned char)n->kids[i]->prefix.ptr[0]] =
          (unsigned char)(n->nkids == 256 ? i : i + 1);
    f->index = ix;
  } else {
    for (i = 0; i < n->nkids; i++)
      f->first[i] = (unsigned char)n->kids[i]->prefix.ptr[0];
  }
  if (n->nroutes) f->leaf = freeze_leaf(lp, n, rc);
  for (i = 0; i < n->nkids; i++) f->statics[i] = freeze(bp, lp, n->kids[i], rc);
  if (n->param) f->param = freeze(bp, lp, n->param, rc);
  if (n->catchall) f->catchall = freeze(bp, lp, n->catchall, rc);
  return f;
}

/* ---- table ----------------------------------------------------------------- */

void hr__table_free(hr__table_t *t) {
  size_t i;
  for (i = 0; i < t->ninvokers; i++) hr__invoker_unref(t->invokers[i]);
  hr__mem_free(t->mem, t); /* one block */
}

typedef struct host_build_s {
  hr_span_t name;
  bnode_t *root;
  bnode_t *top;              /* what is frozen: root, or its lone "/" child */
  const hr_route_t **routes; /* for allow_all */
  size_t nroutes;
} host_build_t;

int hr__table_build(hr__mem_t *m, hr_route_t *const *routes, size_t n,
                    int ci, hr__table_t **out, hr_route_error_t *err) {
  build_t b = {m, 0, 0, 0};
  host_build_t *hb = NULL;
  size_t nh = 0, i, j, size = 0;
  hr__table_t *t = NULL;
  bump_t bp, lp;
  size_t leaf_bytes = 0;
  int rc = 0;
  *out = NULL;
  (void)ci;
  hb = hr__mem_alloc(m, (n + 1) * sizeof(*hb));
  if (hb == NULL) return HR_ENOMEM;
  memset(hb, 0, (n + 1) * sizeof(*hb));
  /* hb[0] is the default host; the others in order of appearance. */
  nh = 1;
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
      h->root = bnode_new(&b, none);
      h->routes = hr__mem_alloc(m, n * sizeof(*h->routes));
      if (h->root == NULL || h->routes == NULL) {
        rc = HR_ENOMEM;
        break;
      }
    }
    rc = insert_route(&b, h->root, routes[i], err);
    if (rc == 0) h->routes[h->nroutes++] = routes[i];
  }
  if (rc == 0) {
    size = ALIGN8(sizeof(hr__table_t)) + ALIGN8((nh - 1) * sizeof(hr__host_t)) +
           ALIGN8(n * sizeof(hr_route_t *));
    for (i = 0; i < nh; i++) {
      size_t next = count_ext(hb[i].routes, hb[i].nroutes), k;
      bnode_t *top = hb[i].root;
      /* The build root (empty prefix) has one child, "/", and nothing else:
       * the frozen tree starts there, one step less for every lookup. */
      if (top != NULL && top->prefix.len == 0 && top->nkids == 1 &&
          top->param == NULL && top->catchall == NULL && top->nroutes == 0) {
        top = top->kids[0];
        b.nodes--;
      }
      hb[i].top = top;
      if (top) size += node_size(top, &leaf_bytes);
      size += ALIGN8(hb[i].name.len + 1);
      size += ALIGN8((HR__M_STD + next) * 12);
      for (k = 0; k < hb[i].nroutes; k++) {
        size_t e;
        for (e = 0; e < hb[i].routes[k]->core->n_ext; e++)
          size += ALIGN8(hb[i].routes[k]->core->ext_methods[e].len + 2);
      }
    }
    size += leaf_bytes;
    t = hr__mem_alloc(m, size);
    if (t == NULL) rc = HR_ENOMEM;
  }
  if (rc == 0) {
    hr__host_t *hosts;
    memset(t, 0, size);
    bp.p = (char *)t;
    bp.end = (char *)t + size - leaf_bytes;
    lp.p = bp.end;
    lp.end = (char *)t + size;
    lp.m = m;
    bp.m = m;
    bump(&bp, sizeof(*t));
    hosts = bump(&bp, (nh - 1) * sizeof(hr__host_t));
    t->mem = m;
    t->invokers = bump(&bp, n * sizeof(hr_route_t *));
    for (i = 0; i < nh && rc == 0; i++) {
      hr__host_t *h = i == 0 ? &t->def : &hosts[i - 1];
      hr_span_t *ms = hr__mem_alloc(
          m, (HR__M_STD + count_ext(hb[i].routes, hb[i].nroutes)) * sizeof(*ms));
      size_t k;
      char *name = bump(&bp, hb[i].name.len + 1), *text;
      if (ms == NULL) {
        rc = HR_ENOMEM;
        break;
      }
      if (hb[i].name.len) memcpy(name, hb[i].name.ptr, hb[i].name.len);
      h->name.ptr = name;
      h->name.len = hb[i].name.len;
      h->root = hb[i].top ? freeze(&bp, &lp, hb[i].top, &rc) : NULL;
      k = collect_methods(hb[i].routes, hb[i].nroutes, ms);
      text = bump(&bp, allow_len(ms, k) + 1);
      allow_write(ms, k, text);
      h->allow_all.ptr = text;
      h->allow_all.len = allow_len(ms, k);
      hr__mem_free(m, ms);
    }
    t->hosts = hosts;
    t->nhosts = nh - 1;
    t->nodes = b.nodes;
    t->bytes = size;
    if (rc != 0) {
      hr__mem_free(m, t);
      t = NULL;
    } else {
      for (i = 0; i < n; i++) {
        hr__invoker_ref(routes[i]);
        t->invokers[i] = routes[i];
      }
      t->ninvokers = n;
    }
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

/* Compares n bytes; the caller has matched byte 0 already (child dispatch
 * by first byte), so it starts at 1.  `avail` bytes are readable at p.
 * Prefixes are stored padded to 8 bytes, so one masked 8-byte compare does
 * a short prefix without a loop (and without a branch per byte). */
static inline int prefix_eq(const char *p, const char *prefix, size_t n,
                            size_t avail, int ci) {
  size_t i = 1;
  if (!ci && n <= 8 && avail >= 8) {
    uint64_t a, b, mask = n == 8 ? ~(uint64_t)0 : (((uint64_t)1 << (8 * n)) - 1);
    memcpy(&a, p, 8);
    memcpy(&b, prefix, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    mask = n == 8 ? ~(uint64_t)0 : ~((~(uint64_t)0) >> (8 * n));
#endif
    return ((a ^ b) & mask) == 0;
  }
  if (!ci) {
    for (; i + 8 <= n; i += 8) {
      uint64_t a, b;
      memcpy(&a, p + i, 8);
      memcpy(&b, prefix + i, 8);
      if (a != b) return 0;
    }
    for (; i < n; i++)
      if (p[i] != prefix[i]) return 0;
    return 1;
  }
  for (; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 'A' && c <= 'Z') c |= 0x20;
    if (c != (unsigned char)prefix[i]) return 0;
  }
  return 1;
}

/* Index of the next '/' at or after pos (or len), eight bytes at a time.
 * A byte of x = w ^ slashes is zero where p has a '/'.  (x - 0x01..) & ~x
 * & 0x80.. flags every zero byte, and may also flag a 0x01 byte (a '.' in
 * p) on the more significant side of one, through the borrow: after it in
 * little-endian order, where the lowest flag is still the first '/', but
 * before it in big-endian order.  Big-endian hosts therefore use the exact
 * test ~(((x & 0x7f..) + 0x7f..) | x) & 0x80.., one operation longer on
 * the lookup's critical path. */
static inline size_t segment_end(const char *p, size_t pos, size_t len) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  const uint64_t slashes = ones * (uint64_t)'/';
  while (len - pos >= 8) {
    uint64_t w;
    memcpy(&w, p + pos, 8);
    w ^= slashes; /* a '/' byte becomes zero */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = ~(((w & ~highs) + ~highs) | w) & highs;
    if (w != 0) return pos + (size_t)(__builtin_clzll(w) / 8);
#else
    w = (w - ones) & ~w & highs;
    if (w != 0) return pos + (size_t)(__builtin_ctzll(w) / 8);
#endif
    pos += 8;
  }
  while (pos < len && p[pos] != '/') pos++;
  return pos;
}

static inline const hr__node_t *static_child(const hr__node_t *n, unsigned char c) {
  uint32_t i;
  if (n->index != NULL) {
    unsigned k = n->index[c];
    /* With 256 children every byte has one, and the entry is the child. */
    if (n->nstatic == 256) return n->statics[k];
    return k ? n->statics[k - 1] : NULL;
  }
  for (i = 0; i < n->nstatic; i++)
    if (n->first[i] == c) return n->statics[i];
  return NULL;
}

/* The walk, written once and compiled twice (ci constant 0 or 1) so that
 * the usual case-sensitive lookup carries no case-folding test. */
static inline __attribute__((always_inline)) const hr__leaf_t *
walk_impl(const hr__node_t *n, const char *p, size_t len, size_t pos, int ci,
          hr_param_t *params, size_t np, size_t *np_out);

static const hr__leaf_t *walk_cs(const hr__node_t *n, const char *p, size_t len,
                                 size_t pos, hr_param_t *params, size_t np,
                                 size_t *np_out) {
  return walk_impl(n, p, len, pos, 0, params, np, np_out);
}

static const hr__leaf_t *walk_ci(const hr__node_t *n, const char *p, size_t len,
                                 size_t pos, hr_param_t *params, size_t np,
                                 size_t *np_out) {
  return walk_impl(n, p, len, pos, 1, params, np, np_out);
}

static inline __attribute__((always_inline)) const hr__leaf_t *
walk_impl(const hr__node_t *n, const char *p, size_t len, size_t pos, int ci,
          hr_param_t *params, size_t np, size_t *np_out) {
  for (;;) {
    const hr__node_t *k = NULL;
    size_t end;
    if (n->plen) {
      if (len - pos < n->plen ||
          !prefix_eq(p + pos, n->prefix, n->plen, len - pos, ci))
        return NULL;
      pos += n->plen;
    }
    if (pos == len) {
      if (n->leaf != NULL) *np_out = np;
      return n->leaf;
    }
    if (n->nstatic) {
      unsigned char c = (unsigned char)p[pos];
      if (ci && c >= 'A' && c <= 'Z') c |= 0x20;
      k = static_child(n, c);
    }
    if (n->param == NULL && n->catchall == NULL) {
      if (k == NULL) return NULL;
      n = k; /* no alternative: no backtracking point */
      continue;
    }
    if (k != NULL) {
      const hr__leaf_t *l = ci ? walk_ci(k, p, len, pos, params, np, np_out)
                               : walk_cs(k, p, len, pos, params, np, np_out);
      if (l != NULL) return l;
    }
    if (np >= HR_MAX_PARAMS) return NULL;
    if (n->param != NULL) {
      end = segment_end(p, pos, len);
      if (end > pos) {
        params[np].name = n->param->name;
        params[np].value.ptr = p + pos;
        params[np].value.len = end - pos;
        if (n->catchall == NULL) {
          n = n->param;
          pos = end;
          np++;
          continue;
        } else {
          const hr__leaf_t *l =
              ci ? walk_ci(n->param, p, len, end, params, np + 1, np_out)
                 : walk_cs(n->param, p, len, end, params, np + 1, np_out);
          if (l != NULL) return l;
        }
      }
    }
    if (n->catchall != NULL) {
      params[np].name = n->catchall->name;
      params[np].value.ptr = p + pos;
      params[np].value.len = len - pos;
      *np_out = np + 1;
      return n->catchall->leaf;
    }
    return NULL;
  }
}

const hr__leaf_t *hr__tree_find(const hr__node_t *root, const char *path,
                                size_t len, int ci, hr_param_t *params,
                                size_t *nparams) {
  *nparams = 0;
  if (root == NULL) return NULL;
  /* The walk expects the first byte of a node's prefix to be matched (by
   * the parent's child dispatch); for the root, that is done here. */
  if (root->plen != 0) {
    unsigned char c;
    if (len == 0) return NULL;
    c = (unsigned char)path[0];
    if (ci && c >= 'A' && c <= 'Z') c |= 0x20;
    if (c != (unsigned char)root->prefix[0]) return NULL;
  }
  return ci ? walk_ci(root, path, len, 0, params, 0, nparams)
            : walk_cs(root, path, len, 0, params, 0, nparams);
}

const hr_route_t *hr__leaf_route(const hr__leaf_t *leaf, hr_span_t method,
                                 int id) {
  size_t i, j;
  if (id >= 0) {
    if (leaf->std[id] != NULL) return leaf->std[id];
  } else {
    for (i = 0; i < leaf->n_ext; i++)
      for (j = 0; j < leaf->ext[i]->core->n_ext; j++)
        if (hr_span_eq(leaf->ext[i]->core->ext_methods[j], method))
          return leaf->ext[i];
  }
  if (leaf->any != NULL) return leaf->any;
  if (id == HR__M_HEAD && leaf->std[HR__M_GET] != NULL) return leaf->std[HR__M_GET];
  return NULL;
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
    dump_str(d, n->name.ptr, n->name.len);
  } else {
    dump_str(d, "\"", 1);
    dump_str(d, n->prefix, n->plen);
    dump_str(d, "\"", 1);
  }
  if (n->leaf != NULL) {
    const hr__leaf_t *l = n->leaf;
    const hr_route_t *r = l->any;
    int id;
    for (id = 0; r == NULL && id < HR__M_STD; id++) r = l->std[id];
    if (r == NULL && l->n_ext) r = l->ext[0];
    dump_str(d, "  => ", 5);
    if (r != NULL) dump_str(d, r->core->pattern.ptr, r->core->pattern.len);
    dump_str(d, "  [", 3);
    if (l->any != NULL)
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
