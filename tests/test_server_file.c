/* SPDX-License-Identifier: MIT */
/*
 * File bodies (hr_response_send_file) through the server: whole files and
 * ranges byte for byte over plain TCP (sendfile) and TLS (pieces read into
 * one buffer), HEAD, the release callback run exactly once (or the fd
 * closed), pipelined requests after a file, a slow reader of a large file
 * that costs the server no memory, and a file that shrinks while it is sent
 * (the client gets a short body and the end of the connection, never a
 * hang), and peers that reset while a long file is sent on the thread
 * pool.  Files are made in a temporary directory with a pattern that tells
 * every offset apart.
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "countalloc.h"
#include "fixture.h"
#include "held.h"
#include "tlsfx.h"

static char dir[64];

static unsigned char pattern(uint64_t i) { return (unsigned char)(i * 7 + i / 251); }

/* Makes dir/name with `size` pattern bytes; returns its path (static). */
static const char *make_file(const char *name, size_t size) {
  static char path[128];
  char block[65536];
  size_t done = 0;
  int fd;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  while (done < size) {
    size_t n = size - done < sizeof block ? size - done : sizeof block, i;
    for (i = 0; i < n; i++) block[i] = (char)pattern(done + i);
    assert_int_equal(write(fd, block, n), (ssize_t)n);
    done += n;
  }
  close(fd);
  return path;
}

static int check_pattern(const char *p, size_t n, uint64_t from) {
  size_t i;
  for (i = 0; i < n; i++)
    if ((unsigned char)p[i] != pattern(from + i)) return 0;
  return 1;
}

/* ---- the handler: GET /f/<name>?off=A&len=B --------------------------------- */

static struct {
  int released;    /* release callbacks seen */
  int last_fd;     /* the fd the last one got */
  int use_release; /* 0: release NULL, the server closes */
  int fd;          /* the fd of the last response, for the test to check */
} fl;

static void on_release(hr_response_t *res, int fd, void *udata) {
  (void)res;
  (void)udata;
  fl.released++;
  fl.last_fd = fd;
  close(fd);
}

static uint64_t query_u64(hr_request_t *req, const char *key, uint64_t dflt) {
  hr_span_t v;
  char buf[32];
  if (hr_request_query_get(req, hr_span_cstr(key), NULL, &v) != 0 || v.len >= sizeof buf)
    return dflt;
  memcpy(buf, v.ptr, v.len);
  buf[v.len] = '\0';
  return strtoull(buf, NULL, 10);
}

static void h_file(hr_request_t *req, hr_response_t *res, void *udata) {
  char path[160];
  hr_span_t name;
  struct stat st;
  uint64_t off, len;
  int fd, rc;
  (void)udata;
  hr_request_param_by_name(req, HR_SPAN_LIT("name"), &name);
  snprintf(path, sizeof path, "%s/%.*s", dir, (int)name.len, name.ptr);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    hr_response_send(res, 404, NULL, 0);
    return;
  }
  off = query_u64(req, "off", 0);
  len = query_u64(req, "len", (uint64_t)st.st_size - off);
  fl.fd = fd;
  rc = hr_response_send_file(res, 200, fd, off, len, fl.use_release ? on_release : NULL, NULL);
  if (rc != 0) {
    close(fd);
    hr_response_send(res, 500, NULL, 0);
  }
}

static void start(fx_t *fx, int use_release) {
  memset(&fl, 0, sizeof fl);
  fl.use_release = use_release;
  fx_route(fx, "GET", "/f/:name", h_file, NULL);
  fx_start(fx, 1);
}

/* ---- tests ------------------------------------------------------------------ */

/* Whole files, a range and HEAD, pipelined on one connection: every byte
 * where it belongs; the release callback once per response, with its fd. */
static void test_whole_range_head(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  make_file("small", 1000);
  make_file("big", 3 << 20);
  start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /f/small HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /f/big HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /f/big?off=1000001&len=5000 HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "HEAD /f/big HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /f/small?off=1000&len=0 HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.body_len, 1000);
  assert_true(check_pattern(r.body, 1000, 0));
  expect_field(&r, "Content-Length", "1000", 0);
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.body_len, 3 << 20);
  assert_true(check_pattern(r.body, 3 << 20, 0));
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.body_len, 5000);
  assert_true(check_pattern(r.body, 5000, 1000001));
  rc_response_free(&r);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  expect_field(&r, "Content-Length", "3145728", 0);
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", "", &r);
  expect_field(&r, "Content-Length", "0", 0);
  rc_response_free(&r);
  /* One more request: everything before it was written and released. */
  assert_int_equal(rc_send_str(c, "GET /f/nothing HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "", NULL);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  assert_int_equal(fl.released, 5);
}

/* With release NULL the server closes the fd once the body is out. */
static void test_server_closes_fd(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  make_file("small", 1000);
  start(fx, 0);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /f/small HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, NULL);
  /* The next exchange on the connection starts after the first one's
   * output was released. */
  assert_int_equal(rc_send_str(c, "GET /f/nothing HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 404 Not Found", "", NULL);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  assert_int_equal(fcntl(fl.fd, F_GETFD), -1);
  assert_int_equal(errno, EBADF);
  assert_int_equal(fl.released, 0);
}

/* A 32 MiB file to a client that reads slowly through a small window: the
 * server's memory does not grow with the file (sendfile sends what the
 * socket takes; nothing is read ahead). */
static void test_slow_reader_costs_no_memory(void **state) {
  fx_t *fx = *state;
  ca_t ca;
  rc_t *c;
  rc_response_t r;
  size_t peak;
  fx_h1_only("reads the socket itself (an HTTP/1.1 connection with a small window and paced reads)");
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  make_file("huge", 32 << 20);
  start(fx, 1);
  c = rc_connect_ex("127.0.0.1", fx->port, 65536);
  assert_non_null(c);
  c->read_chunk = 65536;
  c->read_pause_us = 200;
  ca_reset_peak(&ca);
  assert_int_equal(rc_send_str(c, "GET /f/huge HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.body_len, 32 << 20);
  assert_true(check_pattern(r.body, r.body_len, 0));
  rc_response_free(&r);
  peak = ca_peak(&ca);
  rc_close(c);
  fx_stop(fx, 1000);
  hr_server_free(fx->server);
  fx->server = NULL;
  /* Pools and buffers the server keeps anyway; far from 32 MiB. */
  if (peak > (1u << 20)) fail_msg("the server held %zu bytes while sending 32 MiB", peak);
  ca_destroy(&ca);
}

/* Peers that reset while a long file is on its way (sent on the thread
 * pool: the close waits for the job): every response is released, every
 * connection ends, and the server goes on serving. */
static void test_reset_mid_send(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  rc_t *c;
  char buf[65536];
  int i;
  fx_h1_only("reads and resets an HTTP/1.1 socket itself");
  make_file("long", 64 << 20);
  make_file("small", 1000);
  start(fx, 1);
  for (i = 0; i < 20; i++) {
    size_t got = 0;
    ssize_t n;
    c = rc_connect_ex("127.0.0.1", fx->port, 65536);
    assert_non_null(c);
    assert_int_equal(rc_send_str(c, "GET /f/long HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    while (got < (size_t)(i + 1) * 4096 && (n = recv(c->fd, buf, sizeof buf, 0)) > 0)
      got += (size_t)n;
    rc_close_rst(c);
  }
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /f/small HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body_len, 1000);
  rc_response_free(&r);
  fx_drop(fx, c);
  fx_stop(fx, 1000); /* joined: the counts below are settled */
  assert_int_equal(fl.released, 21);
}

/* The file shrinks to 1 MiB while 64 MiB of it are being sent: the client
 * gets fewer bytes than Content-Length and the connection ends. */
static void test_file_shrinks(void **state) {
  fx_t *fx = *state;
  const char *path;
  rc_t *c;
  char buf[65536];
  size_t got = 0;
  ssize_t n;
  fx_h1_only("reads an HTTP/1.1 socket itself and expects the connection to end short of "
             "Content-Length");
  path = make_file("shrinking", 64 << 20);
  start(fx, 1);
  c = rc_connect_ex("127.0.0.1", fx->port, 65536);
  assert_non_null(c);
  assert_int_equal(rc_send_str(c, "GET /f/shrinking HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  /* Some of it first, so that the body is under way. */
  while (got < 65536 && (n = recv(c->fd, buf, sizeof buf, 0)) > 0) got += (size_t)n;
  assert_int_equal(truncate(path, 1 << 20), 0);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  assert_int_equal(fl.released, 1);
}

static tf_cert_t cert;

/* A TLS listener with the test certificate, one worker. */
static void start_tls(fx_t *fx) {
  hr_tls_options_t o;
  hr_tls_options_init(&o);
  o.cert_pem = cert.cert_pem;
  o.cert_pem_len = cert.cert_len;
  o.key_pem = cert.key_pem;
  o.key_pem_len = cert.key_len;
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr_server_listen_tls(fx->server, "127.0.0.1", 0, &o), 0);
  assert_int_equal(hr_server_start(fx->server, 1), 0);
  fx->started = 1;
  fx->port = hr_server_port(fx->server, 0);
}

/* Over TLS the file is read a piece at a time and encrypted: 1 MiB and a
 * range arrive byte for byte. */
static void test_tls(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  size_t cap = (1 << 20) + 4096;
  char *buf;
  const char *req = "GET /f/mid HTTP/1.1\r\nHost: localhost\r\n\r\n";
  const char *body;
  long n;
  fx_h1_only("its own HTTP/1.1 TLS client");
  buf = malloc(cap);
  assert_non_null(buf);
  make_file("mid", 1 << 20);
  memset(&fl, 0, sizeof fl);
  fl.use_release = 1;
  fx_route(fx, "GET", "/f/:name", h_file, NULL);
  start_tls(fx);
  assert_int_equal(tf_connect(&c, fx->port, &cert, NULL, 0, NULL, 0, "localhost"), 0);
  assert_int_equal(tf_write(&c, req, strlen(req)), 0);
  n = tf_read_response(&c, buf, cap);
  assert_true(n > 0);
  body = strstr(buf, "\r\n\r\n");
  assert_non_null(body);
  body += 4;
  assert_int_equal((size_t)n - (size_t)(body - buf), 1 << 20);
  assert_true(check_pattern(body, 1 << 20, 0));
  req = "GET /f/mid?off=70000&len=40000 HTTP/1.1\r\nHost: localhost\r\n\r\n";
  assert_int_equal(tf_write(&c, req, strlen(req)), 0);
  n = tf_read_response(&c, buf, cap);
  body = strstr(buf, "\r\n\r\n") + 4;
  assert_int_equal((size_t)n - (size_t)(body - buf), 40000);
  assert_true(check_pattern(body, 40000, 70000));
  tf_close(&c);
  /* Peers that reset while a long file is read for them on the thread
   * pool, a piece at a time: each response released, the server fine. */
  make_file("long", 64 << 20);
  for (int i = 0; i < 10; i++) {
    struct linger l = {1, 0};
    req = "GET /f/long HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_int_equal(tf_connect(&c, fx->port, &cert, NULL, 0, NULL, 0, "localhost"), 0);
    assert_int_equal(tf_write(&c, req, strlen(req)), 0);
    assert_true(SSL_read(c.ssl, buf, (int)(i + 1) * 1000) > 0);
    setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(c.fd); /* a reset, no close_notify */
    c.fd = -1;
    SSL_free(c.ssl);
    c.ssl = NULL;
    SSL_CTX_free(c.ctx);
    c.ctx = NULL;
  }
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  free(buf);
  fx_stop(fx, 1000);
  assert_int_equal(fl.released, 12);
}

/* Over TLS, a long file then a request its handler holds, and the peer
 * shuts its side (FIN) at once: the held exchange is aborted, but the file
 * before it is a complete response and goes out whole (it used to be cut
 * by a reset when the pipelined handler was running). */
static void test_tls_half_close_keeps_earlier_response(void **state) {
  fx_t *fx = *state;
  tf_conn_t c;
  size_t cap = (32u << 20) + 4096;
  char *buf;
  const char *req = "GET /f/long HTTP/1.1\r\nHost: localhost\r\n\r\n"
                    "GET /held HTTP/1.1\r\nHost: localhost\r\n\r\n";
  const char *body;
  long n;
  fx_h1_only("its own HTTP/1.1 TLS client, pipelining and a half-close");
  buf = malloc(cap);
  assert_non_null(buf);
  make_file("long", 32 << 20);
  memset(&fl, 0, sizeof fl);
  fl.use_release = 1;
  held_init(&held_default);
  /* A mark above the file: the held request is answered while the file
   * is still queued (with the default mark that happens in its last
   * 64 KiB, a window a test cannot hit reliably). */
  fx->opts.write_high_water_bytes = 64u << 20;
  fx_route(fx, "GET", "/f/:name", h_file, NULL);
  fx_route(fx, "GET", "/held", held_handler, "held");
  start_tls(fx);
  assert_int_equal(tf_connect(&c, fx->port, &cert, NULL, 0, NULL, 0, "localhost"), 0);
  assert_int_equal(tf_write(&c, req, strlen(req)), 0);
  /* The held request reached its handler: now the peer leaves. */
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  assert_int_equal(shutdown(c.fd, SHUT_WR), 0);
  assert_true(ev_wait(&held_default.ev_aborted, 1, RC_TIMEOUT_MS));
  n = tf_read_response(&c, buf, cap);
  assert_true(n > 0);
  body = strstr(buf, "\r\n\r\n");
  assert_non_null(body);
  body += 4;
  assert_int_equal((size_t)n - (size_t)(body - buf), 32u << 20);
  assert_true(check_pattern(body, 32u << 20, 0));
  /* No close_notify: the write side is shut (a write would raise SIGPIPE). */
  close(c.fd);
  SSL_free(c.ssl);
  SSL_CTX_free(c.ctx);
  free(buf);
  assert_int_equal(held_complete(&held_default, 1, 200, NULL), HR_ECLOSED);
  fx_stop(fx, 1000);
  held_destroy(&held_default);
}

/* A loop of the host's own (attached mode), SIGPIPE at its default
 * action: clients that reset in the middle of a file never end the
 * process (sendfile raises SIGPIPE even when it reports bytes sent). */
static void test_attached_resets_no_sigpipe(void **state) {
  fx_t *fx = *state;
  int i;
  fx_h1_only("resets HTTP/1.1 sockets of its own");
  signal(SIGPIPE, SIG_DFL);
  make_file("reset", 8 << 20);
  memset(&fl, 0, sizeof fl);
  fl.use_release = 1;
  fx_route(fx, "GET", "/f/:name", h_file, NULL);
  fx_attach(fx);
  for (i = 0; i < 300; i++) {
    char buf[1024];
    rc_t *c = rc_connect_ex("127.0.0.1", fx->port, 4096);
    assert_non_null(c);
    assert_int_equal(rc_send_str(c, "GET /f/reset HTTP/1.1\r\nHost: a\r\n\r\n"
                                    "GET /f/reset HTTP/1.1\r\nHost: a\r\n\r\n"),
                     0);
    assert_true(recv(c->fd, buf, sizeof buf, 0) > 0);
    rc_close_rst(c);
  }
  /* Still serving. */
  {
    rc_t *c = rc_connect(fx->port);
    rc_response_t r;
    assert_int_equal(rc_send_str(c, "GET /f/reset?len=10 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
    assert_int_equal(r.body_len, 10);
    rc_response_free(&r);
    rc_close(c);
  }
  fx_close_attached(fx, 1000);
  signal(SIGPIPE, SIG_IGN);
}

/* A streamed body mixing memory and two file ranges: chunked (no length)
 * or with Content-Length (?len=1). */
static void h_mixed(hr_request_t *req, hr_response_t *res, void *udata) {
  char path[160];
  int a, b;
  int64_t total = 5 + 3000 + 3 + 200000 + 4;
  (void)udata;
  snprintf(path, sizeof path, "%s/mixed", dir);
  a = open(path, O_RDONLY | O_CLOEXEC);
  b = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(a >= 0 && b >= 0);
  hr_response_start(res, 200, query_u64(req, "len", 0) ? total : HR_LENGTH_UNKNOWN);
  hr_response_write(res, "head:", 5);
  assert_int_equal(hr_response_write_file(res, a, 10, 3000, on_release, NULL), 0);
  hr_response_write(res, "mid", 3);
  assert_int_equal(hr_response_write_file(res, b, 500000, 200000, on_release, NULL), 0);
  hr_response_write(res, ":end", 4);
  hr_response_end(res);
}

static void expect_mixed(const rc_response_t *r) {
  assert_int_equal(r->body_len, 5 + 3000 + 3 + 200000 + 4);
  assert_memory_equal(r->body, "head:", 5);
  assert_true(check_pattern(r->body + 5, 3000, 10));
  assert_memory_equal(r->body + 3005, "mid", 3);
  assert_true(check_pattern(r->body + 3008, 200000, 500000));
  assert_memory_equal(r->body + 203008, ":end", 4);
}

static void test_streamed_mix(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  make_file("mixed", 1 << 20);
  memset(&fl, 0, sizeof fl);
  fx_route(fx, "GET", "/mixed", h_mixed, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /mixed HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /mixed?len=1 HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "HEAD /mixed HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  if (!fx_h2()) assert_int_equal(r.chunked, 1); /* HTTP/2: DATA frames up to END_STREAM */
  expect_no_field(&r, "Content-Length");
  expect_mixed(&r);
  rc_response_free(&r);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.chunked, 0);
  expect_field(&r, "Content-Length", "203012", 0);
  expect_mixed(&r);
  rc_response_free(&r);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  assert_int_equal(fl.released, 6);
}

/* A file that ends before the length asked for: the head still arrives
 * (it is not lost behind MSG_MORE and a reset), then the end of the
 * connection, short of Content-Length. */
static void test_file_ends_early(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  make_file("short", 1000);
  start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /f/short?off=2000&len=10 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_TRUNC);
  assert_string_equal(r.status_line, "HTTP/1.1 200 OK");
  assert_string_equal(rc_header(&r, "Content-Length"), "10");
  rc_response_free(&r);
  fx_drop(fx, c);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /f/short?off=990&len=100 HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_int_equal(rc_read_response(c, &r, 0), RC_TRUNC);
  assert_string_equal(r.status_line, "HTTP/1.1 200 OK");
  rc_response_free(&r);
  fx_drop(fx, c);
  fx_stop(fx, 1000);
  assert_int_equal(fl.released, 2);
}

/* Arguments the call refuses, leaving the fd with the caller. */
static void h_bad(hr_request_t *req, hr_response_t *res, void *udata) {
  int fd = open("/dev/null", O_RDONLY);
  char body[64];
  int a, b, c;
  (void)req;
  (void)udata;
  a = hr_response_send_file(res, 200, -1, 0, 1, NULL, NULL);
  b = hr_response_send_file(res, 304, fd, 0, 1, NULL, NULL);
  c = hr_response_send_file(res, 200, fd, (uint64_t)1 << 63, 1, NULL, NULL);
  snprintf(body, sizeof body, "%d %d %d %d", a == HR_EINVAL, b == HR_EINVAL, c == HR_EINVAL,
           fcntl(fd, F_GETFD) != -1);
  close(fd);
  hr_response_send(res, 200, body, strlen(body));
}

static void test_refused(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx_route(fx, "GET", "/bad", h_bad, NULL);
  fx_start(fx, 1);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /bad HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "1 1 1 1", NULL);
  fx_drop(fx, c);
}

static int group_setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/hroute-file-XXXXXX");
  if (mkdtemp(dir) == NULL) return -1;
  return tf_cert_make(&cert, "localhost");
}

static int group_teardown(void **state) {
  char cmd[128];
  (void)state;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  tf_cert_free(&cert);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_whole_range_head, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_server_closes_fd, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_slow_reader_costs_no_memory, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_file_shrinks, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_reset_mid_send, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tls, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_tls_half_close_keeps_earlier_response, fx_setup,
                                      fx_teardown),
      cmocka_unit_test_setup_teardown(test_refused, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_file_ends_early, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_streamed_mix, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_attached_resets_no_sigpipe, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
