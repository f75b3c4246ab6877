/* SPDX-License-Identifier: MIT */
/*
 * Freezing the writer's route tree (wtree.h) into what readers walk.
 *
 * Freezing walks only dirty nodes: for each it lays out a new frozen node
 * (64 bytes, the static children's pointers inline, the prefix, a 256-byte
 * child index from HR__INDEX_MIN children on) and its leaf apart, after
 * every node of the block, so that the nodes a walk reads stay dense; a
 * clean child is pointed at as it is.  The same walk runs twice, first to
 * measure (so that one allocation covers the block and nothing can fail
 * once nodes start to die), then to fill.  A frozen node that leaves the
 * tree is buried: its leaf's references and, with its block's last node,
 * the block go to the garbage of the table being replaced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router/wtree_impl.h"

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
    hr__wtree_free_shape(p->replaced);
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
  hr__wtree_free_shape(wt);
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
  hr__wtree_free_shape(wt);
  return g;
}
