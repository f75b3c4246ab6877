/* SPDX-License-Identifier: MIT */
/*
 * The PROXY protocol on a listener (hr_server_listen_ex) through the
 * server: a trusted peer's v1 and v2 headers (hr_request_peer gives the
 * client, hr_request_proxy the rest, the access log names the client),
 * a header cut at every byte, LOCAL and UNKNOWN (the connection's own
 * address), a required header missing, a malformed one, a header from an
 * untrusted peer refused while its plain HTTP is served, the header
 * timeout, and bad listener options; a listening socket the host passes
 * (hr_server_listen_fd); the header before a TLS handshake (in one
 * write with the ClientHello or apart, missing, untrusted, followed by
 * plain HTTP); and hr_request_client behind proxies that speak HTTP
 * (Forwarded, X-Forwarded-For, trusted or not).
 *
 * ctest-labels: tsan
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "tlsfx.h"

/* Answers "peer=<addr>:<port> proxy=<v> alpn=<..> authority=<..>
 * ssl=<client>/<verify>/<version>/<cn> balancer=<addr>". */
static void h_who(hr_request_t *req, hr_response_t *res, void *udata) {
  struct sockaddr_storage ss;
  int len = (int)sizeof ss;
  char peer[64] = "?", bal[64] = "?", body[512];
  hr_proxy_info_t pi;
  int rc;
  (void)udata;
  if (hr_request_peer(req, (struct sockaddr *)&ss, &len) == 0) {
    char a[INET6_ADDRSTRLEN];
    if (ss.ss_family == AF_INET) {
      const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
      snprintf(peer, sizeof peer, "%s:%u", a, ntohs(in->sin_port));
    } else {
      const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
      snprintf(peer, sizeof peer, "[%s]:%u", a, ntohs(in6->sin6_port));
    }
  }
  rc = hr_request_proxy(req, &pi);
  if (rc == HR_ENOTFOUND) {
    snprintf(body, sizeof body, "peer=%s proxy=none", peer);
  } else {
    char a[INET6_ADDRSTRLEN] = "?";
    const struct sockaddr_in *b = (const struct sockaddr_in *)&pi.balancer;
    if (b->sin_family == AF_INET) inet_ntop(AF_INET, &b->sin_addr, a, sizeof a);
    snprintf(bal, sizeof bal, "%s", a);
    snprintf(body, sizeof body,
             "peer=%s proxy=%d proxied=%d alpn=%.*s authority=%.*s ssl=%d/%u/%u/%.*s/%.*s "
             "balancer=%s",
             peer, pi.version, pi.proxied, (int)pi.alpn.len, pi.alpn.ptr ? pi.alpn.ptr : "",
             (int)pi.authority.len, pi.authority.ptr ? pi.authority.ptr : "", pi.has_ssl,
             pi.ssl_client, pi.ssl_verify, (int)pi.ssl_version.len,
             pi.ssl_version.ptr ? pi.ssl_version.ptr : "", (int)pi.ssl_cn.len,
             pi.ssl_cn.ptr ? pi.ssl_cn.ptr : "", bal);
  }
  hr_response_send(res, 200, body, strlen(body));
}

static const char *const loopback[] = {"10.0.0.0/8", "127.0.0.0/8", NULL};
static const char *const elsewhere[] = {"10.0.0.0/8", NULL};
static hr_listen_options_t lo;

static void start(fx_t *fx, hr_proxy_mode_t mode, const char *const *trusted) {
  hr_listen_options_init(&lo);
  lo.proxy = mode;
  lo.proxy_trusted = trusted;
  fx->listen = &lo;
  fx_route(fx, "GET", "/who", h_who, NULL);
  fx_start(fx, 1);
}

static const char GET[] = "GET /who HTTP/1.1\r\nHost: a\r\n\r\n";

/* Sends `head` (n bytes) then GET on one connection, expects `body`. */
static void expect_who(fx_t *fx, const void *head, size_t n, const char *body) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  if (n > 0) assert_int_equal(rc_send(c, head, n), 0);
  assert_int_equal(rc_send_str(c, GET), 0);
  expect_response(c, "HTTP/1.1 200 OK", body, &r);
  rc_response_free(&r);
  fx_drop(fx, c);
}

/* Sends `head` (n bytes) then GET on one connection; the body must hold
 * `a` and `b`. */
static void expect_who_has(fx_t *fx, const void *head, size_t n, const char *a, const char *b) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  if (n > 0) assert_int_equal(rc_send(c, head, n), 0);
  assert_int_equal(rc_send_str(c, GET), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_non_null(strstr(r.body, a));
  assert_non_null(strstr(r.body, b));
  rc_response_free(&r);
  fx_drop(fx, c);
}

/* Sends `head` then GET; the connection must close without a response. */
static void expect_refused(fx_t *fx, const void *head, size_t n) {
  rc_t *c = fx_connect(fx);
  if (n > 0) rc_send(c, head, n);
  rc_send_str(c, GET);
  expect_closed(c);
  fx_drop(fx, c);
}

/* What the server logged (from its loop thread; read after the
 * connection is seen closed, which follows the log call). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char logged[8][256];
static int nlogged;

static void on_server_log(void *ctx, hr_log_level_t level, const char *msg) {
  (void)ctx;
  pthread_mutex_lock(&log_mu);
  if (nlogged < 8 && level == HR_LOG_INFO) snprintf(logged[nlogged++], sizeof logged[0], "%s", msg);
  pthread_mutex_unlock(&log_mu);
}

static void expect_logged(int i, const char *msg) {
  pthread_mutex_lock(&log_mu);
  assert_true(i < nlogged);
  assert_string_equal(logged[i], msg);
  pthread_mutex_unlock(&log_mu);
}

static const char V1[] = "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n";

static void test_trusted_v1(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  char both[256];
  size_t k, n;
  nlogged = 0;
  fx->opts.log = on_server_log;
  start(fx, HR_PROXY_REQUIRED, loopback);
  expect_who(fx, V1, strlen(V1),
             "peer=192.0.2.1:56324 proxy=1 proxied=1 alpn= authority= ssl=0/0/0// "
             "balancer=127.0.0.1");
  expect_who(fx, "PROXY TCP6 2001:db8::7 2001:db8::8 4000 80\r\n", 44,
             "peer=[2001:db8::7]:4000 proxy=1 proxied=1 alpn= authority= ssl=0/0/0// "
             "balancer=127.0.0.1");
  /* UNKNOWN: the connection's own address. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "PROXY UNKNOWN\r\n"), 0);
  assert_int_equal(rc_send_str(c, GET), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_non_null(strstr(r.body, "peer=127.0.0.1:"));
  assert_non_null(strstr(r.body, "proxy=1 proxied=0"));
  rc_response_free(&r);
  /* Keep-alive: the second request on the connection is the same client's. */
  fx_drop(fx, c);
  /* The header and the request in one write, and the header cut at every
   * byte (each piece in a write of its own). */
  n = (size_t)snprintf(both, sizeof both, "%s%s", V1, GET);
  for (k = 1; k < strlen(V1); k += 7) {
    c = fx_connect(fx);
    assert_int_equal(rc_send_split(c, both, n, k, 0), 0);
    expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
    assert_non_null(strstr(r.body, "peer=192.0.2.1:56324 "));
    rc_response_free(&r);
    fx_drop(fx, c);
  }
  /* Required: none is refused, and so is a malformed one. */
  expect_refused(fx, NULL, 0);
  expect_refused(fx, "PROXY TCP4 192.0.2.1 198.51.100.2 56324\r\n", 40);
  expect_refused(fx, "PROXY TCP4 192.0.2.1  198.51.100.2 1 2\r\n", 40);
  expect_stat(fx, FX_BAD_REQUESTS, 3);
  expect_logged(0, "closed the connection from 127.0.0.1: no PROXY protocol header from a "
                   "trusted peer, and the listener requires one");
  expect_logged(1, "closed the connection from 127.0.0.1: a malformed PROXY protocol header");
  expect_logged(2, "closed the connection from 127.0.0.1: a malformed PROXY protocol header");
}

/* v2 with TLVs, and LOCAL (the balancer's own health check). */
static void test_trusted_v2(void **state) {
  fx_t *fx = *state;
  static const unsigned char v2[] =
      "\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x31"
      "\xc0\x00\x02\x09\xc6\x33\x64\x02\x30\x39\x01\xbb"
      "\x01\x00\x02h2"
      "\x02\x00\x0b" "example.com"
      "\x20\x00\x0f\x01\x00\x00\x00\x00\x21\x00\x07TLSv1.3";
  static const unsigned char local[] = "\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00";
  start(fx, HR_PROXY_OPTIONAL, loopback);
  expect_who(fx, v2, sizeof v2 - 1,
             "peer=192.0.2.9:12345 proxy=2 proxied=1 alpn=h2 authority=example.com "
             "ssl=1/1/0/TLSv1.3/ balancer=127.0.0.1");
  expect_who_has(fx, local, sizeof local - 1, "peer=127.0.0.1:", "proxy=2 proxied=0");
  /* Optional: a trusted peer without a header is served as itself. */
  expect_who_has(fx, NULL, 0, "peer=127.0.0.1:", "proxy=none");
}

/* The peer (127.0.0.1) is not trusted: its header is refused, its plain
 * HTTP served. */
static void test_untrusted(void **state) {
  fx_t *fx = *state;
  nlogged = 0;
  fx->opts.log = on_server_log;
  start(fx, HR_PROXY_REQUIRED, elsewhere);
  expect_refused(fx, V1, strlen(V1));
  /* The refusal is logged with the peer: a balancer left out of the
   * trusted networks shows here. */
  expect_logged(0, "closed the connection from 127.0.0.1: a PROXY protocol header from a peer "
                   "outside the trusted networks");
  expect_refused(fx, "\r\n\r\n\0\r\nQUIT\n\x20\x00\x00\x00", 16);
  expect_who_has(fx, NULL, 0, "peer=127.0.0.1:", "proxy=none");
}

/* A header that never ends meets the header timeout. */
static void test_header_timeout(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx->opts.header_timeout_ms = 50;
  start(fx, HR_PROXY_REQUIRED, loopback);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "PROXY TCP4 192.0.2.1"), 0);
  expect_closed(c);
  fx_drop(fx, c);
}

/* ---- hr_request_client ------------------------------------------------------ */

static hr_trusted_t *trust_loopback, *trust_other;

/* Answers the client's address as text, or the error's name. */
static void h_client(hr_request_t *req, hr_response_t *res, void *udata) {
  struct sockaddr_storage ss;
  char a[INET6_ADDRSTRLEN], body[128];
  int rc = hr_request_client(req, udata, &ss);
  if (rc != 0) {
    snprintf(body, sizeof body, "%s", hr_err_name(rc));
  } else if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
    snprintf(body, sizeof body, "%s:%u", a, ntohs(in->sin_port));
  } else {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
    snprintf(body, sizeof body, "[%s]:%u", a, ntohs(in6->sin6_port));
  }
  hr_response_send(res, 200, body, strlen(body));
}

static void expect_client(fx_t *fx, const char *path, const char *fields, const char *want) {
  char req[1024];
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: a\r\n%s\r\n", path, fields);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  if (strncmp(r.body, want, strlen(want)) != 0 || (want[strlen(want) - 1] != ':' &&
                                                    strlen(r.body) != strlen(want)))
    fail_msg("%s with [%s]: got %s, want %s", path, fields, r.body, want);
  rc_response_free(&r);
  fx_drop(fx, c);
}

static void test_client_behind_http_proxies(void **state) {
  fx_t *fx = *state;
  static const char *const lo_nets[] = {"127.0.0.0/8", "10.0.0.0/8", NULL};
  static const char *const other[] = {"10.0.0.0/8", NULL};
  static const char *const bad[] = {"nonsense", NULL};
  hr_trusted_t *t;
  assert_int_equal(hr_trusted_new(&trust_loopback, lo_nets), 0);
  assert_int_equal(hr_trusted_new(&trust_other, other), 0);
  assert_int_equal(hr_trusted_new(&t, bad), HR_EINVAL);
  assert_null(t);
  fx_route(fx, "GET", "/client", h_client, trust_loopback);
  fx_route(fx, "GET", "/client-untrusted", h_client, trust_other);
  fx_start(fx, 1);
  /* No field: the peer.  (Its port varies: only the address is checked.) */
  expect_client(fx, "/client", "", "127.0.0.1:");
  /* X-Forwarded-For: the nearest hop not trusted, over two lines too. */
  expect_client(fx, "/client", "X-Forwarded-For: 203.0.113.7, 10.1.1.1\r\n", "203.0.113.7:0");
  expect_client(fx, "/client", "X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-For: 198.51.100.9\r\n",
                "198.51.100.9:0");
  expect_client(fx, "/client", "X-Forwarded-For: 10.0.0.1, 10.0.0.2\r\n", "10.0.0.1:0");
  expect_client(fx, "/client", "X-Forwarded-For: 2001:db8::5\r\n", "[2001:db8::5]:0");
  expect_client(fx, "/client", "X-Forwarded-For: \r\n", "HR_EPARSE");
  expect_client(fx, "/client", "X-Forwarded-For: not-an-ip\r\n", "HR_ENOTFOUND");
  /* Forwarded (RFC 7239 §4's examples), ahead of X-Forwarded-For. */
  expect_client(fx, "/client",
                "Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43\r\n"
                "X-Forwarded-For: 198.51.100.1\r\n",
                "192.0.2.60:0");
  expect_client(fx, "/client", "Forwarded: for=\"[2001:db8:cafe::17]:4711\"\r\n",
                "[2001:db8:cafe::17]:4711");
  expect_client(fx, "/client", "Forwarded: for=192.0.2.43, for=10.9.9.9;by=10.0.0.1\r\n",
                "192.0.2.43:0");
  expect_client(fx, "/client", "Forwarded: for=unknown\r\n", "HR_ENOTFOUND");
  expect_client(fx, "/client", "Forwarded: for=_hidden, for=10.0.0.3\r\n", "HR_ENOTFOUND");
  expect_client(fx, "/client", "Forwarded: by=10.0.0.1\r\n", "HR_ENOTFOUND");
  expect_client(fx, "/client", "Forwarded: for=1.2.3.4;for=5.6.7.8\r\n", "HR_EPARSE");
  expect_client(fx, "/client", "Forwarded: for\r\n", "HR_EPARSE");
  /* A peer outside the trusted networks: what it writes is not believed. */
  expect_client(fx, "/client-untrusted", "X-Forwarded-For: 203.0.113.7\r\n", "127.0.0.1:");
  expect_client(fx, "/client-untrusted", "Forwarded: for=203.0.113.7\r\n", "127.0.0.1:");
  fx_stop(fx, 1000);
  hr_trusted_free(trust_loopback);
  hr_trusted_free(trust_other);
}

static char log_line[512];

static void on_log(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  (void)ctx;
  (void)e;
  if (len >= sizeof log_line) len = sizeof log_line - 1;
  memcpy(log_line, line, len); /* the loop thread; read after fx_stop */
  log_line[len] = '\0';
}

/* The access log names the client the header gave. */
static void test_access_log(void **state) {
  fx_t *fx = *state;
  fx->opts.access_log = on_log;
  fx->opts.access_format = HR_ACCESS_COMMON;
  start(fx, HR_PROXY_REQUIRED, loopback);
  expect_who(fx, V1, strlen(V1),
             "peer=192.0.2.1:56324 proxy=1 proxied=1 alpn= authority= ssl=0/0/0// "
             "balancer=127.0.0.1");
  fx_stop(fx, 1000); /* joined: the line is written */
  if (strncmp(log_line, "192.0.2.1 - - [", 15) != 0) fail_msg("log line: %s", log_line);
}

/* A peer that ends its side inside a header, or before any byte: closed
 * at once, not at the header timeout (60 s here). */
static void test_cut_short(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx->opts.header_timeout_ms = 60000;
  start(fx, HR_PROXY_REQUIRED, loopback);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "PROXY TCP4 192.0.2.1"), 0);
  rc_shutdown_wr(c);
  expect_closed(c);
  fx_drop(fx, c);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "PRO"), 0);
  rc_shutdown_wr(c);
  expect_closed(c);
  fx_drop(fx, c);
  c = fx_connect(fx);
  rc_shutdown_wr(c);
  expect_closed(c);
  fx_drop(fx, c);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
}

/* A listening socket made by the "host" (as systemd passes one), served
 * by two workers; with the PROXY protocol on it too; and what is not a
 * listening TCP socket refused. */
static int listening_socket(int *port) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 64), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

static void test_listen_fd(void **state) {
  fx_t *fx = *state;
  hr_listen_options_t o;
  int port, fd, i, bad, pipefd[2];
  rc_t *c;
  rc_response_t r;
  fx_route(fx, "GET", "/who", h_who, NULL);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  /* Not a listening TCP socket: refused, and the caller keeps it. */
  assert_int_equal(hr_server_listen_fd(fx->server, -1, NULL), HR_EINVAL);
  bad = socket(AF_INET, SOCK_STREAM, 0);
  assert_int_equal(hr_server_listen_fd(fx->server, bad, NULL), HR_EINVAL);
  close(bad);
  assert_int_equal(pipe(pipefd), 0);
  assert_int_equal(hr_server_listen_fd(fx->server, pipefd[0], NULL), HR_EINVAL);
  close(pipefd[0]);
  close(pipefd[1]);
  fd = listening_socket(&port);
  assert_int_equal(hr_server_listen_fd(fx->server, fd, NULL), 0);
  /* A second one, with the PROXY protocol from loopback. */
  {
    int port2, fd2 = listening_socket(&port2);
    hr_listen_options_init(&o);
    o.proxy = HR_PROXY_REQUIRED;
    o.proxy_trusted = loopback;
    assert_int_equal(hr_server_listen_fd(fx->server, fd2, &o), 0);
    assert_int_equal(hr_server_start(fx->server, 2), 0);
    fx->started = 1;
    assert_int_equal(hr_server_port(fx->server, 0), port);
    assert_int_equal(hr_server_port(fx->server, 1), port2);
    fx->port = port2;
    expect_who(fx, V1, strlen(V1),
               "peer=192.0.2.1:56324 proxy=1 proxied=1 alpn= authority= ssl=0/0/0// "
               "balancer=127.0.0.1");
  }
  fx->port = port;
  for (i = 0; i < 20; i++) {
    c = fx_connect(fx);
    assert_int_equal(rc_send_str(c, GET), 0);
    expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
    assert_non_null(strstr(r.body, "peer=127.0.0.1:"));
    rc_response_free(&r);
    fx_drop(fx, c);
  }
  expect_stat(fx, FX_REQUESTS, 21);
}

static void test_options(void **state) {
  fx_t *fx = *state;
  static const char *const bad[] = {"10.0.0.0/40", NULL};
  static const char *const none[] = {NULL};
  hr_listen_options_t o;
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  hr_listen_options_init(&o);
  assert_int_equal(o.proxy, HR_PROXY_OFF);
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &o), 0);
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, NULL), 0);
  o.proxy = HR_PROXY_REQUIRED;
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &o), HR_EINVAL);
  o.proxy_trusted = none;
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &o), HR_EINVAL);
  o.proxy_trusted = bad;
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &o), HR_EINVAL);
  o.proxy_trusted = loopback;
  o.proxy = (hr_proxy_mode_t)7;
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &o), HR_EINVAL);
  o.proxy = HR_PROXY_OPTIONAL;
  assert_int_equal(hr_server_listen_ex(fx->server, "127.0.0.1", 0, &o), 0);
  hr_server_free(fx->server);
  fx->server = NULL;
}

/* ---- before TLS ---------------------------------------------------------- */

static tf_cert_t cert;

static void start_tls(fx_t *fx, hr_proxy_mode_t mode, const char *const *trusted) {
  static hr_tls_options_t to;
  assert_int_equal(tf_cert_make(&cert, "localhost"), 0);
  hr_tls_options_init(&to);
  to.cert_pem = cert.cert_pem;
  to.cert_pem_len = cert.cert_len;
  to.key_pem = cert.key_pem;
  to.key_pem_len = cert.key_len;
  hr_listen_options_init(&lo);
  lo.proxy = mode;
  lo.proxy_trusted = trusted;
  lo.tls = &to;
  fx->listen = &lo;
  fx_route(fx, "GET", "/who", h_who, NULL);
  fx_start(fx, 1);
}

/* With tf_preface as it is set: a TLS connection, GET /who; its body
 * must begin with `body` and end with `tail`. */
static void expect_tls_who(fx_t *fx, const char *body, const char *tail) {
  tf_conn_t c;
  char buf[1024];
  const char *b;
  long n;
  assert_int_equal(tf_connect(&c, fx->port, &cert, NULL, 0, NULL, 0, NULL), 0);
  assert_int_equal(tf_write(&c, GET, strlen(GET)), 0);
  n = tf_read_response(&c, buf, sizeof buf);
  tf_close(&c);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
  b = strstr(buf, "\r\n\r\n") + 4;
  assert_memory_equal(b, body, strlen(body));
  assert_true(strlen(b) >= strlen(tail));
  assert_string_equal(b + strlen(b) - strlen(tail), tail);
}

static void preface(const char *p, int apart) {
  tf_preface = p;
  tf_preface_len = p != NULL ? strlen(p) : 0;
  tf_preface_apart = apart;
}

static void test_tls_trusted(void **state) {
  fx_t *fx = *state;
  static const char want[] =
      "peer=192.0.2.1:56324 proxy=1 proxied=1 alpn= authority= ssl=0/0/0// balancer=127.0.0.1";
  tf_conn_t c;
  start_tls(fx, HR_PROXY_REQUIRED, loopback);
  preface(V1, 0); /* the header and the ClientHello in one segment */
  expect_tls_who(fx, want, "");
  preface(V1, 1); /* apart */
  expect_tls_who(fx, want, "");
  /* Required: a trusted peer's handshake without a header is refused. */
  preface(NULL, 0);
  assert_int_equal(tf_connect(&c, fx->port, &cert, NULL, 0, NULL, 0, NULL), -1);
  expect_stat(fx, FX_REQUESTS, 2);
  tf_cert_free(&cert);
}

/* Bytes received count the header and the plaintext, not the TLS records
 * read with the header (they are the handshake's). */
static void test_tls_bytes(void **state) {
  fx_t *fx = *state;
  hr_server_stats_t st;
  uint64_t want = strlen(V1) + strlen(GET);
  int i;
  start_tls(fx, HR_PROXY_REQUIRED, loopback);
  preface(V1, 0); /* the header and the ClientHello in one segment */
  expect_tls_who(fx, "peer=192.0.2.1:56324 ", "balancer=127.0.0.1");
  preface(NULL, 0);
  for (i = 0; i < RC_TIMEOUT_MS; i++) {
    fx_stats(fx, &st);
    if (st.bytes_received == want) break;
    usleep(1000);
  }
  assert_int_equal(st.bytes_received, want);
  tf_cert_free(&cert);
}

static void test_tls_untrusted(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  start_tls(fx, HR_PROXY_OPTIONAL, elsewhere);
  /* Without a header: TLS as usual, the peer is itself. */
  preface(NULL, 0);
  expect_tls_who(fx, "peer=127.0.0.1:", " proxy=none");
  /* With one: refused before the handshake. */
  preface(V1, 0);
  assert_int_equal(tf_connect(&c, fx->port, &cert, NULL, 0, NULL, 0, NULL), -1);
  preface(NULL, 0);
  expect_stat(fx, FX_REQUESTS, 1);
  tf_cert_free(&cert);
}

/* After the header, plain HTTP on the TLS port gets the readable 400. */
static void test_tls_plain_after_header(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start_tls(fx, HR_PROXY_OPTIONAL, loopback);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, V1), 0);
  assert_int_equal(rc_send_str(c, GET), 0);
  expect_response(c, "HTTP/1.1 400 Bad Request",
                  "The plain HTTP request was sent to an HTTPS port.\n", NULL);
  expect_closed(c);
  tf_cert_free(&cert);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_trusted_v1, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_trusted_v2, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_untrusted, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_header_timeout, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_access_log, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_cut_short, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_options, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_listen_fd, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_client_behind_http_proxies, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tls_trusted, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tls_untrusted, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tls_bytes, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tls_plain_after_header, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
