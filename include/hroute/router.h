/* SPDX-License-Identifier: MIT */
/** @file
 * The router: routes (methods + pattern -> handler) compiled into immutable
 * route entries and published as a route table snapshot (a compressed radix
 * tree per host).  Usable without the server: hr_router_match() takes a
 * method, a Host value and a request target and answers with the route, its
 * parameters, or the status the server would send (301/308 redirects, 400,
 * 404, 405), without allocating.
 *
 * Patterns: a path starting with '/', made of segments separated by '/'.
 *   - literal text: matched byte for byte (ASCII case-insensitively with the
 *     router option); "::" stands for a literal ':'; "%XX" for the byte it
 *     encodes ("%25" for a literal '\%'; %2F %3F %23 %25 stay escapes, and
 *     match the same escapes in a request); bytes from 0x80 (UTF-8) as
 *     they are;
 *   - ":name" or "{name}" as a whole segment: one non-empty path segment;
 *   - "*name", "{*name}" or Go's "{name...}" as the last segment: the
 *     non-empty rest of the path, without its leading '/' (it may contain
 *     '/').  A brace that does not open a whole segment is literal text.
 * Names are [A-Za-z0-9_]+, inside braces also '-' and '.' (OpenAPI's
 * "{user-id}").  At most HR_MAX_PARAMS parameters and HR_MAX_SEGMENTS
 * segments.  Routes may give one position different parameter names: each
 * keeps its own, and a match carries the names of the route it found.
 *
 * Matching (RFC 3986 §6.2.2 normalisation, then a per-segment priority in
 * which the method takes part); the target "*" is only valid for OPTIONS
 * (else 400).  In order:
 *   1. The path is the request target up to '?' (absolute-form targets route
 *      by their path).  A target with a byte a request target cannot hold
 *      (RFC 9112 §3.2: controls, space, DEL, a '#' fragment; in the path
 *      anything but RFC 3986 §3.3 pchar, '/', '\%' and bytes from 0x80) gives
 *      400, as it does from the server.  Percent-encoded octets are decoded
 *      before matching, except %2F, %3F, %23 and %25, which stay opaque
 *      inside their segment (with their hex digits in upper case).  Raw
 *      bytes from 0x80 (UTF-8 sent unencoded) match exactly as their
 *      percent-encoded form.  A malformed escape or %00 gives 400, before
 *      anything else, and so do ".." above the root and a path that step 3
 *      would redirect to a 400 (a segment with ".." between %2F escapes,
 *      see below).  With HR_CLEAN_REJECT, a path that needs cleaning (step
 *      3) gives 400 here too.
 *   2. The standard methods, those of RFC 9110 §9 (GET, HEAD, POST, PUT,
 *      DELETE, CONNECT, OPTIONS, TRACE) and PATCH (RFC 5789), are always
 *      known: a path that some route matches but none for the method is a
 *      405 (§15.5.6, step 5), any other a 404 (step 6), registered or not.
 *      Another method that no route of the router (any host, any path)
 *      registers gives 501 (§15.6.2: a method the server does not
 *      recognise), whatever the path; a "*" route registers every method,
 *      so with one there is no 501.  Methods are case-sensitive tokens:
 *      "get" is an extension method, not GET.
 *   3. Dot segments ("." ".." and their %2e forms) and empty segments ("//")
 *      are never routed: the path is cleaned (remove_dot_segments, RFC 3986
 *      §5.2.4, and "//" collapsed) and the answer is a redirect to the clean
 *      path, query kept, bytes from 0x80 percent-encoded: 301 for GET and
 *      HEAD, 308 otherwise.
 *   4. Per segment, a literal beats a parameter, which beats a catch-all,
 *      and a route counts only when it answers the request's method: its
 *      own method, or GET's route for HEAD, or a "*" route for any method.
 *      When a branch fails deeper down, or ends at routes none of which
 *      answers the method, the next one is tried (backtracking), so the
 *      result never depends on registration order: with GET /files/:name
 *      and DELETE `/files/{*rest}`, DELETE /files/a reaches the catch-all.
 *   5. Some route matches the path but none answers the method: for
 *      OPTIONS the router answers 200 with an Allow value (RFC 9110
 *      §9.3.7), otherwise 405 with Allow; the Allow value lists the
 *      methods of every route that matches the path (HEAD with GET, and
 *      OPTIONS), sorted, without duplicates.  "OPTIONS *" answers for the
 *      whole host with every method registered by name (a "*" route names
 *      none) and OPTIONS.
 *   6. No route matches the path: 404, or with HR_SLASH_REDIRECT a redirect
 *      to the same path with the trailing slash added or removed when only
 *      that one exists (for any method; 400 instead when the path has a
 *      segment with ".." between %2F escapes).
 * HEAD is answered by a HEAD route, else by a GET route, else by a "*"
 * route at the same place.
 * Parameter values are decoded after the match (%2F becomes '/'); a decoded
 * value with a ".." segment ("..", "../x", "x/..", as from "..%2Fx") gives
 * 400, so that a value never climbs out of a directory it is joined to.
 */
#ifndef HROUTE_ROUTER_H
#define HROUTE_ROUTER_H

#include <uv.h>

#include "common.h"
#include "compress.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A router: the route tables (one per host), middleware, the router's own
 * answers and the value types of delegate.h; opaque.  Made by
 * hr_router_new, freed by hr_router_free.  Routes change from any thread
 * while servers read it. */
typedef struct hr_router_s hr_router_t;
/** A registered route (methods, pattern, handler, options), owned by the
 * router; opaque.  hr_router_match's result: valid until the caller's
 * read-side section that covered the match ends (see hr_router_read_lock);
 * hr_request_route's: as long as the request. */
typedef struct hr_route_s hr_route_t;
/** A route group (hr_router_group): a pattern prefix and optionally a host
 * for the routes and middleware added through it; owned by the router and
 * freed with it; opaque. */
typedef struct hr_group_s hr_group_t;
/** The request of one exchange as a handler sees it (http.h), owned by the
 * server: valid until its response completes; opaque. */
typedef struct hr_request_s hr_request_t;
/** The response a handler completes exactly once (http.h), owned by the
 * server: valid until it completes; opaque. */
typedef struct hr_response_s hr_response_t;

/** Most parameters one pattern may declare. */
#define HR_MAX_PARAMS 16
/** Most segments one pattern may have. */
#define HR_MAX_SEGMENTS 64

/**
 * A route handler.  Runs on the worker loop thread that read the request.
 * It must eventually complete `res` exactly once (hr_response_send*,
 * or hr_response_start + hr_response_end), either before it returns or later
 * on the same loop thread (see hr_response_post() for other threads).  `req`
 * and `res` stay valid until that completion.  `udata` is the pointer given
 * at registration.
 */
typedef void (*hr_handler_cb)(hr_request_t *req, hr_response_t *res,
                              void *udata);

/** How a route receives the request message body (RFC 9112 §6). */
typedef enum hr_body_mode_e {
  /** The whole body is read first (up to the route's limit) and the handler
   * runs once it is complete; hr_request_body() returns it. Default. */
  HR_BODY_BUFFER = 0,
  /** The handler runs as soon as the header section is complete; it reads the
   * body in pieces through hr_request_read_body(). */
  HR_BODY_STREAM = 1
} hr_body_mode_t;

/** One response field line (RFC 9110 §5). */
typedef struct hr_field_s {
  hr_span_t name;  /**< the field name: a token (RFC 9110 §5.1) */
  hr_span_t value; /**< the field value: no CR, LF or NUL */
} hr_field_t;

/**
 * Why a registration failed, filled when hr_route_options_t.error is set.
 * `conflict` names the registered route the new one collides with, as
 * "METHODS pattern" (NUL-terminated; when longer than the array it is cut
 * and `conflict_len`, the full length, says so).
 */
typedef struct hr_route_error_s {
  int code;            /**< the value hr_router_add returned */
  const char *reason;  /**< one English line, static storage */
  size_t offset;       /**< byte offset in the pattern where the problem is */
  char conflict[256];  /**< "METHODS pattern" of the colliding route, or "" */
  size_t conflict_len; /**< 0 when no other route is involved */
} hr_route_error_t;

/* ---- typed parameters ------------------------------------------------------ */

/**
 * Types a route may declare for its parameters (by position).  The route's
 * invoker converts each typed parameter before the handler runs; a value
 * that does not convert answers 404, as JAX-RS does (the path names no
 * resource).
 */
typedef enum hr_param_type_e {
  HR_PARAM_STRING = 0, /**< the decoded text (default) */
  HR_PARAM_INT64,      /**< -?digits within int64_t, canonical: no leading
                          zero (but "0"), no '+', no "-0", so that one
                          number has one URL (see lenient_integers) */
  HR_PARAM_UINT64,     /**< digits within uint64_t, canonical as above */
  HR_PARAM_BOOL,       /**< "true" or "false" */
  HR_PARAM_UUID        /**< 8-4-4-4-12 hex digits (RFC 9562 §4), any case */
} hr_param_type_t;

/** A parameter parsed by the header delegate of value type `type_id` (see
 * delegate.h; the type needs a value_size).  The delegate is looked up
 * through the router's cache at each request, so one registered later
 * takes effect for later requests.  Read the value with
 * hr_request_param_object(). */
#define HR_PARAM_OF_TYPE(type_id) ((hr_param_type_t)(0x10000 + (type_id)))

/** A converted parameter value; which member is set follows the type. */
typedef union hr_value_u {
  int64_t i64;      /**< HR_PARAM_INT64 */
  uint64_t u64;     /**< HR_PARAM_UINT64 */
  int boolean;      /**< HR_PARAM_BOOL: 1 for "true", 0 for "false" */
  uint8_t uuid[16]; /**< HR_PARAM_UUID: the 16 bytes in the order written */
} hr_value_t;

/* ---- middleware ------------------------------------------------------------ */

/** What a before-middleware tells the invoker. */
typedef enum hr_next_e {
  HR_NEXT = 0,    /**< go on with the next middleware, then the handler */
  HR_ANSWERED = 1 /**< it completed the response (or will): stop here */
} hr_next_t;

/**
 * Runs before the handler, on the loop thread, with the request and the
 * response the handler will get.  It may add response fields and go on, or
 * answer itself (a 401, a cached body...) and return HR_ANSWERED.  `udata`
 * is the pointer given to hr_router_use / hr_group_use.  The router's own
 * answers (404, also for a typed parameter that does not convert; 405; the
 * automatic OPTIONS; redirects; 501; and the hr_answers_t handlers) pass
 * the router-level before-middleware registered without a prefix, for
 * every host or the request's host table, first, so security fields and
 * request ids reach them too, and such a middleware may answer in their
 * place.  A request refused as malformed (400, 413, 431...) passes none.
 */
typedef hr_next_t (*hr_before_cb)(hr_request_t *req, hr_response_t *res,
                                  void *udata);

/**
 * Runs after the response completed (queued for writing), on the loop
 * thread: `status` is the status sent, HR_STATUS_CLIENT_CLOSED (499, http.h)
 * when the client went away in the middle of the request's body before any
 * answer (nothing was sent), or 0 when the exchange was lost otherwise
 * before a response completed.  For logging and metrics; the response can
 * no longer change.  Every answer passes: a matched route's after-chain
 * (also when the server answered before the chain ran: a typed parameter
 * that did not convert, a context that could not be made), and for a
 * request that no route answered (the server's 404, 405, automatic OPTIONS,
 * redirects, 501, 400, 408, 413, 431...) the after-middleware registered
 * with hr_router_use without a prefix for every host or for the request's
 * host table, in the route table the request was matched in (the one its
 * answer and before-middleware came from; for a request refused before
 * its header section was complete, the table current at that answer).
 * hr_request_outcome()
 * gives the body bytes sent and the time the exchange took.
 */
typedef void (*hr_after_cb)(hr_request_t *req, int status, void *udata);

/* ---- the router's own answers ----------------------------------------------- */

/**
 * What answers in the router's place when no route does, so that a JSON
 * API answers JSON errors.  Each member may be NULL (the default answer).
 *   not_found           a handler for the server's 404s (no route, or a
 *                       typed parameter that did not convert); it answers
 *                       as any handler does, now or later;
 *   method_not_allowed  a handler for 405s: the Allow field is already on
 *                       the response, and hr_request_allow() gives its value;
 *   error_body          the body of the server's other 4xx and 5xx answers
 *                       (400, 408, 413, 414, 431, 501, 503..., and 404/405
 *                       without a handler): writes at most `cap` bytes
 *                       (1024) to `buf`, sets *content_type (static storage,
 *                       a field value of at most 199 visible bytes), returns
 *                       the length; 0 (or more than `cap`, or an invalid
 *                       content type) keeps the default text.  It must not block: it runs on
 *                       the loop thread, for answers the server gives
 *                       before or instead of a handler, and for every
 *                       hr_response_error() (the static files' 403, 404,
 *                       416, the WebSocket handshake's refusals, a
 *                       handler's own).
 */
typedef struct hr_answers_s {
  hr_handler_cb not_found;          /**< answers 404s (see above); NULL: default */
  void *not_found_udata;            /**< the udata not_found gets */
  hr_handler_cb method_not_allowed; /**< answers 405s (see above); NULL: default */
  void *method_not_allowed_udata;   /**< the udata method_not_allowed gets */
  /** Writes the body of the other 4xx and 5xx answers (see above); NULL:
   * the default text. */
  size_t (*error_body)(void *udata, int status, char *buf, size_t cap,
                       const char **content_type);
  void *error_body_udata;           /**< the udata error_body gets */
} hr_answers_t;

/** Fills *answers with the defaults: every member NULL (the server's own
 * bodies).  Any thread. */
HR_EXTERN void hr_answers_init(hr_answers_t *answers);

/**
 * Sets the response compression of the table of `host` (NULL: the default
 * table, and the tables of hosts that have none set), in place of the
 * server's hr_server_options_t.compress: requests matched in that table
 * are compressed by these settings, unless their route has its own
 * (hr_route_options_t.compress) or no_compress.  `compress` is copied
 * (hr_compress_options_init, then what differs; an `order` that starts
 * with HR_CODING_IDENTITY turns compression off there); NULL removes the
 * settings, so that the default table's (for a host) or the server's
 * apply again.  Settings for a host that has no table of its own yet are
 * kept and apply once a route gives it one (until then its requests are
 * matched in the default table, with its settings).  Published like a route change: a request keeps the
 * settings of the table it was matched in to its end.  Returns 0,
 * HR_EINVAL (bad host or settings; hr_error_detail says which setting),
 * HR_ENOMEM.  Any thread.
 */
HR_EXTERN int hr_router_set_compress(hr_router_t *router, const char *host,
                                     const hr_compress_options_t *compress);

/**
 * Sets the router's own answers for the table of `host` (NULL: the default
 * table, and the tables of hosts that have none set); `answers` is copied,
 * NULL clears them.  Published like a route change.  Returns 0, HR_EINVAL
 * (bad host), HR_ENOMEM.  Any thread.
 */
HR_EXTERN int hr_router_set_answers(hr_router_t *router, const char *host,
                                    const hr_answers_t *answers);

/* ---- request locals --------------------------------------------------------- */

/** Most request-local keys one router may register. */
#define HR_MAX_LOCALS 64

/** A request-local key (see hr_router_local_key). */
typedef unsigned hr_local_key_t;

/** Destroys a request-local value when its exchange ends (or when it is
 * replaced), on the loop thread; for an exchange abandoned at a shutdown
 * deadline, on the thread that calls hr_server_free.  `udata` is the
 * key's. */
typedef void (*hr_local_destroy_cb)(void *udata, void *value);

/**
 * Registers a request-local key: middleware attaches a value to a request
 * under it (hr_request_set_local) and later middleware, the handler and the
 * after-middleware read it (hr_request_local), with no string lookup and
 * no allocation beyond the request's memory.  `destroy` (may be NULL) runs
 * with each value still set when the exchange ends, after the
 * after-middleware.  Register keys at start-up and keep them in globals;
 * they cannot be unregistered.  Returns 0 and stores the key, HR_ETOOLARGE
 * past HR_MAX_LOCALS keys, or HR_EINVAL.  Any thread (a key registered
 * while serving is usable at once).
 */
HR_EXTERN int hr_router_local_key(hr_router_t *router, hr_local_destroy_cb destroy,
                                  void *udata, hr_local_key_t *key);

/* ---- handler contexts ------------------------------------------------------ */

/** Which context a handler receives as its `udata` argument. */
typedef enum hr_context_scope_e {
  HR_CONTEXT_ROUTE = 0,  /**< the route's udata itself (default) */
  HR_CONTEXT_LOOP = 1,   /**< one per worker loop, made on that loop before it
                            serves the route (a per-thread database handle) */
  HR_CONTEXT_REQUEST = 2 /**< one per request, made before the handler and
                            destroyed when the response completes */
} hr_context_scope_t;

/** Makes a context on the loop thread that will use it; stores it in *ctx.
 * Returns 0, or non-zero when it cannot (the request is answered 503). */
typedef int (*hr_context_create_cb)(void *udata, uv_loop_t *loop, void **ctx);

/** Destroys a context made by the create callback, on the same loop thread
 * (per-loop contexts: when the loop shuts down, or within about a second
 * after their route was replaced or removed). */
typedef void (*hr_context_destroy_cb)(void *udata, void *ctx);

/** Per-route settings; initialise with hr_route_options_init(). */
typedef struct hr_route_options_s {
  /** Body size limit in bytes; 0 means the server's max_body_bytes.  A larger
   * body is answered with 413 (Content Too Large) and the connection closed. */
  uint64_t max_body_bytes;
  /** How the handler receives the body: HR_BODY_BUFFER (default) or
   * HR_BODY_STREAM. */
  hr_body_mode_t body_mode;
  /** Constant response fields sent with every response of this route, for
   * example Content-Type, except that a 204 or 304 response, which has no
   * content, leaves out Content-Type, Content-Encoding and Content-Language
   * (RFC 9110 §8.3-8.5, §15.3.5, §15.4.5; both sets are pre-rendered, so
   * either costs nothing per request).  Copied and pre-rendered at
   * registration; names must be tokens, values must not contain CR, LF or
   * NUL, and Date, Content-Length, Transfer-Encoding and Connection are
   * the server's (all HR_EINVAL).  A handler that adds a field of the
   * same name (ASCII case aside) replaces it: its own lines of that name
   * go out instead.  A handler's own fields are all sent, repeated ones
   * too (Set-Cookie, Link, Vary...). */
  const hr_field_t *fields;
  size_t nfields; /**< entries in fields */
  /** When non-NULL and registration fails, filled with the details. */
  hr_route_error_t *error;
  /** Types of the parameters by position (HR_PARAM_STRING past the end);
   * copied.  More types than parameters is HR_EINVAL. */
  const hr_param_type_t *param_types;
  size_t nparam_types; /**< entries in param_types */
  /** Handler contexts (HR_CONTEXT_LOOP and _REQUEST need `context_create`;
   * `context_destroy` may be NULL). */
  hr_context_scope_t context_scope;
  hr_context_create_cb context_create;   /**< makes a context; gets the route's udata */
  hr_context_destroy_cb context_destroy; /**< destroys one; may be NULL */
  /** Non-zero: a route with the same methods and pattern on the same host is
   * replaced instead of answering HR_EEXIST.  "The same pattern" is as for
   * HR_EEXIST: equal up to parameter names (and, on a case-insensitive
   * router, the case of literal text).  Requests in flight finish with the
   * old version; later ones get the new one. */
  int replace;
  /** Non-zero: typed integer parameters also take leading zeros ("01"),
   * and signed ones "+1" and "-0" (the behaviour before canonical
   * spellings were required; an unsigned one never takes a sign). */
  int lenient_integers;
  /** Non-zero: this route's responses are never compressed, whatever the
   * server's hr_server_options_t.compress says (a body that is
   * compressed already, or that must not be, as a secret reflected next
   * to attacker-chosen text: BREACH). */
  int no_compress;
  /** This route's own compression settings (hr_compress_options_init,
   * then what differs), copied at registration (bad ones: HR_EINVAL), in
   * place of its host table's (hr_router_set_compress) and the server's;
   * an `order` that starts with HR_CODING_IDENTITY turns compression off
   * as no_compress does.  NULL (the default): those others apply. */
  const hr_compress_options_t *compress;
} hr_route_options_t;

/** Fills `opts` with the defaults (all zero: server limits, buffered body, no
 * constant fields, no error details). */
HR_EXTERN void hr_route_options_init(hr_route_options_t *opts);

/** Trailing-slash policy (step 6 above). */
typedef enum hr_slash_policy_e {
  HR_SLASH_STRICT = 0,  /**< "/a" and "/a/" are different paths (default) */
  HR_SLASH_REDIRECT = 1 /**< redirect to the variant that exists */
} hr_slash_policy_t;

/** Policy for paths with dot segments or "//" (steps 1 and 3 above). */
typedef enum hr_clean_policy_e {
  HR_CLEAN_REDIRECT = 0, /**< 301/308 to the clean path (default) */
  HR_CLEAN_REJECT = 1    /**< 400 */
} hr_clean_policy_t;

/** Router settings; hr_router_options_init() fills the defaults (all
 * zero). */
typedef struct hr_router_options_s {
  /** Allocator for the router and everything it compiles; NULL means libc. */
  const hr_allocator_t *allocator;
  hr_slash_policy_t trailing_slash; /**< HR_SLASH_STRICT (default) or _REDIRECT */
  hr_clean_policy_t unclean_path;   /**< HR_CLEAN_REDIRECT (default) or _REJECT */
  /** Non-zero: literal segments match ignoring ASCII case (parameter values
   * keep theirs). */
  int case_insensitive;
} hr_router_options_t;

/** Fills `opts` with the defaults. */
HR_EXTERN void hr_router_options_init(hr_router_options_t *opts);

/**
 * Creates an empty router.  `opts` may be NULL for the defaults.
 * Returns 0 and stores the router in *out, or HR_ENOMEM / HR_EINVAL.
 * The router must outlive every server using it.  Any thread.
 */
HR_EXTERN int hr_router_new(hr_router_t **out, const hr_router_options_t *opts);

/** Frees the router, its groups and every route table it published.  No
 * server may still use it, and no call on it may be running.  Any thread;
 * also inside a read-side section (a handler freeing a router of its own),
 * where no grace period can be waited for: the tables that still wait for
 * one, and the router's own block, are then freed through its allocator
 * by liburcu's call_rcu thread once that section and the others that
 * could hold them have ended, so the allocator must outlive that.
 * hr_router_free(NULL) is a no-op. */
HR_EXTERN void hr_router_free(hr_router_t *router);

/**
 * Registers a route on the default host.
 *   methods  NUL-terminated: one method ("GET"), several separated by commas
 *            ("GET,POST"), or "*" alone for every method.
 *   pattern  NUL-terminated pattern (see above), copied.
 *   handler  the callback; udata is passed to it unchanged.
 *   opts     NULL for the defaults; copied.
 * Returns 0, or
 *   HR_EPATTERN   malformed pattern: no leading '/', an empty or invalid
 *                 parameter name, a parameter that is not a whole segment
 *                 (two in one segment), a catch-all that is not last, a '\%'
 *                 that is not an escape or %00, a control byte, too many
 *                 parameters or segments;
 *   HR_EEXIST     the same method and pattern (up to parameter names) is
 *                 registered already;
 *   HR_ETOOLARGE  more than 64 distinct extension methods (methods other
 *                 than GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS,
 *                 CONNECT and TRACE) in the router, all hosts together;
 *   HR_EINVAL     a method that is not a token, a repeated method, "*" in
 *                 a list, a bad constant field;
 *   HR_ENOMEM.
 * (HR_ECONFLICT is no longer returned: routes may name one position
 * differently.)
 * On error nothing changed.  Any thread; writers are serialised, and the new
 * route table is published atomically, so a request sees either the old
 * table or the new one.  Cost: the route's path in the tree, not the table
 * (the new table shares every other node with the old one); the first route
 * of a new host or naming a new extension method rebuilds the whole table,
 * and so does, now and then, a compaction of the nodes that changes left
 * dead (docs/routing.md).  Never waits for readers.
 */
HR_EXTERN int hr_router_add(hr_router_t *router, const char *methods,
                            const char *pattern, hr_handler_cb handler,
                            void *udata, const hr_route_options_t *opts);

/**
 * Returns a route group: routes added through it are registered under
 * `prefix` (a pattern prefix such as "/api/v1", which may contain
 * parameters; NULL or "" for none) and, when `host` is not NULL, in the
 * route table of that host only.  `host` is a name (letters, digits, '-',
 * '.', '_') or a bracketed IP literal ("[::1]"), without a port.  It is
 * matched against the request's Host field (or an absolute-form target's
 * authority) ASCII case-insensitively, with the port removed and a trailing
 * dot ignored on both sides; a request for a host that has a table is
 * matched against that table only, and requests for other hosts use the
 * default table.  The group is owned by the router and lives as long as it.
 * Returns 0 and stores the group, or HR_EPATTERN (bad prefix), HR_EINVAL
 * (bad host, a port included), HR_ENOMEM.  Any thread.
 */
HR_EXTERN int hr_router_group(hr_router_t *router, const char *host,
                              const char *prefix, hr_group_t **out);

/** Like hr_router_add(), within `group`: the route's pattern is the group's
 * prefix followed by `pattern` (which must start with '/'). */
HR_EXTERN int hr_group_add(hr_group_t *group, const char *methods,
                           const char *pattern, hr_handler_cb handler,
                           void *udata, const hr_route_options_t *opts);

/**
 * Removes the route registered with exactly these methods (same list, any
 * order) and pattern (up to parameter names, and to case on a
 * case-insensitive router) on the default host.  Requests in flight finish with
 * it; later requests no longer see it.  Returns 0, HR_ENOTFOUND, HR_EINVAL,
 * HR_ENOMEM.  Any thread.  Cost as hr_router_add (the last route of a host
 * or of an extension method rebuilds the whole table).
 */
HR_EXTERN int hr_router_remove(hr_router_t *router, const char *methods,
                               const char *pattern);

/** Like hr_router_remove(), within `group` (pattern without the prefix). */
HR_EXTERN int hr_group_remove(hr_group_t *group, const char *methods,
                              const char *pattern);

/* ---- transactions: many changes, one table --------------------------------- */

/**
 * A transaction: route changes recorded one by one and published together.
 * Each hr_router_add or hr_router_remove freezes and publishes its own path
 * (microseconds, but N of them for N routes, and N tables for readers to
 * see); a transaction builds the whole table once at its commit, so loading
 * a large table (a generated API, a reload on SIGHUP) costs one build and
 * one publication.
 *
 * Atomicity is the same as for one change: the commit publishes the new
 * table with one release store, and a request sees the table from before
 * the transaction or the one after it, never a part (the router's RCU
 * publication, docs/concurrency.md).  Nothing is visible
 * before the commit.
 *
 * A transaction is used by one thread at a time (any thread; it takes no
 * lock between calls, so other writers go on meanwhile).  It holds a
 * reference on what it recorded and on the routes it saw at its start.
 */
typedef struct hr_txn_s hr_txn_t;

/**
 * Starts a transaction on `router` and stores it in *out.  It starts from
 * the routes registered now.  Returns 0, HR_EINVAL (NULL arguments) or
 * HR_ENOMEM.  Any thread; O(routes) (it indexes them by place).  End it
 * with hr_txn_commit or hr_txn_abort, which free it.
 */
HR_EXTERN int hr_router_begin(hr_router_t *router, hr_txn_t **out);

/**
 * Records the addition of a route, as hr_group_add would make it (`group`
 * NULL: the router's default group; `opts` NULL: the defaults; with
 * opts->replace, a route of the same methods and pattern, registered or
 * recorded before in this transaction, is replaced).  The route is checked
 * at once against the routes the transaction started from and the changes
 * recorded so far, in constant time, so that a rejected route is reported
 * by this call: the codes are hr_router_add's (HR_EPATTERN, HR_EEXIST,
 * HR_ETOOLARGE is found at the commit only, HR_EINVAL -- also for a group
 * of another router --, HR_ENOMEM), with opts->error filled.  A rejected
 * route is not recorded; the transaction goes on.
 */
HR_EXTERN int hr_txn_add(hr_txn_t *txn, hr_group_t *group, const char *methods,
                         const char *pattern, hr_handler_cb handler, void *udata,
                         const hr_route_options_t *opts);

/**
 * Records the removal of the route of exactly these methods and pattern
 * (as hr_group_remove; `group` NULL: the default group), registered or
 * recorded before in this transaction.  Returns 0, HR_ENOTFOUND (no such
 * route at this point of the transaction), HR_EINVAL, HR_ENOMEM.
 */
HR_EXTERN int hr_txn_remove(hr_txn_t *txn, hr_group_t *group, const char *methods,
                            const char *pattern);

/**
 * Applies every recorded change, builds the route table once and
 * publishes it, then frees the transaction.  When another writer changed
 * the routes since hr_router_begin, the changes are checked again, in
 * order, against the routes as they are now.  Returns 0, or an error with
 * nothing changed: HR_EEXIST or HR_ENOTFOUND (a change no longer applies
 * after another writer's; `err`, when not NULL, names the route involved),
 * HR_ETOOLARGE (over 64 extension methods), HR_ENOMEM.  O(routes + changes)
 * under the router's writer lock.  Replaced and removed routes finish the
 * requests in flight, as with hr_router_remove.
 */
HR_EXTERN int hr_txn_commit(hr_txn_t *txn, hr_route_error_t *err);

/** Drops every recorded change and frees the transaction.  NULL is ignored. */
HR_EXTERN void hr_txn_abort(hr_txn_t *txn);

/**
 * Adds middleware for every route whose pattern starts with `prefix` at a
 * segment boundary ("/api" covers "/api" and "/api/...", not "/apix"; NULL
 * or "" covers all routes), on host `host` (NULL: every host).  `before`
 * and `after` may each be NULL, not both.  Each route's chain is flattened
 * into its invoker: before-middleware in registration order, router-level
 * ones first, then its group's (hr_group_use); after-middleware in the
 * reverse order.  Existing routes are recompiled and published atomically.
 * Returns 0, HR_EINVAL, HR_ENOMEM.  Any thread.
 */
HR_EXTERN int hr_router_use(hr_router_t *router, const char *host,
                            const char *prefix, hr_before_cb before,
                            hr_after_cb after, void *udata);

/** Middleware for the routes registered through `group`. */
HR_EXTERN int hr_group_use(hr_group_t *group, hr_before_cb before,
                           hr_after_cb after, void *udata);

/**
 * Head middleware: `head` runs as soon as the header section of a request
 * for a covered route is complete (same coverage as hr_router_use), before
 * "100 Continue" is sent, before a buffered body is read and before the
 * body limit, so that an authentication check can refuse an upload
 * without receiving it: a request whose Content-Length is over the limit
 * (the route's max_body_bytes, or the server's) gets the 401 of a head
 * middleware that answers at once, not the server's 413, which comes only
 * after every head middleware said HR_NEXT.  The body is not available
 * then (hr_request_body is empty).  HR_NEXT goes on (the body is read,
 * then the before-middleware and the handler run); HR_ANSWERED means it
 * answered (or will): the body is not read but discarded (over HTTP/1.1
 * up to 256 KiB that a Content-Length announces, see hr_body_cb in
 * http.h), and the connection is closed after the answer when the client
 * waits for 100 Continue or the body cannot be skipped (more than that,
 * or chunked).  One that answers later, from another loop turn, has a
 * body within the limit read and dropped meanwhile; a body over the limit
 * that a Content-Length announces is held back until the answer (HTTP/1.1:
 * not read; HTTP/2: the stream's window stays shut), and the body's
 * timeouts do not run meanwhile, so such a middleware must answer.  Head
 * middleware runs in registration order, router-level first;
 * after-middleware still runs for the answer.  Returns 0, HR_EINVAL,
 * HR_ENOMEM.  Any thread.
 */
HR_EXTERN int hr_router_use_head(hr_router_t *router, const char *host, const char *prefix,
                                 hr_before_cb head, void *udata);
/** Head middleware for the routes registered through `group`, as
 * hr_router_use_head() adds it for a prefix.  Returns 0, HR_EINVAL,
 * HR_ENOMEM.  Any thread. */
HR_EXTERN int hr_group_use_head(hr_group_t *group, hr_before_cb head, void *udata);

/** One matched parameter: its name (from the matched route's pattern, valid
 * as long as the route is) and its decoded value (a span into the target
 * given to hr_router_match, or into its buffer when decoding changed it). */
typedef struct hr_param_s {
  hr_span_t name;  /**< as the matched route's pattern spells it */
  hr_span_t value; /**< percent-decoded */
} hr_param_t;

/** The result of a match. */
typedef struct hr_match_s {
  /** 200: `route` answers (or, with route NULL, the router answers OPTIONS
   * with `allow`); 301 or 308: redirect to `location`; 400: a malformed or
   * unsafe target (see the matching rules above); 404: no route; 405: see
   * `allow`; 501: a method that is not standard and that no route
   * registers (rule 2 above). */
  int status;
  /** The route (status 200 with a registered route), else NULL.  Valid
   * until the read-side section around the match ends, also when the route
   * is replaced or removed meanwhile (see hr_router_read_lock). */
  const hr_route_t *route;
  size_t nparams;                   /**< parameters in params */
  hr_param_t params[HR_MAX_PARAMS]; /**< the route's parameters, in pattern order */
  /** For 405 and the router's OPTIONS answers: the Allow field value (RFC
   * 9110 §10.2.1): in the route table, valid until the read-side section
   * around the match ends (see hr_router_read_lock), or in the caller's
   * buffer when several routes make it up.  Empty otherwise. */
  hr_span_t allow;
  /** For 301 and 308: the Location value (clean path plus query), in the
   * caller's buffer.  Empty otherwise. */
  hr_span_t location;
  /** The path as matched (decoded, %2F %3F %23 kept encoded) and the query
   * (after '?', not decoded). */
  hr_span_t path;
  hr_span_t query; /**< the query: after '?', not decoded; empty without one */
  /** Bytes of `buf` that suffice for this target with the current route
   * table: set whatever the result, so that a caller that got HR_ENOSPC
   * (with a NULL or short buffer) can retry with that much. */
  size_t need;
} hr_match_t;

/**
 * Matches a request against the current route table.
 *   method  the method token as received;
 *   host    the Host field value (may be empty: default table); for an
 *           absolute-form target its authority is used instead (RFC 9112
 *           §3.2.2);
 *   target  the request target: origin-form ("/a/b?q"), absolute-form
 *           ("http://h/a/b?q") or "*";
 *   buf, buflen  scratch space for decoded values, the redirect Location
 *           and an Allow value made of several routes' methods: only used
 *           when the target contains '\%' or needs cleaning, or several
 *           routes match a path for other methods; may be NULL/0 otherwise.
 *           out->need bytes suffice (4 * target.len + 16 plus the longest
 *           Allow of the table).
 * Makes no allocation.  Parameter values, `allow` and `location` point into
 * `target`, the table or `buf`.  Returns 0 with out->status set, HR_ENOSPC
 * when `buf` is too small for this target (only out->need is meaningful:
 * call again with that much; a route table published in between may need
 * more), or HR_EINVAL (NULL arguments).
 * Any thread, never blocking on writers.  It takes no read-side section of
 * its own (one that ended inside the call would leave `route`, `allow` and
 * the parameter names pointing into a table that may already be
 * reclaimed): when another thread may add, replace or remove routes, or
 * change middleware or answers, meanwhile, call it between
 * hr_router_read_lock() and hr_router_read_unlock() and use its result
 * before the unlock.  Without concurrent changes no section is needed.
 */
HR_EXTERN int hr_router_match(hr_router_t *router, hr_span_t method,
                              hr_span_t host, hr_span_t target, char *buf,
                              size_t buflen, hr_match_t *out);

/**
 * Read-side critical section (RCU).  A route table, and the routes it holds,
 * stay valid until every reader that could have loaded it has left its
 * critical section.  hr_router_match() takes none itself: when other
 * threads may add, replace or remove routes while you match, call
 * hr_router_match() and use its result (`route`, `allow`, parameter names)
 * between hr_router_read_lock() and hr_router_read_unlock(); one section
 * may cover many lookups (the server takes one per processing step of a
 * connection).  A writer called inside a section (from this thread or
 * another) does not free what the section may still read.  Without
 * concurrent changes no section is needed.  Sections nest; they must not
 * block for long (replaced tables wait for them).  Any thread; no
 * registration.
 */
HR_EXTERN void hr_router_read_lock(void);
/** Leaves the read-side critical section that the same thread's last
 * hr_router_read_lock() entered. */
HR_EXTERN void hr_router_read_unlock(void);

/** The pattern a route was registered with, group prefix included (valid as
 * long as the route). */
HR_EXTERN hr_span_t hr_route_pattern(const hr_route_t *route);

/** The methods a route was registered with, as given ("GET,POST", "*"). */
HR_EXTERN hr_span_t hr_route_methods(const hr_route_t *route);

/** The user data given at registration. */
HR_EXTERN void *hr_route_udata(const hr_route_t *route);

/** Buckets of hr_route_stats_t.latency_us: the last one counts latencies
 * of 2^23 microseconds (about 8.4 s) and longer. */
#define HR_LATENCY_BUCKETS 24
/** Counters of one route version, summed over the loops that served it. */
typedef struct hr_route_stats_s {
  uint64_t requests;        /**< handler invocations (middleware answers too) */
  uint64_t responses[6];    /**< [1]..[5]: completed responses by status class
                               (1xx..5xx); [0]: exchanges lost before one */
  /** The request's first byte to the response's completion (as
   * hr_request_outcome's duration_us): bucket i counts latencies below 2^i
   * microseconds (the last bucket: everything longer). */
  uint64_t latency_us[HR_LATENCY_BUCKETS];
  uint64_t latency_sum_us; /**< the sum of the latencies counted above, microseconds */
} hr_route_stats_t;

/**
 * Reads the counters of the route registered with these methods and
 * pattern (compared as by hr_router_remove) on the default host (`host` NULL) or on `host`.  The counters are
 * kept per worker loop without shared writes and summed here; a replaced
 * route starts from zero.  Returns 0 or HR_ENOTFOUND.  Any thread.
 */
HR_EXTERN int hr_router_route_stats(hr_router_t *router, const char *host,
                                    const char *methods, const char *pattern,
                                    hr_route_stats_t *out);

/** Sizes of the current route table. */
typedef struct hr_router_stats_s {
  size_t routes;      /**< registered routes */
  size_t hosts;       /**< host tables besides the default one */
  size_t nodes;       /**< radix tree nodes, all hosts */
  size_t table_bytes; /**< memory of the current snapshot, bytes */
} hr_router_stats_t;

/** Fills *out from the current snapshot.  Any thread. */
HR_EXTERN void hr_router_stats(hr_router_t *router, hr_router_stats_t *out);

/**
 * Writes the route tree of the current snapshot as text, one node per line,
 * indented by depth (for hroute-routes check).  Calls `write` with pieces of
 * the text.  Returns 0 or HR_ENOMEM.  Any thread.
 */
HR_EXTERN int hr_router_dump(hr_router_t *router,
                             void (*write)(void *ctx, const char *p, size_t n),
                             void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_ROUTER_H */
