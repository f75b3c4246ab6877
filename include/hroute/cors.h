/* SPDX-License-Identifier: MIT */
/**
 * @file
 * Cross-origin resource sharing: a before-middleware that speaks the
 * server's side of the Fetch standard's CORS protocol
 * (https://fetch.spec.whatwg.org/#http-cors-protocol).
 *
 * For a request with an Origin field whose origin is allowed:
 *   - a preflight (OPTIONS with Access-Control-Request-Method) whose method
 *     and request headers are allowed is answered at once, 204, before any
 *     handler: Access-Control-Allow-Origin, -Allow-Methods, -Allow-Headers
 *     (when some were asked for), -Allow-Credentials, -Max-Age;
 *   - any other request goes on to its handler (or to the router's own
 *     answer) with Access-Control-Allow-Origin, -Allow-Credentials and
 *     -Expose-Headers added.
 * A request from an origin that is not allowed, or a preflight for a
 * method or header that is not, goes on untouched but for Vary: the
 * router answers it as usual (an OPTIONS with its Allow, a 404...), and
 * the browser, finding no Access-Control-Allow-Origin, refuses it.  Every
 * response says "Vary: Origin" unless any origin gets "*", and a
 * preflight's also names Access-Control-Request-Method and
 * -Request-Headers (RFC 9110 §12.5.5), so that caches keep answers apart.
 *
 * Register it first, router-wide and without a prefix, so that it runs
 * before other middleware and for the router's own answers too (404,
 * 405, 501, the automatic OPTIONS).  The server's refusals of requests it
 * cannot take (400, 408, 413 for a body over the limit, 414, 431) pass no
 * before-middleware and carry no CORS fields:
 * @code
 *   static const char *const origins[] = {"https://app.example"};
 *   hr_cors_options_t o;
 *   hr_cors_t *cors;
 *   hr_cors_options_init(&o);
 *   o.origins = origins;
 *   o.norigins = 1;
 *   o.credentials = 1;
 *   hr_cors_new(&cors, router, &o);
 *   hr_router_use(router, NULL, NULL, hr_cors_before, NULL, cors);
 * @endcode
 */
#ifndef HROUTE_CORS_H
#define HROUTE_CORS_H

#include "common.h"
#include "error.h"
#include "http.h"
#include "router.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Decides whether `origin` (the Origin field value, as sent: "null" or a
 * serialized origin such as "https://a.example:8443") is allowed: nonzero
 * for yes.  Runs on the loop thread of the request; must not block. */
typedef int (*hr_cors_origin_cb)(hr_span_t origin, void *udata);

/** What is allowed.  Set with hr_cors_options_init(), then change what is
 * needed; the strings are copied by hr_cors_new(). */
typedef struct hr_cors_options_s {
  /** Origins allowed exactly (ASCII case-insensitive: scheme and host are
   * lower case in a serialized origin), such as "https://app.example" or
   * "http://localhost:8080"; "*" alone allows every origin (and then the
   * answer is "*" itself, never with credentials). */
  const char *const *origins;
  size_t norigins; /**< entries in origins */
  /** Host suffixes allowed on https origins: ".example.com" allows
   * "https://a.example.com" and "https://b.a.example.com:8443", not
   * "https://example.com" nor "http://a.example.com".  Each must start
   * with '.'. */
  const char *const *https_suffixes;
  size_t nsuffixes; /**< entries in https_suffixes */
  /** Asked after the lists when neither allows the origin; NULL: none. */
  hr_cors_origin_cb origin_cb;
  void *origin_udata; /**< passed to origin_cb */
  /** Methods a preflight may ask for, comma-separated ("GET, POST, PUT"),
   * compared case-sensitively (methods are, RFC 9110 §9.1).  NULL (the
   * default): those the router answers at the path, its Allow set. */
  const char *methods;
  /** Request fields a preflight may ask for, comma-separated, compared
   * case-insensitively ("Content-Type, Authorization").  NULL (the
   * default): whatever the preflight asks for is allowed and echoed. */
  const char *allow_headers;
  /** Response fields a script may read beyond the safelisted ones,
   * comma-separated ("ETag, Link"); NULL: none. */
  const char *expose_headers;
  /** Nonzero: credentials (cookies, HTTP authentication) are allowed:
   * Access-Control-Allow-Credentials: true.  Refused with origin "*". */
  int credentials;
  /** Seconds a browser may cache a preflight's answer (Access-Control-Max-
   * Age); -1 (the default): the field is not sent (browsers then keep it 5
   * seconds). */
  long max_age;
} hr_cors_options_t;

/** A CORS policy (hr_cors_new); immutable once made. */
typedef struct hr_cors_s hr_cors_t;

/** Fills `o` with the defaults: no origin allowed, methods from the
 * router, any requested header, nothing exposed, no credentials, no
 * Max-Age. */
HR_EXTERN void hr_cors_options_init(hr_cors_options_t *o);

/**
 * Makes a policy for the requests of `router` (whose routes give the
 * methods when o->methods is NULL).  Copies what `o` points to.  Returns 0
 * and stores it, HR_EINVAL (NULL arguments, "*" among other origins or
 * with credentials, a suffix without its leading '.', an origin, method or
 * field list with a control byte, a negative max_age other than -1), or
 * HR_ENOMEM.  Any thread.  Free it with hr_cors_free() once no router
 * uses it (after the router is freed, or its middleware is: never while a
 * request may still run it).
 */
HR_EXTERN int hr_cors_new(hr_cors_t **out, hr_router_t *router, const hr_cors_options_t *o);

/** Frees a policy; NULL is fine. */
HR_EXTERN void hr_cors_free(hr_cors_t *cors);

/**
 * The middleware (an hr_before_cb): give it to hr_router_use() (or
 * hr_group_use()) with the policy as `udata`.  Returns HR_ANSWERED for a
 * preflight it answered, else HR_NEXT.  Out of memory while adding fields
 * answers 503.  Loop thread of the request.
 */
HR_EXTERN hr_next_t hr_cors_before(hr_request_t *req, hr_response_t *res, void *udata);

#ifdef __cplusplus
}
#endif

#endif /* HROUTE_CORS_H */
