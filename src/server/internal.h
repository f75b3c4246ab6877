/* SPDX-License-Identifier: MIT */
/*
 * Internal structures of the server: the exchange (one request and its
 * response), the connection that carries exchanges one at a time, the
 * per-loop worker and the server.  docs/architecture.md draws how they fit.
 *
 * A connection carries at most one exchange at a time; pipelined requests
 * wait in the read buffer until the current response completes, which keeps
 * responses in request order without a queue of exchanges.  An idle
 * connection holds only its record and transport: the exchange, the read
 * buffer and the output queue are taken from the loop's pools while a
 * request is under way and given back when it completed.
 */
#ifndef HR_SERVER_INTERNAL_H
#define HR_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <llhttp.h>
#include <uv.h>

#include "hroute/error.h"
#include "hroute/http.h"
#include "hroute/server.h"
#include "hroute/upgrade.h"
#include "http/strict.h"
#include "router/route.h"
#include "server/out.h"
#include "server/proto.h"
#include "server/timer.h"
#include "server/transport.h"
#include "util/mem.h"

typedef struct hr__worker_s hr__worker_t;
typedef struct hr__exchange_s hr__exchange_t;

/* ---- exchange ------------------------------------------------------------ */

typedef enum {
  HR__RES_NEW = 0, /* nothing sent yet */
  HR__RES_STREAMING,
  HR__RES_DONE
} hr__res_state_t;

struct hr_response_s {
  hr__res_state_t state;
  int status;
  char *fields; /* user fields rendered "N: V\r\n", arena memory */
  size_t fields_len, fields_cap;
  int64_t content_length; /* streaming: declared, or HR_LENGTH_UNKNOWN */
  uint64_t written;
  unsigned chunked : 1;
  unsigned no_body : 1;   /* HEAD, 1xx, 204, 304 */
  unsigned want_drain : 1;
  unsigned crlf_owed : 1; /* chunked: a file chunk's CRLF goes with what follows */
  hr_drain_cb drain_cb;
  void *drain_udata;
  hr_abort_cb abort_cb;
  void *abort_udata;
  /* Trailer field lines "N: V\r\n" (hr_response_add_trailer), arena
   * memory; sent after the body (h1: in the last chunk; h2: a HEADERS
   * frame with END_STREAM). */
  char *trailers;
  size_t trailers_len, trailers_cap;
};

/* The request.  Everything before `nparams` is zeroed for each exchange;
 * the parameter arrays are written before they are read. */
struct hr_request_s {
  hr_span_t method, target, path, query;
  hr_span_t host; /* Host field value */
  hr_span_t authority; /* an absolute-form target's, which routes instead */
  int version; /* 10 or 11 */
  hr_field_t *fields;
  size_t nfields, fields_cap;
  const hr_route_t *route;
  void *ctx;                        /* per-request context */
  int ctx_made;
  char *body;
  size_t body_len, body_cap;
  hr_body_cb body_cb;
  void *body_udata;
  uint64_t content_length;
  unsigned host_count;
  unsigned keep_alive : 1;
  unsigned expect_continue : 1;
  unsigned expect_other : 1;
  unsigned is_head : 1;
  unsigned chunked : 1;
  unsigned has_length : 1;
  unsigned conn_close : 1;
  unsigned conn_keep_alive : 1;
  unsigned conn_upgrade : 1; /* "upgrade" in Connection (RFC 9110 §7.8) */
  unsigned body_done : 1;     /* body callback saw its last call */
  unsigned has_te : 1;        /* Transfer-Encoding present */
  unsigned te_unsupported : 1;
  unsigned target_bad : 1;
  unsigned continue_pending : 1; /* 100 Continue waits for read_body */
  unsigned in_field_value : 1;
  struct hr__form_s *query_form; /* parsed on first use (query.c) */
  void **locals;                 /* HR_MAX_LOCALS values, from the first set */
  struct hr__form_s *body_form;
  /* Trailer fields kept (RFC 9110 §6.5; not the forbidden ones), copies
   * in the arena; read once the message is complete. */
  hr_field_t *trailers;
  size_t ntrailers, trailers_cap;
  size_t nparams;
  hr_param_t params[HR_MAX_PARAMS];
  hr_value_t values[HR_MAX_PARAMS]; /* typed parameters, converted */
  void *objs[HR_MAX_PARAMS];        /* parameters parsed by a delegate */
};

/* The host a request is routed by: an absolute-form target's authority
 * wins over the Host field (RFC 9112 §3.2.2), as in hr_router_match.  The
 * server's answers, fallback middleware and access log use the same one. */
static inline hr_span_t hr__route_host(const hr_request_t *r) {
  return r->authority.len ? r->authority : r->host;
}

typedef enum {
  HR__PH_HEAD = 0, /* collecting a header section */
  HR__PH_BODY,     /* header section parsed, message body under way */
  HR__PH_DONE      /* message complete, waiting for the response */
} hr__phase_t;

/* Where an exchange is: on its connection, or without one. */
typedef enum {
  HR__EX_ON_CONN = 0, /* served on a connection */
  HR__EX_DETACHED,    /* the connection closed; a handler still holds it */
  HR__EX_ABANDONED    /* a shutdown deadline passed; kept until server free */
} hr__ex_where_t;

struct hr__exchange_s {
  hr__conn_t *conn;        /* NULL once detached */
  const hr__proto_t *proto; /* how its response reaches the wire (proto.h) */
  hr__worker_t *w;
  hr__exchange_t *next;    /* worker's detached list, server's abandoned list */
  /* HR__EX_*: written by the loop thread; read by other threads only to
   * answer HR_ECLOSED rather than HR_ETHREAD (release store, acquire load:
   * a thread that sees ABANDONED sees the exchange as it was then). */
  _Atomic int where;
  char *rbuf;              /* the read buffer, owned once detached */

  /* parse state: conn->rbuf[msg_start..rpos) parsed by llhttp */
  size_t rpos;
  size_t hdr_end;          /* end of the header section in the read buffer */
  hr__head_scan_t hscan;
  hr__frame_scan_t fscan;
  const char *gap_start;   /* chunked: first framing byte not yet scanned */
  /* chunked: the trailer field line being read (its name and value
   * copied into the arena as they come, up to the limit), and the
   * trailer section's lines and bytes so far (name + value + 4 a line) */
  hr_field_t trailer_cur;
  size_t trailer_lines, trailer_bytes;
  hr__phase_t phase;
  uint64_t body_bytes;     /* body-phase bytes seen, framing included */
  uint64_t body_data;      /* message body bytes (after decoding chunks) */
  uint64_t body_limit;
  int fail_status;         /* set by llhttp callbacks before HPE_USER */
  /* Why, when llhttp would not keep the callback's reason (an error from
   * on_header_value_complete is its own "callback error"). */
  const char *fail_reason;
  int internal_status;     /* 404 or 405 answered by the server itself */
  hr_span_t internal_allow;
  hr_span_t internal_location;
  uint64_t head_started;   /* loop time of the first byte */
  uint64_t last_activity;  /* loop time of the last body bytes */
  uint64_t t_done;          /* uv_hrtime() at the response's completion */
  uint64_t t_first;         /* uv_hrtime() at the first byte */
  hr_outcome_t outcome;     /* what went out (hr__invoke_end sets it) */
  const char *peer_text;    /* detached with an access log: the peer, in the arena */
  struct hr_stream_s *upgrade; /* answered 101: the stream, until the exchange ends */
  struct hr__h2s_s *h2s;      /* HTTP/2: its stream (h2.h), in the arena */
  uint64_t sent_bytes;      /* body bytes of an answer the server gave */
  hr__slot_t *slot;        /* the route's slot for this loop */
  /* What the router answers this request with, from the one route table
   * it was matched in (hr__exchange_view): its host's answers, copied,
   * and fallback invoker (the router-level middleware of the answers the
   * router gives itself), so that no answer mixes two tables. */
  hr_answers_t answers;
  hr_route_t *fallback;
  unsigned handler_active : 1; /* handler ran, response not complete */
  unsigned dispatched : 1;
  unsigned msg_complete : 1;
  unsigned discard_body : 1;
  unsigned invoked : 1;       /* the invoker ran for this exchange */
  unsigned ended : 1;         /* the after-middleware ran (hr__invoke_end) */
  unsigned route_ref : 1;     /* holds a reference on req.route */
  unsigned viewed : 1;        /* answers and fallback are set */
  unsigned fallback_ref : 1;  /* holds a reference on fallback */
  unsigned holds_ctx : 1;     /* counted in slot->inflight */
  unsigned internal_answer : 1; /* the server answers, not the route */
  unsigned streamed : 1;      /* the head came from hr_response_start: the
                                 response ends with hr_response_end */
  unsigned aborted : 1;       /* lost before the response completed */
  unsigned framing_lost : 1;  /* the response cannot go on: close */
  unsigned close_after : 1;   /* the connection ends after this response */
  unsigned free_pending : 1;  /* released while held: freed at the unhold */
  unsigned dropped : 1;       /* its connection or stream is done with it */
  unsigned trailer_open : 1;  /* chunked: a trailer field line is being read */
  uint8_t holds;              /* library frames on the stack that use it */
  int sent_status;            /* what the server answered in its place */

  llhttp_t parser;
  hr__arena_t arena;
  hr_response_t res;
  hr_request_t req; /* last: see hr_request_s */
};

#define HR__EX_OF_REQ(r) \
  ((hr__exchange_t *)((char *)(r) - offsetof(hr__exchange_t, req)))
#define HR__EX_OF_RES(r) \
  ((hr__exchange_t *)((char *)(r) - offsetof(hr__exchange_t, res)))

/* exchange.c */
/* A new exchange of connection `c`, speaking `proto`; NULL: out of memory. */
hr__exchange_t *hr__exchange_new(hr__conn_t *c, const hr__proto_t *proto);
/* The exchange is over: after-middleware, counters, contexts, references,
 * then its memory goes back to the pools. */
void hr__exchange_free(hr__exchange_t *ex);
/* Sets ex's answers and fallback from `t`, the table its request is
 * matched in (inside the read-side section that loaded it). */
void hr__exchange_view_from(hr__exchange_t *ex, const hr__table_t *t);
/* Makes sure ex's answers and fallback are set: from the current table
 * when its request was not matched (refused before its header section was
 * complete), in a read-side section of its own, and kept by reference
 * when that section is not a connection's processing step. */
void hr__exchange_view(hr__exchange_t *ex);
/* The exchange outlives the read-side section it was routed in: it takes
 * its own references on its route's invoker and, for a request no route
 * answers, on its fallback (dropped by hr__invoke_release). */
void hr__exchange_keep(hr__exchange_t *ex);
/* The connection closes under a running handler: the exchange lives on
 * without it (owning the read buffer) until the handler completes. */
void hr__exchange_detach(hr__exchange_t *ex);
/* The library is done with `ex` (connection or handler side): freed now,
 * or when the last hold goes. */
void hr__exchange_release(hr__exchange_t *ex);
void hr__exchange_hold(hr__exchange_t *ex);
/* Returns 1 when that freed `ex`. */
int hr__exchange_unhold(hr__exchange_t *ex);
/* Tells a running handler that its exchange is lost (body callback, drain
 * callback, abort callback). */
void hr__exchange_abort(hr__exchange_t *ex, int body_status);
/* Shutdown deadline: the exchange is kept, inert, until hr_server_free. */
void hr__exchange_abandon(hr__exchange_t *ex);
/* Frees an abandoned exchange (hr_server_free). */
void hr__exchange_release_abandoned(hr__exchange_t *ex);
/* Whether the calling thread may call response functions on `ex`: 0, or
 * HR_ECLOSED (detached from another thread's view, or abandoned) or
 * HR_ETHREAD. */
int hr__exchange_check_thread(const hr__exchange_t *ex);

/* ---- connection ---------------------------------------------------------- */

/* The connection's close state, in the only order it moves. */
typedef enum {
  HR__C_OPEN = 0, /* reading and answering requests */
  HR__C_DRAINING, /* no further requests: finish the response, then FIN */
  HR__C_SHUT,     /* FIN sent: dropping the peer's bytes for a while */
  HR__C_CLOSED    /* transport closing; freed when it has closed */
} hr__cstate_t;

struct hr__conn_s {
  hr__transport_t *t;     /* in the same allocation, after the record */
  hr__worker_t *w;
  hr__conn_t *prev, *next; /* worker's list */
  hr__conn_t *resume_next; /* worker's resume list */
  hr__tnode_t timer;
  hr__exchange_t *ex;     /* HTTP/1.1: the current exchange, or NULL */
  struct hr__h2_s *h2;    /* HTTP/2: the session (h2.h), or NULL */
  hr__out_t *out;         /* output queue while there is output, or NULL */
  char *rbuf;             /* read buffer while bytes are pending, or NULL */
  uint32_t rlen;          /* bytes in rbuf */
  uint32_t msg_start;     /* where the current (or next) message starts */
  union {
    uint32_t requests_served; /* while HTTP */
    uint32_t stream_slot;     /* once upgraded: its stream in w->streams */
  };
  uint8_t state;          /* hr__cstate_t */
  uint8_t refs;           /* what keeps the record alive: the transport, a file job */
  unsigned in_process : 1;
  unsigned on_resume : 1;
  unsigned reading : 1;
  unsigned peer_eof : 1;
  unsigned counted : 1;   /* holds a max_connections slot */
  unsigned upgraded : 1;  /* handed over as a byte stream (stream.c) */
  /* The HTTP version is still to be chosen at the first bytes: by ALPN
   * on TLS, or by the client preface where h2c is allowed (h2c_ok). */
  unsigned proto_open : 1;
  unsigned h2c_ok : 1;
  /* PROXY protocol (proxied.c): the record has a slot for what the header
   * said; the header is still to be read or ruled out; the peer is
   * trusted to send one; it must. */
  unsigned proxy_slot : 1;
  unsigned proxy_wait : 1;
  unsigned proxy_trusted : 1;
  unsigned proxy_required : 1;
  /* A deadline put off because the peer's bytes were waiting unread
   * (conn.c, put_off): set until the next read; late_due holds the low
   * bits of that deadline, which is not put off twice. */
  unsigned late_read : 1;
  uint32_t late_due;
};

/* conn.c */
/* Room for the peer's address as text, kept with each connection record
 * while the server has an access log (and only then), filled when the
 * connection is made (hr__access_peer): the log reads it for every line,
 * also of an exchange that outlives its connection (it keeps a copy). */
#define HR__PEER_TEXT 48
/* That room, or NULL without an access log. */
char *hr__conn_peer_text(hr__conn_t *c);
/* proxied.c: the PROXY protocol on a connection. */
typedef struct hr__proxyconf_s {
  hr_proxy_mode_t mode;
  struct hr__cidr_s *nets;
  size_t nnets;
} hr__proxyconf_t;
typedef struct hr__proxied_s hr__proxied_t;
/* Where a record made by hr__conn_new with `proxy` keeps what its header
 * said (NULL until then). */
hr__proxied_t **hr__conn_proxy_slot(hr__conn_t *c);
/* After accepting `fd` on a listener with `pc`: whether the peer is
 * trusted, and what to wait for. */
void hr__proxy_accepted(hr__conn_t *c, const hr__proxyconf_t *pc, int fd);
/* The connection's first step while proxy_wait: reads or rules out the
 * header.  Returns 1 to go on with HTTP, 0 to wait (or the connection was
 * closed). */
int hr__proxy_step(hr__conn_t *c);
void hr__proxied_free(hr__conn_t *c);
/* The client's address: the header's, else the socket peer's. */
int hr__conn_peer(hr__conn_t *c, struct sockaddr *addr, int *len);
/* A new connection on `w` with a transport made by `init` in the same
 * allocation (`tsize` bytes, after the peer text room when there is one).  Returns NULL when out of memory or when
 * init fails (it then owns nothing). */
typedef int (*hr__transport_init_fn)(hr__transport_t *t, void *arg,
                                     const hr__transport_events_t *ev,
                                     void *owner);
hr__conn_t *hr__conn_new(hr__worker_t *w, size_t tsize, int proxy,
                         hr__transport_init_fn init, void *arg);
void hr__conn_kick(hr__conn_t *c);   /* process on the next loop turn */
/* Keeps the record allocated past its transport's close (a file piece
 * read on the thread pool); the last unhold frees it. */
void hr__conn_hold(hr__conn_t *c);
void hr__conn_unhold(hr__conn_t *c);
void hr__conn_resume(hr__conn_t *c); /* process now (loop callback) */
void hr__conn_close(hr__conn_t *c);  /* hard close; a handler's exchange detaches */
/* No further requests: the response under way (and what is queued) goes
 * out, then FIN.  A no-op unless the connection is open. */
void hr__conn_drain(hr__conn_t *c);
/* Writing failed with `err`: close (a file that ended early: after what
 * was sent, with FIN). */
void hr__conn_output_failed(hr__conn_t *c, int err);
void hr__conn_shutdown(hr__conn_t *c); /* server shutdown: close when idle */
void hr__conn_timeout(hr__conn_t *c, hr__tlist_t list); /* deadline passed */
/* The connection is done with its exchange: freed, or detached while a
 * handler still holds the response (told through its abort callbacks). */
void hr__conn_drop_exchange(hr__conn_t *c, int body_status);
/* Processing ends: write, close if due, re-arm reading and the timer. */
void hr__conn_settle(hr__conn_t *c);
/* Events from the exchange: the response completed, or it cannot be framed
 * any more (close once the handler's call returns). */
void hr__conn_response_done(hr__conn_t *c);
void hr__conn_framing_lost(hr__conn_t *c);

/* stream.c: connections handed over by 101 (include/hroute/upgrade.h) */
void hr__stream_attach(hr__conn_t *c, struct hr_stream_s *s); /* the exchange ended */
void hr__stream_process(hr__conn_t *c);   /* deliver what was read; drain */
int hr__stream_paused(const hr__conn_t *c);
int hr__stream_wants_drain(const hr__conn_t *c);
void hr__stream_fin_sent(hr__conn_t *c);  /* the owner's close reached FIN */
void hr__stream_peer_eof(hr__conn_t *c);  /* before hr__conn_close */
void hr__stream_gone(hr__conn_t *c);      /* hr__conn_close: tell the owner */
void hr__stream_shutdown(hr__conn_t *c);  /* graceful server shutdown */
void hr__stream_discard(struct hr_stream_s *s); /* never attached */
void hr__stream_timeout(hr__tnode_t *n);  /* its HR__TL_STREAM deadline passed */
void hr__streams_free(hr__worker_t *w);

/* h1.c: HTTP/1.1 messages on a connection */
/* Parses and dispatches what the read buffer holds.  Returns 1 to go on
 * with the next request, 0 when more bytes (or a response) are needed. */
int hr__h1_step(hr__conn_t *c);
/* Answers `status` and ends the connection after it (RFC 9112 §9.6). */
void hr__h1_fail(hr__conn_t *c, int status, const char *reason);
/* 100 Continue (RFC 9110 §15.2.1) into the output queue. */
int hr__h1_continue(hr__conn_t *c);

/* Whether the exchange's connection or stream is done with it: closed,
 * or the exchange dropped (a handler running then hears of it through
 * its abort callback; the library's own steps stop). */
static inline int hr__ex_gone(const hr__exchange_t *ex) {
  return ex->conn == NULL || ex->dropped || ex->conn->state == HR__C_CLOSED;
}

/* dispatch.c: from the end of a header section to the handler, whatever
 * the protocol. */
/* Routes the request whose header section its protocol parsed and checked
 * (method, target, host, fields, version, length, msg_complete when no
 * body follows), then the limits, head middleware, 100 Continue and, for
 * a streaming route, the handler.  Returns 0 to go on, -1 when the
 * exchange failed (answered through proto->fail) or is gone. */
int hr__dispatch_head(hr__exchange_t *ex);
/* `len` bytes of message body: into the buffer, to the streaming handler,
 * or dropped.  Returns 0, 413 (over the body limit), 503 (out of memory)
 * or -1 (the exchange is gone: the handler closed it). */
int hr__dispatch_body(hr__exchange_t *ex, const char *at, size_t len);
/* The message is complete: the handler of a buffered route, the server's
 * own answer, or the last call of a streaming body. */
void hr__dispatch_complete(hr__exchange_t *ex);
/* Answers with the server's own response for ex->internal_status (404,
 * 405, redirects, OPTIONS, 501) after the before-middleware that apply. */
void hr__dispatch_answer(hr__exchange_t *ex);
/* The same for `status` (a typed parameter that names no resource: 404;
 * no context: 503): the protocols' answer_status. */
void hr__dispatch_answer_status(hr__exchange_t *ex, int status);
/* The body of a server answer with `status`: the host's error_body hook
 * (hr_answers_t `an`) when it gives one, else the reason phrase as text.
 * `buf` holds HR__ERROR_BODY_MAX bytes; *ctype gets the Content-Type
 * value.  Returns the length.  The hook runs inside a read-side section. */
#define HR__ERROR_BODY_MAX 1024
size_t hr__error_body(const hr_answers_t *an, int status, char *buf, const char **ctype);

/* request.c: keeps the request trailer field `name`: `value` (copies
 * the exchange owns) unless hr__trailer_forbidden drops it.  0 or
 * HR_ENOMEM. */
int hr__request_add_trailer(hr__exchange_t *ex, hr_span_t name, hr_span_t value);

/* parse.c */
extern const llhttp_settings_t hr__parser_settings;
llhttp_errno_t hr__parse_head(hr__exchange_t *ex);

/* invoke.c */
void hr__invoke(hr__exchange_t *ex);
/* At the match (the end of the header section): a route with per-loop
 * contexts counts the request in its loop's slot from here, so the loop's
 * sweep keeps the context for it even when the route is removed before
 * its body has arrived. */
void hr__invoke_hold_ctx(hr__exchange_t *ex);
/* An exchange's observer (see hr__ex_observer_fn): its route's
 * after-middleware, counters and latency histogram, or the router's
 * fallback after-middleware. */
void hr__invoke_end(hr__exchange_t *ex);
void hr__invoke_release(hr__exchange_t *ex); /* contexts and references */
/* Runs the route's head middleware at the end of the header section;
 * returns 1 when one answered (or will), 0 to go on. */
int hr__invoke_head(hr__exchange_t *ex);
void hr__locals_release(hr__exchange_t *ex);  /* request locals' destructors */
/* access_log.c: the exchange's line, when the server has an access log. */
void hr__access_log(hr__exchange_t *ex);
/* Renders the peer of a new connection into its room (a no-op without an
 * access log; empty when the transport has no peer address). */
void hr__access_peer(hr__conn_t *c);
/* An IPv4 or IPv6 address as text, without the port, into out (cap bytes;
 * empty for another family). */
void hr__addr_text(const struct sockaddr_storage *ss, char *out, size_t cap);
void hr__worker_ctx_prepare(hr__worker_t *w);
void hr__worker_ctx_sweep(hr__worker_t *w, int all);


/* Connections without a socket, for the in-process benchmark, fuzzing and
 * tests (sink.c's transport).  Bytes fed are processed at once, as if
 * read; output goes to `sink` synchronously.  feed returns how many bytes
 * were taken (less when the connection stops reading: a response is
 * pending, or it closed).  Close with hr__conn_close; the connection is
 * freed on the loop. */
hr__conn_t *hr__vconn_new(hr__worker_t *w, hr__sink_cb sink, void *ctx);
/* The same, served as HTTP/2 when its first bytes are the client
 * preface (h2c), as HTTP/1.1 otherwise. */
hr__conn_t *hr__vconn_new_h2c(hr__worker_t *w, hr__sink_cb sink, void *ctx);
size_t hr__vconn_feed(hr__conn_t *c, const char *p, size_t n);
void hr__vconn_eof(hr__conn_t *c);
int hr__vconn_closed(const hr__conn_t *c);
/* A TLS connection over the connected socket `fd` (any stream socket, a
 * socketpair end for the TLS fuzzer) with `ssl`, both the connection's on
 * success.  NULL when out of memory. */
hr__conn_t *hr__vconn_new_tls(hr__worker_t *w, int fd, void *ssl);
/* server.c: a server with one worker on `loop` and no listener, for
 * hr__vconn_new.  Close it with hr_server_close. */
int hr__server_attach_virtual(hr_server_t *s, uv_loop_t *loop);
hr__worker_t *hr__server_worker(hr_server_t *s, size_t index);

/* ---- worker (one per loop) ----------------------------------------------- */

/* A per-loop context this loop made (see invoke.c). */
typedef struct hr__ctxent_s {
  hr__core_t *core;
  hr__slot_t *slot;
} hr__ctxent_t;

/* A call another thread asked the worker to make (hr__worker_post): `run`
 * gets `target`, the caller's callbacks `fn` and `aux` (cast back to their
 * own types by `run`; `aux` often NULL) and `udata`, on the loop thread. */
typedef void (*hr__fn_t)(void);
typedef void (*hr__post_run_t)(void *target, hr__fn_t fn, hr__fn_t aux, void *udata);
typedef struct hr__post_s {
  struct hr__post_s *next;
  hr__post_run_t run;
  void *target;
  hr__fn_t fn, aux;
  void *udata;
} hr__post_t;

/* A listening socket of a worker, polled for incoming connections. */
typedef struct hr__listener_s {
  uv_poll_t poll;
  hr__worker_t *w;
  struct hr__tlsconf_s *tls; /* TLS listener: its published context */
  const struct hr__proxyconf_s *proxy; /* PROXY protocol listener, or NULL */
  int fd;
  unsigned h2 : 1; /* speaks HTTP/2 (hr_listen_options_t.h2) */
  /* Connections accepted per readable event: a socket every worker polls
   * takes one at a time, so that they share the new connections. */
  unsigned batch;
} hr__listener_t;

struct hr__worker_s {
  hr_server_t *server;
  struct hr_stream_s **streams; /* upgraded connections' streams, by slot */
  uint32_t streams_cap;
  uv_loop_t *loop;
  uv_loop_t own_loop;
  uv_thread_t thread;
  uv_thread_t loop_thread; /* the thread that runs `loop` (HR_ETHREAD) */
  int start_err;
  size_t index;
  void *thread_ready;    /* hr_server_start's semaphore, until ready */

  hr__listener_t *listeners; /* one per server address */
  int *fds;              /* sockets bound for this worker, -1 once handed over */
  size_t nlisteners;
  size_t nlisteners_open; /* listeners whose handle was initialised */
  int reserve_fd;        /* closed to accept and drop when out of descriptors */
  uv_timer_t accept_timer; /* ends a pause in accepting (listener.c) */
  unsigned accept_paused : 1;

  uv_timer_t date_timer;
  char date[40];         /* "Date: <IMF-fixdate>\r\n" */
  size_t date_len;

  uv_async_t async;
  uv_mutex_t post_lock;  /* lives until hr_server_free (see free_workers) */
  unsigned post_lock_made : 1;
  hr__post_t *posts;
  int posts_closed;      /* under post_lock: the async handle is closing */
  _Atomic int stop_requested; /* set by hr_server_stop, read by the worker */
  /* Set (release) when the loop has ended and the worker is being cleaned
   * up, maybe on the thread that joined it: posts then run there, and
   * stream and WebSocket calls answer HR_ECLOSED, not HR_ETHREAD. */
  _Atomic int loop_ended;

  uv_idle_t resume_idle;
  hr__conn_t *resume_head;

  hr__timers_t timers;   /* every connection's deadline */
  struct hr__tlsloop_s *tls; /* when the server has TLS listeners */
  uv_timer_t shutdown_timer;
  unsigned handles_open;
  unsigned stopping : 1;
  /* Draining (hr_server_drain): responses say "Connection: close" and
   * connections end after them; listeners still accept until the grace
   * period ends and the worker stops. */
  unsigned draining : 1;
  unsigned handles_closing : 1;
  unsigned base_handles : 1; /* async, timers and idle initialised */
  unsigned attached : 1;     /* runs on a loop the host owns */
  uint64_t shutdown_deadline_ms;
  uint64_t drain_deadline_ms; /* the stop's deadline once the grace ends */

  int loop_slot;         /* this loop's slot number in the router */
  hr__ctxent_t *ctxs;    /* per-loop contexts made here */
  size_t nctx, ctx_cap;

  hr__mem_t mem;
  hr__pool_t rpool; /* read buffers */
  hr__pool_t bpool; /* output blocks */
  hr__pool_t apool; /* arena blocks */
  hr__pool_t xpool; /* exchanges */
  hr__pool_t opool; /* output queues */
  hr__slab_t slab;  /* HTTP/2: nghttp2's small blocks, streams, body pieces */

  char drain_buf[4096]; /* where closing connections' input is dropped */

  hr__conn_t *conns;
  size_t nconns;
  hr__exchange_t *detached; /* exchanges whose connection closed */
  size_t ndetached;

  /* Statistics: single writer (this worker), relaxed; see hr__mem_t. */
  _Atomic uint64_t st_requests, st_accepted, st_bad, st_accept_pauses;
  _Atomic uint64_t st_bytes_received, st_bytes_sent; /* HTTP bytes, TLS unwrapped */
};

/* A listening address of the server (hr_server_listen*). */
typedef struct hr__addr_s {
  struct sockaddr_storage ss;
  int port;                      /* as given; the bound one once started */
  struct hr__tlsconf_s *tls;     /* TLS context, or NULL */
  struct hr__proxyconf_s *proxy; /* PROXY protocol, or NULL */
  int given;                     /* a socket the host passed, or -1 */
  unsigned reuseport : 1;        /* a socket per worker, with SO_REUSEPORT */
  unsigned h2 : 1;               /* TLS: offers h2 by ALPN; TCP: h2c too */
} hr__addr_t;

typedef enum { HR__SRV_NEW = 0, HR__SRV_ATTACHED, HR__SRV_THREADS,
               HR__SRV_CLOSING, HR__SRV_DONE } hr__srv_state_t;

/* What must happen when an exchange ends (its response complete or cut
 * short, or abandoned at a shutdown deadline): every observer is called
 * once, in order, on the exchange's loop thread, from one dispose point
 * (exchange.c, ended()) and from nowhere else.  Fixed when the server is
 * made (hr_server_new). */
typedef void (*hr__ex_observer_fn)(hr__exchange_t *ex);
#define HR__MAX_OBSERVERS 5

struct hr_server_s {
  hr__mem_t mem;
  hr_router_t *router;
  hr_server_options_t opts;
  hr__ex_observer_fn observers[HR__MAX_OBSERVERS];
  size_t nobservers;
  hr__head_limits_t head_limits;
  hr__addr_t *addrs;
  size_t naddrs;
  hr__worker_t *workers;
  size_t nworkers;
  hr__srv_state_t state;
  _Atomic unsigned active_conns;     /* for max_connections */
  _Atomic uint64_t st_rejected;      /* any worker: fetch_add, relaxed */
  unsigned attached_done; /* the attached worker finished (loop thread) */
  /* Set by hr_server_start before the threads exist, never changed: the
   * server runs on worker threads (read by any thread; `state` is not, as
   * hr_server_stop writes it). */
  int threaded;
  hr_shutdown_cb shutdown_cb;
  void *shutdown_udata;
  size_t rbuf_size;
  size_t ntls;                       /* addresses with TLS */
  uv_mutex_t abandon_lock;           /* guards `abandoned` */
  hr__exchange_t *abandoned;         /* kept until hr_server_free */
  _Atomic uint64_t st_abandoned;     /* fetch_add, relaxed */
  /* hr_server_drain: set once (exchange); readiness reads it. */
  _Atomic int draining;
  uint64_t drain_grace_ms, drain_deadline_ms; /* written before drain_go */
  hr_shutdown_cb drain_cb;           /* worker threads: the last one calls it */
  void *drain_udata;
  _Atomic unsigned drain_left;       /* worker threads still running */
  /* Worker threads: set (release) once the figures above are written;
   * each worker's async handle is then woken, and it begins draining. */
  _Atomic int drain_go;
  _Atomic int drain_called;          /* the drain's callback has been called */
};

/* Whether `framing` bytes of chunked framing are out of proportion to the
 * body data before them (ex->body_data): more than the header limit
 * besides one byte per byte of data -> 413. */
static inline int hr__framing_excess(const hr__exchange_t *ex, uint64_t framing) {
  return framing > ex->w->server->opts.max_header_bytes + ex->body_data;
}

/* No further request on this worker's connections: it is stopping or
 * draining.  Loop thread. */
static inline int hr__worker_ending(const hr__worker_t *w) {
  return w->stopping || w->draining;
}

/* listener.c */
/* A connection over the connected, non-blocking socket `fd`: TCP, or TLS
 * with `ssl` (an SSL *; the loop must have its TLS state).  `h2`: the
 * listener speaks HTTP/2 (TLS: when ALPN chose "h2"; TCP: h2c with prior
 * knowledge).  fd and ssl
 * become the connection's; NULL when out of memory (the caller still owns
 * them then). */
hr__conn_t *hr__conn_from_socket(hr__worker_t *w, int fd, void *ssl,
                                 const struct hr__proxyconf_s *pc, int h2);
/* Takes the listening socket `fd` (it is the listener's on success). */
int hr__listener_init(hr__worker_t *w, hr__listener_t *l, int fd);
int hr__listener_start(hr__listener_t *l); /* accepting from now on */
/* The listener's socket is polled by other workers too. */
void hr__listener_share(hr__listener_t *l);
void hr__listener_close(hr__listener_t *l, uv_close_cb cb);

/* worker.c */
/* Makes the loop's TLS state when it has none yet: 0 or HR_ENOMEM. */
int hr__worker_tls_loop(hr__worker_t *w);
void hr__worker_conn_gone(hr__worker_t *w);
void hr__worker_exchange_gone(hr__worker_t *w);
/* An exchange's observer (hr__ex_observer_fn): the worker counts a
 * completed response (hr_server_stats_t.requests), whichever protocol
 * carried it. */
void hr__worker_ended(hr__exchange_t *ex);
void hr__worker_schedule(hr__worker_t *w); /* run the resume list soon */
/* Any thread: queues run(target, fn, aux, udata) for the worker's loop
 * thread, never run inside this call.  Allocates one node with the
 * server's allocator.  Returns 0, HR_ENOMEM, or HR_ECLOSED when the worker
 * has finished (nothing would run it). */
int hr__worker_post(hr__worker_t *w, hr__post_run_t run, void *target, hr__fn_t fn,
                    hr__fn_t aux, void *udata);
/* What a stream or WebSocket call from a thread not the loop's answers:
 * HR_ETHREAD, or HR_ECLOSED once the loop has ended (a post run at the
 * worker's cleanup). */
int hr__worker_call_thread_err(hr__worker_t *w);
void hr__worker_handle_closed(hr__worker_t *w);
/* Wakes the worker's async handle (on_async) unless it has finished; any
 * thread. */
void hr__worker_wake(hr__worker_t *w);
/* Begins draining (loop thread): every connection ends after its next
 * response; after `grace_ms` the worker shuts down with `deadline_ms`
 * (hr__worker_shutdown, which closes what is idle then).  A no-op when
 * already draining or stopping. */
void hr__worker_drain(hr__worker_t *w, uint64_t grace_ms, uint64_t deadline_ms);
void hr__stat_inc(_Atomic uint64_t *c);
void hr__stat_add(_Atomic uint64_t *c, uint64_t n);
void hr__log(hr__worker_t *w, hr_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* HR_SERVER_INTERNAL_H */
