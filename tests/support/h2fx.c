/* SPDX-License-Identifier: MIT */
/* The HTTP/2 loopback fixture (h2fx.h). */
#include "h2fx.h"

#include <stdlib.h>
#include <string.h>

static int setup(void **state, int tls) {
  fx_t *fx;
  h2fx_t *h;
  if (fx_setup(state) != 0) return -1;
  fx = *state;
  h = calloc(1, sizeof *h);
  if (h == NULL || (tls && tf_cert_make(&h->cert, "localhost") != 0)) {
    free(h);
    fx_teardown(state);
    return -1;
  }
  h->tls = tls;
  fx->user = h;
  return 0;
}

int h2fx_setup_h2c(void **state) { return setup(state, 0); }

int h2fx_setup_tls(void **state) { return setup(state, 1); }

int h2fx_teardown(void **state) {
  fx_t *fx = *state;
  h2fx_t *h;
  size_t i;
  if (fx == NULL) return 0;
  h = fx->user;
  if (h != NULL) {
    for (i = 0; i < h->nclients; i++) h2c_close(h->clients[i]);
    for (i = 0; i < h->nraws; i++) h2r_close(&h->raws[i]);
  }
  fx_teardown(state); /* the server stops before the certificate goes */
  if (h != NULL) {
    if (h->tls) tf_cert_free(&h->cert);
    free(h);
  }
  return 0;
}

h2fx_t *h2fx(fx_t *fx) { return fx->user; }

void h2fx_listen_options(fx_t *fx, hr_listen_options_t *lo,
                         hr_tls_options_t *tls) {
  hr_listen_options_init(lo);
  lo->h2 = HR_H2_ON;
  if (h2fx(fx)->tls) {
    tf_tls_options(tls, &h2fx(fx)->cert);
    lo->tls = tls;
  }
}

void h2fx_start(fx_t *fx, unsigned nthreads) {
  hr_listen_options_t lo;
  hr_tls_options_t tls;
  h2fx_listen_options(fx, &lo, &tls);
  fx->listen = &lo;
  fx_start(fx, nthreads);
  fx->listen = NULL;
}

void h2fx_sock_options(fx_t *fx, h2s_options_t *o) {
  h2s_options_init(o);
  if (h2fx(fx)->tls) o->trust = &h2fx(fx)->cert;
}

h2c_t *h2fx_connect(fx_t *fx, const h2c_options_t *o) {
  h2fx_t *h = h2fx(fx);
  h2c_options_t d;
  h2c_t *c;
  if (o != NULL)
    d = *o;
  else
    h2c_options_init(&d);
  if (d.sock.trust == NULL && h->tls) d.sock.trust = &h->cert;
  assert_true(h->nclients < H2FX_MAX_CLIENTS);
  c = h2c_connect(fx->port, &d);
  if (c == NULL) fail_msg("HTTP/2 connect to port %d (%s) failed", fx->port, h->tls ? "TLS" : "h2c");
  h->clients[h->nclients++] = c;
  return c;
}

void h2fx_drop(fx_t *fx, h2c_t *c) {
  h2fx_t *h = h2fx(fx);
  size_t i;
  for (i = 0; i < h->nclients; i++) {
    if (h->clients[i] == c) {
      h->clients[i] = h->clients[--h->nclients];
      break;
    }
  }
  h2c_close(c);
}

static h2r_t *raw(fx_t *fx, int auto_ack) {
  h2fx_t *h = h2fx(fx);
  h2s_options_t o;
  h2r_t *r;
  assert_true(h->nraws < H2FX_MAX_CLIENTS);
  r = &h->raws[h->nraws++];
  h2fx_sock_options(fx, &o);
  if (h2r_open_ack(r, fx->port, &o, auto_ack) != 0)
    fail_msg("HTTP/2 raw connect to port %d failed", fx->port);
  return r;
}

h2r_t *h2fx_raw(fx_t *fx) { return raw(fx, 1); }

h2r_t *h2fx_raw_unacked(fx_t *fx) { return raw(fx, 0); }

h2_stream_t *h2fx_request(h2c_t *c, const char *method, const char *path) {
  int32_t id = h2c_get(c, method, path);
  h2_stream_t *st;
  assert_true(id > 0);
  st = h2c_wait1(c, id);
  if (st == NULL)
    fail_msg("%s %s: stream %d did not close (status %d, %zu body bytes; connection %s, "
             "session error %d)",
             method, path, id, h2_seen_stream(&c->io.seen, id)->status,
             h2_seen_stream(&c->io.seen, id)->body_len, c->io.seen.closed ? "closed" : "open",
             c->session_error);
  return st;
}

void expect_h2(const h2_stream_t *st, int status, const char *body) {
  assert_non_null(st);
  if (st->reset || st->close_error != 0)
    fail_msg("stream %d: reset (RST_STREAM %d, closed with %u), status %d", st->id,
             st->reset, st->close_error, st->status);
  assert_int_equal(st->status, status);
  assert_true(st->ended);
  if (body != NULL) {
    assert_int_equal(st->body_len, strlen(body));
    assert_memory_equal(st->body, body, st->body_len);
  }
}

void expect_h2_field(const h2_stream_t *st, const char *name, const char *value) {
  const char *v = h2_fields_get(&st->fields, name);
  if (v == NULL) fail_msg("stream %d: field %s missing", st->id, name);
  assert_int_equal(h2_fields_count(&st->fields, name), 1);
  assert_string_equal(v, value);
}
