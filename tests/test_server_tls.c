/* SPDX-License-Identifier: MIT */
/*
 * HTTPS: handshakes with TLS 1.3 and 1.2 and what handlers see of them,
 * ALPN (http/1.1 chosen, an h2-only client refused), pipelined requests
 * split into one record per byte, a plain HTTP request to the TLS port
 * (a readable 400), garbage, forged, cut and oversized records, alerts,
 * renegotiation and a client that stops mid-handshake (closed,
 * the server keeps serving), and the certificate replaced while serving
 * (new handshakes see the new one, established connections keep working,
 * bad material changes nothing).  Certificates are made at test time.
 *
 * ctest-labels: tsan
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "tlsfx.h"

#include <openssl/err.h>

static tf_cert_t cert_a, cert_b, client_ca, client_ok, client_other;

/* 200 with "version|alpn|sni" of the connection. */
static void h_info(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_tls_info_t ti;
  char body[128];
  int n;
  (void)udata;
  if (hr_request_tls(req, &ti) != 0) {
    hr_response_send(res, 500, "no tls", 6);
    return;
  }
  n = snprintf(body, sizeof body, "%s|%.*s|%.*s", ti.version, (int)ti.alpn.len,
               ti.alpn.ptr ? ti.alpn.ptr : "", (int)ti.sni.len,
               ti.sni.ptr ? ti.sni.ptr : "");
  hr_response_send(res, 200, body, (size_t)n);
}

/* A TLS listener with `cert`, speaking HTTP/2 too unless h2 is HR_H2_OFF. */
static void start_tls_h2(fx_t *fx, const tf_cert_t *cert, int h2) {
  hr_tls_options_t o;
  hr_listen_options_t lo;
  tf_tls_options(&o, cert);
  hr_listen_options_init(&lo);
  lo.tls = &o;
  lo.h2 = h2;
  fx_route(fx, "GET", "/info", h_info, NULL);
  fx_route(fx, "GET", "/hello/:name", ta_text, "hello");
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &lo), 0);
  assert_int_equal(hr_server_start(fx->server, 2), 0);
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
}

static void start_tls(fx_t *fx, const tf_cert_t *cert) { start_tls_h2(fx, cert, HR_H2_AUTO); }

static void get(tf_conn_t *c, const char *path, const char *want_body) {
  char req[256], buf[4096];
  long n;
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
  assert_int_equal(tf_write(c, req, strlen(req)), 0);
  n = tf_read_response(c, buf, sizeof buf);
  assert_true(n > 0);
  assert_memory_equal(buf, "HTTP/1.1 200 OK\r\n", 17);
  assert_non_null(strstr(buf, "\r\n\r\n"));
  assert_string_equal(strstr(buf, "\r\n\r\n") + 4, want_body);
}

static void test_handshakes_and_info(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  start_tls(fx, &cert_a);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, "\x08http/1.1", 9, "localhost"), 0);
  get(&c, "/info", "TLSv1.3|http/1.1|localhost");
  get(&c, "/hello/x", "hello"); /* keep-alive over TLS */
  tf_close(&c);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, TLS1_2_VERSION, NULL, 0, NULL), 0);
  get(&c, "/info", "TLSv1.2||");
  tf_close(&c);
}

/* ALPN (RFC 7301, RFC 9113 §3.2): a listener that speaks HTTP/2 picks "h2"
 * over "http/1.1"; one with HR_H2_OFF refuses a client that offers only
 * "h2" and picks "http/1.1" from both. */
static void test_alpn_h2_preferred(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  const unsigned char *alpn = NULL;
  unsigned alen = 0;
  start_tls(fx, &cert_a);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, "\x08http/1.1\x02h2", 12, NULL), 0);
  SSL_get0_alpn_selected(c.ssl, &alpn, &alen);
  assert_int_equal(alen, 2);
  assert_memory_equal(alpn, "h2", 2);
  tf_close(&c);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, "\x08http/1.1", 9, NULL), 0);
  get(&c, "/info", "TLSv1.3|http/1.1|");
  tf_close(&c);
}

static void test_alpn_h2_off(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  start_tls_h2(fx, &cert_a, HR_H2_OFF);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, "\x02h2", 3, NULL), -1);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, "\x02h2\x08http/1.1", 12, NULL), 0);
  get(&c, "/info", "TLSv1.3|http/1.1|");
  tf_close(&c);
}

static void test_pipelined_one_record_per_byte(void **state) {
  static const char reqs[] = "GET /hello/a HTTP/1.1\r\nHost: x\r\n\r\n"
                             "GET /info HTTP/1.1\r\nHost: x\r\n\r\n"
                             "GET /hello/b HTTP/1.1\r\nHost: x\r\n\r\n";
  fx_t *fx = *state;
  tf_conn_t c;
  char buf[8192];
  size_t i, len = 0;
  int seen = 0;
  start_tls(fx, &cert_a);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  for (i = 0; i < sizeof reqs - 1; i++) assert_int_equal(tf_write(&c, reqs + i, 1), 0);
  while (seen < 3 && len < sizeof buf - 1) {
    int n = SSL_read(c.ssl, buf + len, (int)(sizeof buf - 1 - len));
    const char *p;
    assert_true(n > 0);
    len += (size_t)n;
    buf[len] = '\0';
    for (seen = 0, p = buf; (p = strstr(p, "HTTP/1.1 200 OK")) != NULL; p++) seen++;
  }
  assert_int_equal(seen, 3);
  /* In request order. */
  assert_true(strstr(buf, "hello") < strstr(buf, "TLSv1.3|"));
  tf_close(&c);
}

static void test_plain_http_to_tls_port(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  tf_conn_t t;
  start_tls(fx, &cert_a);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /hello/x HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.status, 400);
  rc_response_free(&r);
  expect_closed(c);
  /* Garbage that starts like a handshake record: closed, nothing else. */
  c = fx_connect(fx);
  assert_int_equal(rc_send(c, "\x16\x03\x01\x00\x05garbagegarbage", 19), 0);
  assert_true(rc_drain_until_closed(c, NULL) == 1);
  /* The server still serves. */
  assert_int_equal(tf_connect(&t, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  get(&t, "/hello/y", "hello");
  tf_close(&t);
}

static void test_stopped_mid_handshake(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx->opts.header_timeout_ms = 200;
  start_tls(fx, &cert_a);
  c = fx_connect(fx);
  /* The first bytes of a ClientHello, then nothing: the handshake counts
   * against the header timeout. */
  assert_int_equal(rc_send(c, "\x16\x03\x01\x02\x00\x01", 6), 0);
  assert_true(rc_drain_until_closed(c, NULL) == 1);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
}

/* Reads the raw socket until the server closes it: 1 when it did (EOF or
 * reset), 0 when it was still open after RC_TIMEOUT_MS (SO_RCVTIMEO). */
static int raw_until_closed(tf_conn_t *c) {
  char b[4096];
  for (;;) {
    ssize_t n = read(c->fd, b, sizeof b);
    if (n == 0) return 1;
    if (n < 0) return errno == ECONNRESET ? 1 : 0;
  }
}

/* Sends raw bytes on an established TLS connection after one request, and
 * expects the server to close it and keep serving others. */
static void expect_record_refused(fx_t *fx, int max_version, const void *raw, size_t n,
                                  int then_eof) {
  tf_conn_t c, d;
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, max_version, NULL, 0, NULL), 0);
  get(&c, "/hello/x", "hello");
  assert_int_equal(write(c.fd, raw, n), (ssize_t)n);
  if (then_eof) shutdown(c.fd, SHUT_WR);
  assert_int_equal(raw_until_closed(&c), 1);
  SSL_set_quiet_shutdown(c.ssl, 1); /* the server is gone: nothing to say */
  tf_close(&c);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  assert_int_equal(tf_connect(&d, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  get(&d, "/hello/y", "hello");
  tf_close(&d);
}

/* Records that cannot be opened, records cut short, and alerts end the
 * connection (RFC 8446 §5.2, §6); the server keeps serving the others. */
static void test_bad_records_close(void **state) {
  static const char forged[] = "\x17\x03\x03\x00\x20"
                               "0123456789abcdef0123456789abcdef"; /* bad tag */
  static const char cut[] = "\x17\x03\x03\x01\x00" "0123456789"; /* 256 announced */
  static const char oversized[] = "\x17\x03\x03\x48\x01" "0123"; /* > 2^14 + 256 */
  static const char alert[] = "\x15\x03\x03\x00\x02\x02\x28"; /* plaintext fatal */
  fx_t *fx = *state;
  start_tls(fx, &cert_a);
  expect_record_refused(fx, 0, forged, sizeof forged - 1, 0);
  expect_record_refused(fx, TLS1_2_VERSION, forged, sizeof forged - 1, 0);
  expect_record_refused(fx, 0, cut, sizeof cut - 1, 1);
  expect_record_refused(fx, 0, oversized, sizeof oversized - 1, 0);
  expect_record_refused(fx, 0, alert, sizeof alert - 1, 0);
  expect_record_refused(fx, TLS1_2_VERSION, alert, sizeof alert - 1, 0);
}

/* A TLS 1.2 client asking to renegotiate is refused with a no_renegotiation
 * alert (RFC 5746 §4.2; the intermediate profile turns renegotiation off),
 * the client gives up the connection, and the server keeps serving. */
static void test_renegotiation_refused(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  long n;
  start_tls(fx, &cert_a);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, TLS1_2_VERSION, NULL, 0, NULL), 0);
  get(&c, "/hello/x", "hello");
  ERR_clear_error();
  assert_int_equal(SSL_renegotiate(c.ssl), 1);
  n = SSL_do_handshake(c.ssl);
  assert_int_equal(n, -1);
  assert_int_equal(SSL_get_error(c.ssl, (int)n), SSL_ERROR_SSL);
  assert_int_equal(ERR_GET_REASON(ERR_peek_error()), SSL_R_NO_RENEGOTIATION);
  SSL_set_quiet_shutdown(c.ssl, 1);
  tf_close(&c);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  get(&c, "/hello/y", "hello");
  tf_close(&c);
}

/* A large streamed response to a TLS client that reads slowly: it all
 * arrives, in order, while the server holds no more than its usual queue
 * (the chunks are only written as the socket takes them). */
static struct {
  hr_response_t *res;
  size_t sent, total;
  _Atomic size_t max_queued_blocks; /* written on the loop, read here */
  hr_server_t *server;
} big;

static void big_pump(void) {
  static char piece[16384];
  hr_server_stats_t st;
  while (big.sent < big.total) {
    size_t n = big.total - big.sent < sizeof piece ? big.total - big.sent : sizeof piece;
    int rc;
    memset(piece, 'a' + (int)((big.sent / sizeof piece) % 26), n);
    rc = hr_response_write(big.res, piece, n);
    if (rc == HR_EAGAIN) break;
    if (rc != 0) return;
    big.sent += n;
  }
  hr_server_stats(big.server, &st);
  if (st.output_blocks_in_use > atomic_load(&big.max_queued_blocks))
    atomic_store(&big.max_queued_blocks, st.output_blocks_in_use);
  if (big.sent == big.total) hr_response_end(big.res);
}

static void big_drain(hr_response_t *res, int status, void *udata) {
  (void)res;
  (void)udata;
  if (status == 0) big_pump();
}

static void h_big(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  big.res = res;
  hr_response_on_drain(res, big_drain, NULL);
  hr_response_start(res, 200, (int64_t)big.total);
  big_pump();
}

static void test_slow_reader_large_response(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  static const char req[] = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
  char buf[16384];
  size_t got = 0, body = 0, head = 0, i;
  int bad = 0;
  memset(&big, 0, sizeof big);
  big.total = (size_t)6 << 20;
  fx_route(fx, "GET", "/big", h_big, NULL);
  start_tls(fx, &cert_a);
  big.server = fx->server;
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  assert_int_equal(tf_write(&c, req, sizeof req - 1), 0);
  while (body < big.total) {
    int n = SSL_read(c.ssl, buf, sizeof buf);
    if (n <= 0) break;
    i = 0;
    if (head == 0) {
      char *e = memmem(buf, (size_t)n, "\r\n\r\n", 4);
      assert_non_null(e);
      head = (size_t)(e + 4 - buf);
      i = head;
    }
    for (; i < (size_t)n; i++, body++)
      if (buf[i] != 'a' + (int)((body / 16384) % 26)) bad++;
    got += (size_t)n;
    if ((got / 16384) % 16 == 0) sleep_ms(1); /* a slow reader */
  }
  assert_int_equal(body, big.total);
  assert_int_equal(bad, 0);
  /* The queue stayed near the high-water mark: 64 KiB is 16 blocks. */
  assert_true(atomic_load(&big.max_queued_blocks) <= 40);
  tf_close(&c);
}

/* A keep-alive timeout ends a TLS connection with close_notify, so the
 * client can tell it from a cut (RFC 8446 §6.1). */
static void test_idle_close_says_close_notify(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  char b;
  int n;
  fx->opts.keepalive_timeout_ms = 150;
  start_tls(fx, &cert_a);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  get(&c, "/hello/x", "hello");
  n = SSL_read(c.ssl, &b, 1);
  assert_int_equal(n, 0);
  assert_int_equal(SSL_get_error(c.ssl, n), SSL_ERROR_ZERO_RETURN);
  tf_close(&c);
}

static void test_certificate_replaced_while_serving(void **state) {
  fx_t *fx = *state;
  tf_conn_t old, c;
  hr_tls_options_t o;
  char cn[64];
  start_tls(fx, &cert_a);
  assert_int_equal(tf_connect(&old, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  assert_int_equal(tf_peer_cn(&old, cn, sizeof cn), 0);
  assert_string_equal(cn, "localhost");
  /* Bad material: refused, the old certificate stays. */
  hr_tls_options_init(&o);
  o.cert_pem = cert_b.cert_pem;
  o.cert_pem_len = cert_b.cert_len;
  o.key_pem = cert_a.key_pem; /* not its key */
  o.key_pem_len = cert_a.key_len;
  assert_int_equal(hr_server_tls_update(fx->server, 0, &o), HR_ETLS);
  o.key_pem = "garbage";
  o.key_pem_len = 7;
  assert_int_equal(hr_server_tls_update(fx->server, 0, &o), HR_ETLS);
  assert_int_equal(hr_server_tls_update(fx->server, 1, &o), HR_EINVAL);
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), 0);
  tf_close(&c);
  /* The real replacement. */
  o.key_pem = cert_b.key_pem;
  o.key_pem_len = cert_b.key_len;
  assert_int_equal(hr_server_tls_update(fx->server, 0, &o), 0);
  assert_int_equal(tf_connect(&c, fx->port, &cert_b, NULL, 0, NULL, 0, NULL), 0);
  assert_int_equal(tf_peer_cn(&c, cn, sizeof cn), 0);
  assert_string_equal(cn, "second.test");
  get(&c, "/hello/new", "hello");
  tf_close(&c);
  /* A client that trusts only the old one is refused now... */
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, NULL, 0, NULL, 0, NULL), -1);
  /* ...while the connection made before keeps working. */
  get(&old, "/hello/old", "hello");
  tf_close(&old);
}

static void expect_cn(int port, const char *sni, const char *want) {
  tf_conn_t c;
  char cn[64];
  assert_int_equal(tf_connect(&c, port, &cert_a, &cert_b, 0, NULL, 0, sni), 0);
  assert_int_equal(tf_peer_cn(&c, cn, sizeof cn), 0);
  assert_string_equal(cn, want);
  get(&c, "/hello/sni", "hello");
  tf_close(&c);
}

/* Certificates chosen by the server name the client asks for. */
static void test_sni_selection(void **state) {
  fx_t *fx = *state;
  hr_tls_options_t b;
  start_tls(fx, &cert_a);
  hr_tls_options_init(&b);
  b.cert_pem = cert_b.cert_pem;
  b.cert_pem_len = cert_b.cert_len;
  b.key_pem = cert_b.key_pem;
  b.key_pem_len = cert_b.key_len;
  expect_cn(fx->port, "second.test", "localhost"); /* no names yet */
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "Second.Test.", &b), 0);
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "*.wild.test", &b), 0);
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "bad name", &b), HR_EINVAL);
  assert_int_equal(hr_server_tls_add_name(fx->server, 1, "x.test", &b), HR_EINVAL);
  expect_cn(fx->port, "second.test", "second.test");
  expect_cn(fx->port, "SECOND.TEST", "second.test");
  expect_cn(fx->port, "a.wild.test", "second.test");
  expect_cn(fx->port, "a.b.wild.test", "localhost"); /* one label only */
  expect_cn(fx->port, "wild.test", "localhost");
  expect_cn(fx->port, "unknown.test", "localhost");
  expect_cn(fx->port, NULL, "localhost");
  /* A name's certificate replaced: the other names and the default stay. */
  b.cert_pem = cert_a.cert_pem;
  b.cert_pem_len = cert_a.cert_len;
  b.key_pem = cert_a.key_pem;
  b.key_pem_len = cert_a.key_len;
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "second.test", &b), 0);
  expect_cn(fx->port, "second.test", "localhost");
  expect_cn(fx->port, "x.wild.test", "second.test");
}

/* ---- resumption ------------------------------------------------------------ */

/* One request on a new connection (offering `resume`); returns whether the
 * handshake resumed it, and the connection's session in *out. */
static int one_resumed(int port, int max_version, SSL_SESSION *resume, SSL_SESSION **out) {
  tf_conn_t c;
  int reused;
  tf_resume = resume;
  assert_int_equal(tf_connect(&c, port, &cert_a, &cert_b, max_version, NULL, 0, NULL), 0);
  tf_resume = NULL;
  get(&c, "/hello/r", "hello"); /* TLS 1.3 tickets come after the handshake */
  reused = c.reused;
  if (out != NULL) *out = SSL_get1_session(c.ssl);
  tf_close(&c);
  return reused;
}

static void test_resumption(void **state) {
  fx_t *fx = *state;
  SSL_SESSION *s1, *s2, *s3;
  hr_tls_options_t b;
  int v;
  start_tls(fx, &cert_a);
  for (v = 0; v < 2; v++) {
    int max = v == 0 ? 0 : TLS1_2_VERSION;
    /* By ticket. */
    assert_int_equal(one_resumed(fx->port, max, NULL, &s1), 0);
    assert_int_equal(one_resumed(fx->port, max, s1, &s2), 1);
    SSL_SESSION_free(s2);
    /* Rotated once: the previous key still opens it (and it is renewed). */
    assert_int_equal(hr_server_tls_rotate_tickets(fx->server, 0), 0);
    assert_int_equal(one_resumed(fx->port, max, s1, &s2), 1);
    /* Rotated twice: no longer; a full handshake instead. */
    assert_int_equal(hr_server_tls_rotate_tickets(fx->server, 0), 0);
    assert_int_equal(one_resumed(fx->port, max, s1, &s3), 0);
    SSL_SESSION_free(s1);
    SSL_SESSION_free(s2);
    SSL_SESSION_free(s3);
  }
  /* Ticket keys are the listener's: a new certificate keeps them. */
  assert_int_equal(one_resumed(fx->port, 0, NULL, &s1), 0);
  hr_tls_options_init(&b);
  b.cert_pem = cert_b.cert_pem;
  b.cert_pem_len = cert_b.cert_len;
  b.key_pem = cert_b.key_pem;
  b.key_pem_len = cert_b.key_len;
  assert_int_equal(hr_server_tls_update(fx->server, 0, &b), 0);
  assert_int_equal(one_resumed(fx->port, 0, s1, NULL), 1);
  SSL_SESSION_free(s1);
  /* By session ID (TLS 1.2, a client that wants no tickets). */
  tf_no_ticket = 1;
  assert_int_equal(one_resumed(fx->port, TLS1_2_VERSION, NULL, &s1), 0);
  assert_int_equal(one_resumed(fx->port, TLS1_2_VERSION, s1, NULL), 1);
  tf_no_ticket = 0;
  SSL_SESSION_free(s1);
  assert_int_equal(hr_server_tls_rotate_tickets(fx->server, 1), HR_EINVAL);
}

static void test_listen_tls_errors(void **state) {
  fx_t *fx = *state;
  hr_server_t *s = NULL;
  hr_tls_options_t o;
  assert_int_equal(hr_server_new(&s, fx->router, NULL), 0);
  hr_tls_options_init(&o);
  assert_int_equal(hr_server_listen_tls(s, "127.0.0.1", 0, &o), HR_EINVAL);
  o.cert_file = "/nonexistent/cert.pem";
  o.key_file = "/nonexistent/key.pem";
  assert_int_equal(hr_server_listen_tls(s, "127.0.0.1", 0, &o), HR_ETLS);
  hr_tls_options_init(&o);
  o.cert_pem = cert_a.cert_pem;
  o.cert_pem_len = cert_a.cert_len;
  o.key_pem = cert_a.key_pem;
  o.key_pem_len = cert_a.key_len;
  assert_int_equal(hr_server_listen_tls(s, "::1::2", 0, &o), HR_EINVAL);
  assert_int_equal(hr_server_listen_tls(s, "127.0.0.1", 0, &o), 0);
  /* A TCP listener is not a TLS one. */
  assert_int_equal(hr_server_listen(s, "127.0.0.1", 0), 0);
  assert_int_equal(hr_server_tls_update(s, 1, &o), HR_EINVAL);
  assert_int_equal(hr_server_tls_update(s, 0, &o), 0); /* before start too */
  hr_server_free(s);
}

/* ---- what a refused certificate says (hr_error_detail) ------------------- */

/* Writes `n` bytes to a new file in `dir`; its path into out. */
static void write_file(const char *dir, const char *name, const char *data, size_t n,
                       char *out, size_t cap) {
  FILE *f;
  snprintf(out, cap, "%s/%s", dir, name);
  f = fopen(out, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* `err` is HR_ETLS and its detail is `what` (the file, exactly), then
 * ": ", then OpenSSL's reasons, which hold `reason`. */
static void expect_detail(int err, const char *what, const char *reason) {
  const char *d;
  size_t n = strlen(what);
  assert_int_equal(err, HR_ETLS);
  d = hr_error_detail(err);
  if (strncmp(d, what, n) != 0 || strncmp(d + n, ": ", 2) != 0 || strstr(d + n, reason) == NULL)
    fail_msg("detail \"%s\": want \"%s: ...%s...\"", d, what, reason);
}

/* Each way a certificate or key is refused names the file (or the PEM in
 * memory) and carries OpenSSL's reason: a missing file (the system's
 * error), a file that is not PEM ("no start line"), a key that is not
 * one (the SSL library's "PEM lib"), a key for another certificate ("key
 * values mismatch"); by hr_server_listen_tls and hr_server_tls_update;
 * a missing key is HR_EINVAL, with the detail saying what is needed. */
static void test_tls_error_details(void **state) {
  fx_t *fx = *state;
  hr_server_t *s = NULL;
  hr_tls_options_t o;
  char dir[64], junk[128], ca[128], ka[128], kb[128], what[320];
  snprintf(dir, sizeof dir, "/tmp/hroute-tls-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file(dir, "junk.pem", "not a certificate\n", 18, junk, sizeof junk);
  write_file(dir, "a.crt", cert_a.cert_pem, cert_a.cert_len, ca, sizeof ca);
  write_file(dir, "a.key", cert_a.key_pem, cert_a.key_len, ka, sizeof ka);
  write_file(dir, "b.key", cert_b.key_pem, cert_b.key_len, kb, sizeof kb);
  assert_int_equal(hr_server_new(&s, fx->router, NULL), 0);
  hr_tls_options_init(&o);
  o.cert_file = "/nonexistent/cert.pem";
  o.key_file = ka;
  expect_detail(hr_server_listen_tls(s, "127.0.0.1", 0, &o),
                "certificate file \"/nonexistent/cert.pem\"", "No such file or directory");
  o.cert_file = junk;
  snprintf(what, sizeof what, "certificate file \"%s\"", junk);
  expect_detail(hr_server_listen_tls(s, "127.0.0.1", 0, &o), what, "no start line");
  o.cert_file = ca;
  o.key_file = junk;
  snprintf(what, sizeof what, "key file \"%s\"", junk);
  expect_detail(hr_server_listen_tls(s, "127.0.0.1", 0, &o), what, "PEM lib");
  o.key_file = kb;
  snprintf(what, sizeof what, "key file \"%s\" does not match certificate file \"%s\"", kb, ca);
  expect_detail(hr_server_listen_tls(s, "127.0.0.1", 0, &o), what, "key values mismatch");
  hr_tls_options_init(&o);
  o.cert_pem = "junk";
  o.cert_pem_len = 4;
  o.key_pem = cert_a.key_pem;
  o.key_pem_len = cert_a.key_len;
  expect_detail(hr_server_listen_tls(s, "127.0.0.1", 0, &o), "certificate (PEM in memory)",
                "no start line");
  o.key_pem = NULL;
  assert_int_equal(hr_server_listen_tls(s, "127.0.0.1", 0, &o), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL),
                      "TLS options: a certificate (cert_file or cert_pem) and a key "
                      "(key_file or key_pem) are needed");
  /* A good one, then an update that is refused: the same words. */
  hr_tls_options_init(&o);
  o.cert_file = ca;
  o.key_file = ka;
  assert_int_equal(hr_server_listen_tls(s, "127.0.0.1", 0, &o), 0);
  assert_string_equal(hr_error_detail(HR_ETLS), hr_strerror(HR_ETLS)); /* forgotten */
  o.key_file = kb;
  snprintf(what, sizeof what, "key file \"%s\" does not match certificate file \"%s\"", kb, ca);
  expect_detail(hr_server_tls_update(s, 0, &o), what, "key values mismatch");
  o.cert_file = junk;
  snprintf(what, sizeof what, "certificate file \"%s\"", junk);
  expect_detail(hr_server_tls_add_name(s, 0, "second.test", &o), what, "no start line");
  hr_server_free(s);
  unlink(junk);
  unlink(ca);
  unlink(ka);
  unlink(kb);
  assert_int_equal(rmdir(dir), 0);
}

/* ---- replacement under load -------------------------------------------- */

typedef struct hs_s {
  int port;
  int ok, bad;
  _Atomic int done;
} hs_t;

static void *handshaker(void *arg) {
  hs_t *h = arg;
  int i;
  for (i = 0; i < 60; i++) {
    tf_conn_t c;
    char cn[64];
    if (tf_connect(&c, h->port, &cert_a, &cert_b, 0, NULL, 0, NULL) != 0) {
      h->bad++;
      continue;
    }
    if (tf_peer_cn(&c, cn, sizeof cn) == 0 &&
        (strcmp(cn, "localhost") == 0 || strcmp(cn, "second.test") == 0))
      h->ok++;
    else
      h->bad++;
    tf_close(&c);
  }
  atomic_store(&h->done, 1);
  return NULL;
}

/* Two loops handshaking continuously while this thread replaces the
 * certificate over and over: every handshake succeeds and presents one of
 * the two published certificates. */
static void test_replacement_under_handshakes(void **state) {
  fx_t *fx = *state;
  pthread_t t[2];
  hs_t h[2];
  hr_tls_options_t o[2];
  int i, k, replaced = 0;
  start_tls(fx, &cert_a);
  for (k = 0; k < 2; k++) {
    const tf_cert_t *c = k == 0 ? &cert_a : &cert_b;
    hr_tls_options_init(&o[k]);
    o[k].cert_pem = c->cert_pem;
    o[k].cert_pem_len = c->cert_len;
    o[k].key_pem = c->key_pem;
    o[k].key_pem_len = c->key_len;
  }
  for (k = 0; k < 2; k++) {
    memset(&h[k], 0, sizeof h[k]);
    h[k].port = fx->port;
    assert_int_equal(pthread_create(&t[k], NULL, handshaker, &h[k]), 0);
  }
  /* Replace for as long as they handshake (bounded). */
  for (i = 0; i < 100000 && !(atomic_load(&h[0].done) && atomic_load(&h[1].done)); i++)
    if (hr_server_tls_update(fx->server, 0, &o[i & 1]) == 0) replaced++;
  for (k = 0; k < 2; k++) pthread_join(t[k], NULL);
  print_message("%d certificate replacements during 120 handshakes\n", replaced);
  assert_int_equal(replaced, i);
  assert_true(replaced > 0);
  assert_int_equal(h[0].bad + h[1].bad, 0);
  assert_int_equal(h[0].ok + h[1].ok, 120);
}

/* ---- mutual TLS ------------------------------------------------------------ */

/* 200 with "subject|first line of the PEM", or 200 "none". */
static void h_client(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t subject, pem;
  char body[256];
  int n;
  (void)udata;
  if (hr_request_tls_client(req, HR_TLS_PEM, &subject, &pem) != 0) {
    hr_response_send(res, 200, "none", 4);
    return;
  }
  n = snprintf(body, sizeof body, "%.*s|%.27s", (int)subject.len, subject.ptr, pem.ptr);
  hr_response_send(res, 200, body, (size_t)n);
}

static void start_mtls(fx_t *fx, int mode) {
  hr_tls_options_t o;
  hr_tls_options_init(&o);
  o.cert_pem = cert_a.cert_pem;
  o.cert_pem_len = cert_a.cert_len;
  o.key_pem = cert_a.key_pem;
  o.key_pem_len = cert_a.key_len;
  o.client_certs = mode;
  o.client_ca_pem = client_ca.cert_pem;
  o.client_ca_pem_len = client_ca.cert_len;
  fx_route(fx, "GET", "/client", h_client, NULL);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr_server_listen_tls(fx->server, "127.0.0.1", 0, &o), 0);
  assert_int_equal(hr_server_start(fx->server, 1), 0);
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
}

/* Whether a request over a new connection with `cert` gets a response;
 * the body goes to out. */
static int try_client(int port, const tf_cert_t *cert, char *out, size_t cap) {
  tf_conn_t c;
  char buf[4096];
  long n;
  static const char req[] = "GET /client HTTP/1.1\r\nHost: x\r\n\r\n";
  tf_client_cert = cert;
  n = tf_connect(&c, port, &cert_a, NULL, 0, NULL, 0, NULL);
  tf_client_cert = NULL;
  if (n != 0) return -1;
  n = tf_write(&c, req, sizeof req - 1) == 0 ? tf_read_response(&c, buf, sizeof buf) : -1;
  tf_close(&c);
  if (n <= 0) return -1;
  snprintf(out, cap, "%s", strstr(buf, "\r\n\r\n") + 4);
  return 0;
}

static void test_mutual_tls_required(void **state) {
  fx_t *fx = *state;
  char body[256];
  start_mtls(fx, HR_TLS_CLIENT_REQUIRED);
  assert_int_equal(try_client(fx->port, &client_ok, body, sizeof body), 0);
  assert_string_equal(body, "CN=client.test|-----BEGIN CERTIFICATE-----");
  /* No certificate, or one from another CA: refused. */
  assert_int_equal(try_client(fx->port, NULL, body, sizeof body), -1);
  assert_int_equal(try_client(fx->port, &client_other, body, sizeof body), -1);
}

static void test_mutual_tls_optional(void **state) {
  fx_t *fx = *state;
  char body[256];
  start_mtls(fx, HR_TLS_CLIENT_OPTIONAL);
  assert_int_equal(try_client(fx->port, NULL, body, sizeof body), 0);
  assert_string_equal(body, "none");
  assert_int_equal(try_client(fx->port, &client_ok, body, sizeof body), 0);
  assert_string_equal(body, "CN=client.test|-----BEGIN CERTIFICATE-----");
  assert_int_equal(try_client(fx->port, &client_other, body, sizeof body), -1);
}

/* Client certificates asked for one server name only. */
static void test_mutual_tls_per_name(void **state) {
  fx_t *fx = *state;
  hr_tls_options_t o;
  tf_conn_t c;
  start_tls(fx, &cert_a);
  fx_route(fx, "GET", "/client", h_client, NULL);
  hr_tls_options_init(&o);
  o.cert_pem = cert_b.cert_pem;
  o.cert_pem_len = cert_b.cert_len;
  o.key_pem = cert_b.key_pem;
  o.key_pem_len = cert_b.key_len;
  o.client_certs = HR_TLS_CLIENT_REQUIRED;
  o.client_ca_pem = client_ca.cert_pem;
  o.client_ca_pem_len = client_ca.cert_len;
  assert_int_equal(hr_server_tls_add_name(fx->server, 0, "secure.test", &o), 0);
  /* The default name asks for none. */
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, &cert_b, 0, NULL, 0, "open.test"), 0);
  get(&c, "/client", "none");
  tf_close(&c);
  /* The named one requires one: refused without, served with. */
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, &cert_b, 0, NULL, 0, "secure.test"), 0);
  {
    static const char req[] = "GET /client HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(tf_write(&c, req, sizeof req - 1), 0);
  }
  {
    char buf[512];
    assert_true(tf_read_response(&c, buf, sizeof buf) < 0);
  }
  tf_close(&c);
  tf_client_cert = &client_ok;
  assert_int_equal(tf_connect(&c, fx->port, &cert_a, &cert_b, 0, NULL, 0, "secure.test"), 0);
  tf_client_cert = NULL;
  get(&c, "/client", "CN=client.test|-----BEGIN CERTIFICATE-----");
  tf_close(&c);
}

static int group_setup(void **state) {
  (void)state;
  if (tf_cert_pair(&cert_a, &cert_b) != 0) return -1;
  if (tf_cert_make(&client_ca, "client-ca.test") != 0) return -1;
  if (tf_cert_make_signed(&client_ok, "client.test", &client_ca) != 0) return -1;
  if (tf_cert_make(&client_other, "other.test") != 0) return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  tf_cert_pair_free(&cert_a, &cert_b);
  tf_cert_free(&client_ca);
  tf_cert_free(&client_ok);
  tf_cert_free(&client_other);
  return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_handshakes_and_info),
      T(test_alpn_h2_preferred),
      T(test_alpn_h2_off),
      T(test_pipelined_one_record_per_byte),
      T(test_plain_http_to_tls_port),
      T(test_stopped_mid_handshake),
      T(test_bad_records_close),
      T(test_renegotiation_refused),
      T(test_idle_close_says_close_notify),
      T(test_slow_reader_large_response),
      T(test_certificate_replaced_while_serving),
      T(test_sni_selection),
      T(test_mutual_tls_required),
      T(test_mutual_tls_optional),
      T(test_mutual_tls_per_name),
      T(test_resumption),
      T(test_listen_tls_errors),
      T(test_tls_error_details),
      T(test_replacement_under_handshakes),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
