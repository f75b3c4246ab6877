/* SPDX-License-Identifier: MIT */
/*
 * Size limits (request line 414, header section bytes and field count 431,
 * max_connections) with their exact boundaries, and the timeouts: slowloris
 * header (408), idle keep-alive (EOF), body inactivity (408) and a stalled
 * writer (closed).  Timeouts are set short and the tests assert what
 * happens, never how long it took; every timer restarts per request on a
 * persistent connection.  Sleeps only make slow clients.
 *
 * What does not depend on the machine's speed: a client that is to keep
 * within a timeout measures whether it did (pace_t below), since a starved
 * test thread sleeps longer than it asked; the server judges a deadline by
 * what the peer did (bytes that wait unread when a deadline passes are
 * read first; a reader that keeps acknowledging bytes is progress: conn.c,
 * put_off), so a round whose client kept its pace must pass, and one whose
 * client was held up proves nothing and runs again.
 *
 * ctest-labels: tsan
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fixture.h"

/* ---- the client's pace ------------------------------------------------------
 * A server deadline counts from a moment no earlier than the start of the
 * client action before it (its bytes cannot be processed before they are
 * sent: a connect, a send; for a reader, the last read that made room),
 * and the bytes of the next action are there once that action returned.
 * So a round in which every action ended less than the timeout (minus a
 * margin for the loop clock's granularity) after the previous one started
 * must not time out.  A round that did not keep that pace is run again, up
 * to PACE_ROUNDS times; if none could (a machine so loaded that the test
 * thread never kept a pace of a few hundred milliseconds), the test is
 * skipped, saying so: it proved nothing either way. */
#define PACE_MARGIN_MS 100
#define PACE_ROUNDS 8

typedef struct pace_s {
  unsigned long long since; /* when the client's last action started */
  unsigned long long worst; /* the longest from one's start to the next one's end */
} pace_t;

static void pace_begin(pace_t *p) {
  p->since = now_ms();
  p->worst = 0;
}

/* An action that started at `start` has just ended. */
static void pace_step(pace_t *p, unsigned long long start) {
  unsigned long long t = now_ms();
  if (t - p->since > p->worst) p->worst = t - p->since;
  p->since = start;
}

static int pace_send(pace_t *p, rc_t *c, const char *s) {
  unsigned long long start = now_ms();
  int rc = rc_send_str(c, s);
  pace_step(p, start);
  return rc;
}

static int pace_kept(const pace_t *p, uint64_t timeout_ms) {
  return p->worst + PACE_MARGIN_MS < timeout_ms;
}

/* After a round that failed: a failure if the client kept its pace. */
static void pace_judge(const pace_t *p, uint64_t timeout_ms, const char *what) {
  if (pace_kept(p, timeout_ms))
    fail_msg("%s, although the client kept within %llu ms of the %llu ms timeout", what,
             (unsigned long long)p->worst, (unsigned long long)timeout_ms);
  print_message("round run again: the client was held up %llu ms (timeout %llu ms)\n",
                (unsigned long long)p->worst, (unsigned long long)timeout_ms);
}

static void pace_none_kept(void) {
  print_message("no round kept its pace: the machine held the client up every time\n");
  skip();
}

/* Connects, counting the connect as the round's first action. */
static rc_t *pace_connect(pace_t *p, fx_t *fx) {
  pace_begin(p);
  return fx_connect(fx);
}

/* Whether the next read of `c` brings a complete response with this
 * status line and body; the response is freed. */
static int got_response(rc_t *c, const char *status_line, const char *body) {
  rc_response_t r;
  int ok = rc_read_response(c, &r, 0) == RC_OK && r.status_line != NULL &&
           strcmp(r.status_line, status_line) == 0 && (body == NULL || strcmp(r.body, body) == 0);
  rc_response_free(&r);
  return ok;
}

/* Drops a round's connection and waits until the server has let go of it,
 * so that nothing of it runs into the next round. */
static void round_over(fx_t *fx, rc_t *c) {
  fx_drop(fx, c);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
}

static fx_t *start(void **state) {
  fx_t *fx = *state;
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_route(fx, "GET", "/*any", ta_text, "any");
  fx_route(fx, "POST", "/echo", ta_echo, NULL);
  fx_start(fx, 1);
  return fx;
}

/* Sends `req` on a new connection and expects `status_line` then close. */
static void expect_refused(fx_t *fx, const char *req, size_t len,
                           const char *status_line) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send(c, req, len), 0);
  expect_response(c, status_line, NULL, &r);
  expect_field(&r, "Connection", "close", 1);
  rc_response_free(&r);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
}

/* "GET /aaa…a HTTP/1.1" of exactly `line_len` bytes. */
static char *request_with_line(size_t line_len, const char *rest) {
  size_t plen = line_len - strlen("GET  HTTP/1.1"), n;
  char *s = malloc(line_len + strlen(rest) + 8);
  memcpy(s, "GET /", 5);
  memset(s + 5, 'a', plen - 1);
  n = 4 + plen;
  memcpy(s + n, " HTTP/1.1\r\n", 11);
  strcpy(s + n + 11, rest);
  return s;
}

static void test_request_line_limit(void **state) {
  fx_t *fx = *state;
  char *req;
  rc_t *c;
  fx->opts.max_request_line_bytes = 100;
  start(state);
  req = request_with_line(100, "Host: a\r\n\r\n");
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", "any", NULL);
  free(req);
  req = request_with_line(101, "Host: a\r\n\r\n");
  expect_refused(fx, req, strlen(req), "HTTP/1.1 414 URI Too Long");
  free(req);
  /* Found while the line is still arriving: no CRLF ever comes. */
  req = request_with_line(400, "");
  expect_refused(fx, req, 300, "HTTP/1.1 414 URI Too Long");
  free(req);
  assert_int_equal(ta_calls(), 1);
}

/* A request whose header section (request line + fields + empty line) is
 * exactly `total` bytes, padded with an X-Pad field. */
static char *request_of_size(size_t total) {
  static const char head[] = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ";
  size_t fixed = strlen(head) + strlen("\r\n\r\n");
  char *s = malloc(total + 1);
  memcpy(s, head, strlen(head));
  memset(s + strlen(head), 'p', total - fixed);
  memcpy(s + total - 4, "\r\n\r\n", 4);
  s[total] = '\0';
  return s;
}

static void test_header_bytes_limit(void **state) {
  fx_t *fx = *state;
  char *req;
  rc_t *c;
  fx->opts.max_header_bytes = 256;
  start(state);
  req = request_of_size(256);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  free(req);
  req = request_of_size(257);
  expect_refused(fx, req, strlen(req),
                 "HTTP/1.1 431 Request Header Fields Too Large");
  /* Found before the section ends: the empty line never comes. */
  req[200] = '\0';
  {
    char *big = malloc(4096);
    memset(big, 'q', 4096);
    memcpy(big, req, 200);
    expect_refused(fx, big, 4096, "HTTP/1.1 431 Request Header Fields Too Large");
    free(big);
  }
  free(req);
  assert_int_equal(ta_calls(), 1);
}

static void test_header_count_limit(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  fx->opts.max_header_fields = 5;
  start(state);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n"
                                  "C: 3\r\nD: 4\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  static const char six[] =
      "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n";
  expect_refused(fx, six, sizeof six - 1,
                 "HTTP/1.1 431 Request Header Fields Too Large");
  assert_int_equal(ta_calls(), 1);
}

static void test_max_connections(void **state) {
  fx_t *fx = *state;
  rc_t *a, *b, *extra;
  rc_response_t r;
  int rc;
  fx->opts.max_connections = 2;
  start(state);
  a = fx_connect(fx);
  b = fx_connect(fx);
  assert_int_equal(rc_send_str(a, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(a, "HTTP/1.1 200 OK", "root", NULL);
  assert_int_equal(rc_send_str(b, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(b, "HTTP/1.1 200 OK", "root", NULL);
  /* The third is accepted by the kernel, then closed without an answer. */
  extra = fx_connect(fx);
  rc_send_str(extra, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"); /* may fail */
  rc = rc_read_response(extra, &r, 0);
  rc_response_free(&r);
  assert_true(rc_closed_without_response(extra, rc));
  fx_drop(fx, extra);
  expect_stat(fx, FX_REJECTED, 1);
  expect_stat(fx, FX_ACTIVE, 2);
  /* Free a slot: a new connection is served. */
  fx_drop(fx, a);
  assert_true(fx_wait_active(fx, 1, RC_TIMEOUT_MS));
  a = fx_connect(fx);
  assert_int_equal(rc_send_str(a, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(a, "HTTP/1.1 200 OK", "root", NULL);
  assert_int_equal(ta_calls(), 3);
}

/* ---- timeouts ----------------------------------------------------------- */

static void test_header_timeout(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  pace_t p;
  size_t i;
  int round, done = 0;
  static const char partial[] = "GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ";
  fx->opts.header_timeout_ms = 300;
  start(state);
  for (round = 0; round < PACE_ROUNDS && !done; round++) {
    /* Stops in the middle of the header section.  Its first bytes must
     * reach the server within the timeout of the connection's start, or
     * it rightly closes a connection that sent nothing, without a 408. */
    c = pace_connect(&p, fx);
    assert_int_equal(pace_send(&p, c, partial), 0);
    if (rc_read_response(c, &r, 0) != RC_OK || r.status != 408) {
      rc_response_free(&r);
      pace_judge(&p, fx->opts.header_timeout_ms, "no 408 for a header section cut short");
      round_over(fx, c);
      continue;
    }
    expect_field(&r, "Connection", "close", 1);
    rc_response_free(&r);
    assert_int_equal(rc_drain_until_closed(c, NULL), 1);
    round_over(fx, c);
    /* Slowloris: keeps sending a byte every 30 ms, never finishing; the
     * timeout counts from the first byte, so trickling does not extend it. */
    c = pace_connect(&p, fx);
    assert_int_equal(pace_send(&p, c, partial), 0);
    if (!pace_kept(&p, fx->opts.header_timeout_ms)) {
      print_message("round run again: the client was held up %llu ms\n", p.worst);
      round_over(fx, c);
      continue;
    }
    for (i = 0; i < 1000 && rc_readable(c, 30) == 0; i++)
      if (rc_send_str(c, "x") != 0) break;
    assert_true(i < 1000);
    expect_response(c, "HTTP/1.1 408 Request Timeout", NULL, &r);
    expect_field(&r, "Connection", "close", 1);
    rc_response_free(&r);
    assert_int_equal(rc_drain_until_closed(c, NULL), 1);
    round_over(fx, c);
    done = 1;
  }
  if (!done) pace_none_kept();
  assert_int_equal(ta_calls(), 0);
}

static void test_idle_keepalive_timeout(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  pace_t p;
  int round, done = 0;
  fx->opts.keepalive_timeout_ms = 300;
  /* Whichever timer a fresh connection without a byte falls under. */
  fx->opts.header_timeout_ms = 300;
  start(state);
  for (round = 0; round < PACE_ROUNDS && !done; round++) {
    c = pace_connect(&p, fx);
    assert_int_equal(pace_send(&p, c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    if (!got_response(c, "HTTP/1.1 200 OK", "root")) {
      /* The request came later than a fresh connection may wait. */
      pace_judge(&p, fx->opts.header_timeout_ms, "no answer to a request sent in time");
      round_over(fx, c);
      continue;
    }
    /* Nothing more is sent: the server closes without a response. */
    assert_int_equal(rc_expect_closed(c), 1);
    round_over(fx, c);
    done = 1;
  }
  if (!done) pace_none_kept();
  /* A connection that never sends a byte is closed too. */
  c = fx_connect(fx);
  assert_true(rc_drain_until_closed(c, NULL) == 1);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
}

static void test_body_timeout(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  fx->opts.body_timeout_ms = 200;
  start(state);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "POST /echo HTTP/1.1\r\nHost: a\r\n"
                                  "Content-Length: 10\r\n\r\n012"),
                   0);
  expect_response(c, "HTTP/1.1 408 Request Timeout", NULL, &r);
  expect_field(&r, "Connection", "close", 1);
  rc_response_free(&r);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  assert_int_equal(ta_calls(), 0);
}

/* Each timer restarts per request or piece: three requests, each one well
 * inside its timeout, spanning together much more than the timeout. */
static void test_timers_restart_per_request(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  pace_t p;
  int i, round, done = 0;
  fx->opts.keepalive_timeout_ms = 400;
  fx->opts.header_timeout_ms = 400;
  fx->opts.body_timeout_ms = 400;
  start(state);
  for (round = 0; round < PACE_ROUNDS && !done; round++) {
    int ok = 1;
    ta_reset();
    c = pace_connect(&p, fx);
    for (i = 0; i < 3 && ok; i++) {
      /* header section in two parts 150 ms apart */
      ok = pace_send(&p, c, "POST /echo HTTP/1.1\r\nHost: a\r\n") == 0;
      sleep_ms(150);
      ok = ok && pace_send(&p, c, "Content-Length: 6\r\n\r\nab") == 0;
      /* body in three pieces 150 ms apart */
      sleep_ms(150);
      ok = ok && pace_send(&p, c, "cd") == 0;
      sleep_ms(150);
      ok = ok && pace_send(&p, c, "ef") == 0;
      ok = ok && got_response(c, "HTTP/1.1 200 OK", "abcdef");
      /* idle between requests */
      sleep_ms(150);
    }
    if (!ok) {
      pace_judge(&p, 400, "a request paced within its timeouts was refused");
      round_over(fx, c);
      continue;
    }
    round_over(fx, c);
    done = 1;
  }
  if (!done) pace_none_kept();
  assert_int_equal(ta_calls(), 3);
}

/* ---- write stall -------------------------------------------------------- */

static struct {
  hr_response_t *res;
  size_t sent;
  int ended, end_rc, error, aborted;
  ev_t done;
} stall;

static void stall_finish(int err) {
  if (stall.ended) return;
  stall.ended = 1;
  stall.error = err;
  stall.end_rc = hr_response_end(stall.res);
  ev_signal(&stall.done);
}

static void stall_pump(void) {
  static char piece[16384];
  for (;;) {
    int rc = hr_response_write(stall.res, piece, sizeof piece);
    if (rc == HR_EAGAIN) return;
    if (rc != 0) {
      stall_finish(rc);
      return;
    }
    stall.sent += sizeof piece;
  }
}

static void stall_drain(hr_response_t *res, int status, void *udata) {
  (void)res;
  (void)udata;
  if (status != 0)
    stall_finish(status);
  else if (!stall.ended)
    stall_pump();
}

static void stall_abort(hr_response_t *res, void *udata) {
  (void)res;
  (void)udata;
  stall.aborted = 1;
  stall_finish(HR_ECLOSED);
}

static void h_endless(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ta_count();
  stall.res = res;
  hr_response_on_drain(res, stall_drain, NULL);
  hr_response_on_abort(res, stall_abort, NULL);
  hr_response_start(res, 200, HR_LENGTH_UNKNOWN);
  stall_pump();
}

/* Reads until the connection ends: 0 for a FIN, or -errno (a reset).
 * Bytes read are added to *got. */
static int ends_with(rc_t *c, size_t *got) {
  char buf[65536];
  int i;
  for (i = 0; i < 100000; i++) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n == 0) return 0;
    if (n < 0) return errno == EINTR ? 0 : -errno;
    *got += (size_t)n;
  }
  return 1;
}

/* A client that never reads a huge streamed response: the server closes
 * the connection and the handler hears HR_ECLOSED. */
static void test_write_stall(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  size_t got = 0;
  memset(&stall, 0, sizeof stall);
  ev_init(&stall.done);
  fx->opts.write_timeout_ms = 200;
  fx_route(fx, "GET", "/endless", h_endless, NULL);
  fx_start(fx, 1);
  c = rc_connect_ex("127.0.0.1", fx->port, 16384);
  assert_non_null(c);
  assert_int_equal(rc_send_str(c, "GET /endless HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&stall.done, 1, RC_TIMEOUT_MS));
  assert_int_equal(stall.error, HR_ECLOSED);
  assert_int_equal(stall.end_rc, HR_ECLOSED);
  /* The response was cut short: the connection ends with a reset, not a
   * FIN a client could take for the end of the body. */
  assert_int_equal(ends_with(c, &got), -ECONNRESET);
  rc_close(c);
  assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
  ev_destroy(&stall.done);
}

/* A response that takes longer to read than the write timeout, read
 * steadily: the timeout counts from the last progress, so it all arrives. */
#define BIG_BODY ((size_t)8 << 20)

static void h_big(hr_request_t *req, hr_response_t *res, void *udata) {
  static char body[BIG_BODY];
  (void)req;
  (void)udata;
  memset(body, 'b', sizeof body);
  hr_response_send_borrowed(res, 200, body, sizeof body, NULL, NULL);
}

static void test_slow_reader_is_not_stalled(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  char buf[65536];
  pace_t p;
  int round, done = 0;
  fx->opts.write_timeout_ms = 400;
  fx_route(fx, "GET", "/big", h_big, NULL);
  fx_start(fx, 1);
  for (round = 0; round < PACE_ROUNDS && !done; round++) {
    size_t got = 0, head = 0;
    int reads = 0;
    c = rc_connect_ex("127.0.0.1", fx->port, 65536);
    assert_non_null(c);
    pace_begin(&p);
    assert_int_equal(pace_send(&p, c, "GET /big HTTP/1.1\r\nHost: a\r\n"
                                      "Connection: close\r\n\r\n"),
                     0);
    /* At most 64 KiB every 20 ms: more than two and a half seconds for the
     * 8 MiB body (128 reads at least, so never less), six times the
     * timeout.  The server hears of room to write only each time about
     * half its socket buffer (up to 4 MiB) drained: at this pace that
     * takes longer than the timeout, and what the reader acknowledged
     * meanwhile is the progress that counts.  The server closes after the
     * body.  The pace: from the request to the first
     * read's end (its write deadline starts after the request), then from
     * one read's end to the next one's. */
    while (reads < 100000) {
      ssize_t n = recv(c->fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      pace_step(&p, now_ms());
      if (head == 0) {
        char *e = memmem(buf, (size_t)n, "\r\n\r\n", 4);
        assert_non_null(e);
        head = (size_t)(e + 4 - buf);
      }
      got += (size_t)n;
      reads++;
      sleep_ms(20);
    }
    rc_close(c);
    if (got - head != BIG_BODY) {
      pace_judge(&p, fx->opts.write_timeout_ms, "a steady reader was cut off");
      assert_true(fx_wait_active(fx, 0, RC_TIMEOUT_MS));
      continue;
    }
    done = 1;
  }
  if (!done) pace_none_kept();
}

/* Requests back to back for three keep-alive timeouts on one connection:
 * the idle wait starts anew after each response. */
static void test_keepalive_restarts_per_request(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  pace_t p;
  unsigned long long t0;
  int i, round, done = 0;
  fx->opts.keepalive_timeout_ms = 400;
  start(state);
  for (round = 0; round < PACE_ROUNDS && !done; round++) {
    int ok = 1;
    c = pace_connect(&p, fx);
    t0 = now_ms();
    for (i = 0; i < 100000 && ok && now_ms() - t0 < 1200; i++)
      ok = pace_send(&p, c, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n") == 0 &&
           got_response(c, "HTTP/1.1 200 OK", "any");
    if (!ok) {
      pace_judge(&p, fx->opts.keepalive_timeout_ms, "a persistent connection closed while in use");
      round_over(fx, c);
      continue;
    }
    round_over(fx, c);
    done = 1;
  }
  if (!done) pace_none_kept();
}

/* ---- a late loop ------------------------------------------------------------ */

static struct {
  ev_t entered, go;
} late;

/* Holds the loop thread (the only one) until the test lets it go. */
static void h_hold_loop(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  ev_signal(&late.entered);
  ev_wait(&late.go, 1, RC_TIMEOUT_MS);
  hr_response_send(res, 200, "held", 4);
}

/* A keep-alive deadline passes while the next request already waits in
 * the socket: the loop was held up (a slow handler) and, when it runs
 * again, its timers come before its poll.  The request that came in time
 * is read and answered instead of being closed on.  The handler holding
 * the loop answers the connection's first request, so its idle deadline
 * counts from the loop's time before the hold (libuv updates it once per
 * turn), which the hold outlasts by more than the timeout. */
static void test_late_loop_reads_what_came_in_time(void **state) {
  fx_t *fx = *state;
  rc_t *a;
  unsigned long long held;
  ev_init(&late.entered);
  ev_init(&late.go);
  fx->opts.keepalive_timeout_ms = 200;
  fx_route(fx, "GET", "/hold", h_hold_loop, NULL);
  start(state);
  a = fx_connect(fx);
  assert_int_equal(rc_send_str(a, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  assert_true(ev_wait(&late.entered, 1, RC_TIMEOUT_MS));
  held = now_ms();
  /* The next request waits unread while the loop is held... */
  assert_int_equal(rc_send_str(a, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  /* ...until its idle deadline, armed when the first is answered, is
   * past on the loop's clock too. */
  while (now_ms() < held + 200 + 50) sleep_ms(10);
  ev_signal(&late.go);
  expect_response(a, "HTTP/1.1 200 OK", "held", NULL);
  expect_response(a, "HTTP/1.1 200 OK", "any", NULL);
  ev_destroy(&late.entered);
  ev_destroy(&late.go);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

/* Chunked framing out of proportion to its data (more than the header
 * limit besides one byte per byte of data before it) is refused with 413
 * at the byte that makes the excess: the same answer whole and split at
 * any byte (fuzz_differential found the split mattered: the rule was
 * tested after each read, when data or a fault later in the same read had
 * already been parsed). */
static void test_chunk_framing_ratio(void **state) {
  fx_t *fx = *state;
  char req[8192];
  size_t n, at, ext, k;
  fx->opts.max_header_bytes = 2048;
  fx_route(fx, "POST", "/e", ta_echo, NULL);
  fx_start(fx, 1);
  for (ext = 2044; ext <= 2045; ext++) {
    /* "8;" + ext + CRLF of framing before the first data byte: 2048 is
     * allowed, 2049 is not. */
    n = (size_t)snprintf(req, sizeof req,
                         "POST /e HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8;");
    memset(req + n, 'x', ext);
    n += ext;
    n += (size_t)snprintf(req + n, sizeof req - n, "\r\n12345678\r\n0\r\n\r\n");
    const size_t splits[] = {0, 70, 500, 1500, n - 30, n - 10};
    for (k = 0; k < sizeof splits / sizeof splits[0]; k++) {
      rc_t *c = fx_connect(fx);
      at = splits[k];
      if (at == 0)
        assert_int_equal(rc_send(c, req, n), 0);
      else
        assert_int_equal(rc_send_split(c, req, n, at, 20000), 0);
      if (ext == 2044) {
        expect_response(c, "HTTP/1.1 200 OK", "12345678", NULL);
      } else {
        expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, NULL);
        assert_int_equal(rc_drain_until_closed(c, NULL), 1);
      }
      fx_drop(fx, c);
    }
  }
  /* Trailer fields past the same limit, then a byte that is no framing:
   * the excess comes first in the stream, so 413, also when the whole
   * message arrives in one read (llhttp stops at the byte that makes the
   * excess, before it sees the bad one). */
  n = (size_t)snprintf(req, sizeof req,
                       "POST /e HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "1\r\nx\r\n0\r\nT: ");
  memset(req + n, 'v', 2100);
  n += 2100;
  n += (size_t)snprintf(req + n, sizeof req - n, "\r\n\rHEAD\n");
  for (k = 0; k < 2; k++) {
    rc_t *c = fx_connect(fx);
    if (k == 0)
      assert_int_equal(rc_send(c, req, n), 0);
    else
      assert_int_equal(rc_send_split(c, req, n, 1000, 20000), 0);
    expect_response(c, "HTTP/1.1 413 Content Too Large", NULL, NULL);
    assert_int_equal(rc_drain_until_closed(c, NULL), 1);
    fx_drop(fx, c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_request_line_limit),
      T(test_header_bytes_limit),
      T(test_header_count_limit),
      T(test_max_connections),
      T(test_header_timeout),
      T(test_idle_keepalive_timeout),
      T(test_body_timeout),
      T(test_timers_restart_per_request),
      T(test_write_stall),
      T(test_slow_reader_is_not_stalled),
      T(test_keepalive_restarts_per_request),
      T(test_chunk_framing_ratio),
      T(test_late_loop_reads_what_came_in_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
