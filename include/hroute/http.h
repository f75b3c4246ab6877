/* SPDX-License-Identifier: MIT */
/** @file
 * The handler's view of one exchange: the request (RFC 9112 §3, request line;
 * §5, field lines; §6, message body) and the response it answers with.
 *
 * Threads: every function here must be called on the worker loop thread that
 * runs the handler, except hr_response_post(), which any thread may call.
 * A response call (hr_response_*, hr_request_read_body) made from another
 * thread returns HR_ETHREAD and does nothing.
 *
 * Lifetimes: every span a request accessor returns borrows from the
 * connection's buffers and stays valid until the response completes (the
 * last hr_response_send* / hr_response_end call returned).  `req` and `res`
 * themselves are valid until then too, even when the connection closes
 * first: the handler hears of it through its abort callback (and a
 * streaming body callback), and the completing call then returns
 * HR_ECLOSED.  When a shutdown deadline passes first (hr_server_close,
 * hr_server_stop), the response is abandoned: from then on every call on it
 * returns HR_ECLOSED and does nothing, from any thread, and `req`, `res` and
 * their spans stay readable until hr_server_free() -- not after.
 */
#ifndef HROUTE_HTTP_H
#define HROUTE_HTTP_H

#include <sys/socket.h>
#include <uv.h>

#include "common.h"
#include "router.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- request ------------------------------------------------------------ */

/** The method token, as sent (case-sensitive, RFC 9110 §9.1). */
HR_EXTERN hr_span_t hr_request_method(const hr_request_t *req);

/** The request target exactly as sent (RFC 9112 §3.2). */
HR_EXTERN hr_span_t hr_request_target(const hr_request_t *req);

/** The path part of the target: up to the first '?', without the scheme and
 * authority of an absolute-form target.  Not percent-decoded. */
HR_EXTERN hr_span_t hr_request_path(const hr_request_t *req);

/** The query: the bytes after the first '?' (without it), empty if none. */
HR_EXTERN hr_span_t hr_request_query(const hr_request_t *req);

/**
 * The query as decoded pairs (application/x-www-form-urlencoded, form.h:
 * '&' between pairs, '+' a space, "%XX" a byte; repeated keys kept in
 * order, a key without '=' has an empty value).  Parsed on the first call
 * into the request's memory; a key or value that needs no decoding points
 * into the target.  Spans are valid while the request is.  Loop thread of
 * the request only (the first call caches).  Each returns 0, or
 *   HR_ENOTFOUND  no such pair (index past the end, key not present);
 *   HR_EPARSE     a '\%' not followed by two hex digits anywhere in it;
 *   HR_ETOOLARGE  more than hr_server_options_t.max_form_pairs pairs;
 *   HR_ENOMEM, or HR_EINVAL for a NULL request.
 * A handler answers HR_EPARSE and HR_ETOOLARGE with 400 as it sees fit;
 * the raw query stays available through hr_request_query().
 */
HR_EXTERN int hr_request_query_count(hr_request_t *req, size_t *n);
/** Pair `index` in order of appearance; key or value may be NULL. */
HR_EXTERN int hr_request_query_pair(hr_request_t *req, size_t index, hr_span_t *key,
                                    hr_span_t *value);
/** The value of `key` (compared after decoding, byte for byte).  For
 * repeated keys pass a cursor initialised to 0 and call again: each call
 * returns the next one.  `cursor` may be NULL to get the first. */
HR_EXTERN int hr_request_query_get(hr_request_t *req, hr_span_t key, size_t *cursor,
                                   hr_span_t *value);

/**
 * The same for a buffered body (HR_BODY_BUFFER routes) whose Content-Type
 * is application/x-www-form-urlencoded (parameters such as charset
 * ignored): what an HTML form posts.  HR_EINVAL when the request has no
 * such body (another Content-Type, none, or a streaming route); otherwise
 * as the query calls above.  Call from the handler (the body is complete).
 */
HR_EXTERN int hr_request_form_count(hr_request_t *req, size_t *n);
/** Pair `index` of the form body in order of appearance, as
 * hr_request_query_pair() gives the query's; key or value may be NULL. */
HR_EXTERN int hr_request_form_pair(hr_request_t *req, size_t index, hr_span_t *key,
                                   hr_span_t *value);
/** The value of `key` in the form body, as hr_request_query_get() finds it
 * in the query: a cursor initialised to 0 walks repeated keys, NULL gets
 * the first. */
HR_EXTERN int hr_request_form_get(hr_request_t *req, hr_span_t key, size_t *cursor,
                                  hr_span_t *value);

/** The HTTP version as 10 (HTTP/1.0), 11 (HTTP/1.1) or 20 (HTTP/2,
 * RFC 9113). */
HR_EXTERN int hr_request_version(const hr_request_t *req);

/** Number of field lines in the header section (repeated fields count once
 * per line). */
HR_EXTERN size_t hr_request_field_count(const hr_request_t *req);

/** Field line `index` (0-based, in arrival order): name as sent, value with
 * surrounding whitespace removed.  Returns 0 or HR_EINVAL when out of range. */
HR_EXTERN int hr_request_field_at(const hr_request_t *req, size_t index,
                                  hr_span_t *name, hr_span_t *value);

/**
 * Finds a field by name, case-insensitively (RFC 9110 §5.1).  For repeated
 * fields, pass a cursor initialised to 0 and call again: each call returns
 * the next line with that name.  `cursor` may be NULL to get the first.
 * Returns 0 and stores the value, or HR_ENOTFOUND.
 */
HR_EXTERN int hr_request_field(const hr_request_t *req, hr_span_t name,
                               size_t *cursor, hr_span_t *value);

/**
 * Number of trailer field lines the request kept (RFC 9110 §6.5): the
 * fields after a chunked body (HTTP/1.1, RFC 9112 §7.1.2) or in a HEADERS
 * frame after the DATA frames (HTTP/2, RFC 9113 §8.1).  0 until the
 * message is complete: a buffered route's handler (HR_BODY_BUFFER) runs
 * after it is, a streaming route's body callback is told so by status 1
 * (hr_body_cb); before that a section still arriving is never shown in
 * part.  0 for a request without trailers.
 *
 * Every trailer field the client sent is kept, in arrival order, declared
 * in a Trailer field or not (as Go's net/http does for HTTP/1.1; its
 * HTTP/2 server keeps only declared ones), except those a trailer section
 * must not carry (RFC 9110 §6.5.1), which are dropped without failing the
 * request (nginx drops every request trailer): Content-Length,
 * Transfer-Encoding, Trailer, TE, Connection, Keep-Alive,
 * Proxy-Connection, Upgrade (framing); Host (routing); Cache-Control,
 * Expect, Max-Forwards, Pragma, Range and every If-* field (request
 * modifiers); Authorization, Proxy-Authorization, WWW-Authenticate,
 * Proxy-Authenticate, Cookie, Set-Cookie (authentication and
 * credentials); Content-Encoding, Content-Type, Content-Range (content
 * format); Accept, Accept-Charset, Accept-Encoding, Accept-Language
 * (negotiation).  Trailers are never merged into the header fields
 * (hr_request_field does not see them) and change nothing about how the
 * request is handled.
 *
 * A trailer section is bounded as a header section is: more than
 * hr_server_options_t.max_header_fields lines, or more than
 * max_header_bytes bytes (HTTP/1.1: names and values plus 4 bytes a line;
 * HTTP/2: names and values plus 32 bytes a field, RFC 9113 §6.5.2), is
 * answered 431 in the handler's place (HTTP/1.1 then closes the
 * connection; HTTP/2 answers on the stream, or resets it when a response
 * has begun), and a streaming body callback gets HR_ECLOSED.  HTTP/1.1
 * also keeps chunked framing in proportion to the data (413).
 *
 * Loop thread of the request.
 */
HR_EXTERN size_t hr_request_trailer_count(const hr_request_t *req);

/** Trailer field `index` (0-based, in arrival order, below
 * hr_request_trailer_count()): the name as sent (HTTP/2: lower case),
 * the value with surrounding whitespace removed.  Spans are copies in the
 * request's memory, valid until the response completes.  `name` or
 * `value` may be NULL.  Returns 0 or HR_EINVAL when out of range
 * (always before the message is complete).  Loop thread. */
HR_EXTERN int hr_request_trailer_at(const hr_request_t *req, size_t index,
                                    hr_span_t *name, hr_span_t *value);

/**
 * Finds a trailer field by name, case-insensitively (RFC 9110 §5.1), as
 * hr_request_field() finds a header field: for repeated fields pass a
 * cursor initialised to 0 and call again, each call returns the next one;
 * `cursor` may be NULL to get the first.  Returns 0 and stores the value
 * (valid until the response completes; `value` may be NULL), or
 * HR_ENOTFOUND (also before the message is complete, and for the fields
 * hr_request_trailer_count() says are dropped).  Loop thread.
 */
HR_EXTERN int hr_request_trailer(const hr_request_t *req, hr_span_t name,
                                 size_t *cursor, hr_span_t *value);

/** Number of parameters the matched pattern declares. */
HR_EXTERN size_t hr_request_param_count(const hr_request_t *req);

/** Parameter `index` (in pattern order), percent-decoded: a span into the
 * path, or into the request's memory when decoding changed it; valid while
 * the request is.  Bytes from 0x80 are passed as they came, not checked to
 * be UTF-8.  An empty span when out of range. */
HR_EXTERN hr_span_t hr_request_param(const hr_request_t *req, size_t index);

/** The name of parameter `index`, as the matched route's pattern spells it
 * (routes sharing a position may name it differently: each request carries
 * the names of its own route); an empty span when out of range.  Valid
 * while the request is. */
HR_EXTERN hr_span_t hr_request_param_name(const hr_request_t *req, size_t index);

/** The converted value of typed parameter `index` (see hr_param_type_t).
 * Returns 0, or HR_EINVAL when the parameter is not typed. */
HR_EXTERN int hr_request_param_value(const hr_request_t *req, size_t index,
                                     hr_value_t *out);

/** The value of parameter `index` typed with HR_PARAM_OF_TYPE(t): a pointer
 * to an object of that type's value_size, valid until the response
 * completes; NULL when the parameter is not typed that way. */
HR_EXTERN const void *hr_request_param_object(const hr_request_t *req,
                                              size_t index);

/** Parameter by name.  Returns 0 and stores the value, or HR_ENOTFOUND. */
HR_EXTERN int hr_request_param_by_name(const hr_request_t *req, hr_span_t name,
                                       hr_span_t *value);

/** For a 405 answered by a method_not_allowed handler (hr_answers_t): the
 * Allow value; empty otherwise.  Valid while the request is. */
HR_EXTERN hr_span_t hr_request_allow(const hr_request_t *req);

/**
 * The request's id (hr_server_options_t.request_id_field, default
 * "X-Request-Id"; a de-facto field, no RFC): the value of that field when
 * the request's header section was received whole and carries exactly one
 * such field line of 1 to 128 visible ASCII bytes (0x21 to 0x7e), else one
 * the server generates:
 *   "<16 hex digits>-<worker>-<n>", e.g. "4f1c2a9e0b7d3e65-0-1"
 * at most 41 bytes: 64 random bits drawn from getrandom(2) when the server
 * was made (so ids differ across servers and restarts), the worker
 * thread's index (hr_server_start; 0 attached), and that worker's count of
 * ids generated, from 1 (no system call, no lock, no allocation).  Made on
 * the first call, by this function, the response's echo or the access
 * log, and the same from then on: a handler, its middleware, the echo and
 * the log see one value.  An empty span when request ids are off
 * (request_id_field NULL).  The span borrows from the request and is valid
 * while the request is (until the response completes; in after-middleware
 * and the access-log callback too).  Loop thread of the request.
 */
HR_EXTERN hr_span_t hr_request_id(const hr_request_t *req);

/**
 * The status reported, never sent, for a request whose client went away
 * while sending it (nginx's 499, "client closed request"; no RFC): it
 * closed or reset the connection (HTTP/2: reset its stream, or closed or
 * reset the connection) in the middle of the request's body, before any
 * answer went out.  No response is written -- nobody is left to read it --
 * and none is counted as answered: the after-middleware (hr_after_cb)
 * get it as their `status`, hr_request_outcome() as hr_outcome_t.status
 * (with completed 0), the access log as its status, and the route's
 * counters (when its handler or head middleware ran) as a 4xx; the server
 * counts it in hr_server_stats_t.client_aborts, not in bad_requests.  A
 * streaming handler still hears of it through its body callback
 * (HR_ECLOSED) and abort callback.  A client that goes away after its
 * request was whole, while the handler answers, is reported as before (0
 * when nothing was sent).
 */
#define HR_STATUS_CLIENT_CLOSED 499

/** What went out for a request, once its exchange ended. */
typedef struct hr_outcome_s {
  int status;           /**< the status line sent; 0 when none was;
                           HR_STATUS_CLIENT_CLOSED (499) when the client
                           went away mid-request, and nothing was sent */
  int completed;        /**< 1: the response completed; 0: the exchange was
                           lost first (status and bytes say how far it got) */
  uint64_t bytes;       /**< body bytes queued for the client as they go
                           on the wire: after compression, before
                           chunked framing (none for HEAD and 304) */
  uint64_t duration_us; /**< the request's first byte to the response's
                           completion (its last byte queued for writing),
                           or to the end of the exchange when it was lost */
} hr_outcome_t;

/**
 * Fills *out for a request whose response completed: in after-middleware
 * (hr_after_cb), for every answer, the server's own included; the access
 * log reports the same figures.  Returns 0, HR_EINVAL (NULL argument) or
 * HR_ESTATE (the response has not completed: before or in the handler).
 * Loop thread.
 */
HR_EXTERN int hr_request_outcome(const hr_request_t *req, hr_outcome_t *out);

/**
 * Sets the value of request-local `key` (hr_router_local_key) on `req`,
 * replacing the value set before (whose destructor then runs).  NULL
 * clears it.  The first value set on a request takes HR_MAX_LOCALS
 * pointers of the request's memory.  Returns 0, HR_EINVAL (a key this
 * router did not give), HR_ENOMEM.  Loop thread of the request.
 */
HR_EXTERN int hr_request_set_local(hr_request_t *req, hr_local_key_t key, void *value);

/** The value of request-local `key`, or NULL when none is set.  Loop thread
 * of the request. */
HR_EXTERN void *hr_request_local(const hr_request_t *req, hr_local_key_t key);

/** The buffered message body (routes with HR_BODY_BUFFER); empty when the
 * request has none, or for streaming routes. */
HR_EXTERN hr_span_t hr_request_body(const hr_request_t *req);

/**
 * Body callback for streaming routes.  `status` is 0 for a piece of the body
 * in `chunk` (valid only during the call), 1 for the end of the body (chunk
 * empty), or a negative error code when the body cannot complete:
 * HR_ECLOSED (the connection was lost) or HR_ETOOLARGE (the body went over
 * the route's limit, and the server answered 413 in the handler's place;
 * likewise 400 or 408 for broken framing or a stalled body, reported as
 * HR_ECLOSED).  With a negative status the response is complete on the
 * wire: whatever the handler sends afterwards returns HR_ECLOSED, and the
 * after-middleware see the status the server sent (0 when none was).  The
 * handler still ends it with one completing call (hr_response_send or
 * hr_response_end, returning HR_ECLOSED), which releases req and res; the
 * abort callback, if set, runs too.  After a status other than 0 it is not
 * called again.  Chunk extensions are not delivered; trailer fields are
 * read with hr_request_trailer() from the call with status 1 on.
 *
 * An early answer ends the body: once the handler's response is complete
 * (hr_response_send*, hr_response_end) while the body is still arriving,
 * the callback is never called again, not even with a final status, so a
 * handler may free what `udata` points to as soon as its completing call
 * returned.  The server discards the rest of the body: over HTTP/1.1 it
 * reads and drops up to 256 KiB that a Content-Length still announces and
 * keeps the connection (within the body timeouts), and otherwise (more
 * than that, or a chunked body) closes the connection after the response
 * (RFC 9112 §9.6; nginx and Go's net/http do the same); over HTTP/2 the
 * stream is reset with NO_ERROR after the response (RFC 9113 §8.1).
 */
typedef void (*hr_body_cb)(hr_request_t *req, hr_span_t chunk, int status,
                           void *udata);

/**
 * Starts delivering the body of a streaming route to `cb`.  Call it from the
 * handler, before it returns; pieces that arrived with the header section
 * are delivered after the handler returns, never inside this call.  A
 * streaming handler that never calls it has the body read and discarded.
 * Sends 100 Continue first when the client asked for it (RFC 9110 §10.1.1).
 * Returns 0, HR_ESTATE (not a streaming route, or called twice), HR_ENOMEM,
 * HR_ECLOSED (the connection is gone), HR_ETHREAD.
 */
HR_EXTERN int hr_request_read_body(hr_request_t *req, hr_body_cb cb,
                                   void *udata);

/**
 * Backpressure for a streaming body: after hr_request_body_pause the body
 * callback is not called (it may be paused from inside the callback: no
 * further piece of the current read is delivered) until
 * hr_request_body_resume.  While paused the server stops taking the body
 * from the client: over HTTP/1.1 it stops reading the connection, so what
 * the client sends waits in the kernel's buffers and then in the client
 * (at most one read buffer of it is held by the server); over HTTP/2 the
 * stream's flow-control window stays shut (RFC 9113 §5.2), so at most that
 * window (hr_server_options_t.h2_initial_window_bytes) is held, while the
 * connection's window and the other streams go on.  The body's timeouts
 * (body_timeout_ms, body_min_rate_bytes, body_deadline_ms) do not run
 * while paused and start over at the resume.  Pausing twice, or resuming
 * a body that is not paused, does nothing.  Resuming delivers what was
 * held back from the next loop turn on, never inside the call.
 *
 * Valid after hr_request_read_body on a streaming route, on the loop
 * thread.  Returns 0, HR_ESTATE (not a streaming route, or no body
 * callback yet), HR_ECLOSED (the connection is gone), HR_ETHREAD.  A body
 * that already ended (or was ended by an early answer) accepts both calls
 * and nothing more happens.
 */
HR_EXTERN int hr_request_body_pause(hr_request_t *req);
/** Resumes a body paused by hr_request_body_pause (see there). */
HR_EXTERN int hr_request_body_resume(hr_request_t *req);

/** Copies the peer's address into *addr (*len in: its size; out: the
 * address length): the client's as a PROXY protocol header gave it, on a
 * listener that takes one (hr_server_listen_ex), else the socket's peer.
 * Returns 0, HR_EINVAL (NULL argument), UV_ENOTCONN (the connection is
 * gone),
 * UV_ENOBUFS (*len too small for the address a PROXY header gave; use a
 * struct sockaddr_storage), or a negated errno from getpeername(2). */
HR_EXTERN int hr_request_peer(const hr_request_t *req, struct sockaddr *addr,
                              int *len);

/** What a PROXY protocol header (hr_server_listen_ex) said about the
 * connection.  Spans point into memory of the connection's and stay valid
 * as long as `req`. */
typedef struct hr_proxy_info_s {
  int version;                      /**< 1 or 2 */
  int proxied;                      /**< 0: v2 LOCAL or v1 UNKNOWN; src and dst unset */
  struct sockaddr_storage src;      /**< the client */
  struct sockaddr_storage dst;      /**< the address the client connected to */
  struct sockaddr_storage balancer; /**< the peer that sent the header */
  /** @{ */
  hr_span_t alpn, authority, unique_id; /**< v2 TLVs; empty when absent */
  /** @} */
  int has_ssl;                      /**< a v2 SSL TLV came: the client used TLS */
  unsigned ssl_client;              /**< its flags: 0x01 SSL, 0x02 a certificate on the
                                     * connection, 0x04 one in the session */
  uint32_t ssl_verify;              /**< 0: the certificate verified */
  /** The SSL TLV's version, client certificate Common Name and cipher
   * sub-TLVs; empty when absent @{ */
  hr_span_t ssl_version, ssl_cn, ssl_cipher;
  /** @} */
} hr_proxy_info_t;

/** Fills *info.  Returns 0, HR_ENOTFOUND (the connection carried no PROXY
 * header), HR_EINVAL, UV_ENOTCONN (the connection is gone).  Loop thread. */
HR_EXTERN int hr_request_proxy(const hr_request_t *req, hr_proxy_info_t *info);

/** Networks of proxies trusted to report the client (hr_request_client). */
typedef struct hr_trusted_s hr_trusted_t;

/** Compiles `networks` ("10.0.0.0/8", "2001:db8::/32", an address alone;
 * NULL-terminated, at least one) into *out, which is immutable and may be
 * shared by any threads until hr_trusted_free.  Returns 0, HR_EINVAL,
 * HR_ENOMEM.  Any thread. */
HR_EXTERN int hr_trusted_new(hr_trusted_t **out, const char *const *networks);
/** Frees `t` once no thread uses it any more; hr_trusted_free(NULL) is a
 * no-op.  Any thread. */
HR_EXTERN void hr_trusted_free(hr_trusted_t *t);

/**
 * The client's address behind proxies that speak HTTP (for those that speak
 * the PROXY protocol, see hr_server_listen_ex): when the peer
 * (hr_request_peer) is in `t`, the hops the proxies recorded are walked
 * from the nearest back, in Forwarded's for= nodes (RFC 7239 §4, §6) or,
 * without a Forwarded field, X-Forwarded-For's addresses; the first hop
 * not in `t` is the client (the farthest one when all are).  A hop that is
 * not an address ("unknown", an obfuscated name, missing) hides the client:
 * HR_ENOTFOUND.  A peer outside `t` is the client itself: what anybody
 * else writes in those fields is not believed.  Stores the address (its
 * port when the node has a numeric one, else 0) in *out.  Returns 0,
 * HR_ENOTFOUND, HR_EPARSE (a malformed Forwarded or X-Forwarded-For; the
 * handler decides, typically 400), HR_EINVAL, UV_ENOTCONN, HR_ENOMEM.
 * Loop thread.
 */
HR_EXTERN int hr_request_client(hr_request_t *req, const hr_trusted_t *t,
                                struct sockaddr_storage *out);

/** Allocates `size` bytes from the request's arena (8-byte aligned), released
 * in one step when the response completes.  Returns NULL when out of
 * memory. */
HR_EXTERN void *hr_request_alloc(hr_request_t *req, size_t size);

/** The matched route (NULL for the server's own 404/405 answers). */
HR_EXTERN const hr_route_t *hr_request_route(const hr_request_t *req);

/** The loop this request is served on. */
HR_EXTERN uv_loop_t *hr_request_loop(const hr_request_t *req);

/* ---- response ----------------------------------------------------------- */

/**
 * Adds a response field line, copied.  Repeatable (each call adds a line).
 * Must be called before the response starts.  The server adds Date,
 * Content-Length or Transfer-Encoding, and Connection itself: adding those
 * returns HR_EINVAL.  Returns 0, HR_EINVAL (name not a token, value with CR,
 * LF or NUL), HR_ESTATE (already started), HR_ENOMEM, HR_ECLOSED (the
 * connection is gone or the response was abandoned), HR_ETHREAD.
 */
HR_EXTERN int hr_response_add_field(hr_response_t *res, hr_span_t name,
                                    hr_span_t value);

/**
 * Sends a complete response with a copy of `body` (may be NULL when len is
 * 0).  `status` is 200..599 (1xx are sent by the server itself).  Responses
 * to HEAD, and 204 and 304 responses, carry no body (RFC 9110 §9.3.2, §15):
 * for HEAD the Content-Length still says `len`; for 204 and 304 a non-empty
 * body returns HR_EINVAL.  Returns 0, or HR_EINVAL, HR_ESTATE (already
 * started or completed), HR_ENOMEM (out of memory with part of the
 * response already queued: it cannot be framed, so the connection is
 * closed and the response is complete), HR_ECLOSED (the connection was lost, or the server answered
 * in the handler's place: the response is complete and `req`/`res` are no
 * longer valid), HR_ETHREAD (another thread: nothing was done).
 */
HR_EXTERN int hr_response_send(hr_response_t *res, int status,
                               const void *body, size_t len);

/**
 * Sends the server's error answer for `status` (400..599), as the server's
 * own 4xx and 5xx answers are written: the body and Content-Type the
 * router's error_body hook gives for it (hr_answers_t, of the host table
 * the request was routed in), else `text` (NUL-terminated, copied; NULL:
 * the reason phrase and a newline) with Content-Type "text/plain;
 * charset=utf-8" ("text/plain" for the reason phrase, as the server's own
 * answers).  For a handler, middleware or module that refuses a request
 * and wants the host's error format (the static files' 403, 404 and 416
 * and the WebSocket handshake's refusals use it).  Fields added before
 * (Allow, Content-Range...) are sent too; do not add a Content-Type
 * first.  The hook runs inside this call, on the loop thread.  Returns
 * what hr_response_send returns, or HR_EINVAL (status outside
 * 400..599), HR_ESTATE (already started or completed), HR_ENOMEM (the
 * Content-Type field: nothing was sent, the response is still the
 * handler's to complete), HR_ECLOSED, HR_ETHREAD (another thread: nothing
 * was done).
 */
HR_EXTERN int hr_response_error(hr_response_t *res, int status, const char *text);

/**
 * Which coding this response would be compressed with if a body of
 * `length` bytes were sent now with `status`, by the settings that apply
 * to it (the route's hr_route_options_t.compress, its host table's
 * hr_router_set_compress, or the server's hr_server_options_t.compress),
 * the request's Accept-Encoding (RFC 9110 §12.5.3) and the fields added so
 * far (Content-Encoding, Cache-Control: no-transform, and Content-Type
 * unless `media_type` names the type, NUL-terminated, to judge instead):
 * for a handler that compresses a body itself (off the loop thread, or
 * once for many responses) and sends it with hr_response_send_coded(), or
 * that answers 304 (RFC 9110 §15.4.5: the 304 carries the Vary and ETag
 * the 200 would have, so ask with the 200's status, length and type
 * first, add Vary: Accept-Encoding when this says 1 and make the ETag weak
 * when it names a coding).  Stores the
 * coding in *coding (HR_CODING_IDENTITY: none) and its level in *level (0
 * for none).  Returns 1 when the response could have been compressed,
 * whatever the client accepts (then its answer must say Vary:
 * Accept-Encoding: hr_response_send_coded adds it; a handler that sends
 * the body uncoded adds it itself), 0 when compression does not apply, or
 * HR_EINVAL (a NULL argument, a status outside 200..599), HR_ESTATE (the
 * response started), HR_ETHREAD.  Changes nothing.  Loop thread.
 */
HR_EXTERN int hr_response_coding(hr_response_t *res, int status, uint64_t length,
                                 const char *media_type, hr_coding_t *coding, int *level);

/** Called when a borrowed body is no longer needed: after it was written, or
 * when the connection was lost.  Runs on the loop thread, never inside the
 * call that handed the body over.  `res` is the response the body was sent
 * with, already complete: it identifies it, and no call may be made on it
 * (its memory may serve another request by then). */
typedef void (*hr_release_cb)(hr_response_t *res, const void *body,
                              void *udata);

/**
 * Like hr_response_send(), but without copying: `body` must stay valid and
 * unchanged until `release` is called (release may be NULL for static data).
 * `release` is called exactly once, later, when this returns 0 (also when the
 * connection is lost before the body was written); it is never called when
 * this returns an error (the caller keeps the body, and for HR_ECLOSED the
 * response is complete).
 */
HR_EXTERN int hr_response_send_borrowed(hr_response_t *res, int status,
                                        const void *body, size_t len,
                                        hr_release_cb release, void *udata);

/**
 * hr_response_send_borrowed() for a body already compressed with `coding`
 * (HR_CODING_GZIP, HR_CODING_BR or HR_CODING_ZSTD, as hr_response_coding()
 * chose, e.g. by hr_compress()): the response says Content-Encoding, Vary:
 * Accept-Encoding, and a strong ETag becomes weak, as the server's own
 * compression does (RFC 9110 §8.4, §8.8.1, §12.5.5); the body is not
 * compressed again.  `body` and `release` as for hr_response_send_borrowed
 * (release is called exactly once, later, when this returns 0).  Returns
 * 0; HR_EINVAL for a coding other than those three, a bad status, a
 * status without content or 206 (a range of a coded body is not one of
 * the identity's), an empty or NULL body (no valid stream is empty), a
 * response that has a Content-Encoding already, or a coding the
 * request's Accept-Encoding does not take (q=0, not named without "*",
 * or no Accept-Encoding at all: hr_response_coding answers identity
 * then too);
 * HR_ESTATE, HR_ENOMEM (the fields it added are taken back), HR_ECLOSED,
 * HR_ETHREAD; nothing was sent on an error.  Loop thread.
 */
HR_EXTERN int hr_response_send_coded(hr_response_t *res, int status, hr_coding_t coding,
                                     const void *body, size_t len, hr_release_cb release,
                                     void *udata);

/** Called when the server is done with a file body: after it was sent, or
 * when the connection was lost.  Runs on the loop thread, never inside the
 * call that handed the file over; `res` is complete (as for
 * hr_release_cb).  The callback owns `fd` again (close it, or keep it for
 * the next response). */
typedef void (*hr_file_release_cb)(hr_response_t *res, int fd, void *udata);

/**
 * Completes the response with `status` and, as its body, `length` bytes of
 * the open file `fd` from byte `offset` (Content-Length: length; no body
 * goes out for HEAD, as always).  The bytes are not read into memory where
 * the transport allows it: plain TCP sends them with sendfile(2), what the
 * socket takes at each writable event; TLS reads pieces, one at a time,
 * into one buffer (16 KiB, 64 KiB for a long file).  Either way a slow
 * reader costs no more memory than that: the file is never buffered ahead
 * of the client.  The file must hold those bytes while they are sent (an
 * in-place change shows in what is sent): one that ends early, because it
 * shrank, ends the connection after what it held, so the client sees a
 * short body and knows.  A range of 64 KiB or more is read off the loop,
 * on libuv's thread pool (sendfile, or each piece's pread), so a cold
 * disk does not hold the loop; a shorter one is read on the loop (a
 * single disk read at most, usually the page cache).
 * `release(res, fd, udata)` runs exactly once, later, when this returns 0;
 * with `release` NULL the server closes `fd` then.  On an error it is
 * never called and the caller keeps `fd`.  Returns 0, HR_EINVAL (fd < 0,
 * length > 0 with a status that has no body (204, 304), a range past
 * 2^63), HR_ESTATE, HR_ENOMEM, HR_ECLOSED (the connection is gone: the
 * response is complete), HR_ETHREAD.  Loop thread.  RFC 9110 §8.6.
 */
HR_EXTERN int hr_response_send_file(hr_response_t *res, int status, int fd, uint64_t offset,
                                    uint64_t length, hr_file_release_cb release, void *udata);

/** Content length value for hr_response_start meaning "unknown": the body is
 * sent with the chunked transfer coding (HTTP/1.1, RFC 9112 §7.1) or
 * delimited by closing the connection (HTTP/1.0). */
#define HR_LENGTH_UNKNOWN (-1)

/**
 * Starts a streaming response: sends the status line and fields with the
 * next write.  `status` is 200..599; `content_length` is the exact body
 * length in bytes, or HR_LENGTH_UNKNOWN.  Returns 0, HR_EINVAL, HR_ESTATE,
 * HR_ENOMEM (out of memory with part of the head queued: the connection is
 * closed and the response complete),
 * HR_ECLOSED (the connection is gone: end the response, which then returns
 * HR_ECLOSED too), HR_ETHREAD.
 */
HR_EXTERN int hr_response_start(hr_response_t *res, int status,
                                int64_t content_length);

/**
 * Queues a copy of `len` bytes of body.  When the queue of unwritten bytes
 * is already above the server's write_high_water_bytes, nothing is queued
 * and HR_EAGAIN is returned: wait for the drain callback, then write again.
 * Otherwise the write is accepted whatever its size, so the queue never
 * holds more than the mark plus one write.  Writing
 * past a declared content length returns HR_EINVAL.  For HEAD requests the
 * bytes are counted and dropped.  Returns 0, HR_EAGAIN, HR_EINVAL,
 * HR_ESTATE (not started, or ended), HR_ENOMEM (the framing is lost and the
 * connection closed), HR_ECLOSED (the connection is gone), HR_ETHREAD.
 * Neither HR_ENOMEM nor HR_ECLOSED completes the response: end it with
 * hr_response_end, which then returns HR_ECLOSED and releases req and res.
 */
HR_EXTERN int hr_response_write(hr_response_t *res, const void *data,
                                size_t len);

/**
 * Queues `length` bytes of the open file `fd` from `offset` as the next
 * part of a streamed body (hr_response_start), sent as
 * hr_response_send_file sends (sendfile on plain TCP, 16 KiB pieces on
 * TLS).  File bytes hold no memory, so they do not count toward the
 * high-water mark: this never answers HR_EAGAIN, and a later
 * hr_response_write is refused only for the memory queued.  Writing past a
 * declared content length returns HR_EINVAL.  `release(res, fd, udata)`
 * runs exactly once, later, when this returns 0 (NULL: the server closes
 * fd; pass a release callback to queue several ranges of one fd).  Returns
 * 0, HR_EINVAL, HR_ESTATE, HR_ENOMEM (the framing is lost and the
 * connection closed), HR_ECLOSED, HR_ETHREAD; on an error release is not
 * called and the caller keeps fd.  A response the server compresses as it
 * goes (hr_server_options_t.compress) takes no file: HR_ESTATE (give the
 * route no_compress to stream files).
 */
HR_EXTERN int hr_response_write_file(hr_response_t *res, int fd, uint64_t offset,
                                     uint64_t length, hr_file_release_cb release,
                                     void *udata);

/** Drain callback: the queue fell to half the high-water mark or less after a
 * write returned HR_EAGAIN.  Runs on the loop thread.  `status` is 0, or
 * HR_ECLOSED when the connection was lost (end the response then). */
typedef void (*hr_drain_cb)(hr_response_t *res, int status, void *udata);

/** Sets the drain callback (NULL to clear).  Returns 0, HR_ESTATE,
 * HR_ECLOSED (abandoned), HR_ETHREAD. */
HR_EXTERN int hr_response_on_drain(hr_response_t *res, hr_drain_cb cb,
                                   void *udata);

/**
 * Ends a streaming response (for unknown length over HTTP/1.1: writes the
 * last chunk).  When fewer bytes than the declared content length were
 * written the response cannot be framed: the connection is closed and
 * HR_EINVAL returned.  Either way the response is complete afterwards.
 * Returns 0, HR_EINVAL, HR_ESTATE, HR_ENOMEM, HR_ECLOSED (the connection
 * was lost first; complete now), HR_ETHREAD (nothing was done).
 */
HR_EXTERN int hr_response_end(hr_response_t *res);

/**
 * Adds a trailer field line to a streaming response, copied, sent after
 * the body when hr_response_end() ends it (RFC 9110 §6.5): over HTTP/1.1
 * in the last chunk of the chunked coding ("0" CRLF, the trailer field
 * lines, CRLF; RFC 9112 §7.1.2), over HTTP/2 as a HEADERS frame with
 * END_STREAM after the last DATA frame, which then does not end the
 * stream (RFC 9113 §8.1; names in lower case, §8.2).  Repeatable (each
 * call adds a line, in order); gRPC's grpc-status and grpc-message are
 * the common case.
 *
 * Valid between hr_response_start() with HR_LENGTH_UNKNOWN and
 * hr_response_end(), for a response that has a body framed in pieces.
 * Any other response cannot carry trailers and gets HR_ESTATE, never a
 * silent drop: a declared content length, no body (a HEAD request, 204,
 * 304), or an HTTP/1.0 request (its body is delimited by the connection's
 * end; hr_request_version() says 10).  A whole response
 * (hr_response_send*) has none either.
 *
 * hroute does not declare the names in the head: a handler that knows
 * them before hr_response_start() may add a Trailer field
 * (hr_response_add_field(res, "Trailer", "grpc-status, grpc-message"),
 * RFC 9110 §6.6.2).  Trailers are sent whether or not the request's TE
 * field says "trailers": a recipient may discard them (RFC 9110 §6.5).
 *
 * Returns 0, or
 *   HR_EINVAL  `name` empty or not a token (RFC 9110 §5.6.2), one the
 *              server frames itself (Date, Content-Length,
 *              Transfer-Encoding, Connection), or one a trailer section
 *              must not carry (the list at hr_request_trailer_count());
 *              `value` holding CR, LF or NUL;
 *   HR_ESTATE  not started, started so that it cannot carry trailers
 *              (above), or already ended;
 *   HR_ENOMEM, HR_ECLOSED (the connection is gone; end the response),
 *   HR_ETHREAD.
 * Nothing is added on an error.  hr_response_end() answers HR_ENOMEM
 * when the trailer section cannot be framed (the connection is closed or
 * the stream reset, as for a body).  Loop thread.
 */
HR_EXTERN int hr_response_add_trailer(hr_response_t *res, hr_span_t name,
                                      hr_span_t value);

/** Called when the connection is lost before the response completed (peer
 * closed, timeout, the server answered in the handler's place, server
 * shutdown).  The handler must still complete the response (the completing
 * call returns HR_ECLOSED, and may be made inside this callback); until
 * then req and res stay valid, but past a shutdown deadline the response is
 * abandoned (see the top of this file).  Runs on the loop thread. */
typedef void (*hr_abort_cb)(hr_response_t *res, void *udata);

/** Sets the abort callback (NULL to clear).  Returns 0, HR_ESTATE,
 * HR_ECLOSED (abandoned), HR_ETHREAD. */
HR_EXTERN int hr_response_on_abort(hr_response_t *res, hr_abort_cb cb,
                                   void *udata);

/** Callback run on the response's loop thread by hr_response_post(). */
typedef void (*hr_post_cb)(hr_response_t *res, void *udata);

/**
 * Runs `cb(res, udata)` on the loop thread that serves `res`, soon, never
 * inside this call: the way to complete a response from another thread.
 * Safe from any thread while the response is not complete; the callback
 * runs even when the connection was lost or the server is shutting down
 * (a shutdown waits for open responses until its deadline), and completing
 * the response from it then returns HR_ECLOSED.  A callback queued when
 * the deadline passes still runs, on the loop or on the thread that stops
 * the server, and its calls return HR_ECLOSED.  Allocates one small node.
 * Returns 0, HR_ENOMEM, HR_EINVAL (cb NULL), HR_ECLOSED (the response was
 * abandoned, or its worker has finished); cb does not run on an error.
 */
HR_EXTERN int hr_response_post(hr_response_t *res, hr_post_cb cb,
                               void *udata);

/** The request this response answers. */
HR_EXTERN hr_request_t *hr_response_request(hr_response_t *res);

/** Returns the standard reason phrase for `status` ("OK", "Not Found", ...:
 * RFC 9110 §15 and the rest of the IANA status code registry) or "" for
 * codes without one (static storage). */
HR_EXTERN const char *hr_status_reason(int status);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_HTTP_H */
