/* SPDX-License-Identifier: MIT */
/*
 * Internal structures of the server: the server, its per-loop workers, and
 * connections with the request/response exchange they carry.  One
 * connection carries at most one exchange at a time; pipelined requests wait
 * in the read buffer until the current response completes, which keeps
 * responses in request order without a queue of exchanges.
 */
#ifndef HR_SERVER_INTERNAL_H
#define HR_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <llhttp.h>
#include <uv.h>

#include "hroute/error.h"
#include "hroute/http.h"
#include "hroute/server.h"
#include "http/strict.h"
#include "router/route.h"
#include "util/mem.h"

typedef struct hr__worker_s hr__worker_t;
typedef struct hr__conn_s hr__conn_t;

/* ---- output -------------------------------------------------------------- */

/* One piece of queued output: bytes in the batch buffer (borrowed == NULL,
 * at `off`) or a borrowed body. */
typedef struct hr__wseg_s {
  const char *borrowed;
  size_t off;
  size_t len;
  hr_release_cb release;
  void *udata;
} hr__wseg_t;

/* A batch of output written with one write call. */
typedef struct hr__wbatch_s {
  char *buf; /* from the worker's block pool while cap == block size */
  size_t len, cap;
  hr__wseg_t *segs;
  size_t nsegs, segs_cap;
  size_t bytes; /* total queued bytes, buffer and borrowed */
} hr__wbatch_t;

/* ---- exchange ------------------------------------------------------------ */

struct hr_request_s {
  hr__conn_t *conn;
  hr_span_t method, target, path, query;
  hr_span_t host; /* Host field value */
  int version; /* 10 or 11 */
  hr_field_t *fields;
  size_t nfields, fields_cap;
  const hr_route_t *route;
  size_t nparams;
  hr_param_t params[HR_MAX_PARAMS];
  hr_value_t values[HR_MAX_PARAMS]; /* typed parameters, converted */
  void *objs[HR_MAX_PARAMS];        /* parameters parsed by a delegate */
  void *ctx;                        /* per-request context */
  int ctx_made;
  char *body;
  size_t body_len, body_cap;
  hr_body_cb body_cb;
  void *body_udata;
  unsigned host_count;
  unsigned keep_alive : 1;
  unsigned expect_continue : 1;
  unsigned expect_other : 1;
  unsigned is_head : 1;
  unsigned chunked : 1;
  unsigned has_length : 1;
  unsigned conn_close : 1;
  unsigned conn_keep_alive : 1;
  unsigned body_done : 1;     /* body callback saw its last call */
  unsigned has_te : 1;        /* Transfer-Encoding present */
  unsigned te_unsupported : 1;
  unsigned target_bad : 1;
  unsigned continue_pending : 1; /* 100 Continue waits for read_body */
  unsigned in_field_value : 1;
  uint64_t content_length;
};

typedef enum {
  HR__RES_NEW = 0, /* nothing sent yet */
  HR__RES_STREAMING,
  HR__RES_DONE
} hr__res_state_t;

struct hr_response_s {
  hr__conn_t *conn;
  hr__res_state_t state;
  int status;
  char *fields; /* user fields rendered "N: V\r\n", arena memory */
  size_t fields_len, fields_cap;
  int64_t content_length; /* streaming: declared, or HR_LENGTH_UNKNOWN */
  uint64_t written;
  unsigned chunked : 1;
  unsigned no_body : 1;   /* HEAD, 1xx, 204, 304 */
  unsigned want_drain : 1;
  hr_drain_cb drain_cb;
  void *drain_udata;
  hr_abort_cb abort_cb;
  void *abort_udata;
};

/* ---- connection ---------------------------------------------------------- */

typedef enum {
  HR__PH_HEAD = 0, /* collecting a header section */
  HR__PH_BODY,     /* header section parsed, message body under way */
  HR__PH_DONE      /* message complete, waiting for the response */
} hr__phase_t;

typedef enum {
  HR__T_NONE = 0,
  HR__T_IDLE,    /* keep-alive wait between requests */
  HR__T_HEADER,  /* header section not complete */
  HR__T_BODY,    /* body inactivity */
  HR__T_WRITE,   /* output not progressing */
  HR__T_LINGER   /* closing: draining the peer's bytes after our FIN */
} hr__timer_kind_t;

/* Where a connection without a socket writes (see hr__vconn_new). */
typedef void (*hr__sink_cb)(void *ctx, const char *p, size_t n);

struct hr__conn_s {
  uv_tcp_t tcp;          /* unused (never initialised) when `sink` is set */
  hr__sink_cb sink;
  void *sink_ctx;
  uv_timer_t timer;
  uv_shutdown_t shutdown_req;
  uv_write_t write_req;
  llhttp_t parser;
  hr__worker_t *w;
  hr__conn_t *prev, *next;      /* worker's list */
  hr__conn_t *resume_next;      /* worker's resume list */

  /* input: rbuf[0..rlen) read; [msg_start..rpos) parsed by llhttp */
  char *rbuf;
  size_t rlen, rpos, msg_start;
  hr__head_scan_t hscan;
  hr__frame_scan_t fscan;
  const char *gap_start; /* chunked: first framing byte not yet scanned */
  hr__phase_t phase;
  size_t hdr_end;        /* end of the current header section in rbuf */
  uint64_t body_bytes;   /* body-phase bytes seen, framing included */
  uint64_t body_data;    /* message body bytes (after decoding chunks) */
  uint64_t body_limit;
  int fail_status;       /* set by llhttp callbacks before HPE_USER */
  int internal_status;   /* 404 or 405 answered by the server itself */
  hr_span_t internal_allow;
  hr_span_t internal_location;

  /* the exchange */
  hr_request_t req;
  hr_response_t res;
  hr__arena_t arena;

  /* output */
  hr__wbatch_t pending;  /* being built */
  hr__wbatch_t inflight; /* handed to uv_write */

  /* timers (ms, loop time) */
  uint64_t deadline;
  uint64_t armed_due;
  uint64_t head_started;
  uint64_t last_activity;
  uint64_t write_since;  /* last write progress */
  hr__timer_kind_t timer_kind;

  uint64_t requests_served;
  unsigned handles_open;
  uint64_t t_start, t_done;   /* uv_hrtime(): handler start, response done */
  hr__slot_t *slot;           /* the route's slot for this loop */

  unsigned in_process : 1;
  unsigned on_resume : 1;
  unsigned reading : 1;
  unsigned writing : 1;       /* uv_write in flight */
  unsigned handler_active : 1; /* handler ran, response not complete */
  unsigned dispatched : 1;
  unsigned msg_complete : 1;
  unsigned discard_body : 1;
  unsigned closing : 1;       /* no more requests; close after output */
  unsigned shutting : 1;      /* uv_shutdown issued */
  unsigned closed : 1;        /* uv_close issued */
  unsigned aborted : 1;       /* lost before the response completed */
  unsigned peer_eof : 1;
  unsigned counted : 1;       /* holds a max_connections slot */
  unsigned invoked : 1;       /* the invoker ran for this exchange */
  unsigned route_ref : 1;     /* holds a reference on req.route */
  unsigned holds_ctx : 1;     /* counted in slot->inflight */
  unsigned internal_answer : 1; /* the server answers, not the route */
};

/* ---- worker (one per loop) ----------------------------------------------- */

/* A per-loop context this loop made (see invoke.c). */
typedef struct hr__ctxent_s {
  hr__core_t *core;
  hr__slot_t *slot;
} hr__ctxent_t;

typedef struct hr__post_s {
  struct hr__post_s *next;
  hr_response_t *res;
  hr_post_cb cb;
  void *udata;
} hr__post_t;

struct hr__worker_s {
  hr_server_t *server;
  uv_loop_t *loop;
  uv_loop_t own_loop;
  uv_thread_t thread;
  int start_err;
  size_t index;
  void *thread_ready;    /* hr_server_start's semaphore, until ready */

  uv_tcp_t *listeners;   /* one per server address */
  int *fds;              /* sockets bound for this worker, -1 once handed over */
  size_t nlisteners;
  size_t nlisteners_open; /* listeners whose handle was initialised */

  uv_timer_t date_timer;
  char date[40];         /* "Date: <IMF-fixdate>\r\n" */
  size_t date_len;

  uv_async_t async;
  uv_mutex_t post_lock;
  hr__post_t *posts;
  _Atomic int stop_requested; /* set by hr_server_stop, read by the worker */

  uv_idle_t resume_idle;
  hr__conn_t *resume_head;

  uv_timer_t shutdown_timer;
  unsigned handles_open;
  unsigned stopping : 1;
  unsigned handles_closing : 1;
  unsigned base_handles : 1; /* async, timers and idle initialised */
  unsigned attached : 1;     /* runs on a loop the host owns */
  uint64_t shutdown_deadline_ms;

  int loop_slot;         /* this loop's slot number in the router */
  hr__ctxent_t *ctxs;    /* per-loop contexts made here */
  size_t nctx, ctx_cap;

  hr__mem_t mem;
  hr__pool_t rpool; /* read buffers */
  hr__pool_t bpool; /* arena and output blocks */

  char drain_buf[4096]; /* where closing connections' input is dropped */
  uv_tcp_t spare;        /* accepts and closes connections when out of memory */
  uv_stream_t *spare_waiting;
  unsigned spare_busy : 1;

  hr__conn_t *conns;
  size_t nconns; /* including closed ones whose response is outstanding */

  /* Statistics: single writer (this worker), relaxed; see hr__mem_t. */
  _Atomic uint64_t st_requests, st_accepted, st_bad;
};

typedef enum { HR__SRV_NEW = 0, HR__SRV_ATTACHED, HR__SRV_THREADS,
               HR__SRV_CLOSING, HR__SRV_DONE } hr__srv_state_t;

struct hr_server_s {
  hr__mem_t mem;
  hr_router_t *router;
  hr_server_options_t opts;
  hr__head_limits_t head_limits;
  struct sockaddr_storage *addrs;
  int *ports;
  size_t naddrs;
  hr__worker_t *workers;
  size_t nworkers;
  hr__srv_state_t state;
  _Atomic unsigned active_conns;     /* for max_connections */
  _Atomic uint64_t st_rejected;      /* any worker: fetch_add, relaxed */
  unsigned attached_done; /* the attached worker finished (loop thread) */
  hr_shutdown_cb shutdown_cb;
  void *shutdown_udata;
  size_t rbuf_size;
};

/* conn.c */
void hr__conn_accept(hr__worker_t *w, uv_stream_t *listener);
void hr__conn_kick(hr__conn_t *c);        /* schedule processing soon */
void hr__conn_resume(hr__conn_t *c);      /* process now (loop callback) */
void hr__conn_close(hr__conn_t *c);       /* hard close, aborts exchange */
void hr__conn_drain_close(hr__conn_t *c); /* shutdown: close when idle */
int hr__conn_is_idle(const hr__conn_t *c);
void hr__conn_response_done(hr__conn_t *c);
void hr__conn_maybe_free(hr__conn_t *c);

/* parse.c */
extern const llhttp_settings_t hr__parser_settings;
llhttp_errno_t hr__parse_head(hr__conn_t *c);

/* invoke.c */
void hr__invoke(hr__conn_t *c);
void hr__exchange_end(hr__conn_t *c);
void hr__worker_ctx_prepare(hr__worker_t *w);
void hr__worker_ctx_sweep(hr__worker_t *w, int all);
/* conn.c: the server answers `status` itself on the keep-alive path. */
void hr__answer_status(hr__conn_t *c, int status);

/* Connections without a socket, for the in-process benchmark, fuzzing and
 * tests (conn.c).  Bytes fed are processed at once, as if read; output goes
 * to `sink` synchronously.  feed returns how many bytes were taken (less
 * when the connection stops reading: a response is pending, or it closed).
 * Close with hr__conn_close; the connection is freed on the loop. */
hr__conn_t *hr__vconn_new(hr__worker_t *w, hr__sink_cb sink, void *ctx);
size_t hr__vconn_feed(hr__conn_t *c, const char *p, size_t n);
void hr__vconn_eof(hr__conn_t *c);
/* server.c: a server with one worker on `loop` and no listener, for
 * hr__vconn_new.  Close it with hr_server_close. */
int hr__server_attach_virtual(hr_server_t *s, uv_loop_t *loop);

/* write.c */
int hr__out_append(hr__conn_t *c, const void *p, size_t n);
char *hr__out_reserve(hr__conn_t *c, size_t n); /* then hr__out_commit */
int hr__out_commit(hr__conn_t *c, size_t n); /* 0 or HR_ENOMEM */
int hr__out_borrow(hr__conn_t *c, const void *p, size_t n, hr_release_cb cb,
                   void *udata);
size_t hr__out_queued(const hr__conn_t *c);
void hr__out_flush(hr__conn_t *c);
void hr__out_discard(hr__conn_t *c); /* connection lost: release all */
int hr__out_error_response(hr__conn_t *c, int status, hr_span_t extra);

/* response.c */
void hr__res_reset(hr_response_t *res, hr__conn_t *c);
int hr__res_render_head(hr_response_t *res, int status, int64_t length,
                        int chunked);

/* worker.c */
void hr__worker_date_init(hr__worker_t *w);
void hr__worker_conn_gone(hr__worker_t *w);
void hr__worker_schedule(hr__worker_t *w); /* run the resume list soon */
void hr__worker_handle_closed(hr__worker_t *w);
void hr__stat_inc(_Atomic uint64_t *c);
void hr__log(hr__worker_t *w, hr_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* HR_SERVER_INTERNAL_H */
