/* SPDX-License-Identifier: MIT */
/*
 * Certificate updates against handshakes and handlers, each in one forced
 * interleaving (test points, util/testpoint.h), so what they check happens
 * every run:
 *
 * - A handler, inside its connection's read-side section, updates the
 *   certificate while another thread's update waits for a grace period.
 *   With the wait under the configuration's lock (the old retire()), both
 *   threads wait forever: the writer for the handler's section to end, the
 *   handler for the lock.  A watchdog fails the test instead of hanging.
 * - A handshake's server-name callback has loaded the names table when
 *   another thread replaces it: the old table must stay until the
 *   callback's section ends (ThreadSanitizer reports a free without a grace
 *   period, whichever thread gets there first).
 * - The same, with the names replaced from inside a read-side section (the
 *   old table goes to call_rcu) while the handshake goes on to finish and
 *   serve a request: sections of the worker that began after the handover,
 *   which order nothing (a read after the callback's section must still be
 *   reported).
 * - A handshake uses a context another thread built and published: the
 *   release/acquire pair must order the build before the use (TSan, through
 *   the annotations of tlsctx.c, since OpenSSL is not instrumented).
 *
 * ctest-labels: tsan
 * ctest-needs: testpoints
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdatomic.h>
#include <string.h>

#include "fixture.h"
#include "tlsfx.h"
#include "util/rcu.h"
#include "util/testpoint.h"

static tf_cert_t cert_a, cert_b;
static hr_tls_options_t opts_a, opts_b;

/* What the hooks and handlers share with the test thread: only relaxed
 * atomics (see spin_until). */
static struct {
  hr_server_t *server;
  _Atomic int writer_waiting; /* the test thread's update reached its wait */
  _Atomic int in_handler;     /* the handler runs */
  _Atomic int handler_rc;     /* the handler's hr_server_tls_update result + 1 */
  _Atomic int sni_paused;     /* the server-name callback holds the names */
  _Atomic int arm_sni;        /* pause the next server-name callback */
  _Atomic int connected;      /* the plain connection was made */
  _Atomic int ssls;           /* SSLs the worker made */
} g;

static _Thread_local int is_writer; /* the test thread, while it updates */

static void hook(hr__tp_t tp, void *arg) {
  (void)arg;
  if (tp == HR__TP_TLS_RETIRE_WAIT && is_writer)
    atomic_store_explicit(&g.writer_waiting, 1, memory_order_relaxed);
  if (tp == HR__TP_TLS_NEW_SSL) atomic_fetch_add_explicit(&g.ssls, 1, memory_order_relaxed);
  if (tp == HR__TP_TLS_SNI_NAMES &&
      atomic_exchange_explicit(&g.arm_sni, 0, memory_order_relaxed)) {
    atomic_store_explicit(&g.sni_paused, 1, memory_order_relaxed);
    spin_until(&g.writer_waiting, 1);
  }
}

static void start(fx_t *fx) {
  memset(&g, 0, sizeof g);
  hr__tp_set(hook);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr_server_listen_tls(fx->server, "127.0.0.1", 0, &opts_a), 0);
  assert_int_equal(hr_server_start(fx->server, 1), 0);
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
  g.server = fx->server;
}

static int teardown(void **state) {
  hr__tp_set(NULL);
  return fx_teardown(state);
}

static void expect_cn(int port, const char *sni, const char *want) {
  tf_conn_t c;
  char cn[64];
  assert_int_equal(tf_connect(&c, port, &cert_a, &cert_b, 0, NULL, 0, sni), 0);
  assert_int_equal(tf_peer_cn(&c, cn, sizeof cn), 0);
  assert_string_equal(cn, want);
  tf_close(&c);
}

/* ---- an update from a handler while another waits ----------------------- */

/* Waits for the test thread's update to reach its grace period, then
 * updates itself: from inside its read-side section. */
static void h_reload(hr_request_t *req, hr_response_t *res, void *udata) {
  int rc;
  (void)req;
  (void)udata;
  atomic_store_explicit(&g.in_handler, 1, memory_order_relaxed);
  spin_until(&g.writer_waiting, 1);
  rc = hr_server_tls_update(g.server, 0, &opts_b);
  atomic_store_explicit(&g.handler_rc, rc + 1, memory_order_relaxed);
  hr_response_send(res, 200, "reloaded", 8);
}

typedef struct post_s {
  int port;
  char resp[1024];
  long n;
} post_t;

static void *post_reload(void *arg) {
  post_t *p = arg;
  static const char req[] = "POST /reload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n";
  tf_conn_t c;
  p->n = -1;
  if (tf_connect(&c, p->port, &cert_a, &cert_b, 0, NULL, 0, NULL) != 0) return NULL;
  if (tf_write(&c, req, sizeof req - 1) == 0) p->n = tf_read_response(&c, p->resp, sizeof p->resp);
  tf_close(&c);
  return NULL;
}

static void test_update_from_handler_while_another_waits(void **state) {
  fx_t *fx = *state;
  pthread_t t;
  post_t p;
  fx_route(fx, "POST", "/reload", h_reload, NULL);
  start(fx);
  memset(&p, 0, sizeof p);
  p.port = fx->port;
  watchdog_say(60, "an update racing a handler's update");
  assert_int_equal(pthread_create(&t, NULL, post_reload, &p), 0);
  spin_until(&g.in_handler, 1);
  /* This thread's update publishes cert_a again and waits for the
   * handler's section; the handler's update then needs the lock. */
  is_writer = 1;
  assert_int_equal(hr_server_tls_update(fx->server, 0, &opts_a), 0);
  is_writer = 0;
  pthread_join(t, NULL);
  watchdog(0);
  assert_int_equal(atomic_load(&g.handler_rc), 0 + 1);
  assert_true(p.n > 0);
  assert_memory_equal(p.resp, "HTTP/1.1 200 OK\r\n", 17);
  assert_string_equal(strstr(p.resp, "\r\n\r\n") + 4, "reloaded");
  /* The handler's update came second: cert_b is in force. */
  expect_cn(fx->port, NULL, "second.test");
}

/* ---- names replaced while a server-name callback reads them ------------- */

typedef struct hs_s {
  int port;
  const char *sni;
  char cn[64];
  int rc;
} hs_t;

static void *handshake(void *arg) {
  hs_t *h = arg;
  tf_conn_t c;
  h->rc = tf_connect(&c, h->port, &cert_a, &cert_b, 0, NULL, 0, h->sni);
  if (h->rc == 0) {
    h->rc = tf_peer_cn(&c, h->cn, sizeof h->cn);
    tf_close(&c);
  }
  return NULL;
}

static void test_names_replaced_under_a_handshake(void **state) {
  fx_t *fx = *state;
  pthread_t t;
  hs_t h;
  start(fx);
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "second.test", &opts_b), 0);
  memset(&h, 0, sizeof h);
  h.port = fx->port;
  h.sni = "second.test";
  watchdog_say(60, "names replaced under a handshake");
  atomic_store_explicit(&g.arm_sni, 1, memory_order_relaxed);
  assert_int_equal(pthread_create(&t, NULL, handshake, &h), 0);
  spin_until(&g.sni_paused, 1);
  /* The callback holds the table; a new one is published and the old one
   * retired while it does (the callback goes on once this thread reaches
   * its grace period).  It may be freed only after the callback's section. */
  is_writer = 1;
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "third.test", &opts_a), 0);
  is_writer = 0;
  pthread_join(t, NULL);
  watchdog(0);
  assert_int_equal(h.rc, 0);
  assert_string_equal(h.cn, "second.test");
  expect_cn(fx->port, "third.test", "localhost");
  expect_cn(fx->port, "second.test", "second.test");
}

/* ---- names replaced from inside a section under a handshake ------------- */

/* A handshake with `sni`, then one request on the connection. */
typedef struct hsget_s {
  int port;
  const char *sni;
  char cn[64];
  char resp[512];
  long n;
  int rc;
} hsget_t;

static void *handshake_and_get(void *arg) {
  hsget_t *h = arg;
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  tf_conn_t c;
  h->n = -1;
  h->rc = tf_connect(&c, h->port, &cert_a, &cert_b, 0, NULL, 0, h->sni);
  if (h->rc == 0) {
    h->rc = tf_peer_cn(&c, h->cn, sizeof h->cn);
    if (tf_write(&c, req, sizeof req - 1) == 0)
      h->n = tf_read_response(&c, h->resp, sizeof h->resp);
    tf_close(&c);
  }
  return NULL;
}

/* The same table replaced by a writer inside a read-side section (as a
 * handler is), so the old table goes to call_rcu: its grace period waits
 * for the callback's section, which began before, and not for the
 * sections the worker runs after it (the rest of the handshake, the
 * request), which began after; the writer's own section keeps the grace
 * period open until they are over.  The callback may use the table only
 * inside its own section: what it reads after it is ordered before the
 * free by nothing (ThreadSanitizer must not take the worker's later
 * sections for an edge). */
static void test_names_replaced_from_a_section_under_a_handshake(void **state) {
  fx_t *fx = *state;
  pthread_t t;
  hsget_t h;
  fx_route(fx, "GET", "/", ta_text, "served");
  start(fx);
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "second.test", &opts_b), 0);
  memset(&h, 0, sizeof h);
  h.port = fx->port;
  h.sni = "second.test";
  watchdog_say(60, "names replaced from a section under a handshake");
  atomic_store_explicit(&g.arm_sni, 1, memory_order_relaxed);
  assert_int_equal(pthread_create(&t, NULL, handshake_and_get, &h), 0);
  spin_until(&g.sni_paused, 1);
  hr_router_read_lock();
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "third.test", &opts_a), 0);
  atomic_store_explicit(&g.writer_waiting, 1, memory_order_relaxed);
  pthread_join(t, NULL); /* the handshake and the request are over */
  hr_router_read_unlock();
  hr__rcu_barrier(); /* the old table's callback has run */
  watchdog(0);
  assert_int_equal(h.rc, 0);
  assert_string_equal(h.cn, "second.test");
  assert_true(h.n > 0);
  assert_string_equal(strstr(h.resp, "\r\n\r\n") + 4, "served");
  expect_cn(fx->port, "third.test", "localhost");
}

/* ---- a context built on one thread, used on another --------------------- */

/* Connects once the test thread has published (a relaxed flag: no edge
 * from the test thread to this one, and so none through connect/accept to
 * the worker, which TSan would count) and closes again.  A plain TCP
 * connection: a TLS client would take OpenSSL's global locks, which the
 * test thread's update takes too, and TSan counts intercepted locks even
 * inside uninstrumented code.  The worker makes its SSL at the accept. */
static void *connect_after_update(void *arg) {
  int port = *(int *)arg, fd;
  struct sockaddr_in sa;
  spin_until(&g.writer_waiting, 1);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
    atomic_store_explicit(&g.connected, 1, memory_order_relaxed);
  if (fd >= 0) close(fd);
  return NULL;
}

static void test_context_published_complete(void **state) {
  fx_t *fx = *state;
  pthread_t t;
  start(fx);
  watchdog_say(60, "a connection after an update");
  assert_int_equal(pthread_create(&t, NULL, connect_after_update, &fx->port), 0);
  /* Built and published here; the worker's accept makes its SSL on it,
   * and its only ordering with this thread is the context pointer's
   * release/acquire: the client thread was started before, and goes on
   * when this thread's update reaches its grace period. */
  is_writer = 1;
  assert_int_equal(hr_server_tls_update(fx->server, 0, &opts_b), 0);
  is_writer = 0;
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&g.connected), 1);
  /* Nothing from this thread reaches the worker before it made its SSL. */
  spin_until(&g.ssls, 1);
  watchdog(0);
  expect_cn(fx->port, NULL, "second.test");
  assert_int_equal(atomic_load(&g.ssls), 2);
}

/* ---- ticket keys and names published on one thread, used on another ----- */

/* A TLS client that waits for `go` (a relaxed flag: nothing of the
 * publishing thread reaches it), then connects offering `resume` and
 * `sni`, makes one request and keeps the session. */
typedef struct later_s {
  int port;
  const char *sni;
  SSL_SESSION *resume, *session;
  char cn[64];
  int rc, reused;
  long n;
  char resp[512];
} later_t;

static _Atomic int go;

static void *connect_when_told(void *arg) {
  later_t *l = arg;
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  tf_conn_t c;
  spin_until(&go, 1);
  tf_resume = l->resume;
  l->rc = tf_connect(&c, l->port, &cert_a, &cert_b, 0, NULL, 0, l->sni);
  tf_resume = NULL;
  if (l->rc != 0) return NULL;
  l->reused = c.reused;
  l->rc = tf_peer_cn(&c, l->cn, sizeof l->cn);
  if (tf_write(&c, req, sizeof req - 1) == 0) l->n = tf_read_response(&c, l->resp, sizeof l->resp);
  l->session = SSL_get1_session(c.ssl); /* TLS 1.3 tickets came with the response */
  tf_close(&c);
  return NULL;
}

/* New ticket keys made here, opened by the worker's handshake: only the
 * keys pointer's release/acquire orders their making before their use.
 * The session was sealed with the keys before: it must resume (the
 * previous key opens it). */
static void test_ticket_keys_published_complete(void **state) {
  fx_t *fx = *state;
  later_t first, l;
  pthread_t t;
  fx_route(fx, "GET", "/", ta_text, "served");
  start(fx);
  memset(&first, 0, sizeof first);
  first.port = fx->port;
  watchdog_say(60, "ticket keys published on one thread, used on another");
  atomic_store(&go, 1);
  connect_when_told(&first);
  assert_int_equal(first.rc, 0);
  assert_non_null(first.session);
  memset(&l, 0, sizeof l);
  l.port = fx->port;
  l.resume = first.session;
  atomic_store(&go, 0);
  assert_int_equal(pthread_create(&t, NULL, connect_when_told, &l), 0);
  assert_int_equal(hr_server_tls_rotate_tickets(fx->server, 0), 0);
  atomic_store_explicit(&go, 1, memory_order_relaxed);
  pthread_join(t, NULL);
  watchdog(0);
  assert_int_equal(l.rc, 0);
  assert_int_equal(l.reused, 1);
  assert_true(l.n > 0);
  SSL_SESSION_free(first.session);
  SSL_SESSION_free(l.session);
}

/* A names table made here, read by the worker's server-name callback:
 * only the names pointer's release/acquire orders the table (and the
 * context it names) before their use. */
static void test_names_published_complete(void **state) {
  fx_t *fx = *state;
  later_t l;
  pthread_t t;
  fx_route(fx, "GET", "/", ta_text, "served");
  start(fx);
  memset(&l, 0, sizeof l);
  l.port = fx->port;
  l.sni = "second.test";
  watchdog_say(60, "names published on one thread, used on another");
  atomic_store(&go, 0);
  assert_int_equal(pthread_create(&t, NULL, connect_when_told, &l), 0);
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "second.test", &opts_b), 0);
  atomic_store_explicit(&go, 1, memory_order_relaxed);
  pthread_join(t, NULL);
  watchdog(0);
  assert_int_equal(l.rc, 0);
  assert_string_equal(l.cn, "second.test");
  assert_true(l.n > 0);
  SSL_SESSION_free(l.session);
}

static int group_setup(void **state) {
  (void)state;
  if (tf_cert_pair(&cert_a, &cert_b) != 0) return -1;
  tf_tls_options(&opts_a, &cert_a);
  tf_tls_options(&opts_b, &cert_b);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tf_cert_pair_free(&cert_a, &cert_b);
  return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_update_from_handler_while_another_waits),
      T(test_names_replaced_under_a_handshake),
      T(test_names_replaced_from_a_section_under_a_handshake),
      T(test_context_published_complete),
      T(test_ticket_keys_published_complete),
      T(test_names_published_complete),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
