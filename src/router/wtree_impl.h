/* SPDX-License-Identifier: MIT */
/*
 * The writer's route tree inside (wtree.h): its records, shared by the
 * editing (wtree.c) and the freezing (freeze.c).  Writer side only.
 */
#ifndef HR_ROUTER_WTREE_IMPL_H
#define HR_ROUTER_WTREE_IMPL_H

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

/* Frees a tree's build nodes and its own memory, not its blocks (wtree.c). */
void hr__wtree_free_shape(hr__wtree_t *wt);

#endif /* HR_ROUTER_WTREE_IMPL_H */
