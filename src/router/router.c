/* SPDX-License-Identifier: MIT */
/*
 * The router: pattern compilation, route registration, route table
 * snapshots and matching.
 *
 * Publication: writers hold `lock`, build a complete new hr__table_t that
 * nothing else can see yet, and publish it with one release store to
 * `router->table`; readers load it with acquire, so every byte of the table
 * and of the routes it references is visible before the pointer is.  Nothing
 * reachable from a published table is written again.  Replaced tables are
 * kept on `retired` and freed with the router.
 */
#include <stdlib.h>
#include <string.h>

#include "hroute/error.h"
#include "router/route.h"

/* Most segments in a pattern: the match rank has one base-3 digit per
 * segment and 3^40 fits in 64 bits. */
#define HR__MAX_SEGS 40

static int is_tchar(unsigned char c) {
  /* RFC 9110 §5.6.2 token characters. */
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return 1;
  return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

void hr_route_options_init(hr_route_options_t *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->body_mode = HR_BODY_BUFFER;
}

void hr_router_options_init(hr_router_options_t *opts) {
  memset(opts, 0, sizeof(*opts));
}

int hr_router_new(hr_router_t **out, const hr_router_options_t *opts) {
  hr__mem_t mem;
  hr_router_t *r;
  if (out == NULL) return HR_EINVAL;
  *out = NULL;
  hr__mem_init(&mem, opts != NULL ? opts->allocator : NULL);
  r = hr__mem_alloc(&mem, sizeof(*r));
  if (r == NULL) return HR_ENOMEM;
  memset(r, 0, sizeof(*r));
  r->mem = mem;
  if (pthread_mutex_init(&r->lock, NULL) != 0) {
    hr__mem_free(&mem, r);
    return HR_ENOMEM;
  }
  atomic_init(&r->table, NULL);
  *out = r;
  return 0;
}

static void route_free(hr__mem_t *m, hr_route_t *rt) {
  if (rt == NULL) return;
  hr__mem_free(m, (void *)rt->pattern.ptr);
  hr__mem_free(m, rt->methods);
  hr__mem_free(m, rt->segs);
  hr__mem_free(m, (void *)rt->head.ptr);
  hr__mem_free(m, rt);
}

static void table_free(hr__mem_t *m, hr__table_t *t) {
  size_t i;
  if (t == NULL) return;
  for (i = 0; i < t->npaths; i++) {
    hr__mem_free(m, t->paths[i].routes);
    hr__mem_free(m, (void *)t->paths[i].allow.ptr);
  }
  hr__mem_free(m, t->paths);
  hr__mem_free(m, t);
}

void hr_router_free(hr_router_t *r) {
  size_t i;
  hr__table_t *t;
  if (r == NULL) return;
  table_free(&r->mem, atomic_load_explicit(&r->table, memory_order_relaxed));
  while ((t = r->retired) != NULL) {
    r->retired = t->retired_next;
    table_free(&r->mem, t);
  }
  for (i = 0; i < r->nroutes; i++) route_free(&r->mem, r->routes[i]);
  hr__mem_free(&r->mem, r->routes);
  pthread_mutex_destroy(&r->lock);
  {
    hr__mem_t mem = r->mem;
    hr__mem_free(&mem, r);
  }
}

/* ---- compiling a route --------------------------------------------------- */

/* Splits the (copied) pattern into segments.  Returns 0 or HR_EPATTERN /
 * HR_ENOMEM. */
static int compile_pattern(hr__mem_t *m, hr_route_t *rt) {
  const char *p = rt->pattern.ptr, *end = p + rt->pattern.len;
  size_t nsegs = 0, i;
  const char *s;
  if (rt->pattern.len == 0 || p[0] != '/') return HR_EPATTERN;
  for (s = p; s < end; s++)
    if (*s == '/') nsegs++;
  if (nsegs > HR__MAX_SEGS) return HR_EPATTERN;
  rt->segs = hr__mem_alloc(m, nsegs * sizeof(hr__seg_t));
  if (rt->segs == NULL) return HR_ENOMEM;
  rt->nsegs = nsegs;
  s = p + 1;
  for (i = 0; i < nsegs; i++) {
    const char *e = memchr(s, '/', (size_t)(end - s));
    hr__seg_t *seg = &rt->segs[i];
    if (e == NULL) e = end;
    if (e > s && (*s == ':' || *s == '*')) {
      const char *n;
      seg->kind = *s == ':' ? HR__SEG_PARAM : HR__SEG_CATCH;
      seg->text.ptr = s + 1;
      seg->text.len = (size_t)(e - s - 1);
      if (seg->text.len == 0) return HR_EPATTERN;
      for (n = seg->text.ptr; n < e; n++)
        if (!is_name_char((unsigned char)*n)) return HR_EPATTERN;
      if (seg->kind == HR__SEG_CATCH && i + 1 != nsegs) return HR_EPATTERN;
      if (rt->nparams == HR_MAX_PARAMS) return HR_EPATTERN;
      rt->param_seg[rt->nparams++] = (uint8_t)i;
    } else {
      const char *c;
      seg->kind = HR__SEG_LIT;
      seg->text.ptr = s;
      seg->text.len = (size_t)(e - s);
      /* ':' or '*' inside a literal segment would be a second parameter. */
      for (c = s; c < e; c++)
        if (*c == ':' || *c == '*') return HR_EPATTERN;
    }
    s = e + 1;
  }
  return 0;
}

static int parse_methods(hr__mem_t *m, hr_route_t *rt, const char *methods) {
  size_t n = 1, i = 0;
  const char *s;
  if (methods == NULL || methods[0] == '\0') return HR_EINVAL;
  if (strcmp(methods, "*") == 0) return 0; /* every method */
  for (s = methods; *s; s++)
    if (*s == ',') n++;
  rt->methods = hr__mem_alloc(m, n * sizeof(hr_span_t));
  if (rt->methods == NULL) return HR_ENOMEM;
  s = methods;
  while (1) {
    const char *e = strchr(s, ',');
    const char *c;
    size_t j;
    if (e == NULL) e = s + strlen(s);
    if (e == s) return HR_EINVAL;
    for (c = s; c < e; c++)
      if (!is_tchar((unsigned char)*c)) return HR_EINVAL;
    for (j = 0; j < i; j++) /* "GET,GET" */
      if (rt->methods[j].len == (size_t)(e - s) &&
          memcmp(rt->methods[j].ptr, s, rt->methods[j].len) == 0)
        return HR_EINVAL;
    rt->methods[i].ptr = s; /* rebased onto the pattern copy below */
    rt->methods[i].len = (size_t)(e - s);
    i++;
    if (*e == '\0') break;
    s = e + 1;
  }
  rt->nmethods = i;
  return 0;
}

static int field_ok(const hr_field_t *f) {
  size_t i;
  if (f->name.len == 0) return 0;
  for (i = 0; i < f->name.len; i++)
    if (!is_tchar((unsigned char)f->name.ptr[i])) return 0;
  for (i = 0; i < f->value.len; i++) {
    char c = f->value.ptr[i];
    if (c == '\r' || c == '\n' || c == '\0') return 0;
  }
  return 1;
}

/* Pre-renders the constant fields as "Name: value\r\n" lines. */
static int render_head(hr__mem_t *m, hr_route_t *rt,
                       const hr_route_options_t *o) {
  size_t i, len = 0;
  char *p;
  for (i = 0; i < o->nfields; i++) {
    if (!field_ok(&o->fields[i])) return HR_EINVAL;
    len += o->fields[i].name.len + 2 + o->fields[i].value.len + 2;
  }
  if (len == 0) return 0;
  p = hr__mem_alloc(m, len);
  if (p == NULL) return HR_ENOMEM;
  rt->head.ptr = p;
  rt->head.len = len;
  for (i = 0; i < o->nfields; i++) {
    memcpy(p, o->fields[i].name.ptr, o->fields[i].name.len);
    p += o->fields[i].name.len;
    *p++ = ':';
    *p++ = ' ';
    memcpy(p, o->fields[i].value.ptr, o->fields[i].value.len);
    p += o->fields[i].value.len;
    *p++ = '\r';
    *p++ = '\n';
  }
  return 0;
}

/* Compiles a route.  `methods` is copied after the pattern in one block so
 * the method spans can point into it. */
static int route_compile(hr__mem_t *m, const char *methods, const char *pattern,
                         hr_handler_cb handler, void *udata,
                         const hr_route_options_t *o, hr_route_t **out) {
  hr_route_t *rt;
  size_t plen = strlen(pattern), mlen = strlen(methods);
  char *copy;
  int err;
  *out = NULL;
  rt = hr__mem_alloc(m, sizeof(*rt));
  if (rt == NULL) return HR_ENOMEM;
  memset(rt, 0, sizeof(*rt));
  copy = hr__mem_alloc(m, plen + 1 + mlen + 1);
  if (copy == NULL) {
    hr__mem_free(m, rt);
    return HR_ENOMEM;
  }
  memcpy(copy, pattern, plen + 1);
  memcpy(copy + plen + 1, methods, mlen + 1);
  rt->pattern.ptr = copy;
  rt->pattern.len = plen;
  rt->handler = handler;
  rt->udata = udata;
  rt->mem = m;
  rt->max_body_bytes = o->max_body_bytes;
  rt->body_mode = o->body_mode;
  if (o->body_mode != HR_BODY_BUFFER && o->body_mode != HR_BODY_STREAM)
    err = HR_EINVAL;
  else if ((err = parse_methods(m, rt, copy + plen + 1)) == 0 &&
           (err = compile_pattern(m, rt)) == 0)
    err = render_head(m, rt, o);
  if (err != 0) {
    route_free(m, rt);
    return err;
  }
  *out = rt;
  return 0;
}

/* ---- snapshots ----------------------------------------------------------- */

static int method_cmp(const void *a, const void *b) {
  const hr_span_t *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->ptr, y->ptr, n);
  if (c != 0) return c;
  return (x->len > y->len) - (x->len < y->len);
}

/* Allow value for one path: its methods sorted without duplicates, HEAD
 * added when GET is there, OPTIONS not added (not answered automatically in
 * this release). */
static int build_allow(hr__mem_t *m, hr__path_t *p) {
  hr_span_t list[64], *ms = list;
  size_t n = 0, cap = 0, i, j, len = 0;
  char *out, *w;
  int has_get = 0, has_head = 0;
  for (i = 0; i < p->nroutes; i++) cap += p->routes[i]->nmethods;
  cap += 1;
  if (cap > 64) {
    ms = hr__mem_alloc(m, cap * sizeof(*ms));
    if (ms == NULL) return HR_ENOMEM;
  }
  for (i = 0; i < p->nroutes; i++)
    for (j = 0; j < p->routes[i]->nmethods; j++) {
      hr_span_t s = p->routes[i]->methods[j];
      if (hr_span_eq(s, HR_SPAN_LIT("GET"))) has_get = 1;
      if (hr_span_eq(s, HR_SPAN_LIT("HEAD"))) has_head = 1;
      ms[n++] = s;
    }
  if (has_get && !has_head) ms[n++] = HR_SPAN_LIT("HEAD");
  qsort(ms, n, sizeof(*ms), method_cmp);
  for (i = 0; i < n; i++)
    if (i == 0 || !hr_span_eq(ms[i], ms[i - 1])) len += ms[i].len + 2;
  out = hr__mem_alloc(m, len + 1);
  if (out == NULL) {
    if (ms != list) hr__mem_free(m, ms);
    return HR_ENOMEM;
  }
  w = out;
  for (i = 0; i < n; i++) {
    if (i != 0 && hr_span_eq(ms[i], ms[i - 1])) continue;
    if (w != out) {
      *w++ = ',';
      *w++ = ' ';
    }
    memcpy(w, ms[i].ptr, ms[i].len);
    w += ms[i].len;
  }
  *w = '\0';
  p->allow.ptr = out;
  p->allow.len = (size_t)(w - out);
  if (ms != list) hr__mem_free(m, ms);
  return 0;
}

/* Builds a complete table from `routes[0..n)` (private until published). */
static int table_build(hr__mem_t *m, hr_route_t **routes, size_t n,
                       hr__table_t **out) {
  hr__table_t *t;
  size_t i, j;
  *out = NULL;
  t = hr__mem_alloc(m, sizeof(*t));
  if (t == NULL) return HR_ENOMEM;
  memset(t, 0, sizeof(*t));
  t->paths = hr__mem_alloc(m, (n ? n : 1) * sizeof(hr__path_t));
  if (t->paths == NULL) goto oom;
  for (i = 0; i < n; i++) {
    hr__path_t *p = NULL;
    for (j = 0; j < t->npaths; j++)
      if (hr_span_eq(t->paths[j].first->pattern, routes[i]->pattern)) {
        p = &t->paths[j];
        break;
      }
    if (p == NULL) {
      p = &t->paths[t->npaths++];
      memset(p, 0, sizeof(*p));
      p->first = routes[i];
      p->routes = hr__mem_alloc(m, n * sizeof(*p->routes));
      if (p->routes == NULL) goto oom;
    }
    p->routes[p->nroutes++] = routes[i];
  }
  for (j = 0; j < t->npaths; j++)
    if (build_allow(m, &t->paths[j]) != 0) goto oom;
  *out = t;
  return 0;
oom:
  table_free(m, t);
  return HR_ENOMEM;
}

static int methods_overlap(const hr_route_t *a, const hr_route_t *b) {
  size_t i, j;
  if (a->nmethods == 0 || b->nmethods == 0)
    return a->nmethods == 0 && b->nmethods == 0;
  for (i = 0; i < a->nmethods; i++)
    for (j = 0; j < b->nmethods; j++)
      if (hr_span_eq(a->methods[i], b->methods[j])) return 1;
  return 0;
}

/* Two patterns that match exactly the same paths ("/d/:x" and "/d/:y"). */
static int same_shape(const hr_route_t *a, const hr_route_t *b) {
  size_t i;
  if (a->nsegs != b->nsegs) return 0;
  for (i = 0; i < a->nsegs; i++) {
    if (a->segs[i].kind != b->segs[i].kind) return 0;
    if (a->segs[i].kind == HR__SEG_LIT && !hr_span_eq(a->segs[i].text, b->segs[i].text))
      return 0;
  }
  return 1;
}

int hr_router_add(hr_router_t *r, const char *methods, const char *pattern,
                  hr_handler_cb handler, void *udata,
                  const hr_route_options_t *opts) {
  hr_route_options_t defaults;
  hr_route_t *rt;
  hr__table_t *t, *old;
  size_t i;
  int err;
  if (r == NULL || methods == NULL || pattern == NULL || handler == NULL)
    return HR_EINVAL;
  if (opts == NULL) {
    hr_route_options_init(&defaults);
    opts = &defaults;
  }
  err = route_compile(&r->mem, methods, pattern, handler, udata, opts, &rt);
  if (err != 0) return err;

  pthread_mutex_lock(&r->lock);
  for (i = 0; i < r->nroutes; i++) {
    if (!same_shape(r->routes[i], rt)) continue;
    if (!hr_span_eq(r->routes[i]->pattern, rt->pattern)) {
      /* Same paths, other parameter names: a request could not say which
       * names its parameters have. */
      err = HR_ECONFLICT;
      goto fail;
    }
    if (methods_overlap(r->routes[i], rt)) {
      err = HR_EEXIST;
      goto fail;
    }
  }
  if (r->nroutes == r->routes_cap) {
    size_t cap = r->routes_cap ? r->routes_cap * 2 : 16;
    hr_route_t **nr = hr__mem_realloc(&r->mem, r->routes, cap * sizeof(*nr));
    if (nr == NULL) {
      err = HR_ENOMEM;
      goto fail;
    }
    r->routes = nr;
    r->routes_cap = cap;
  }
  r->routes[r->nroutes] = rt;
  err = table_build(&r->mem, r->routes, r->nroutes + 1, &t);
  if (err != 0) goto fail;
  r->nroutes++;
  old = atomic_load_explicit(&r->table, memory_order_relaxed);
  /* Pairs with the acquire load in hr_router_match(): the table and every
   * route it references are complete before a reader can see the pointer. */
  atomic_store_explicit(&r->table, t, memory_order_release);
  if (old != NULL) {
    old->retired_next = r->retired;
    r->retired = old;
  }
  pthread_mutex_unlock(&r->lock);
  return 0;
fail:
  pthread_mutex_unlock(&r->lock);
  route_free(&r->mem, rt);
  return err;
}

/* ---- matching ------------------------------------------------------------ */

/* Tries `rt`'s segments against the path; on success fills the parameter
 * spans and a rank (one digit per segment, literal > param > catch-all). */
static int try_match(const hr_route_t *rt, hr_span_t path, hr_param_t *params,
                     uint64_t *rank) {
  const char *s = path.ptr + 1, *end = path.ptr + path.len;
  size_t i, np = 0;
  uint64_t rk = 0;
  for (i = 0; i < rt->nsegs; i++) {
    const hr__seg_t *seg = &rt->segs[i];
    const char *e;
    if (s > end) return 0; /* path has fewer segments */
    if (seg->kind == HR__SEG_CATCH) {
      if (s >= end) return 0;
      params[np].name = seg->text;
      params[np].value.ptr = s;
      params[np].value.len = (size_t)(end - s);
      np++;
      rk = rk * 3 + HR__SEG_CATCH;
      s = end + 1;
      break;
    }
    e = memchr(s, '/', (size_t)(end - s));
    if (e == NULL) e = end;
    if (seg->kind == HR__SEG_LIT) {
      if ((size_t)(e - s) != seg->text.len ||
          memcmp(s, seg->text.ptr, seg->text.len) != 0)
        return 0;
    } else {
      if (e == s) return 0; /* parameters are non-empty */
      params[np].name = seg->text;
      params[np].value.ptr = s;
      params[np].value.len = (size_t)(e - s);
      np++;
    }
    rk = rk * 3 + seg->kind;
    s = e + 1;
  }
  if (s <= end) return 0; /* path has more segments */
  /* Shorter patterns cannot tie with longer ones: pad to the same digits. */
  for (; i < HR__MAX_SEGS; i++) rk *= 3;
  *rank = rk;
  return 1;
}

static const hr_route_t *pick_method(const hr__path_t *p, hr_span_t method) {
  size_t i, j;
  const hr_route_t *any = NULL;
  for (i = 0; i < p->nroutes; i++) {
    const hr_route_t *rt = p->routes[i];
    if (rt->nmethods == 0) any = rt;
    for (j = 0; j < rt->nmethods; j++)
      if (hr_span_eq(rt->methods[j], method)) return rt;
  }
  return any;
}

int hr_router_match(hr_router_t *r, hr_span_t method, hr_span_t path,
                    hr_match_t *out) {
  hr__table_t *t;
  const hr__path_t *best = NULL;
  uint64_t best_rank = 0;
  hr_param_t params[HR_MAX_PARAMS];
  size_t i;
  if (r == NULL || out == NULL || path.len == 0 || path.ptr[0] != '/')
    return HR_EINVAL;
  out->status = 404;
  out->route = NULL;
  out->nparams = 0;
  out->allow.ptr = NULL;
  out->allow.len = 0;
  /* Pairs with the release store in hr_router_add(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  if (t == NULL) return 0;
  for (i = 0; i < t->npaths; i++) {
    uint64_t rank;
    if (try_match(t->paths[i].first, path, params, &rank) &&
        (best == NULL || rank > best_rank)) {
      best = &t->paths[i];
      best_rank = rank;
      memcpy(out->params, params, best->first->nparams * sizeof(hr_param_t));
    }
  }
  if (best == NULL) return 0;
  out->nparams = best->first->nparams;
  out->route = pick_method(best, method);
  if (out->route == NULL && hr_span_eq(method, HR_SPAN_LIT("HEAD")))
    out->route = pick_method(best, HR_SPAN_LIT("GET"));
  if (out->route != NULL) {
    out->status = 200;
  } else {
    out->status = 405;
    out->nparams = 0;
    out->allow = best->allow;
  }
  return 0;
}

hr_span_t hr_route_pattern(const hr_route_t *route) { return route->pattern; }

void *hr_route_udata(const hr_route_t *route) { return route->udata; }
