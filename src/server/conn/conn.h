/* SPDX-License-Identifier: MIT */
/*
 * The connection: a transport (net/) carrying exchanges, HTTP/1.1 one at a
 * time (c->ex), HTTP/2 as streams (c->h2), or, after 101, a byte stream
 * (stream.c).  conn.c is the one author of closing: every close verb is
 * here, the state moves only forward (to_state asserts it), and the
 * protocols above (h1/, h2/) report back through them.  What differs by
 * protocol, conn.c asks through the connection's wire (wire.h), never by
 * calling h1/ or h2/.
 */
#ifndef HR_SERVER_CONN_CONN_H
#define HR_SERVER_CONN_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/conn/out.h"
#include "server/core/worker.h"
#include "server/exchange/exchange.h"
#include "server/net/proxy.h"
#include "server/net/timer.h"
#include "server/net/transport.h"

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
  /* The peer reset the connection, or (HTTP/2) ended it: a request still
   * arriving on it is a client abort (hr__exchange_client_left). */
  unsigned peer_left : 1;
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
  unsigned rbuf_large : 1; /* rbuf is a large read buffer (HR__RBUF_SMALL) */
  unsigned rbuf_grew : 1;  /* it needed one before: takes a large one at once */
  uint32_t late_due;
};

/* conn.c */
/* Room for the peer's address as text, kept with each connection record
 * while the server has an access log (and only then), filled when the
 * connection is made (hr__conn_peer_render): the log reads it for every line,
 * also of an exchange that outlives its connection (it keeps a copy). */
/* That room, or NULL without an access log. */
char *hr__conn_peer_text(hr__conn_t *c);
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

/* The exchange's view of the connection carrying it, for the protocols'
 * tables (hr__proto_t.peer, .transport, .stepping). */
int hr__conn_ex_peer(const hr__exchange_t *ex, struct sockaddr *addr, int *len);
hr__transport_t *hr__conn_ex_transport(const hr__exchange_t *ex);
int hr__conn_ex_stepping(const hr__exchange_t *ex);
/* The capacity of the connection's read buffer, in bytes. */
size_t hr__conn_rbuf_cap(const hr__conn_t *c);
/* Moves what the read buffer holds into a large one (a no-op when it is
 * one).  Only while nothing points into it: before a header section is
 * parsed, or on HTTP/2 (whose frames are copied out).  0 or HR_ENOMEM. */
int hr__conn_rbuf_grow(hr__conn_t *c);
/* Runs the resume list soon (an idle handle of the worker). */
void hr__worker_schedule(hr__worker_t *w);
/* Renders the peer of a new connection into its room (a no-op without an
 * access log; empty when the transport has no peer address). */
void hr__conn_peer_render(hr__conn_t *c);
/* An IPv4 or IPv6 address as text, without the port, into out (cap bytes;
 * empty for another family). */
void hr__addr_text(const struct sockaddr_storage *ss, char *out, size_t cap);

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
void hr__stream_locals_free(hr__worker_t *w); /* hr_stream_loop_local's, after the streams */


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

#endif /* HR_SERVER_CONN_CONN_H */
