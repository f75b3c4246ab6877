/* SPDX-License-Identifier: MIT */
/*
 * Internal view of routes and route table snapshots, shared by the router and
 * the server.  A route is compiled once at registration and never written
 * again; a table is built privately and then published (see router.c).
 */
#ifndef HR_ROUTER_ROUTE_H
#define HR_ROUTER_ROUTE_H

#include <stdatomic.h>
#include <pthread.h>

#include "hroute/router.h"
#include "util/mem.h"

typedef enum { HR__SEG_LIT = 2, HR__SEG_PARAM = 1, HR__SEG_CATCH = 0 } hr__seg_kind_t;

typedef struct hr__seg_s {
  hr__seg_kind_t kind;
  hr_span_t text; /* literal text, or the parameter name */
} hr__seg_t;

struct hr_route_s {
  hr_span_t pattern;        /* copy, NUL-terminated */
  hr_span_t *methods;       /* NULL with nmethods 0: every method */
  size_t nmethods;
  hr_handler_cb handler;
  void *udata;
  hr__seg_t *segs;
  size_t nsegs;
  size_t nparams;
  uint8_t param_seg[HR_MAX_PARAMS]; /* segment index of parameter i */
  hr_span_t head;           /* pre-rendered constant fields, "N: V\r\n"... */
  uint64_t max_body_bytes;  /* 0: server default */
  hr_body_mode_t body_mode;
  hr__mem_t *mem;
};

/* All routes sharing one pattern, and the Allow value for that path. */
typedef struct hr__path_s {
  const hr_route_t *first;   /* any route of the group: its segments */
  const hr_route_t **routes; /* every route with this pattern */
  size_t nroutes;
  hr_span_t allow;
} hr__path_t;

/* An immutable snapshot of the route table. */
typedef struct hr__table_s {
  hr__path_t *paths;
  size_t npaths;
  struct hr__table_s *retired_next; /* router-private, writer side only */
} hr__table_t;

struct hr_router_s {
  hr__mem_t mem;
  pthread_mutex_t lock;          /* serialises writers */
  _Atomic(hr__table_t *) table;  /* published snapshot */
  hr_route_t **routes;           /* writer side: every registered route */
  size_t nroutes, routes_cap;
  hr__table_t *retired;          /* writer side: replaced snapshots */
};

#endif /* HR_ROUTER_ROUTE_H */
