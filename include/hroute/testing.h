/* SPDX-License-Identifier: MIT */
/**
 * @file
 * An in-process test client, what Go's net/http/httptest gives: a request
 * runs through a router and a server without sockets, and its response
 * comes back as a status, fields and a body, so that handlers can be unit
 * tested with any test framework.
 *
 * The requests take the server's whole path (the strictness checks, llhttp,
 * routing, invokers, middleware, the response rendering and the output
 * queue) over an in-memory connection: HTTP/1.1 as a client sends it, one
 * connection per request.  Everything runs on the calling thread, on a
 * libuv loop the client owns: hr_test_do() feeds the request, runs the loop
 * until the response is complete (so a handler that answers later, from a
 * timer or through hr_response_post() from another thread, is waited for),
 * and parses what the server wrote (RFC 9112: Content-Length or chunked,
 * trailers included).
 *
 * @code
 *   hr_test_t *t;
 *   hr_test_response_t res;
 *   assert(hr_test_new(&t, router, NULL) == 0);
 *   assert(hr_test_get(t, "/hello/ada", &res) == 0);
 *   assert(res.status == 200 && strcmp(res.body, "Hello, ada") == 0);
 *   hr_test_response_free(&res);
 *   hr_test_free(t);
 * @endcode
 */
#ifndef HROUTE_TESTING_H
#define HROUTE_TESTING_H

#include "common.h"
#include "router.h"
#include "server.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A test client: a server for one router, on a loop of its own. */
typedef struct hr_test_s hr_test_t;

/** One request.  Zero it, or set what is needed: only `target` is required. */
typedef struct hr_test_request_s {
  const char *method;       /**< NUL-terminated token; NULL: "GET" */
  const char *target;       /**< the request target, origin-form ("/a/b?x=1"),
                                 sent as given (escapes as the caller wrote them) */
  const char *host;         /**< the Host field value; NULL: "test" */
  const hr_field_t *fields; /**< further fields, in order, sent as given (a
                                 caller's own Host, Content-Length or
                                 Transfer-Encoding replaces the client's) */
  size_t nfields;           /**< entries in fields */
  const void *body;         /**< with body_len bytes, sent with Content-Length
                                 (none when body is NULL and body_len is 0) */
  size_t body_len;          /**< bytes of body */
} hr_test_request_t;

/** A response as the client received it.  Owned by the caller after a
 * successful hr_test_do(); hr_test_response_free() frees it. */
typedef struct hr_test_response_s {
  int status;            /**< the status code, 100..999 */
  hr_field_t *fields;    /**< the header fields, in order; names and values
                              are NUL-terminated, names in the case the
                              server wrote them */
  size_t nfields;        /**< entries in fields */
  char *body;            /**< the content (chunked coding removed), with a
                              NUL after its body_len bytes; "" when none */
  size_t body_len;       /**< bytes of body, the NUL not counted */
  hr_field_t *trailers;  /**< trailer fields of a chunked response */
  size_t ntrailers;      /**< entries in trailers */
  int closed;            /**< the server closed the connection after it
                              ("Connection: close", or framing in doubt) */
} hr_test_response_t;

/**
 * Makes a test client for `router` (the caller's; it must outlive the
 * client): a server made with hr_server_new() and `opts` (NULL for the
 * defaults; its limits, timeouts and hooks apply to the test requests)
 * on a loop the client owns, with no listener.  Returns 0 and stores the
 * client, HR_EINVAL (NULL router or out), HR_ENOMEM, or what
 * hr_server_new() returns.  The client and every call on it belong to the
 * calling thread; handlers run on it, inside hr_test_do().
 */
HR_EXTERN int hr_test_new(hr_test_t **out, hr_router_t *router, const hr_server_options_t *opts);

/**
 * Sends `req` on a new connection and waits for its response: the loop
 * runs until the response is complete or `timeout_ms` (10,000 when 0) of
 * loop time passed.  Fills `out` (which the caller frees with
 * hr_test_response_free(), and only after a 0) and returns 0, or:
 *   HR_EINVAL     NULL arguments, no target, a method, target, host or
 *                 field that is not one a client may send (a control
 *                 byte, CR or LF, a space in the method);
 *   HR_ECLOSED    the server closed the connection without a complete
 *                 response (the handler never answered and the connection
 *                 was cut, or a response that was cut short);
 *   HR_EPARSE     the server wrote something that is not an HTTP/1.1
 *                 response (a bug this client is there to catch);
 *   UV_ETIMEDOUT  no complete response within the time;
 *   HR_ENOMEM.
 * A response to HEAD has no body (its Content-Length is the GET's).
 * Interim responses (1xx other than 101) are skipped; a 101 is returned
 * as it is, and the connection ends with it.  The connection is closed
 * after the response.  Thread: the client's.
 */
HR_EXTERN int hr_test_do(hr_test_t *t, const hr_test_request_t *req, unsigned timeout_ms,
                         hr_test_response_t *out);

/** hr_test_do() of a GET of `target` with nothing else, default timeout. */
HR_EXTERN int hr_test_get(hr_test_t *t, const char *target, hr_test_response_t *out);

/**
 * The value of the first field named `name` (ASCII case-insensitive, RFC
 * 9110 §5.1) in the response's header fields, NUL-terminated, or NULL when
 * there is none.  Points into `res`.  Any thread that may read `res`.
 */
HR_EXTERN const char *hr_test_field(const hr_test_response_t *res, const char *name);

/** Frees what hr_test_do() stored in `res` and zeroes it; NULL is fine. */
HR_EXTERN void hr_test_response_free(hr_test_response_t *res);

/**
 * Closes the client's server (connections still open are cut, as
 * hr_server_close() with a zero deadline does), runs its loop until the
 * shutdown completed, and frees it all.  The router stays the caller's.
 * NULL is fine.  Thread: the client's.
 */
HR_EXTERN void hr_test_free(hr_test_t *t);

#ifdef __cplusplus
}
#endif

#endif /* HROUTE_TESTING_H */
