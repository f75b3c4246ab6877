/* SPDX-License-Identifier: MIT */
/*
 * The exchange: one request and its response, whatever the protocol that
 * carries it.  Handlers, middleware, delegates, invokers, static files,
 * metrics and the access log see only this; the exchange reaches the wire
 * and its connection only through its protocol's table (proto.h), never by
 * calling conn/, h1/ or h2/, which sit above it and call down into it.
 */
#ifndef HR_SERVER_EXCHANGE_EXCHANGE_H
#define HR_SERVER_EXCHANGE_EXCHANGE_H

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
#include "server/core/worker.h"
#include "server/exchange/proto.h"
#include "util/mem.h"

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

/* Longest request id the server generates (request_id.c): 16 hex digits,
 * '-', a worker index, '-', a 64-bit count, and room to spare. */
#define HR__RID_GEN_MAX 48

/* The request.  Everything before `nparams` is zeroed for each exchange;
 * the parameter arrays and id_buf are written before they are read. */
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
  unsigned body_paused : 1;   /* hr_request_body_pause: no piece is delivered */
  unsigned body_heap : 1;     /* body is a block of its own (dispatch.c) */
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
  char id_buf[HR__RID_GEN_MAX];     /* a generated request id (request_id.c) */
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
  /* Response compression (compress.c): a stream's encoder, NULL when the
   * response is not a compressed stream (its output goes through the
   * worker's zbuf, copied at once by the protocol). */
  struct hr__zstream_s *zs;
  int coded;               /* the streamed response is compressed (HEAD too) */
  uint64_t coded_bytes;    /* what its compressor queued: the body bytes sent */

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
  /* The body's pace (hr__body_due): loop time its current rate window
   * began and the body bytes seen then, and when the body became due. */
  uint64_t rate_start, rate_base, body_started;
  uint64_t t_done;          /* uv_hrtime() at the response's completion */
  uint64_t t_first;         /* uv_hrtime() at the read that brought the first
                               byte, or a later one (worker's t_read) */
  hr_outcome_t outcome;     /* what went out (hr__invoke_end sets it) */
  const char *peer_text;    /* detached with an access log: the peer, in the arena */
  struct hr_stream_s *upgrade; /* answered 101: the stream, until the exchange ends */
  struct hr__h2s_s *h2s;      /* HTTP/2: its stream (h2.h), in the arena */
  uint64_t sent_bytes;      /* body bytes of an answer the server gave */
  hr__slot_t *slot;        /* the route's slot for this loop */
  /* The request's id once made (request_id.c): adopted from the request's
   * field, or generated into req.id_buf; ptr NULL until then. */
  hr_span_t request_id;
  /* What the router answers this request with, from the one route table
   * it was matched in (hr__exchange_view): its host's answers, copied,
   * and fallback invoker (the router-level middleware of the answers the
   * router gives itself), so that no answer mixes two tables. */
  hr_answers_t answers;
  hr_route_t *fallback;
  /* The host table's compression settings (hr_router_set_compress), or
   * NULL: the server's.  Held by reference past the read-side section
   * (zconf_ref), as the fallback is. */
  const struct hr__zconf_s *zconf;
  unsigned handler_active : 1; /* handler ran, response not complete */
  unsigned dispatched : 1;
  unsigned msg_complete : 1;
  unsigned discard_body : 1;
  unsigned invoked : 1;       /* the invoker ran for this exchange */
  unsigned ended : 1;         /* the after-middleware ran (hr__invoke_end) */
  unsigned route_ref : 1;     /* holds a reference on req.route */
  unsigned viewed : 1;        /* answers and fallback are set */
  unsigned fallback_ref : 1;  /* holds a reference on fallback */
  unsigned zconf_ref : 1;     /* holds a reference on zconf */
  unsigned holds_ctx : 1;     /* counted in slot->inflight */
  unsigned internal_answer : 1; /* the server answers, not the route */
  unsigned streamed : 1;      /* the head came from hr_response_start: the
                                 response ends with hr_response_end */
  unsigned aborted : 1;       /* lost before the response completed */
  unsigned client_abort : 1;  /* the client left mid-body, before any answer:
                                 reported as HR_STATUS_CLIENT_CLOSED */
  unsigned framing_lost : 1;  /* the response cannot go on: close */
  unsigned close_after : 1;   /* the connection ends after this response */
  unsigned free_pending : 1;  /* released while held: freed at the unhold */
  unsigned dropped : 1;       /* its connection or stream is done with it */
  unsigned trailer_open : 1;  /* chunked: a trailer field line is being read */
  unsigned body_held : 1;     /* h1: llhttp stopped after a piece, paused */
  unsigned body_cut : 1;      /* answered before the body ended: discarded */
  unsigned rbuf_large : 1;    /* rbuf (detached) is a large read buffer */
  unsigned fields_whole : 1;  /* the header section was received and parsed
                                 whole: its fields may be trusted to be all
                                 there (a request id is adopted from them) */
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
/* A new exchange of connection `c` on `w`, speaking `proto`, its message
 * beginning at `rpos` in the read buffer; NULL: out of memory. */
hr__exchange_t *hr__exchange_new(hr__worker_t *w, hr__conn_t *c, const hr__proto_t *proto,
                                 size_t rpos);
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
 * without it (owning the read buffer) until the handler completes.
 * `peer_room`: the connection's peer as text (HR__PEER_TEXT bytes, kept
 * for the access log), or NULL. */
#define HR__PEER_TEXT 48
void hr__exchange_detach(hr__exchange_t *ex, const char *peer_room);
/* The library is done with `ex` (connection or handler side): freed now,
 * or when the last hold goes. */
void hr__exchange_release(hr__exchange_t *ex);
void hr__exchange_hold(hr__exchange_t *ex);
/* Returns 1 when that freed `ex`. */
int hr__exchange_unhold(hr__exchange_t *ex);
/* The client closed or reset its connection or stream: when the request's
 * body was still arriving and nothing was answered, the exchange ends as a
 * client abort (http.h HR_STATUS_CLIENT_CLOSED), counted in the worker's
 * st_client_aborts.  Returns 1 then, else 0.  Call before dropping it. */
int hr__exchange_client_left(hr__exchange_t *ex);
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


/* request_id.c: request ids (http.h hr_request_id; server.h
 * request_id_field and request_id_echo). */
/* Longest incoming id adopted, in bytes. */
#define HR__RID_ADOPT_MAX 128
/* Longest echo line, "<name>: <id>\r\n". */
#define HR__RID_LINE_MAX (HR__RID_NAME_MAX + 2 + HR__RID_ADOPT_MAX + 2)
/* Takes the request-id field `name` (NULL: ids off) into `s` and draws the
 * prefix of the ids it will generate.  0, or HR_EINVAL for a name that is
 * not a token of at most HR__RID_NAME_MAX bytes or is one the server
 * writes itself.  hr_server_new, before the server is shared. */
int hr__request_id_setup(hr_server_t *s, const char *name);
/* Draws the random prefix of the ids `s` will generate (getrandom(2)):
 * when it starts, before any worker runs (create_workers, server.c). */
void hr__request_id_draw(hr_server_t *s);
/* The request's id, made on the first call (hr_request_id); empty when ids
 * are off.  Loop thread. */
hr_span_t hr__request_id(hr__exchange_t *ex);
/* The echo of the response `ex` is about to send with the field lines
 * `own` ("N: V\r\n" each: the handler's, or those of the server's answer),
 * as the field line "<name>: <id>\r\n" into `line` (HR__RID_LINE_MAX
 * bytes): its length, or 0 when ids or the echo are off or `own` names the
 * field already.  The name comes as the option gave it; HTTP/2 takes
 * s->rid_lname instead (hr__request_id_echo). */
size_t hr__request_id_line(hr__exchange_t *ex, hr_span_t own, char *line);
/* The same, as the value alone: empty for no echo. */
hr_span_t hr__request_id_echo(hr__exchange_t *ex, hr_span_t own);

/* Whether the exchange's connection or stream is done with it: closed,
 * or the exchange dropped (a handler running then hears of it through
 * its abort callback; the library's own steps stop).  A connection that
 * closes drops its exchanges before anything else runs (conn.c). */
static inline int hr__ex_gone(const hr__exchange_t *ex) {
  return ex->conn == NULL || ex->dropped;
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
/* The request body's pace (RFC 9110 leaves it to the server; Apache's
 * mod_reqtimeout MinRate is the model): whether the body is due now
 * (neither complete, nor paused by the handler, nor held back for 100
 * Continue) and, if so, *due: the loop time by which it must have moved,
 * the earliest of its gap (body_timeout_ms after the last bytes), the end
 * of its rate window (body_rate_window_ms) and its overall deadline
 * (body_deadline_ms).  The protocols arm their BODY deadline with it. */
int hr__body_due(const hr__exchange_t *ex, uint64_t *due);
/* That time came (`now`, loop time): returns 1 when the body is too slow
 * (answer 408), or 0 after starting a new rate window (arm again). */
int hr__body_expired(hr__exchange_t *ex, uint64_t now);
/* The body becomes due now (its head was dispatched, 100 Continue went
 * out, or the handler resumed it): its gap and rate window start over. */
void hr__body_restart(hr__exchange_t *ex);

/* The body of a server answer with `status`: the host's error_body hook
 * (hr_answers_t `an`) when it gives one, else the reason phrase as text.
 * `buf` holds HR__ERROR_BODY_MAX bytes; *ctype gets the Content-Type
 * value.  Returns the length.  The hook runs inside a read-side section. */
#define HR__ERROR_BODY_MAX 1024
size_t hr__error_body(const hr_answers_t *an, int status, char *buf, const char **ctype);
/* The hook's part of hr__error_body alone: 0 when it gives no body. */
size_t hr__error_body_hook(const hr_answers_t *an, int status, char *buf, const char **ctype);

/* request.c: keeps the request trailer field `name`: `value` (copies
 * the exchange owns) unless hr__trailer_forbidden drops it.  0 or
 * HR_ENOMEM. */
int hr__request_add_trailer(hr__exchange_t *ex, hr_span_t name, hr_span_t value);

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
/* An exchange's observer (hr__ex_observer_fn): the worker counts a
 * completed response (hr_server_stats_t.requests), whichever protocol
 * carried it. */
void hr__worker_ended(hr__exchange_t *ex);
void hr__worker_ctx_prepare(hr__worker_t *w);
void hr__worker_ctx_sweep(hr__worker_t *w, int all);

/* Whether `framing` bytes of chunked framing are out of proportion to the
 * body data before them (ex->body_data): more than the header limit
 * besides one byte per byte of data -> 413. */
static inline int hr__framing_excess(const hr__exchange_t *ex, uint64_t framing) {
  return framing > ex->w->server->opts.max_header_bytes + ex->body_data;
}

#endif /* HR_SERVER_EXCHANGE_EXCHANGE_H */
