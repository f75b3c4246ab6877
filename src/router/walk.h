/* SPDX-License-Identifier: MIT */
/*
 * The lookup: the walk over a frozen route tree (tree.c builds it).  In a
 * header so that hr_router_match (router.c) has the walk's first level
 * inline, without a call; tree.c walks again with it for an Allow value
 * made of several routes.
 */
#ifndef HR_ROUTER_WALK_H
#define HR_ROUTER_WALK_H

#include <stdint.h>
#include <string.h>

#include "router/route.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HR__LE 1
#else
#define HR__LE 0
#endif

/* Whether the path at pos starts with n's prefix; the caller has checked
 * that the path has plen bytes left, and matched byte 0 already (child
 * dispatch by first byte).  Little-endian, case-sensitive: a prefix of up
 * to eight bytes is one masked compare with the node's inline head, loaded
 * from pos, or ending at pos + plen when fewer than eight bytes are left
 * (the bytes before pos are the path's too); a longer one compares eight
 * bytes at a time, the last eight overlapping. */
static inline int prefix_eq(const hr__node_t *n, const char *path, size_t pos,
                            size_t len, int ci) {
  const char *p = path + pos;
  size_t plen = n->plen, i;
  if (!ci && HR__LE) {
    uint64_t a, b;
    if (plen <= 8) {
      if (len - pos >= 8) {
        memcpy(&a, p, 8);
        return ((a ^ n->head) & (plen == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * plen)) - 1)) == 0;
      }
      if (pos + plen >= 8) {
        memcpy(&a, p + plen - 8, 8);
        return (a >> (64 - 8 * plen)) == n->head;
      }
      for (i = 1; i < plen; i++)
        if (p[i] != n->prefix[i]) return 0;
      return 1;
    }
    memcpy(&a, p, 8);
    if (a != n->head) return 0;
    for (i = 8; i + 8 < plen; i += 8) {
      memcpy(&a, p + i, 8);
      memcpy(&b, n->prefix + i, 8);
      if (a != b) return 0;
    }
    memcpy(&a, p + plen - 8, 8);
    memcpy(&b, n->prefix + plen - 8, 8);
    return a == b;
  }
  if (!ci) return memcmp(p, n->prefix, plen) == 0;
  for (i = 1; i < plen; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c >= 'A' && c <= 'Z') c |= 0x20;
    if (c != (unsigned char)n->prefix[i]) return 0;
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

static inline int accepts(const hr__leaf_t *leaf, int mid, const hr__walk_t *w) {
  return mid >= 0 ? (leaf->accept >> mid) & 1 : hr__leaf_accepts(leaf, w->method, -1);
}

static inline void missed(hr__walk_t *w, const hr__leaf_t *leaf) {
  if (w->misses++ == 0) w->first_miss = leaf;
  if (w->on_miss != NULL) w->on_miss(w, leaf);
}

/*
 * The walk, depth-first in priority order: at each node its static child
 * (by first byte), then its parameter (one non-empty segment), then its
 * catch-all (the non-empty rest).  A leaf counts when the path ends there
 * and it answers the method; otherwise the walk goes back to the last node
 * with an alternative left (a recursive call per such node, one per
 * segment at most).  The bytes a node consumes are fixed by its place in
 * the tree, so every node is entered at most once: the walk is linear in
 * the tree size.  Written once and compiled twice (ci constant 0 or 1), so
 * that the usual case-sensitive lookup carries no case-folding test.
 */
static inline __attribute__((always_inline)) const hr__leaf_t *
walk_impl(const hr__node_t *n, hr__walk_t *w, size_t pos, uint32_t np, int ci,
          size_t *np_out);

static __attribute__((unused)) const hr__leaf_t *walk_cs(const hr__node_t *n, hr__walk_t *w,
                                                         size_t pos, uint32_t np,
                                                         size_t *np_out) {
  return walk_impl(n, w, pos, np, 0, np_out);
}

static __attribute__((unused)) const hr__leaf_t *walk_ci(const hr__node_t *n, hr__walk_t *w,
                                                         size_t pos, uint32_t np,
                                                         size_t *np_out) {
  return walk_impl(n, w, pos, np, 1, np_out);
}

static inline __attribute__((always_inline)) const hr__leaf_t *
walk_impl(const hr__node_t *n, hr__walk_t *w, size_t pos, uint32_t np, int ci,
          size_t *np_out) {
  const char *p = w->path;
  size_t len = w->len, end;
  hr_param_t *params = w->params;
  const int mid = w->method_id;
  for (;;) {
    const hr__node_t *k = NULL;
    const hr__leaf_t *leaf;
    if (n->plen) {
      /* One byte: the dispatch by first byte matched it already. */
      if (len - pos < n->plen || (n->plen > 1 && !prefix_eq(n, p, pos, len, ci))) return NULL;
      pos += n->plen;
    }
    if (pos == len) {
      leaf = n->leaf;
      if (leaf != NULL) {
        if (accepts(leaf, mid, w)) {
          *np_out = np;
          return leaf;
        }
        missed(w, leaf);
      }
      return NULL;
    }
    if (n->nstatic) {
      unsigned char c = (unsigned char)p[pos];
      if (ci && c >= 'A' && c <= 'Z') c |= 0x20;
      k = static_child(n, c);
    }
    if (n->param == NULL && n->catchall == NULL) {
      if (k == NULL) return NULL;
      n = k;
      continue;
    }
    if (k != NULL) {
      leaf = ci ? walk_ci(k, w, pos, np, np_out) : walk_cs(k, w, pos, np, np_out);
      if (leaf != NULL) return leaf;
    }
    if (np >= HR_MAX_PARAMS) return NULL;
    if (n->param != NULL) {
      end = segment_end(p, pos, len);
      if (end > pos) {
        params[np].value.ptr = p + pos;
        params[np].value.len = end - pos;
        if (n->catchall == NULL) {
          n = n->param;
          pos = end;
          np++;
          continue;
        }
        leaf = ci ? walk_ci(n->param, w, end, np + 1, np_out)
                  : walk_cs(n->param, w, end, np + 1, np_out);
        if (leaf != NULL) return leaf;
      }
    }
    if (n->catchall != NULL && (leaf = n->catchall->leaf) != NULL) {
      params[np].value.ptr = p + pos;
      params[np].value.len = len - pos;
      if (accepts(leaf, mid, w)) {
        *np_out = np + 1;
        return leaf;
      }
      missed(w, leaf);
    }
    return NULL;
  }
}

/* Finds the most specific leaf whose path matches and that answers the
 * method (see router.h for the order).  Returns it, with *nparams values
 * in w->params, or NULL. */
static inline const hr__leaf_t *hr__tree_find(const hr__node_t *root, hr__walk_t *w, int ci,
                                              size_t *nparams) {
  *nparams = 0;
  if (root == NULL) return NULL;
  /* The walk expects the first byte of a node's prefix to be matched (by
   * the parent's child dispatch); for the root, that is done here. */
  if (root->plen != 0) {
    unsigned char c;
    if (w->len == 0) return NULL;
    c = (unsigned char)w->path[0];
    if (ci && c >= 'A' && c <= 'Z') c |= 0x20;
    if (c != (unsigned char)root->prefix[0]) return NULL;
  }
  /* The case-sensitive walk's first level inline, into hr_router_match:
   * no call for the usual lookup (backtracking recurses into walk_cs). */
  return ci ? walk_ci(root, w, 0, 0, nparams) : walk_impl(root, w, 0, 0, 0, nparams);
}

#endif /* HR_ROUTER_WALK_H */
