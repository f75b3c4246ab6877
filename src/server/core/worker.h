/* SPDX-License-Identifier: MIT */
/*
 * The core of the server: the per-loop worker and the server records, and
 * the services every layer above uses (pools, cross-thread posts, the log,
 * statistics, the exchange observers).  It includes nothing of the layers
 * above it (exchange/, conn/, h1/, h2/, modules/, the server's lifecycle):
 * their records are named here only as pointers, and the one event that
 * goes up (a stopping worker has nothing left) is a hook the lifecycle
 * sets.  docs/architecture.md draws the layers.
 */
#ifndef HR_SERVER_CORE_WORKER_H
#define HR_SERVER_CORE_WORKER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "hroute/error.h"
#include "hroute/http.h"
#include "hroute/server.h"
#include "http/strict.h"
#include "router/route.h"
#include "server/net/proxy.h"
#include "server/net/timer.h"
#include "util/mem.h"

typedef struct hr__worker_s hr__worker_t;
typedef struct hr__exchange_s hr__exchange_t;
typedef struct hr__conn_s hr__conn_t;
typedef struct hr__listener_s hr__listener_t;

/* Request ids (hr_server_options_t.request_id_field, exchange/request_id.c):
 * the longest field name taken, and the length of the random part that
 * begins every id a server generates (hex digits). */
#define HR__RID_NAME_MAX 64
#define HR__RID_PREFIX_LEN 16

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


struct hr__worker_s {
  hr_server_t *server;
  struct hr_stream_s **streams; /* upgraded connections' streams, by slot */
  uint32_t streams_cap;
  uv_loop_t *loop;
  /* uv_hrtime() at the loop's latest read of bytes (conn.c on_read): an
   * exchange's start, so that requests read together cost one clock read
   * (loop thread only). */
  uint64_t t_read;
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
  struct hr__codecs_s *codecs; /* whole-body encoders (codec.h), made when first used */
  struct hr__local_s *locals;  /* hr_stream_loop_local's objects, newest first */
  char *zbuf;                  /* compressed streams' output, one write at a time */
  size_t zcap;
  size_t nctx, ctx_cap;

  hr__mem_t mem;
  hr__pool_t rpool; /* large read buffers (hr_server_s.rbuf_size) */
  hr__pool_t rpool_small; /* small read buffers (HR__RBUF_SMALL) */
  uint64_t rbuf_freed;    /* bytes of large read buffers freed since the last trim */
  size_t conns_peak;      /* most connections seen by the trim since it last ran */
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

  /* Request ids generated here (exchange/request_id.c): the text they
   * begin with, "<server prefix>-<index>-", rendered at the first, and
   * how many were made.  Loop thread only. */
  char rid_head[HR__RID_PREFIX_LEN + 24];
  uint8_t rid_head_len;
  uint64_t rid_count;

  /* Statistics: single writer (this worker), relaxed; see hr__mem_t. */
  _Atomic uint64_t st_requests, st_accepted, st_bad, st_accept_pauses;
  _Atomic uint64_t st_client_aborts; /* hr_server_stats_t.client_aborts */
  _Atomic uint64_t st_bytes_received, st_bytes_sent; /* HTTP bytes, TLS unwrapped */
};

/* A listening address of the server (hr_server_listen*).  One listen
 * call adds one, or, for a host name that resolves to several addresses,
 * one per address, next to each other: a group, which the public index
 * (hr_server_port, hr_server_tls_update...) names as a whole.  The
 * group's first address owns `tls` and `proxy`; the others share them. */
typedef struct hr__addr_s {
  struct sockaddr_storage ss;
  int port;                      /* as given; the bound one once started */
  struct hr__tlsconf_s *tls;     /* TLS context, or NULL */
  struct hr__proxyconf_s *proxy; /* PROXY protocol, or NULL */
  int given;                     /* a socket the host passed, or -1 */
  size_t group;                  /* the listen call's place: the public index */
  unsigned reuseport : 1;        /* a socket per worker, with SO_REUSEPORT */
  unsigned h2 : 1;               /* TLS: offers h2 by ALPN; TCP: h2c too */
  unsigned shares : 1;           /* not the group's first: tls, proxy are its */
  unsigned any_port : 1;         /* port 0 given: the group's first picks one */
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
  struct hr__zconf_s *zconf; /* compression (codec/zconf.h); NULL: none */
  hr__ex_observer_fn observers[HR__MAX_OBSERVERS];
  size_t nobservers;
  /* The lifecycle's hook (worker.c, hr__worker_quiet): a stopping worker
   * has no connection and no detached exchange left.  Set when the server
   * is made. */
  void (*worker_quiet)(hr__worker_t *w);
  /* The wires of HTTP/1.1 and HTTP/2 (conn/wire.h, by HR__WIRE_H1 and
   * HR__WIRE_H2): how a connection speaks each.  Set when the server is
   * made. */
  const struct hr__wire_s *wire[2];
  hr__head_limits_t head_limits;
  /* Request ids: the field's name as given and in lower case (HTTP/2
   * sends names so, RFC 9113 §8.2), rid_name_len 0 when ids are off; the
   * random prefix of generated ids, hex.  Written by hr_server_new (the
   * name, NUL-terminated, which opts.request_id_field then points to) and
   * at the start (the prefix). */
  char rid_name[HR__RID_NAME_MAX + 1], rid_lname[HR__RID_NAME_MAX];
  size_t rid_name_len;
  char rid_prefix[HR__RID_PREFIX_LEN];
  hr__addr_t *addrs;
  size_t naddrs;
  size_t ngroups; /* listen calls that added addresses (hr__addr_t.group) */
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


/* No further request on this worker's connections: it is stopping or
 * draining.  Loop thread. */
static inline int hr__worker_ending(const hr__worker_t *w) {
  return w->stopping || w->draining;
}

/* Read buffers come in two sizes: a connection's first bytes go into a
 * small one, which is enough for nearly every header section, and only a
 * larger section, or a message body, moves them into a large one (room
 * for the header limit and a body to stream through).  So connections
 * that hold a partial header section cost 4 KiB each, not 24. */
#define HR__RBUF_SMALL 4096
/* Takes a read buffer (large or small) from the loop's pools; NULL when
 * out of memory. */
char *hr__rbuf_get(hr__worker_t *w, int large);
/* Gives one back; large ones that the pool does not keep count towards
 * handing memory back to the system (hr__worker_trim). */
void hr__rbuf_put(hr__worker_t *w, char *b, int large);
/* Once a second: after many large read buffers were freed (a burst of
 * connections with large header sections ended), or after a thousand
 * connections or more ended, asks the C library to give unused heap
 * memory back to the system (glibc's malloc_trim), so a burst leaves no
 * lasting footprint. */
void hr__worker_trim(hr__worker_t *w);

/* core/worker.c */
/* Makes the loop's TLS state when it has none yet: 0 or HR_ENOMEM. */
int hr__worker_tls_loop(hr__worker_t *w);
/* A connection record was freed; an exchange that outlived its
 * connection ended.  A stopping worker with nothing left then closes its
 * handles (the lifecycle's hook, hr_server_s.worker_quiet). */
void hr__worker_conn_gone(hr__worker_t *w);
void hr__worker_exchange_gone(hr__worker_t *w);
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
/* Wakes the worker's async handle (on_async) unless it has finished; any
 * thread. */
void hr__worker_wake(hr__worker_t *w);
/* Runs the posts queued so far (on_async, and the cleanup after the loop). */
void hr__worker_run_posts(hr__worker_t *w);
void hr__stat_inc(_Atomic uint64_t *c);
void hr__stat_add(_Atomic uint64_t *c, uint64_t n);
void hr__log(hr__worker_t *w, hr_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* HR_SERVER_CORE_WORKER_H */
