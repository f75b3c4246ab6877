/* SPDX-License-Identifier: MIT */
/** @file
 * The HTTP server: HTTP/1.1 (RFC 9112) and HTTP/2 (RFC 9113, by ALPN on
 * TLS listeners and with prior knowledge on plain ones that allow it,
 * hr_listen_options_t.h2): listeners, persistent connections,
 * pipelining, streams, limits and timeouts, graceful shutdown.  It serves a router
 * either from a libuv loop the host owns (hr_server_attach) or from its own
 * worker threads, one loop each, sharing each listening socket or with one
 * SO_REUSEPORT socket each (hr_server_start).  All workers share one
 * router.
 */
#ifndef HROUTE_SERVER_H
#define HROUTE_SERVER_H

#include <sys/socket.h>
#include <uv.h>

#include "common.h"
#include "router.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A server: listeners, worker loops, connections and their limits, for
 * one router; opaque.  Made by hr_server_new, freed by hr_server_free. */
typedef struct hr_server_s hr_server_t;

/** Severity for the log sink. */
typedef enum hr_log_level_e {
  /** A failure the host should act on (hroute logs none at present). */
  HR_LOG_ERROR = 0,
  /** Service degraded: accepting paused, responses abandoned. */
  HR_LOG_WARN = 1,
  /** A request answered with an error and closed, with the reason. */
  HR_LOG_INFO = 2,
  /** Detail for debugging (hroute logs none at present). */
  HR_LOG_DEBUG = 3
} hr_log_level_t;

/** Log sink: `msg` is one line, NUL-terminated, at most 255 bytes, valid
 * during the call.  May be called from every worker thread concurrently.
 * Logged: requests answered with an error status and closed (HR_LOG_INFO,
 * with the reason), connections closed at their PROXY protocol header
 * (HR_LOG_INFO, with the peer and the reason: untrusted, missing,
 * malformed, truncated), pauses in accepting when the process runs out of file
 * descriptors (HR_LOG_WARN), and, when a shutdown deadline passes, how many
 * responses handlers still hold and each one abandoned, with its method,
 * target and route (HR_LOG_WARN). */
typedef void (*hr_log_cb)(void *ctx, hr_log_level_t level, const char *msg);

/** What an access-log line says (hr_server_options_t.access_log). */
typedef enum hr_access_format_e {
  /** Common Log Format: host - - [10/Oct/2000:13:55:36 +0000] "GET /a HTTP/1.1"
   * 200 2326 */
  HR_ACCESS_COMMON = 0,
  /** Combined: Common, then "Referer" "User-Agent"; with request ids on
   * (hr_server_options_t.request_id_field), then the id quoted, as
   * nginx's "$request_id" at the end of a custom log_format:
   * ... "Referer" "User-Agent" "4f1c2a9e0b7d3e65-0-1".  Common lines carry
   * no id; with ids off, JSON lines have no "request_id" either. */
  HR_ACCESS_COMBINED = 1,
  /** One JSON object per line: {"time":"2000-10-10T13:55:36Z","peer":"::1",
   * "method":"GET","target":"/a","version":"HTTP/1.1","host":"h",
   * "status":200,"bytes":2326,"duration_us":153,"referer":"",
   * "user_agent":"curl/8","request_id":"4f1c2a9e0b7d3e65-0-1"}; a byte
   * that is not part of well-formed UTF-8 is written U+FFFD, so that every
   * line is valid JSON */
  HR_ACCESS_JSON = 2
} hr_access_format_t;

/** One response, as the access log reports it.  Spans point into the
 * request and are valid during the callback only.  `host` is the one the
 * request was routed by: an absolute-form target's authority, else the
 * Host field. */
typedef struct hr_access_entry_s {
  /** The request's method, target and host, and its Referer and User-Agent
   * field values; empty when absent @{ */
  hr_span_t method, target, host, referer, user_agent;
  /** @} */
  int version;          /**< 10 or 11; 0 when the request line's version was
                           not parsed: the request was cut short, or refused
                           before (method and target may then be partial or
                           empty, and the line says "-") */
  int status;           /**< as sent; 0 when no response went out */
  uint64_t bytes;       /**< body bytes of the response as sent: compressed
                           when it was (hr_outcome_t.bytes) */
  uint64_t duration_us; /**< request's first byte to the response completed */
  char peer[48];        /**< the client's address, text (empty if unknown) */
  /** The request's id, as hr_request_id() gives it (the same bytes the
   * response echoed); empty when request ids are off. */
  hr_span_t request_id;
} hr_access_entry_t;

/** Receives one access-log line (without the newline; `len` bytes, valid
 * during the call only) and its fields, on the loop thread that served the
 * request, once per request that reached the server (a response, or a
 * request cut off before one: status 0). */
typedef void (*hr_access_log_cb)(void *ctx, const char *line, size_t len,
                                 const hr_access_entry_t *entry);

/** Server settings; hr_server_options_init() fills the defaults shown. */
typedef struct hr_server_options_s {
  const hr_allocator_t *allocator; /**< NULL: libc */
  /** Request line longer than this (bytes, without CRLF) -> 414.  8192. */
  size_t max_request_line_bytes;
  /** Header section (request line + field lines + empty line) longer than
   * this (bytes) -> 431.  16384.  A request's trailer section is bounded
   * by it too (hr_request_trailer_count). */
  size_t max_header_bytes;
  /** More field lines than this -> 431; the same for trailer fields.
   * 100. */
  size_t max_header_fields;
  /** Default body limit in bytes (a route may set its own) -> 413.  1 MiB. */
  uint64_t max_body_bytes;
  /** Open connections per server; further ones are accepted and closed at
   * once.  10000; 0 means no cap. */
  unsigned max_connections;
  /** Time to receive a whole header section, from its first byte -> 408 and
   * close (slowloris).  10000 ms. */
  uint64_t header_timeout_ms;
  /** Idle time allowed between requests on a persistent connection, then
   * close.  5000 ms. */
  uint64_t keepalive_timeout_ms;
  /** Longest gap between two pieces of a message body -> 408 and close.
   * 10000 ms. */
  uint64_t body_timeout_ms;
  /** Slowest pace of a message body, in bytes per second, averaged over
   * each window of body_rate_window_ms: a body that brought less in a
   * window -> 408 (and close on HTTP/1.1; the stream on HTTP/2).  The
   * gap timeout alone lets a client that sends a byte every few seconds
   * hold a connection for as long as it likes.  Counted only while the
   * body is due: not while the handler paused it (hr_request_body_pause)
   * or the client waits for 100 Continue.  1024; 0 turns it off (the model
   * is Apache's mod_reqtimeout MinRate). */
  uint64_t body_min_rate_bytes;
  /** The window of body_min_rate_bytes, in ms.  10000; 0 means 10000. */
  uint64_t body_rate_window_ms;
  /** Longest time a whole message body may take, from when it became due
   * (its header section, or 100 Continue) -> 408.  0 (the default): no
   * overall deadline, as with nginx and Go's net/http; the gap and the
   * pace above still apply. */
  uint64_t body_deadline_ms;
  /** Longest time queued output may make no progress, then close.
   * Progress is bytes written, or bytes of ours the peer acknowledged (a
   * slow reader draining a large socket buffer).  10000 ms.  For this and
   * the three timeouts above, bytes of the peer's that already wait unread
   * when a deadline passes (the loop ran late) are read before it is
   * decided. */
  uint64_t write_timeout_ms;
  /** Queued unwritten bytes above which hr_response_write answers HR_EAGAIN
   * and the server stops reading pipelined requests.  65536. */
  size_t write_high_water_bytes;
  /** listen(2) backlog.  511. */
  int backlog;
  /** Access log: NULL (the default) is off, and costs nothing per request;
   * else called once per request with a line in access_format.  While it is
   * on, each connection keeps its peer's address as text (48 bytes more per
   * connection), read from the socket at its first line. */
  hr_access_log_cb access_log;
  /** Passed to access_log unchanged. */
  void *access_log_ctx;
  /** What its lines look like: HR_ACCESS_COMMON (the default),
   * HR_ACCESS_COMBINED or HR_ACCESS_JSON. */
  hr_access_format_t access_format;
  /** Request ids (hr_request_id(), http.h): the field a request's id is
   * taken from and its response echoes it in.  "X-Request-Id" (the
   * de-facto name: Heroku's router, Rails, Phoenix, nginx's $request_id
   * passed on by proxy_set_header).  A request with exactly one such field
   * whose value is 1 to 128 visible ASCII bytes (VCHAR, RFC 5234; no
   * space) keeps that id; any other request gets one generated, unique
   * across workers and across servers and restarts (see hr_request_id).
   * Must be a token (RFC 9110 §5.6.2) of at most 64 bytes and not a field
   * the server writes itself (Date, Content-Length, Transfer-Encoding,
   * Connection), else hr_server_new answers HR_EINVAL; copied there.
   * NULL turns request ids off: hr_request_id() is empty, nothing is
   * echoed and access-log lines are the classic formats.  An options
   * struct zeroed rather than initialised has them off. */
  const char *request_id_field;
  /** 1: every final response (status 200 to 599) carries the request id
   * in request_id_field: a handler's, and the server's own answers (404,
   * 405, 501, redirects, and the errors that end a connection: 400, 408,
   * 413, 414, 431, 505...), as Rails and Phoenix do, so that a client can
   * quote it.  A response whose own fields (hr_response_add_field) name
   * request_id_field already keeps its own value.  Not on 1xx responses.
   * 0 (the default, as nginx's and Envoy's): never echoed; the id is still
   * adopted, generated (only when something asks for it) and logged.
   * Ignored with ids off. */
  int request_id_echo;
  /** Most pairs a request's query, or its urlencoded form body, may hold:
   * with more, hr_request_query_* / hr_request_form_* answer HR_ETOOLARGE
   * (PHP's max_input_vars is the same idea).  1000; 0 means 1000. */
  size_t max_form_pairs;
  hr_log_cb log;  /**< NULL: no logging */
  /** Passed to log unchanged. */
  void *log_ctx;
  /** HTTP/2 (RFC 9113), on listeners that speak it (hr_listen_options_t.h2):
   * streams a client may have open at once, announced in SETTINGS
   * (SETTINGS_MAX_CONCURRENT_STREAMS, §6.5.2).  A HEADERS frame past it
   * is refused with RST_STREAM(REFUSED_STREAM) while the client has not
   * acknowledged the setting; after that, nghttp2 1.52 ends the
   * connection with GOAWAY(PROTOCOL_ERROR) (where §5.1.2 asks for a stream
   * error; only a client that ignores the limit it acknowledged meets
   * it).  100, as nginx and h2o; 0
   * means 100.  The decoded header list of a request is bounded by
   * max_header_bytes (each field counted as name + value + 32 bytes,
   * §6.5.2, SETTINGS_MAX_HEADER_LIST_SIZE) and max_header_fields: past
   * either, 431 on that stream. */
  uint32_t h2_max_concurrent_streams;
  /** HTTP/2: the flow-control window each request body starts with, in
   * bytes (SETTINGS_INITIAL_WINDOW_SIZE, §6.9.2); the window is opened
   * again only as the handler consumes the body.  65535; 0 means 65535;
   * at most 2^31 - 1. */
  uint32_t h2_initial_window_bytes;
  /** HTTP/2: the largest frame payload the server accepts, in bytes
   * (SETTINGS_MAX_FRAME_SIZE, §6.5.2): 16384 to 16777215.  16384; 0 means
   * 16384. */
  uint32_t h2_max_frame_bytes;
  /** HTTP/2: stream resets a connection may cause -- RST_STREAM frames the
   * client sends, and streams the server resets because of the client's
   * errors -- as a token bucket: h2_reset_burst at once, refilled at
   * h2_reset_rate a second.  Past it the connection ends with
   * GOAWAY(ENHANCE_YOUR_CALM) (Rapid Reset, CVE-2023-44487; MadeYouReset,
   * 2025).  200 and 33; 0 means those. */
  uint32_t h2_reset_burst;
  uint32_t h2_reset_rate; /**< resets a second refilled; see h2_reset_burst */
  /** Response compression (hr_compress_options_t, copied by
   * hr_server_new); NULL, the default: none. */
  const hr_compress_options_t *compress;
} hr_server_options_t;

/** Fills `opts` with the defaults above. */
HR_EXTERN void hr_server_options_init(hr_server_options_t *opts);

/**
 * Creates a server for `router` (which must outlive it).  `opts` may be NULL.
 * Returns 0 and stores the server in *out, or HR_EINVAL / HR_ENOMEM.  Any
 * thread.
 */
HR_EXTERN int hr_server_new(hr_server_t **out, hr_router_t *router,
                            const hr_server_options_t *opts);

/**
 * Adds a TCP listening address: `host` is a numeric IPv4 or IPv6 address
 * ("127.0.0.1", "::1", "0.0.0.0", "::") or a host name ("localhost",
 * "ip6-localhost", "www.example.com"); IPv6 listeners are IPv6-only, so
 * "0.0.0.0" and "::" can both be added.  A name is resolved now, with
 * getaddrinfo (/etc/hosts, then DNS as the system is configured: the call
 * blocks meanwhile), and the server listens on each IPv4 and IPv6 address
 * it gives, in getaddrinfo's order, at most 16, repeats left out: for
 * "localhost", 127.0.0.1 and, where /etc/hosts says so, ::1.  These
 * addresses are one listening address for every call that takes an index
 * (hr_server_port, hr_server_tls_update...): the call's index is its place
 * among all hr_server_listen* calls, however many addresses it added.
 * They share one port: with `port` 0 the first picks a free one when the
 * server starts and the others bind the same (should it be taken on one
 * of them, they all try again with another, 16 times at most), and
 * hr_server_port reports that one port.  A text of only digits and dots
 * that is no IPv4 address ("1.2.3"), or one with ':' that is no IPv6
 * address, is refused rather than resolved.  Call before
 * hr_server_attach / hr_server_start.  Returns 0, HR_EINVAL (bad address
 * or port, or already started), a libuv getaddrinfo code (UV_EAI_NONAME:
 * the name does not resolve, UV_EAI_AGAIN...), HR_ENOMEM; a failure records
 * its detail (hr_error_detail: "resolve \"x.invalid\": Name or service not
 * known").  Any thread.
 */
HR_EXTERN int hr_server_listen(hr_server_t *server, const char *host, int port);

/** How a listener takes the PROXY protocol header (HAProxy's
 * doc/proxy-protocol.txt, versions 1 and 2), which a load balancer sends
 * first on each connection to say whose it is. */
typedef enum hr_proxy_mode_e {
  HR_PROXY_OFF = 0,      /**< no header expected; one is served as HTTP (and refused there) */
  HR_PROXY_OPTIONAL = 1, /**< trusted peers may send one */
  HR_PROXY_REQUIRED = 2  /**< trusted peers must send one; without it they are refused */
} hr_proxy_mode_t;

/** A listening address's settings; hr_listen_options_init() fills the
 * defaults (plain TCP, no PROXY header). */
typedef struct hr_listen_options_s {
  /** Whether connections start with a PROXY header: HR_PROXY_OFF (the
   * default), HR_PROXY_OPTIONAL or HR_PROXY_REQUIRED. */
  hr_proxy_mode_t proxy;
  /** With proxy on: the networks ("10.0.0.0/8", "2001:db8::/32", an
   * address alone) whose connections may carry the header, NULL-
   * terminated, at least one.  A peer outside them that sends a header is
   * refused (the connection is closed); one that sends none is served as
   * itself.  Copied during the listen call (hr_server_listen_ex,
   * hr_server_listen_fd, hr_server_listen_activated) only. */
  const char *const *proxy_trusted;
  /** 0 (the default): one listening socket, which every worker thread
   * polls; each takes one new connection per wake-up, so they share them,
   * and no other socket can bind the port.  1: each worker binds a socket
   * of its own with SO_REUSEPORT and the kernel spreads new connections
   * over them evenly (a little faster under many new connections), but
   * then any process of the same user can bind the port too and take a
   * share of the connections (nginx's "reuseport").  Not for
   * hr_server_listen_fd. */
  int reuseport;
  /** Not NULL: the listener speaks TLS with these settings (see
   * include/hroute/tls.h, hr_server_listen_tls), read and checked during
   * the call.  With the PROXY protocol too, its header comes before the
   * TLS handshake, as HAProxy sends it. */
  const struct hr_tls_options_s *tls;
  /** Which HTTP versions the listener speaks (hr_h2_mode_t): by default
   * HTTP/2 on TLS listeners (offered by ALPN, RFC 9113 §3.2, preferred to
   * http/1.1 when a client offers both) and HTTP/1.1 alone on plain
   * ones.  A value outside hr_h2_mode_t: the listen call answers
   * HR_EINVAL. */
  int h2;
} hr_listen_options_t;

/** hr_listen_options_t.h2: which HTTP versions a listener speaks. */
typedef enum hr_h2_mode_e {
  /** TLS: "h2" and "http/1.1" offered by ALPN; plain TCP: HTTP/1.1 only. */
  HR_H2_AUTO = 0,
  /** HTTP/1.1 only: TLS offers "http/1.1" alone. */
  HR_H2_OFF = 1,
  /** As HR_H2_AUTO, and on plain TCP also HTTP/2 with prior knowledge
   * ("h2c", RFC 9113 §3.3): a connection whose first bytes are the client
   * connection preface is served as HTTP/2, any other as HTTP/1.1.  The
   * Upgrade: h2c path is not offered (RFC 9113 §3.1 deprecates it).
   * First bytes that are neither the preface nor an HTTP/1.x request line
   * close the connection without an answer (to an HTTP/2 client an
   * invalid preface is a connection error, §3.4). */
  HR_H2_ON = 2
} hr_h2_mode_t;

/** Fills `opts` with the defaults: HR_PROXY_OFF, no trusted networks.  Any
 * thread. */
HR_EXTERN void hr_listen_options_init(hr_listen_options_t *opts);

/**
 * Adds a TCP listening address as hr_server_listen() does, with `opts`
 * (NULL: the defaults).  With the PROXY protocol on, a trusted peer's
 * header is read before anything else, within the server's
 * header_timeout_ms; a malformed or truncated one, or one longer than the
 * read buffer, closes the connection.  hr_request_peer() then returns the
 * client's address it carries (v2 LOCAL and v1 UNKNOWN: the connection's
 * own), hr_request_proxy() the rest; the access log shows the client.
 * Returns 0, HR_EINVAL (bad address, port, network, no trusted network
 * with proxy on, already started), a getaddrinfo code (see
 * hr_server_listen), HR_ENOMEM, HR_ETLS (opts->tls, see
 * hr_server_listen_tls); hr_error_detail says why.  Any thread, before
 * start.
 */
HR_EXTERN int hr_server_listen_ex(hr_server_t *server, const char *host, int port,
                                  const hr_listen_options_t *opts);

/**
 * Serves on `fd`, a listening TCP socket the host made or was handed: by
 * systemd's socket activation (LISTEN_FDS, from descriptor 3), or by a
 * process it replaces, so that no connection is refused during the
 * hand-over.  The server takes `fd` (it is made non-blocking and
 * close-on-exec, and closed by hr_server_free; pass a dup to keep one);
 * every worker polls a descriptor of its own of that one socket, so no
 * other socket joins its port.  `opts` as for hr_server_listen_ex (NULL:
 * the defaults).  hr_server_port gives its port.  Returns 0, HR_EINVAL
 * (not a listening TCP socket of IPv4 or IPv6, a bad option, already
 * started: the caller keeps fd then), HR_ENOMEM, a negated errno.  Any
 * thread, before start.
 */
HR_EXTERN int hr_server_listen_fd(hr_server_t *server, int fd, const hr_listen_options_t *opts);

/**
 * systemd socket activation (sd_listen_fds(3)): when LISTEN_PID is this
 * process's id and LISTEN_FDS is n, serves on descriptors 3 to 3 + n - 1
 * with hr_server_listen_fd() and `opts` (NULL: the defaults), in that
 * order, then unsets LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES so that
 * child processes do not take them.  *count is n, or 0 when the variables
 * are absent or name another process (nothing is done then).  A
 * supervisor that keeps the sockets open across restarts (systemd, or a
 * process handing over to its successor) loses no connection: they wait
 * in the sockets' backlog meanwhile.  Returns 0, HR_EINVAL (server or
 * count NULL, a variable that is not a decimal number, a descriptor that
 * is not a listening TCP socket: the ones before it are the server's
 * then), or what hr_server_listen_fd() returns.  Call before start, from
 * the main thread while no other thread reads the environment (getenv and
 * unsetenv are not thread-safe).
 */
HR_EXTERN int hr_server_listen_activated(hr_server_t *server, const hr_listen_options_t *opts,
                                         size_t *count);

/**
 * Serves on a loop the host owns and runs.  Binds and listens on every
 * address now (errors are returned here: UV_EADDRINUSE, ...; the error
 * detail names the step and the address: "bind [::1]:8080: address
 * already in use", see hr_error_detail).  Call on the loop's thread, once
 * per server.  Returns 0, HR_ESTATE, HR_EINVAL (no address), HR_ENOMEM,
 * or a libuv error.
 */
HR_EXTERN int hr_server_attach(hr_server_t *server, uv_loop_t *loop);

/**
 * Starts `nthreads` (1..256) worker threads, each with its own loop
 * polling every listening address: one socket per address that all of them
 * share, or, for addresses listened on with reuseport, one SO_REUSEPORT
 * socket per worker (hr_listen_options_t).  Binds every socket before
 * returning (errors are returned here, with the detail of a bind, as for
 * hr_server_attach) and returns once every worker is
 * ready to accept.  The worker threads block SIGPIPE (file bodies go out
 * with sendfile(2), which cannot ask for no signal); handlers running on
 * them see EPIPE instead of the signal.  Any thread.  Returns 0, HR_EINVAL, HR_ESTATE, HR_ENOMEM,
 * or a libuv error.
 */
HR_EXTERN int hr_server_start(hr_server_t *server, unsigned nthreads);

/** Called when a graceful shutdown has finished: nothing of the server is
 * running any more and hr_server_free() may be called. */
typedef void (*hr_shutdown_cb)(hr_server_t *server, void *udata);

/**
 * Graceful shutdown of an attached server: stops accepting, closes idle
 * connections, lets requests in flight finish for up to `deadline_ms`
 * milliseconds, then closes what remains.  Handlers still running then see
 * their abort callback; a response still not completed after it is
 * abandoned (see include/hroute/http.h): its calls return HR_ECLOSED, its
 * request and response stay readable until hr_server_free, it is logged
 * and counted in hr_server_stats_t.responses_abandoned.  So the shutdown
 * always finishes: `cb` runs on the loop thread once every connection is
 * closed and every response completed or abandoned, never inside this call
 * (`cb` may be NULL).  Before the deadline, a connection whose request is
 * under way (a header section half received included) gets its response
 * with "Connection: close", one whose last response is still being written
 * closes once it is out, and one that has sent its last response drains
 * the peer's bytes for up to 2 s (lingering close, RFC 9112 §9.6) so that
 * response is not lost to a reset.  A response cut short (closed while
 * still being written) ends with a TCP reset rather than a FIN.  Call on the attached loop's thread.  Returns 0,
 * HR_ESTATE (not attached, or already closing).
 */
HR_EXTERN int hr_server_close(hr_server_t *server, uint64_t deadline_ms,
                              hr_shutdown_cb cb, void *udata);

/**
 * Graceful shutdown of a started server, as hr_server_close() does for each
 * worker; blocks until every worker thread has finished and been joined,
 * which takes at most about `deadline_ms` milliseconds whatever handlers
 * still hold (their responses are abandoned).
 * Call from any thread that is not a worker (for example a signal handler's
 * loop on the main thread), outside read-side sections: a worker may wait
 * for a grace period on its way out (a context's destroy callback that
 * frees a router, a post that updates a certificate), which would wait for
 * the caller's section while the caller waits for the worker.  So not
 * from a handler of another server either.  Returns 0, HR_ESTATE (not
 * started), HR_ETHREAD (called from a worker or inside a read-side
 * section).
 */
HR_EXTERN int hr_server_stop(hr_server_t *server, uint64_t deadline_ms);

/**
 * Drains a running server before it stops, as an instance behind a load
 * balancer must be taken out: from this call on, hr_server_draining() is 1
 * (the readiness route of hr_server_route_health answers 503), every
 * response says "Connection: close" and its connection ends after it (FIN,
 * then a lingering close, RFC 9112 §9.6); requests already under way are
 * answered as usual.  The listeners keep accepting for `grace_ms`
 * milliseconds, so that the balancer's health check has time to see the
 * 503 and send new connections elsewhere (each one accepted meanwhile is
 * served one request, with "Connection: close").  Idle keep-alive
 * connections stay open meanwhile: the balancer may still send a request
 * on one, and closing it at once would race with that request (its peer
 * would get a reset); the next response on it closes it.  Then the server
 * shuts down as hr_server_close() / hr_server_stop() do with
 * `deadline_ms`: listeners close, connections still idle close, and what
 * is still running gets up to `deadline_ms` more.
 * Upgraded connections (WebSocket, hr_response_upgrade) are told at that
 * shutdown, not at the drain's start.
 *
 * `cb` (may be NULL) runs once everything has stopped: for an attached
 * server on the loop thread, after which hr_server_free() may be called;
 * for worker threads on the last worker thread to finish (or inside this
 * call, when every worker had finished already: a concurrent
 * hr_server_stop() ended them), after which the host calls
 * hr_server_stop() (it returns at once) or hr_server_free() from another
 * thread, never from `cb` itself.  It runs exactly once.  hr_server_close() or
 * hr_server_stop() during the grace period cut it short with their own
 * deadline (hr_server_close's callback then replaces `cb`).
 *
 * Attached: call on the loop thread.  Worker threads: any thread (each
 * worker begins at its next loop iteration).  Returns 0, HR_EINVAL (server
 * NULL), HR_ESTATE (not attached or started, already draining or closing),
 * HR_ETHREAD (attached, called from another thread).  Nothing is
 * allocated: a drain that returns 0 reaches every worker.
 */
HR_EXTERN int hr_server_drain(hr_server_t *server, uint64_t grace_ms, uint64_t deadline_ms,
                              hr_shutdown_cb cb, void *udata);

/** 1 from the moment hr_server_drain() was called, else 0 (also for
 * NULL).  Any thread (an acquire load). */
HR_EXTERN int hr_server_draining(const hr_server_t *server);

/**
 * Registers GET routes (HEAD included, as for every GET route) on the
 * server's router, in the default host table, for a load balancer's or an
 * orchestrator's probes: `liveness_path` always answers 200 "ok\n";
 * `readiness_path` answers 200 "ready\n", and 503 "draining\n" from the
 * moment hr_server_drain() is called.  Both are text/plain with
 * "Cache-Control: no-store".  Either path may be NULL (not registered),
 * not both; typical ones are "/healthz" and "/readyz".  They are ordinary
 * routes: middleware of the router applies, and they count in the route
 * statistics.  Returns 0, HR_EINVAL (both NULL), or what hr_router_add()
 * returns (HR_EEXIST, HR_EPATTERN, HR_ENOMEM); on error neither route is
 * registered.  Any thread; the routes live as long as the router, and
 * must be removed before the server is freed when the router outlives it.
 */
HR_EXTERN int hr_server_route_health(hr_server_t *server, const char *liveness_path,
                                     const char *readiness_path);

/**
 * hr_server_route_health() recorded in `txn`, a transaction of the server's
 * router (hr_router_begin), instead of published at once: the routes appear
 * with the rest of the transaction at hr_txn_commit().  Returns 0,
 * HR_EINVAL (NULL server or txn, both paths NULL), or what hr_txn_add()
 * returns (HR_EEXIST, HR_EPATTERN, HR_ENOMEM); on error the transaction
 * leaves neither route (a removal of the first is recorded after it).  The
 * thread that uses the transaction.
 */
HR_EXTERN int hr_server_txn_health(hr_server_t *server, hr_txn_t *txn,
                                   const char *liveness_path, const char *readiness_path);

/** Frees the server, and with it the responses abandoned at a shutdown
 * deadline (their req and res are invalid from here on).  It must be new,
 * or closed / stopped completely; one still running is left alone (the
 * stop this call makes is refused on one of its own workers and inside a
 * read-side section, see hr_server_stop).  Inside a read-side section (a
 * handler of another server) the TLS contexts and ticket keys that still
 * wait for a grace period are freed later, through the server's
 * allocator, by liburcu's call_rcu thread.  hr_server_free(NULL) is a
 * no-op. */
HR_EXTERN void hr_server_free(hr_server_t *server);

/**
 * A new descriptor (close-on-exec) of the listening socket of address
 * `index`, for handing it to a process that replaces this one (a binary
 * upgrade): start the successor with it as LISTEN_FDS (clear
 * close-on-exec, or dup2 it to descriptor 3 in the child), let it serve
 * (hr_server_listen_activated / hr_server_listen_fd), then drain this
 * server.  Both accept from the one socket meanwhile, and it stays open
 * while either holds it, so no connection is refused.  The caller owns
 * the descriptor.  Not for addresses with reuseport (each worker has its
 * own socket there; a successor binds one of its own), nor for a host
 * name that gave several addresses (several sockets: listen on each by
 * number to hand them over).  Returns the
 * descriptor, HR_EINVAL (no such address, reuseport, several sockets), HR_ESTATE (not
 * running, or stopped), or a negated errno.  Any thread, while the
 * server runs, not concurrently with hr_server_drain, hr_server_close or
 * hr_server_stop.
 */
HR_EXTERN int hr_server_listener_fd(const hr_server_t *server, size_t index);

/** The port of listening address `index` (in hr_server_listen order) once
 * bound, else 0; for a host name with several addresses, the one port
 * they all listen on.  Any thread after attach / start returned. */
HR_EXTERN int hr_server_port(const hr_server_t *server, size_t index);

/** Counters summed over all workers; each is read atomically, the set is not
 * a snapshot. */
typedef struct hr_server_stats_s {
  uint64_t requests;            /**< responses completed */
  uint64_t allocations;         /**< calls to the allocator's malloc/realloc */
  /** Connections taken into service since the start (not those closed at
   * once over max_connections: connections_rejected counts those). */
  uint64_t connections_accepted;
  /** Connections open now, upgraded ones included. */
  uint64_t connections_active;
  uint64_t connections_rejected; /**< over max_connections */
  /** Requests answered 4xx by the server itself (400, 404, 405, 408, 413,
   * 431...; never a 5xx: not the 501 for a method or transfer coding it
   * does not implement, nor a 503), HTTP/2 connections ended for a protocol
   * error of the client's, and connections closed at a PROXY header
   * (malformed, from an untrusted peer, or missing when required), which
   * get no answer and no log line.  A client that went away mid-request
   * is not one (client_aborts). */
  uint64_t bad_requests;
  /** Times a worker stopped accepting for 100 ms because the process was
   * out of file descriptors (EMFILE/ENFILE); one connection is accepted
   * and closed each time, so its client sees a closed connection.  Each
   * pause is also logged (HR_LOG_WARN). */
  uint64_t accept_pauses;
  /** Responses a handler still held when a shutdown deadline passed (see
   * hr_server_close); each is also logged with its method, target and
   * route. */
  uint64_t responses_abandoned;
  /** Per-request state in use now, from the workers' pools: exchanges
   * (request, response and parse state; abandoned ones included until
   * hr_server_free), read buffers, output queues and their 4 KiB blocks,
   * and request arena blocks.  An idle keep-alive connection holds none. */
  uint64_t exchanges_in_use;
  /** Read buffers in use (one per connection with unread bytes). */
  uint64_t read_buffers_in_use;
  /** Output queues in use (one per connection with output pending). */
  uint64_t output_queues_in_use;
  /** 4 KiB blocks of the output queues in use. */
  uint64_t output_blocks_in_use;
  /** 4 KiB request arena blocks in use (hr_request_alloc and the like). */
  uint64_t arena_blocks_in_use;
  /** HTTP bytes read from connections (TLS: the plaintext; PROXY headers
   * and upgraded streams included, and what a closing connection drains). */
  uint64_t bytes_received;
  /** HTTP bytes written to connections (TLS: the plaintext; upgraded
   * streams included). */
  uint64_t bytes_sent;
  /** Requests whose client went away while sending them: it closed or
   * reset the connection (HTTP/2: reset the stream, or closed or reset the
   * connection) in the middle of the body, before any answer went out.
   * Nothing is sent; the after-middleware, hr_request_outcome() and the
   * access log report HR_STATUS_CLIENT_CLOSED (499, http.h).  Not
   * counted in bad_requests. */
  uint64_t client_aborts;
} hr_server_stats_t;

/** Fills *out.  Any thread. */
HR_EXTERN void hr_server_stats(const hr_server_t *server,
                               hr_server_stats_t *out);

/**
 * Renders the Prometheus text exposition format, version 0.0.4, of the
 * server and of every route of its router, and passes it to `write`
 * (called once, with the whole text, valid during the call only; on the
 * calling thread).  Families, each with HELP and TYPE:
 *   hroute_requests_total, hroute_connections_accepted_total,
 *   hroute_connections_rejected_total, hroute_bad_requests_total,
 *   hroute_client_aborts_total, hroute_received_bytes_total,
 *   hroute_sent_bytes_total, hroute_responses_abandoned_total,
 *   hroute_accept_pauses_total,
 *   hroute_allocations_total (counters, as hr_server_stats_t);
 *   hroute_connections_active, hroute_exchanges_in_use, hroute_draining
 *   (gauges);
 *   hroute_route_requests_total{host,route,method} (counter);
 *   hroute_route_responses_total{host,route,method,status} (counter;
 *   status is "1xx".."5xx", or "none" for exchanges lost before a
 *   response; a client abort, HR_STATUS_CLIENT_CLOSED, counts as "4xx");
 *   hroute_route_duration_seconds{host,route,method} (histogram: buckets
 *   le = 2^i microseconds, i = 0..22, in seconds, then +Inf; _sum in
 *   seconds with microsecond resolution; _count).
 * Labels: `host` is the route's host table (lower case; "" for the
 * default table), `route` its pattern as registered (group prefix
 * included; a byte that is not part of well-formed UTF-8 is written \%XX,
 * which means the same byte in a pattern, so that the text is UTF-8),
 * `method` its methods as registered ("GET", "GET,POST", "*").
 * A replaced route starts from zero (as hr_router_route_stats).  The
 * counters are kept per worker and per loop, written by their loop only,
 * and read with relaxed loads: nothing a serving thread waits for is
 * locked, and the set is not a snapshot.  Returns 0, HR_EINVAL (NULL
 * arguments), HR_ENOMEM (then `write` is not called).  Any thread.
 */
HR_EXTERN int hr_server_metrics(hr_server_t *server,
                                void (*write)(void *ctx, const char *text, size_t len),
                                void *ctx);

/**
 * Registers a GET route (HEAD included) at `path` on the server's router,
 * in the default host table, that answers hr_server_metrics() as
 * "text/plain; version=0.0.4; charset=utf-8" with "Cache-Control:
 * no-store" (500 when out of memory): what a Prometheus server scrapes.
 * An ordinary route: put authentication middleware in front of it when
 * the port is reachable from outside.  Returns 0, HR_EINVAL (NULL
 * arguments), or what hr_router_add() returns (HR_EEXIST, HR_EPATTERN,
 * HR_ENOMEM).  Any thread; the route refers to the server, so remove it
 * before the server is freed when the router outlives it.
 */
HR_EXTERN int hr_server_route_metrics(hr_server_t *server, const char *path);

/**
 * hr_server_route_metrics() recorded in `txn`, a transaction of the
 * server's router, published with the rest of it at hr_txn_commit().
 * Returns 0, HR_EINVAL (NULL arguments), or what hr_txn_add() returns.  The
 * thread that uses the transaction.
 */
HR_EXTERN int hr_server_txn_metrics(hr_server_t *server, hr_txn_t *txn, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_SERVER_H */
