/* SPDX-License-Identifier: MIT */
/*
 * The router: routes (method + pattern -> handler) compiled into immutable
 * route entries and published as a route table snapshot.  Usable without the
 * server: hr_router_match() takes a method and a path and returns the route
 * and its parameters without allocating.
 *
 * Patterns (this release): a path starting with '/', made of segments that
 * are literal text, `:name` (one whole, non-empty segment) or, as the last
 * segment only, `*name` (the non-empty rest of the path, without its leading
 * '/').  Names are [A-Za-z0-9_]+; a pattern has at most HR_MAX_PARAMS
 * parameters and 40 segments.  Literal segments win over parameters, and
 * parameters over a catch-all, whatever the registration order.
 */
#ifndef HROUTE_ROUTER_H
#define HROUTE_ROUTER_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hr_router_s hr_router_t;
typedef struct hr_route_s hr_route_t;
typedef struct hr_request_s hr_request_t;
typedef struct hr_response_s hr_response_t;

/* Most parameters one pattern may declare. */
#define HR_MAX_PARAMS 16

/*
 * A route handler.  Runs on the worker loop thread that read the request.
 * It must eventually complete `res` exactly once (hr_response_send*,
 * or hr_response_start + hr_response_end), either before it returns or later
 * on the same loop thread (see hr_response_post() for other threads).  `req`
 * and `res` stay valid until that completion.  `udata` is the pointer given
 * at registration.
 */
typedef void (*hr_handler_cb)(hr_request_t *req, hr_response_t *res,
                              void *udata);

/* How a route receives the request message body (RFC 9112 §6). */
typedef enum hr_body_mode_e {
  /* The whole body is read first (up to the route's limit) and the handler
   * runs once it is complete; hr_request_body() returns it. Default. */
  HR_BODY_BUFFER = 0,
  /* The handler runs as soon as the header section is complete; it reads the
   * body in pieces through hr_request_read_body(). */
  HR_BODY_STREAM = 1
} hr_body_mode_t;

/* One response field line (RFC 9110 §5). */
typedef struct hr_field_s {
  hr_span_t name;
  hr_span_t value;
} hr_field_t;

/* Per-route settings; initialise with hr_route_options_init(). */
typedef struct hr_route_options_s {
  /* Body size limit in bytes; 0 means the server's max_body_bytes.  A larger
   * body is answered with 413 (Content Too Large) and the connection closed. */
  uint64_t max_body_bytes;
  hr_body_mode_t body_mode;
  /* Constant response fields sent with every response of this route, for
   * example Content-Type.  Copied and pre-rendered at registration; names must
   * be tokens and values must not contain CR, LF or NUL. */
  const hr_field_t *fields;
  size_t nfields;
} hr_route_options_t;

/* Fills `opts` with the defaults (all zero: server limits, buffered body, no
 * constant fields). */
HR_EXTERN void hr_route_options_init(hr_route_options_t *opts);

typedef struct hr_router_options_s {
  /* Allocator for the router and everything it compiles; NULL means libc. */
  const hr_allocator_t *allocator;
} hr_router_options_t;

/* Fills `opts` with the defaults. */
HR_EXTERN void hr_router_options_init(hr_router_options_t *opts);

/*
 * Creates an empty router.  `opts` may be NULL for the defaults.
 * Returns 0 and stores the router in *out, or HR_ENOMEM / HR_EINVAL.
 * The router must outlive every server using it.  Any thread.
 */
HR_EXTERN int hr_router_new(hr_router_t **out, const hr_router_options_t *opts);

/* Frees the router and every route table it published.  No server may still
 * use it.  hr_router_free(NULL) is a no-op. */
HR_EXTERN void hr_router_free(hr_router_t *router);

/*
 * Registers a route.
 *   methods  NUL-terminated: one method ("GET"), several separated by commas
 *            ("GET,POST"), or "*" for every method.  Methods are
 *            case-sensitive tokens (RFC 9110 §9.1).
 *   pattern  NUL-terminated pattern, copied.
 *   handler  the callback; udata is passed to it unchanged.
 *   opts     NULL for the defaults; copied.
 * A GET route also answers HEAD (the body is suppressed) unless a HEAD route
 * exists for the same path.
 * Returns 0, or HR_EPATTERN (malformed pattern, bad parameter name, a
 * catch-all that is not last, more than HR_MAX_PARAMS parameters or 40
 * segments),
 * HR_EEXIST (same method and pattern already registered), HR_EINVAL (bad
 * method or field), HR_ENOMEM.  On error nothing changed.
 * Any thread; writers are serialised, and the new route table is published
 * atomically, so a request sees either the old table or the new one.
 */
HR_EXTERN int hr_router_add(hr_router_t *router, const char *methods,
                            const char *pattern, hr_handler_cb handler,
                            void *udata, const hr_route_options_t *opts);

/* One matched parameter: its name (from the pattern, valid while the router
 * lives) and its value (a span into the path given to hr_router_match). */
typedef struct hr_param_s {
  hr_span_t name;
  hr_span_t value;
} hr_param_t;

/* The result of a match. */
typedef struct hr_match_s {
  /* 200 (route found), 404 (no route for the path) or 405 (the path exists
   * for other methods: see `allow`). */
  int status;
  /* The matched route (status 200), else NULL.  Valid while the router
   * lives. */
  const hr_route_t *route;
  size_t nparams;
  hr_param_t params[HR_MAX_PARAMS];
  /* For 405: the Allow field value (RFC 9110 §10.2.1), methods sorted and
   * without duplicates; valid while the router lives.  Empty otherwise. */
  hr_span_t allow;
} hr_match_t;

/*
 * Matches `method` and `path` (the path only: no query, not percent-decoded
 * in this release) against the current route table.  Makes no allocation.
 * Parameter values are spans into `path`.
 * Returns 0 with out->status 200, 404 or 405; or HR_EINVAL when path does not
 * start with '/'.  Any thread.
 */
HR_EXTERN int hr_router_match(hr_router_t *router, hr_span_t method,
                              hr_span_t path, hr_match_t *out);

/* The pattern a route was registered with (valid while the router lives). */
HR_EXTERN hr_span_t hr_route_pattern(const hr_route_t *route);

/* The user data given at registration. */
HR_EXTERN void *hr_route_udata(const hr_route_t *route);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_ROUTER_H */
