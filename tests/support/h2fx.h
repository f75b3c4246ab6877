/* SPDX-License-Identifier: MIT */
/*
 * The loopback fixture (fixture.h) for HTTP/2 tests: a test group runs
 * each test twice, once on a plain listener that accepts HTTP/2 with prior
 * knowledge (h2c, hr_listen_options_t.h2 = HR_H2_ON) and once on a TLS
 * listener that offers "h2" by ALPN, with a certificate made at setup.
 * The fixture connects the HTTP/2 clients (h2client.h, h2raw.h) the way
 * the listener wants and closes whatever a test left open at teardown,
 * even after a failed assertion.  Test thread only.
 */
#ifndef HR_TEST_H2FX_H
#define HR_TEST_H2FX_H

#include "fixture.h"
#include "h2client.h"
#include "h2raw.h"
#include "tlsfx.h"

#define H2FX_MAX_CLIENTS 16

/* What the fixture keeps beside its fx_t (fx->user points to it). */
typedef struct h2fx_s {
  int tls;                 /* 1: TLS listener (h2 by ALPN); 0: h2c */
  tf_cert_t cert;          /* TLS: the listener's certificate, "localhost" */
  h2c_t *clients[H2FX_MAX_CLIENTS];
  size_t nclients;
  h2r_t raws[H2FX_MAX_CLIENTS];
  size_t nraws;
} h2fx_t;

/* cmocka setup: fx_setup, then the HTTP/2 part for an h2c listener
 * (h2fx_setup_h2c) or a TLS one (h2fx_setup_tls). */
int h2fx_setup_h2c(void **state);
int h2fx_setup_tls(void **state);
/* cmocka teardown: closes the clients, then fx_teardown. */
int h2fx_teardown(void **state);
/* The HTTP/2 part of a fixture. */
h2fx_t *h2fx(fx_t *fx);

/* Fills lo with the listener options of the fixture's mode: h2 HR_H2_ON,
 * TLS with the fixture's certificate (tls must outlive lo's use). */
void h2fx_listen_options(fx_t *fx, hr_listen_options_t *lo,
                         hr_tls_options_t *tls);
/* Starts the server (fx_start with the listener options above) on
 * `nthreads` workers; asserts success. */
void h2fx_start(fx_t *fx, unsigned nthreads);
/* Fills the transport part of client options for the fixture's mode. */
void h2fx_sock_options(fx_t *fx, h2s_options_t *o);
/* Connects a session client (o NULL: the defaults); asserts success.  The
 * fixture closes it at teardown unless h2fx_drop'ped. */
h2c_t *h2fx_connect(fx_t *fx, const h2c_options_t *o);
/* Closes a session client early and forgets it. */
void h2fx_drop(fx_t *fx, h2c_t *c);
/* Connects a hand-driven client; asserts success; closed at teardown. */
h2r_t *h2fx_raw(fx_t *fx);
/* The same for a client that does not acknowledge the server's SETTINGS
 * (h2r_open_ack with auto_ack 0). */
h2r_t *h2fx_raw_unacked(fx_t *fx);

/* Submits `method` `path` without a body and waits for its stream to
 * close; asserts it did and returns its record. */
h2_stream_t *h2fx_request(h2c_t *c, const char *method, const char *path);
/* Asserts a stream ended cleanly (END_STREAM, no reset, closed with
 * NO_ERROR) with `status` and, unless NULL, exactly `body`. */
void expect_h2(const h2_stream_t *st, int status, const char *body);
/* Asserts a response field is present exactly once with `value`. */
void expect_h2_field(const h2_stream_t *st, const char *name, const char *value);

#endif
