/* SPDX-License-Identifier: MIT */
/*
 * A worker's listening sockets: polled by the loop, accepted with accept4
 * (non-blocking, close-on-exec) a bounded number at a time, each handed to
 * a new connection with the TCP transport.  A connection that cannot be
 * served (over max_connections, out of memory) is accepted and closed at
 * once, so the client sees a closed connection and the listener keeps
 * accepting.  Out of descriptors (EMFILE, ENFILE), the worker's reserve
 * descriptor is closed to accept and drop one connection and reopened (as
 * libuv does), and the worker stops accepting for a moment (as nginx does):
 * the descriptor table is the process's, so another worker may take the
 * freed slot, and a readable listener that cannot be accepted from must not
 * spin the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/conn/conn.h"
#include "server/net/tls.h"
#include "server/net/tlsctx.h"

/* Connections accepted per readable event from a listener of this worker
 * alone, so one busy listener cannot starve the rest of the loop.  A
 * socket all workers poll takes one per event, as nginx does without
 * multi_accept: every worker is woken, and each takes its share. */
#define HR__ACCEPT_BATCH 64
/* How long a worker out of descriptors stops accepting. */
#define HR__ACCEPT_PAUSE_MS 100

typedef struct tcp_arg_s {
  uv_loop_t *loop;
  const hr_allocator_t *a;
  int fd;
  SSL *ssl;               /* TLS listener: the connection's SSL */
  hr__tlsloop_t *tls;
  int raw;                /* TLS behind a PROXY protocol header */
} tcp_arg_t;

static int init_tcp(hr__transport_t *t, void *arg,
                    const hr__transport_events_t *ev, void *owner) {
  tcp_arg_t *a = arg;
  return hr__tcp_init(t, a->loop, a->a, a->fd, ev, owner);
}

static int init_tls(hr__transport_t *t, void *arg,
                    const hr__transport_events_t *ev, void *owner) {
  tcp_arg_t *a = arg;
  return hr__tls_init(t, a->loop, a->fd, a->ssl, a->tls, a->raw, ev, owner);
}

void hr__listener_share(hr__listener_t *l) { l->batch = 1; }

hr__conn_t *hr__conn_from_socket(hr__worker_t *w, int fd, void *ssl,
                                 const hr__proxyconf_t *pc, int h2) {
  hr__conn_t *c;
  tcp_arg_t a;
  a.loop = w->loop;
  a.a = w->mem.a;
  a.fd = fd;
  a.ssl = ssl;
  a.tls = w->tls;
  a.raw = pc != NULL;
  if (ssl != NULL && w->tls == NULL) return NULL;
  c = ssl != NULL ? hr__conn_new(w, hr__tls_size(), pc != NULL, init_tls, &a)
                  : hr__conn_new(w, hr__tcp_size(), pc != NULL, init_tcp, &a);
  if (c != NULL && pc != NULL) hr__proxy_accepted(c, pc, fd);
  if (c != NULL && h2) {
    c->proto_open = 1;
    c->h2c_ok = ssl == NULL;
  }
  return c;
}

/* Serves the accepted socket `fd`, or closes it. */
static void serve(hr__worker_t *w, hr__listener_t *l, int fd) {
  hr_server_t *s = w->server;
  unsigned n = atomic_fetch_add_explicit(&s->active_conns, 1, memory_order_relaxed);
  int one = 1;
  SSL *ssl;
  hr__conn_t *c;
  if (s->opts.max_connections && n >= s->opts.max_connections) {
    atomic_fetch_sub_explicit(&s->active_conns, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->st_rejected, 1, memory_order_relaxed);
    close(fd);
    return;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ssl = l->tls != NULL ? hr__tlsconf_new_ssl(l->tls) : NULL;
  c = l->tls == NULL || ssl != NULL ? hr__conn_from_socket(w, fd, ssl, l->proxy, l->h2) : NULL;
  if (c == NULL) {
    if (ssl != NULL) HR__TLS_UNREF(SSL_get_SSL_CTX(ssl)); /* the one it was made on */
    SSL_free(ssl);
    atomic_fetch_sub_explicit(&s->active_conns, 1, memory_order_relaxed);
    close(fd);
    return;
  }
  c->counted = 1;
}

static void drop_one(hr__worker_t *w, int lfd) {
  int fd;
  if (w->reserve_fd < 0) return;
  close(w->reserve_fd);
  fd = accept(lfd, NULL, NULL);
  if (fd >= 0) close(fd);
  w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void on_accept_resume(uv_timer_t *t) {
  hr__worker_t *w = t->data;
  size_t i;
  w->accept_paused = 0;
  if (w->stopping) return;
  if (w->reserve_fd < 0) w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (i = 0; i < w->nlisteners_open; i++) hr__listener_start(&w->listeners[i]);
}

/* Stops polling every listener of `w` for a while. */
static void pause_accepting(hr__worker_t *w) {
  size_t i;
  if (w->accept_paused) return;
  w->accept_paused = 1;
  for (i = 0; i < w->nlisteners_open; i++) uv_poll_stop(&w->listeners[i].poll);
  uv_timer_start(&w->accept_timer, on_accept_resume, HR__ACCEPT_PAUSE_MS, 0);
  hr__stat_inc(&w->st_accept_pauses);
  hr__log(w, HR_LOG_WARN,
          "out of file descriptors: accepting paused for %d ms",
          HR__ACCEPT_PAUSE_MS);
}

static void on_listen_poll(uv_poll_t *h, int status, int events) {
  hr__listener_t *l = h->data;
  hr__worker_t *w = l->w;
  int i;
  (void)events;
  if (status < 0) return;
  for (i = 0; i < (int)l->batch && !w->stopping; i++) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      serve(w, l, fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE) {
      drop_one(w, l->fd);
      pause_accepting(w);
    }
    return; /* EAGAIN, or an error the next event retries */
  }
}

int hr__listener_init(hr__worker_t *w, hr__listener_t *l, int fd) {
  int err = uv_poll_init_socket(w->loop, &l->poll, fd);
  if (err != 0) return err;
  l->poll.data = l;
  l->w = w;
  l->fd = fd;
  l->batch = HR__ACCEPT_BATCH;
  return 0;
}

int hr__listener_start(hr__listener_t *l) {
  return uv_poll_start(&l->poll, UV_READABLE, on_listen_poll);
}

void hr__listener_close(hr__listener_t *l, uv_close_cb cb) {
  uv_close((uv_handle_t *)&l->poll, cb);
  close(l->fd);
  l->fd = -1;
}
