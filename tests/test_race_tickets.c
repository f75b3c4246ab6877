/* SPDX-License-Identifier: MIT */
/*
 * Session-ticket keys found expired by a handshake, which rotates them
 * after its read-side section (on_ticket): by then the keys it saw may
 * have been replaced and freed, and their block reused for newer keys.
 * The rotation must recognise that the expired keys are gone and rotate
 * nothing; comparing the keys' address did not (the ABA of a pointer
 * compare): it took the newer keys in the reused block for the expired
 * ones and rotated them away, two rotations instead of one, so tickets
 * sealed under the keys before the newer ones stopped opening.
 *
 * Forced with a test point (the handshake is held after its section, just
 * before it rotates) and an allocator that hands the block of the keys it
 * freed last to the next keys it makes.
 *
 * ctest-labels: tsan
 * ctest-needs: testpoints
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "fixture.h"
#include "server/internal.h"
#include "server/net/tlsctx.h"
#include "tlsfx.h"
#include "util/rcu.h"
#include "util/testpoint.h"

/* ---- an allocator that reuses the last freed block of ticket keys -------- */

#define HDR 16
static _Atomic(unsigned char *) stash; /* a freed block of keys, kept */
static _Atomic int reuse;              /* keep and hand out such blocks */

static void *r_malloc(void *ctx, size_t size) {
  unsigned char *p;
  (void)ctx;
  if (size == sizeof(hr__tickets_t) && atomic_load(&reuse) &&
      (p = atomic_exchange(&stash, NULL)) != NULL)
    return p + HDR;
  p = malloc(size + HDR);
  if (p == NULL) return NULL;
  memcpy(p, &size, sizeof size);
  return p + HDR;
}

static void r_free(void *ctx, void *ptr) {
  unsigned char *p, *none = NULL;
  size_t size;
  (void)ctx;
  if (ptr == NULL) return;
  p = (unsigned char *)ptr - HDR;
  memcpy(&size, p, sizeof size);
  if (size == sizeof(hr__tickets_t) && atomic_load(&reuse) &&
      atomic_compare_exchange_strong(&stash, &none, p))
    return;
  free(p);
}

static void *r_realloc(void *ctx, void *ptr, size_t size) {
  unsigned char *p;
  (void)ctx;
  if (ptr == NULL) return r_malloc(ctx, size);
  p = realloc((unsigned char *)ptr - HDR, size + HDR);
  if (p == NULL) return NULL;
  memcpy(p, &size, sizeof size);
  return p + HDR;
}

static const hr_allocator_t reusing = {r_malloc, r_realloc, r_free, NULL};

/* ---- the handshake held before it rotates -------------------------------- */

static struct {
  _Atomic int armed, held, release;
  int rc;
  long n;
  char resp[256];
} g;

static tf_cert_t cert;

static void hook(hr__tp_t tp, void *arg) {
  (void)arg;
  if (tp == HR__TP_TLS_TICKET_EXPIRED && atomic_exchange(&g.armed, 0)) {
    atomic_store_explicit(&g.held, 1, memory_order_relaxed);
    spin_until(&g.release, 1);
  }
}

/* One ticket per handshake: one on_ticket call to hold. */
static int one_ticket(void *ssl_ctx, void *udata) {
  (void)udata;
  return SSL_CTX_set_num_tickets(ssl_ctx, 1) == 1 ? 0 : -1;
}

static void *client(void *arg) {
  int port = *(int *)arg;
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  tf_conn_t c;
  g.n = -1;
  g.rc = tf_connect(&c, port, &cert, NULL, 0, NULL, 0, NULL);
  if (g.rc != 0) return NULL;
  if (tf_write(&c, req, sizeof req - 1) == 0) g.n = tf_read_response(&c, g.resp, sizeof g.resp);
  tf_close(&c);
  return NULL;
}

static void test_expired_keys_replaced_before_the_rotation(void **state) {
  fx_t *fx = *state;
  hr_tls_options_t o;
  hr__tlsconf_t *conf;
  hr__tickets_t *k1, *k3;
  unsigned char name3[16];
  unsigned long long t0;
  pthread_t t;
  memset(&g, 0, sizeof g);
  atomic_store(&reuse, 0);
  assert_int_equal(tf_cert_make(&cert, "localhost"), 0);
  tf_tls_options(&o, &cert);
  o.ticket_rotate_ms = 1;
  o.ctx_setup = one_ticket;
  fx->opts.allocator = &reusing;
  fx_route(fx, "GET", "/", ta_text, "served");
  hr__tp_set(hook);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr_server_listen_tls(fx->server, "127.0.0.1", 0, &o), 0);
  assert_int_equal(hr_server_start(fx->server, 1), 0);
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
  conf = fx->server->addrs[0].tls;
  /* The first keys are older than their 1 ms once this has passed. */
  t0 = now_ms();
  while (now_ms() < t0 + 3) sched_yield();
  watchdog_say(60, "expired ticket keys replaced before the rotation");
  atomic_store(&g.armed, 1);
  assert_int_equal(pthread_create(&t, NULL, client, &fx->port), 0);
  spin_until(&g.held, 1);
  /* The handshake saw k1 expired and is out of its section.  k1 is
   * replaced and freed, and the keys after next take its block. */
  k1 = atomic_load(&conf->tickets);
  atomic_store(&reuse, 1);
  assert_int_equal(hr_server_tls_rotate_tickets(fx->server, 0), 0);
  hr__rcu_barrier(); /* k1 freed: into the stash */
  assert_int_equal(hr_server_tls_rotate_tickets(fx->server, 0), 0);
  atomic_store(&reuse, 0);
  k3 = atomic_load(&conf->tickets);
  assert_ptr_equal(k3, k1); /* the block came back */
  memcpy(name3, k3->key[0].name, sizeof name3);
  atomic_store_explicit(&g.release, 1, memory_order_relaxed);
  pthread_join(t, NULL); /* the response came: the rotation is over */
  watchdog(0);
  assert_int_equal(g.rc, 0);
  assert_true(g.n > 0);
  /* k3 is not what the handshake found expired: still in force. */
  assert_ptr_equal(atomic_load(&conf->tickets), k3);
  assert_memory_equal(atomic_load(&conf->tickets)->key[0].name, name3, sizeof name3);
  tf_cert_free(&cert);
}

static int teardown(void **state) {
  hr__tp_set(NULL);
  return fx_teardown(state);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_expired_keys_replaced_before_the_rotation, fx_setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
