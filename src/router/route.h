/* SPDX-License-Identifier: MIT */
/*
 * Internal view of routes and route table snapshots, shared by the router and
 * the server.  A route is compiled once at registration and never written
 * again; a table (one radix tree per host) is built privately, frozen into
 * one block and then published (see router.c).
 */
#ifndef HR_ROUTER_ROUTE_H
#define HR_ROUTER_ROUTE_H

#include <pthread.h>
#include <stdatomic.h>

#include "hroute/error.h"
#include "hroute/router.h"
#include "util/mem.h"

/* Standard methods get small ids (a leaf indexes routes by them); others
 * are extension methods, compared as tokens. */
enum {
  HR__M_GET = 0,
  HR__M_HEAD,
  HR__M_POST,
  HR__M_PUT,
  HR__M_DELETE,
  HR__M_PATCH,
  HR__M_OPTIONS,
  HR__M_CONNECT,
  HR__M_TRACE,
  HR__M_STD /* count */
};

/* Returns the id of a standard method, or -1 for an extension method. */
int hr__method_id(hr_span_t m);

/* The name of standard method `id` (static storage). */
hr_span_t hr__method_name(int id);

/* A compiled pattern piece: literal bytes (separators included), a
 * parameter (one segment) or a catch-all (the rest). */
typedef enum { HR__TOK_STATIC, HR__TOK_PARAM, HR__TOK_CATCH } hr__tok_kind_t;

typedef struct hr__tok_s {
  hr__tok_kind_t kind;
  hr_span_t text; /* literal bytes (unescaped, lower-cased with the
                     case-insensitive option), or the parameter name */
  size_t offset;  /* byte offset in the pattern, for error reports */
} hr__tok_t;

struct hr_route_s {
  hr_span_t pattern;       /* full pattern (group prefix included), NUL-terminated */
  hr_span_t methods_text;  /* as registered, NUL-terminated */
  hr_span_t host;          /* lower-cased host of its group; empty: default */
  unsigned any_method : 1;
  uint16_t std_methods;    /* bit i: standard method id i */
  hr_span_t *ext_methods;  /* extension methods (into methods_text) */
  size_t n_ext;
  hr_handler_cb handler;
  void *udata;
  hr__tok_t *toks;
  size_t ntoks;
  size_t nparams;
  hr_span_t head;          /* pre-rendered constant fields, "N: V\r\n"... */
  uint64_t max_body_bytes; /* 0: server default */
  hr_body_mode_t body_mode;
};

/* Compiles a route (pattern.c).  Returns 0 or an error code, with details in
 * `err` when not NULL. */
int hr__route_compile(hr__mem_t *m, int case_insensitive, const char *host,
                      const char *prefix, const char *methods,
                      const char *pattern, hr_handler_cb handler, void *udata,
                      const hr_route_options_t *o, hr_route_t **out,
                      hr_route_error_t *err);
void hr__route_free(hr__mem_t *m, hr_route_t *rt);

/* Whether two routes share a method (for duplicates). */
int hr__methods_overlap(const hr_route_t *a, const hr_route_t *b);

/* ---- frozen route table ---------------------------------------------------- */

typedef struct hr__leaf_s {
  const hr_route_t *std[HR__M_STD];
  const hr_route_t *any;
  const hr_route_t **ext;  /* extension-method routes ... */
  size_t n_ext;            /* ... matched by their ext_methods */
  hr_span_t allow;
} hr__leaf_t;

typedef struct hr__node_s hr__node_t;
struct hr__node_s {
  const char *prefix;
  uint32_t plen;
  uint32_t nstatic;
  const unsigned char *first; /* first byte of each static child */
  hr__node_t **statics;
  hr__node_t *param;          /* one segment */
  hr__node_t *catchall;       /* the rest; a leaf */
  hr_span_t name;             /* for param and catch-all nodes */
  const hr__leaf_t *leaf;     /* routes ending here */
};

typedef struct hr__host_s {
  hr_span_t name;             /* lower-cased; empty for the default table */
  const hr__node_t *root;     /* NULL when the host has no routes */
  hr_span_t allow_all;        /* for "OPTIONS *" */
} hr__host_t;

/* An immutable snapshot: everything lives in `block`. */
typedef struct hr__table_s {
  hr__host_t def;
  const hr__host_t *hosts;
  size_t nhosts;
  size_t nodes;
  size_t bytes;
  struct hr__table_s *retired_next; /* router-private, writer side only */
} hr__table_t;

/* Builds a table from `routes` (tree.c).  Returns 0, HR_ENOMEM, or
 * HR_EEXIST / HR_ECONFLICT with `err` naming the route in the way of the
 * last route (routes[n-1]) — earlier routes are known to fit together. */
int hr__table_build(hr__mem_t *m, hr_route_t *const *routes, size_t n,
                    int case_insensitive, hr__table_t **out,
                    hr_route_error_t *err);
void hr__table_free(hr__mem_t *m, hr__table_t *t);

/* Finds the leaf for `path` in `root`; fills params (names and raw spans).
 * Returns the leaf or NULL. */
const hr__leaf_t *hr__tree_find(const hr__node_t *root, const char *path,
                                size_t len, int case_insensitive,
                                hr_param_t *params, size_t *nparams);

/* Picks the route of `leaf` for `method` (HEAD falls back to GET, "*"
 * routes answer any method).  Returns NULL when none. */
const hr_route_t *hr__leaf_route(const hr__leaf_t *leaf, hr_span_t method,
                                 int method_id);

int hr__tree_dump(const hr__table_t *t,
                  void (*write)(void *ctx, const char *p, size_t n), void *ctx);


/* ---- the router ------------------------------------------------------------ */

struct hr_group_s {
  hr_router_t *router;
  char *host;   /* NULL: default table */
  char *prefix; /* "" for none */
  hr_group_t *next;
};

struct hr_router_s {
  hr__mem_t mem;
  hr_router_options_t opts;
  pthread_mutex_t lock;          /* serialises writers */
  _Atomic(hr__table_t *) table;  /* published snapshot */
  hr_route_t **routes;           /* writer side: every registered route */
  size_t nroutes, routes_cap;
  hr__table_t *retired;          /* writer side: replaced snapshots */
  hr_group_t root;               /* the default group */
  hr_group_t *groups;            /* writer side: created groups */
};

#endif /* HR_ROUTER_ROUTE_H */
