/* SPDX-License-Identifier: MIT */
/*
 * Malformed requests and request-smuggling vectors (RFC 9112 §2.2, §3, §5,
 * §6.1, §6.3, §7.1; RFC 9110 §7.2): each gets exactly 400 Bad Request,
 * Connection: close, the connection closed, and no handler runs.  Table
 * driven; the server's bad_requests counter must count each one.  A well
 * framed request whose path the router refuses gets its 400 too, but on
 * the keep-alive path: the next request on the connection is answered.
 *
 * ctest-labels: tsan
 */
#include <stdio.h>
#include <string.h>

#include "fixture.h"

typedef struct bad_case_s {
  const char *name;
  const char *bytes;
  size_t len; /* 0: strlen(bytes) */
} bad_case_t;

#define L(s) s, sizeof(s) - 1

static const bad_case_t cases[] = {
    /* the four smuggling inputs of the issue */
    {"bare CR ends a field line",
     L("GET / HTTP/1.1\r\nHost: a\r\n\rZGET /evil: x\r\nHost: a\r\n\r\n")},
    {"obs-fold", L("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n")},
    {"bare CR in chunk size",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5\rX12345\r\n0\r\n\r\n")},
    {"empty field name", L("GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n")},
    /* Host rules (RFC 9112 §3.2) */
    {"HTTP/1.1 without Host", L("GET / HTTP/1.1\r\nX: y\r\n\r\n")},
    {"two Host fields", L("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")},
    {"two identical Host fields", L("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n")},
    {"invalid Host value", L("GET / HTTP/1.1\r\nHost: a b\r\n\r\n")},
    /* framing (RFC 9112 §6.3) */
    {"Content-Length and Transfer-Encoding",
     L("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")},
    {"Transfer-Encoding then Content-Length",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
       "Content-Length: 5\r\n\r\n0\r\n\r\n")},
    {"two different Content-Lengths",
     L("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
       "Content-Length: 2\r\n\r\nab")},
    {"Content-Length list with different values",
     L("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 2\r\n\r\nab")},
    {"negative Content-Length",
     L("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n")},
    {"overflowing Content-Length",
     L("POST / HTTP/1.1\r\nHost: a\r\n"
       "Content-Length: 99999999999999999999999\r\n\r\n")},
    {"Content-Length with a sign",
     L("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello")},
    {"Content-Length not a number",
     L("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5x\r\n\r\nhello")},
    {"chunked not the final coding",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"
       "0\r\n\r\n")},
    {"invalid chunk size",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "zz\r\nhello\r\n0\r\n\r\n")},
    {"overflowing chunk size",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "10000000000000000\r\nhello\r\n0\r\n\r\n")},
    {"obs-fold in the trailer section",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "0\r\nX: a\r\n b\r\n\r\n")},
    {"chunk data longer than its size",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "2\r\nhello\r\n0\r\n\r\n")},
    /* request line (RFC 9112 §3) */
    {"invalid method character", L("G(T / HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"request line without version", L("GET /\r\nHost: a\r\n\r\n")},
    {"garbage version", L("GET / HTXP/1.1\r\nHost: a\r\n\r\n")},
    {"control character in target", L("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"space in target", L("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"fragment in target", L("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"DEL byte in target", L("GET /caf\x7f HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"non-ASCII byte in the Host", L("GET /a HTTP/1.1\r\nHost: caf\xc3\xa9\r\n\r\n")},
    /* field lines (RFC 9112 §5) */
    {"space before colon", L("GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n")},
    {"NUL in field value", L("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n")},
    {"field line without colon", L("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n")},
    {"whitespace before the first field",
     L("GET / HTTP/1.1\r\n Host: a\r\n\r\n")},
    {"invalid character in field name",
     L("GET / HTTP/1.1\r\nHost: a\r\nX(A): b\r\n\r\n")},
    /* bare LF line endings: rejected by hroute's choice (§2.2 allows it) */
    {"bare LF everywhere", L("GET / HTTP/1.1\nHost: a\n\n")},
    {"bare LF after request line", L("GET / HTTP/1.1\nHost: a\r\n\r\n")},
    {"bare LF in one field line", L("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n")},
    {"bare LF ends the header section", L("GET / HTTP/1.1\r\nHost: a\r\n\n")},
    {"bare LF in chunk size",
     L("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
       "5\nhello\r\n0\r\n\r\n")},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* Well framed, but a path the router refuses (router.h, rule 1): 400 on
 * the keep-alive path, as a 404 (issue 24). */
static const bad_case_t path_cases[] = {
    /* path bytes that are no pchar (the router's check) */
    {"backslash in path", L("GET /a\\b HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"brace in path", L("GET /a{b} HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"bracket in absolute-form path",
     L("GET http://a/x[1] HTTP/1.1\r\nHost: a\r\n\r\n")},
    /* a parameter value that would climb out of its directory */
    {"dot-dot segment in a decoded value",
     L("GET /files/..%2F..%2Fetc%2Fpasswd HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"escaped dot segment", L("GET /..%2fsecret.txt HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"malformed escape", L("GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n")},
    {"escaped NUL", L("GET /a%00 HTTP/1.1\r\nHost: a\r\n\r\n")},
    /* ...also with a body, which is read (and dropped) first */
    {"refused path with a body",
     L("POST /..%2fsecret.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")},
};
#define N_PATH_CASES (sizeof path_cases / sizeof path_cases[0])

static fx_t *start(void **state) {
  fx_t *fx = *state;
  /* Any method, any path: a request that gets through reaches a handler. */
  fx_route(fx, "*", "/", ta_text, "root");
  fx_route(fx, "*", "/*rest", ta_text, "rest");
  fx_start(fx, 1);
  return fx;
}

static void expect_400_closed(fx_t *fx, const bad_case_t *bc, int split) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  int rc;
  if (split)
    rc_send_bytewise(c, bc->bytes, bc->len, 0); /* may fail once closed */
  else
    assert_int_equal(rc_send(c, bc->bytes, bc->len), 0);
  rc = rc_read_response(c, &r, 0);
  if (rc != RC_OK || strcmp(r.status_line, "HTTP/1.1 400 Bad Request") != 0) {
    char got[128];
    snprintf(got, sizeof got, "%s", r.status_line ? r.status_line : "");
    rc_response_free(&r);
    fail_msg("%s%s: rc %d, status line \"%s\"", bc->name,
             split ? " (byte by byte)" : "", rc, got);
  }
  expect_field(&r, "Connection", "close", 1);
  rc_response_free(&r);
  if (rc_drain_until_closed(c, NULL) != 1)
    fail_msg("%s: connection not closed", bc->name);
  fx_drop(fx, c);
  if (ta_calls() != 0) fail_msg("%s: a handler ran", bc->name);
}

static void test_malformed_table(void **state) {
  fx_t *fx = start(state);
  size_t i;
  for (i = 0; i < N_CASES; i++) expect_400_closed(fx, &cases[i], 0);
  expect_stat(fx, FX_BAD_REQUESTS, N_CASES);
}

/* A path the router refuses: 400 without Connection: close, no handler,
 * and the next request on the connection is served. */
static void test_refused_path_keeps_connection(void **state) {
  fx_t *fx = start(state);
  size_t i;
  for (i = 0; i < N_PATH_CASES; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    assert_int_equal(rc_send(c, path_cases[i].bytes, path_cases[i].len), 0);
    assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    if (rc_read_response(c, &r, 0) != RC_OK ||
        strcmp(r.status_line, "HTTP/1.1 400 Bad Request") != 0)
      fail_msg("%s: status line \"%s\"", path_cases[i].name,
               r.status_line ? r.status_line : "");
    assert_string_equal(r.body, "Bad Request\n");
    expect_no_field(&r, "Connection");
    rc_response_free(&r);
    expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
    fx_drop(fx, c);
  }
  assert_int_equal(ta_calls(), N_PATH_CASES); /* the GET / after each */
  expect_stat(fx, FX_BAD_REQUESTS, N_PATH_CASES);
}

/* The same inputs one byte per read: detection must not depend on where
 * the reads split. */
static void test_malformed_table_bytewise(void **state) {
  fx_t *fx = start(state);
  size_t i;
  for (i = 0; i < N_CASES; i++) expect_400_closed(fx, &cases[i], 1);
}

/* A valid request before a bad one in the same segment is answered; the bad
 * one gets 400 and nothing after it runs. */
static void test_valid_then_malformed(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
                                  "GET /x HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n"
                                  "GET /y HTTP/1.1\r\nHost: a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  expect_response(c, "HTTP/1.1 400 Bad Request", NULL, NULL);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  assert_int_equal(ta_calls(), 1);
}

/* Controls: near misses that are valid and must be served. */
static void test_valid_near_misses(void **state) {
  static const struct {
    const char *req;
    const char *body;
  } ok[] = {
      {"GET / HTTP/1.0\r\n\r\n", "root"},                 /* 1.0: no Host */
      {"GET / HTTP/1.1\r\nHost: a\r\nX:\r\n\r\n", "root"}, /* empty value */
      {"GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n", "root"}, /* HTAB */
      {"GET / HTTP/1.1\r\nhOsT: a\r\n\r\n", "root"},
      {"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 0003\r\n\r\nabc", "rest"},
      {"POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n"
       "0\r\n\r\n", "rest"},
  };
  fx_t *fx = start(state);
  size_t i;
  for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    assert_int_equal(rc_send_str(c, ok[i].req), 0);
    if (rc_read_response(c, &r, 0) != RC_OK ||
        strcmp(r.status_line, "HTTP/1.1 200 OK") != 0)
      fail_msg("case %zu: got \"%s\"", i, r.status_line ? r.status_line : "");
    assert_string_equal(r.body, ok[i].body);
    rc_response_free(&r);
    fx_drop(fx, c);
  }
  assert_int_equal(ta_calls(), sizeof ok / sizeof ok[0]);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_malformed_table),
      T(test_malformed_table_bytewise),
      T(test_refused_path_keeps_connection),
      T(test_valid_then_malformed),
      T(test_valid_near_misses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
