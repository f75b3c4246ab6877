/* SPDX-License-Identifier: MIT */
/*
 * Trailer fields both ways (RFC 9110 §6.5): a request's trailer section
 * read by a buffered route's handler and by a streaming route's body
 * callback at its last call (none shown before), repeated names through
 * the cursor, the forbidden names dropped (§6.5.1) with the request going
 * on, a section over max_header_fields or max_header_bytes answered 431;
 * a response's trailer section after a streamed body (copied bytes, a file
 * range, no body at all) with its exact bytes over HTTP/1.1 (the last
 * chunk, RFC 9112 §7.1.2) and its HEADERS frame with END_STREAM after the
 * last DATA over HTTP/2 (RFC 9113 §8.1), and each error
 * hr_response_add_trailer answers: HR_EINVAL for names and values,
 * HR_ESTATE before the start and for responses that cannot carry
 * trailers (a declared length, HEAD, 204, HTTP/1.0).
 *
 * Runs over HTTP/1.1 and over HTTP/2 (fixture.h): the chunked request
 * text's trailer lines become the trailers' HEADERS frame (rch2.h).
 *
 * ctest-protocols: h1 h2
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "rch2.h"

/* What the last trailer call of a handler answered, for the responses
 * that cannot say it themselves (the test reads it after the response). */
static atomic_int last_code;

/* ---- request trailers ----------------------------------------------------- */

/* Writes "n=<count>|name=value|...|first=<x-checksum>|second=<x-checksum>"
 * (the second found through the cursor) into out. */
static size_t list_trailers(hr_request_t *req, char *out, size_t cap) {
  size_t i, n = hr_request_trailer_count(req), cursor = 0, len;
  hr_span_t name, value, a = {"-", 1}, b = {"-", 1};
  len = (size_t)snprintf(out, cap, "n=%zu", n);
  for (i = 0; i < n && len < cap; i++) {
    hr_request_trailer_at(req, i, &name, &value);
    len += (size_t)snprintf(out + len, cap - len, "|%.*s=%.*s", (int)name.len, name.ptr,
                            (int)value.len, value.ptr);
  }
  if (hr_request_trailer(req, HR_SPAN_LIT("X-Checksum"), &cursor, &a) == 0)
    hr_request_trailer(req, HR_SPAN_LIT("x-checksum"), &cursor, &b);
  if (len < cap)
    len += (size_t)snprintf(out + len, cap - len, "|first=%.*s|second=%.*s|at=%s|get=%s",
                            (int)a.len, a.ptr, (int)b.len, b.ptr,
                            hr_err_name(hr_request_trailer_at(req, n, NULL, NULL)),
                            hr_err_name(hr_request_trailer(req, HR_SPAN_LIT("host"), NULL, NULL)));
  return len < cap ? len : cap - 1;
}

/* A buffered route: the trailers, and the body's length. */
static void h_buffered(hr_request_t *req, hr_response_t *res, void *udata) {
  char out[1024];
  size_t n;
  (void)udata;
  ta_count();
  n = list_trailers(req, out, sizeof out);
  n += (size_t)snprintf(out + n, sizeof out - n, "|body=%zu", hr_request_body(req).len);
  hr_response_send(res, 200, out, n);
}

typedef struct streamed_s {
  hr_response_t *res;
  size_t len, seen_during; /* trailers counted while the body came */
  char head_count[32];     /* hr_request_trailer_count in the handler */
} streamed_t;

static void on_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  streamed_t *s = udata;
  char out[1024];
  size_t n;
  if (status == 0) {
    s->len += chunk.len;
    s->seen_during += hr_request_trailer_count(req);
    return;
  }
  if (status == 1) {
    n = list_trailers(req, out, sizeof out);
    n += (size_t)snprintf(out + n, sizeof out - n, "|body=%zu|during=%zu|handler=%s", s->len,
                          s->seen_during, s->head_count);
    hr_response_send(s->res, 200, out, n);
  } else {
    hr_response_send(s->res, 500, NULL, 0);
  }
  free(s);
}

static void h_streaming(hr_request_t *req, hr_response_t *res, void *udata) {
  streamed_t *s = calloc(1, sizeof *s);
  (void)udata;
  if (s == NULL) {
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  s->res = res;
  snprintf(s->head_count, sizeof s->head_count, "%zu", hr_request_trailer_count(req));
  if (hr_request_read_body(req, on_body, s) != 0) {
    free(s);
    hr_response_send(res, 500, NULL, 0);
  }
}

/* ---- response trailers ---------------------------------------------------- */

/* A streamed body "abc" then grpc-status and grpc-message, declared in a
 * Trailer field.  The first trailer call's answer goes to last_code. */
static void h_grpc(hr_request_t *req, hr_response_t *res, void *udata) {
  int rc;
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Trailer"), HR_SPAN_LIT("grpc-status, grpc-message"));
  if (hr_response_start(res, 200, HR_LENGTH_UNKNOWN) != 0) return;
  hr_response_write(res, "abc", 3);
  rc = hr_response_add_trailer(res, HR_SPAN_LIT("grpc-status"), HR_SPAN_LIT("0"));
  atomic_store(&last_code, rc);
  hr_response_add_trailer(res, HR_SPAN_LIT("grpc-message"), HR_SPAN_LIT("ok ok"));
  hr_response_end(res);
}

/* "abc", then 5 bytes of the file named by udata (a chunk whose CRLF goes
 * with the last chunk over HTTP/1.1), then a trailer. */
static void h_file(hr_request_t *req, hr_response_t *res, void *udata) {
  int fd = open(udata, O_RDONLY);
  (void)req;
  if (hr_response_start(res, 200, HR_LENGTH_UNKNOWN) != 0) {
    close(fd);
    return;
  }
  hr_response_write(res, "abc", 3);
  if (fd < 0 || hr_response_write_file(res, fd, 2, 5, NULL, NULL) != 0) close(fd);
  atomic_store(&last_code, hr_response_add_trailer(res, HR_SPAN_LIT("x-sum"), HR_SPAN_LIT("9")));
  hr_response_end(res);
}

/* No body at all, only trailers. */
static void h_empty(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  if (hr_response_start(res, 200, HR_LENGTH_UNKNOWN) != 0) return;
  hr_response_add_trailer(res, HR_SPAN_LIT("x-a"), HR_SPAN_LIT("1"));
  hr_response_add_trailer(res, HR_SPAN_LIT("x-a"), HR_SPAN_LIT("2"));
  hr_response_end(res);
}

/* Every refused call, answered in the body: "<code>,<code>,...", then an
 * empty-valued trailer that is taken. */
static void h_bad(hr_request_t *req, hr_response_t *res, void *udata) {
  static const struct {
    hr_span_t name, value;
  } bad[] = {
      {HR_SPAN_INIT(""), HR_SPAN_INIT("v")},
      {HR_SPAN_INIT("bad name"), HR_SPAN_INIT("v")},
      {HR_SPAN_INIT("x:y"), HR_SPAN_INIT("v")},
      {HR_SPAN_INIT("Content-Length"), HR_SPAN_INIT("1")},
      {HR_SPAN_INIT("transfer-encoding"), HR_SPAN_INIT("chunked")},
      {HR_SPAN_INIT("Trailer"), HR_SPAN_INIT("x")},
      {HR_SPAN_INIT("Host"), HR_SPAN_INIT("a")},
      {HR_SPAN_INIT("Content-Type"), HR_SPAN_INIT("text/plain")},
      {HR_SPAN_INIT("If-None-Match"), HR_SPAN_INIT("*")},
      {HR_SPAN_INIT("set-cookie"), HR_SPAN_INIT("a=b")},
      {HR_SPAN_INIT("Date"), HR_SPAN_INIT("x")},
      {HR_SPAN_INIT("x-v"), HR_SPAN_INIT("a\r\nb")},
      {HR_SPAN_INIT("x-v"), HR_SPAN_INIT("a\nb")},
      {HR_SPAN_INIT("x-v"), {"a\0b", 3}},
  };
  char out[1024];
  size_t i, n;
  (void)req;
  (void)udata;
  n = (size_t)snprintf(out, sizeof out, "before=%s|",
                       hr_err_name(hr_response_add_trailer(res, HR_SPAN_LIT("x-early"),
                                                           HR_SPAN_LIT("1"))));
  if (hr_response_start(res, 200, HR_LENGTH_UNKNOWN) != 0) return;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    n += (size_t)snprintf(out + n, sizeof out - n, "%s%s", i ? "," : "",
                          hr_err_name(hr_response_add_trailer(res, bad[i].name, bad[i].value)));
  n += (size_t)snprintf(out + n, sizeof out - n, "|empty=%s",
                        hr_err_name(hr_response_add_trailer(res, HR_SPAN_LIT("x-empty"),
                                                            HR_SPAN_LIT(""))));
  hr_response_write(res, out, n);
  hr_response_end(res);
}

/* A declared length: no trailers. */
static void h_fixed(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  if (hr_response_start(res, 200, 2) != 0) return;
  hr_response_write(res, "ok", 2);
  atomic_store(&last_code, hr_response_add_trailer(res, HR_SPAN_LIT("x-a"), HR_SPAN_LIT("1")));
  hr_response_end(res);
}

/* 204 started with an unknown length: no body, no trailers. */
static void h_204(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  if (hr_response_start(res, 204, HR_LENGTH_UNKNOWN) != 0) return;
  atomic_store(&last_code, hr_response_add_trailer(res, HR_SPAN_LIT("x-a"), HR_SPAN_LIT("1")));
  hr_response_end(res);
}

/* ---- fixture -------------------------------------------------------------- */

static void add_routes(fx_t *fx) {
  hr_route_options_t ro;
  fx_route(fx, "POST", "/buf", h_buffered, NULL);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/stream", h_streaming, NULL, &ro);
  fx_route(fx, "GET", "/grpc", h_grpc, NULL);
  fx_route(fx, "GET", "/empty", h_empty, NULL);
  fx_route(fx, "GET", "/bad", h_bad, NULL);
  fx_route(fx, "GET", "/fixed", h_fixed, NULL);
  fx_route(fx, "GET", "/nocontent", h_204, NULL);
}

static fx_t *start(void **state) {
  fx_t *fx = *state;
  add_routes(fx);
  fx_start(fx, 1);
  return fx;
}

/* The body after the head of an HTTP/1.1 response's raw bytes. */
static const char *raw_body(const rc_response_t *r) {
  const char *p = strstr(r->raw, "\r\n\r\n");
  assert_non_null(p);
  return p + 4;
}

/* Over HTTP/2: the stream record of response r. */
static const h2_stream_t *stream_of(rc_t *c, const rc_response_t *r) {
  const h2_stream_t *st = h2_seen_stream(&rch2_client(c->h2)->io.seen, r->stream_id);
  assert_non_null(st);
  return st;
}

#define CHUNKED_HEAD(path) \
  "POST " path " HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

/* The trailers after a chunked body, with a repeated name and the
 * forbidden ones, reach a buffered route's handler; none reach it without
 * a trailer section. */
static void test_request_trailers_buffered(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, CHUNKED_HEAD("/buf") "5\r\nhello\r\n0\r\n"
                                  "x-checksum: abc \r\n"
                                  "host: evil\r\n"
                                  "if-match: \"x\"\r\n"
                                  "authorization: Basic eDp5\r\n"
                                  "cookie: a=b\r\n"
                                  "content-type: text/plain\r\n"
                                  "accept-encoding: gzip\r\n"
                                  "te: trailers\r\n"
                                  "x-more:1\r\n"
                                  "x-checksum: def\r\n"
                                  "x-empty:\r\n"
                                  "\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=4|x-checksum=abc|x-more=1|x-checksum=def|x-empty="
                  "|first=abc|second=def|at=HR_EINVAL|get=HR_ENOTFOUND|body=5",
                  NULL);
  /* No trailer section: none, with a length or chunked. */
  assert_int_equal(rc_send_str(c, "POST /buf HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=0|first=-|second=-|at=HR_EINVAL|get=HR_ENOTFOUND|body=2", NULL);
  assert_int_equal(rc_send_str(c, CHUNKED_HEAD("/buf") "2\r\nhi\r\n0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=0|first=-|second=-|at=HR_EINVAL|get=HR_ENOTFOUND|body=2", NULL);
}

/* A streaming route: the body callback sees no trailer while the body
 * comes (nor does the handler), all of them at its last call; over
 * HTTP/1.1 the bytes come one at a time, so each name and value is put
 * together from pieces. */
static void test_request_trailers_streamed(void **state) {
  static const char req[] = CHUNKED_HEAD("/stream") "3\r\nabc\r\n4\r\ndefg\r\n0\r\n"
                            "x-checksum: one\r\n"
                            "x-checksum:  two  \r\n"
                            "x-long: 0123456789abcdef0123456789abcdef\r\n"
                            "\r\n";
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_bytewise(c, req, strlen(req), 0), 0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=3|x-checksum=one|x-checksum=two|x-long=0123456789abcdef0123456789abcdef"
                  "|first=one|second=two|at=HR_EINVAL|get=HR_ENOTFOUND|body=7|during=0|handler=0",
                  NULL);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=3|x-checksum=one|x-checksum=two|x-long=0123456789abcdef0123456789abcdef"
                  "|first=one|second=two|at=HR_EINVAL|get=HR_ENOTFOUND|body=7|during=0|handler=0",
                  NULL);
}

/* A trailer section over max_header_fields lines, or over
 * max_header_bytes, is answered 431 in the handler's place: HTTP/1.1 then
 * closes the connection, HTTP/2 answers on the stream and goes on. */
static void test_request_trailers_over_limits(void **state) {
  fx_t *fx = *state;
  char req[8192], body[2000];
  size_t n, i;
  rc_t *c;
  fx->opts.max_header_fields = 10;
  fx->opts.max_header_bytes = 1024;
  start(state);
  ta_reset();

  /* 10 lines pass, 11 do not. */
  for (i = 10; i <= 11; i++) {
    size_t k;
    c = fx_connect(fx);
    n = (size_t)snprintf(req, sizeof req, CHUNKED_HEAD("/buf") "1\r\nx\r\n0\r\n");
    for (k = 0; k < i; k++) n += (size_t)snprintf(req + n, sizeof req - n, "x-t%zu: v\r\n", k);
    n += (size_t)snprintf(req + n, sizeof req - n, "\r\n");
    assert_int_equal(rc_send(c, req, n), 0);
    if (i == 10) {
      rc_response_t r;
      expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
      assert_true(strncmp(r.body, "n=10|x-t0=v|", 12) == 0);
      rc_response_free(&r);
    } else {
      expect_response(c, "HTTP/1.1 431 Request Header Fields Too Large", NULL, NULL);
      if (!fx_h2()) expect_closed(c);
    }
    fx_drop(fx, c);
  }
  assert_int_equal(ta_calls(), 1); /* the handler ran for the 10 lines only */

  /* Bytes: a body long enough that the chunked framing stays in
   * proportion, and one trailer value of 1100 bytes. */
  memset(body, 'b', sizeof body);
  c = fx_connect(fx);
  n = (size_t)snprintf(req, sizeof req, CHUNKED_HEAD("/buf") "7d0\r\n");
  memcpy(req + n, body, sizeof body);
  n += sizeof body;
  n += (size_t)snprintf(req + n, sizeof req - n, "\r\n0\r\nx-big: ");
  memset(req + n, 'v', 1100);
  n += 1100;
  n += (size_t)snprintf(req + n, sizeof req - n, "\r\n\r\n");
  assert_int_equal(rc_send(c, req, n), 0);
  expect_response(c, "HTTP/1.1 431 Request Header Fields Too Large", NULL, NULL);
  if (fx_h2()) {
    /* The connection goes on. */
    assert_int_equal(rc_send_str(c, CHUNKED_HEAD("/buf") "1\r\nx\r\n0\r\nx-a: 1\r\n\r\n"), 0);
    expect_response(c, "HTTP/1.1 200 OK",
                    "n=1|x-a=1|first=-|second=-|at=HR_EINVAL|get=HR_ENOTFOUND|body=1", NULL);
    assert_int_equal(ta_calls(), 2);
  } else {
    expect_closed(c);
  }
  /* The streaming route's callback hears HR_ECLOSED (its 500 is not
   * sent: the server answered). */
  c = fx_connect(fx);
  n = (size_t)snprintf(req, sizeof req, CHUNKED_HEAD("/stream") "1\r\nx\r\n0\r\n");
  for (i = 0; i < 11; i++) n += (size_t)snprintf(req + n, sizeof req - n, "x-t%zu: v\r\n", i);
  n += (size_t)snprintf(req + n, sizeof req - n, "\r\n");
  assert_int_equal(rc_send(c, req, n), 0);
  expect_response(c, "HTTP/1.1 431 Request Header Fields Too Large", NULL, NULL);
}

/* Chunk data not followed by CRLF, then a trailer section over the
 * limit: the framing fault comes first in the bytes, so 400 whether they
 * arrive whole or one at a time (the fuzz_differential input that found
 * the 431 answered for the whole and 400 for the pieces). */
static void test_request_trailers_fault_before_limit(void **state) {
  fx_t *fx = *state;
  char req[1024];
  size_t n, i, k;
  fx_h1_only("chunked framing is HTTP/1.1's");
  fx->opts.max_header_fields = 10;
  start(state);
  n = (size_t)snprintf(req, sizeof req, CHUNKED_HEAD("/buf") "1\r\nx\xfb\n0\r\n");
  for (i = 0; i < 11; i++) n += (size_t)snprintf(req + n, sizeof req - n, "t%zu: v\r\n", i);
  n += (size_t)snprintf(req + n, sizeof req - n, "\r\n");
  for (k = 0; k < 2; k++) {
    rc_t *c = fx_connect(fx);
    if (k == 0)
      assert_int_equal(rc_send(c, req, n), 0);
    else
      assert_int_equal(rc_send_bytewise(c, req, n, 0), 0);
    expect_response(c, "HTTP/1.1 400 Bad Request", NULL, NULL);
    expect_closed(c);
    fx_drop(fx, c);
  }
}

/* HTTP/1.1 framing and connection fields among the trailers are dropped
 * and change nothing: the connection persists.  (A Transfer-Encoding
 * trailer llhttp refuses, 400, as every other fault in the framing.) */
static void test_request_trailers_framing_fields(void **state) {
  fx_t *fx;
  rc_t *c;
  fx_h1_only("Content-Length, Connection and Upgrade are refused in HTTP/2 trailers");
  fx = start(state);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, CHUNKED_HEAD("/buf") "1\r\nx\r\n0\r\n"
                                  "Content-Length: 9\r\n"
                                  "Connection: close\r\n"
                                  "Upgrade: websocket\r\n"
                                  "Expect: 100-continue\r\n"
                                  "Trailer: x-a\r\n"
                                  "X-A: 1\r\n"
                                  "\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=1|X-A=1|first=-|second=-|at=HR_EINVAL|get=HR_ENOTFOUND|body=1", NULL);
  assert_int_equal(rc_send_str(c, CHUNKED_HEAD("/buf") "1\r\ny\r\n0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "n=0|first=-|second=-|at=HR_EINVAL|get=HR_ENOTFOUND|body=1", NULL);
}

/* gRPC's shape: a streamed body, then grpc-status and grpc-message. */
static void test_response_trailers(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  atomic_store(&last_code, 1);
  assert_int_equal(rc_send_str(c, "GET /grpc HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", &r);
  assert_int_equal(atomic_load(&last_code), 0);
  expect_field(&r, "Trailer", "grpc-status, grpc-message", 0);
  assert_int_equal(r.ntrailers, 2);
  assert_string_equal(r.trailers[0].name, "grpc-status");
  assert_string_equal(r.trailers[0].value, "0");
  assert_string_equal(r.trailers[1].name, "grpc-message");
  assert_string_equal(r.trailers[1].value, "ok ok");
  if (fx_h2()) {
    const h2_stream_t *st = stream_of(c, &r);
    /* DATA without END_STREAM, then the trailers' HEADERS with it. */
    assert_int_equal(st->data_frames, 1);
    assert_int_equal(st->data_ended, 0);
    assert_int_equal(st->ended, 1);
    assert_int_equal(st->trailers.n, 2);
    assert_int_equal(st->reset, 0);
    assert_null(h2_fields_get(&st->fields, "transfer-encoding"));
  } else {
    expect_field(&r, "Transfer-Encoding", "chunked", 0);
    assert_string_equal(raw_body(&r), "3\r\nabc\r\n0\r\ngrpc-status: 0\r\ngrpc-message: ok ok\r\n\r\n");
  }
  rc_response_free(&r);
  /* The connection goes on. */
  assert_int_equal(rc_send_str(c, "GET /grpc HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", &r);
  assert_string_equal(rc_trailer(&r, "GRPC-STATUS"), "0");
  rc_response_free(&r);
}

/* Trailers after a file range (over HTTP/1.1 the file chunk's CRLF goes
 * with the last chunk) and after no body at all. */
static void test_response_trailers_file_and_empty(void **state) {
  char path[] = "/tmp/hroute-trailers-XXXXXX";
  int fd = mkstemp(path);
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "0123456789", 10), 10);
  close(fd);
  fx_route(fx, "GET", "/file", h_file, path);
  start(state);
  c = fx_connect(fx);
  atomic_store(&last_code, 1);
  assert_int_equal(rc_send_str(c, "GET /file HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc23456", &r);
  assert_int_equal(atomic_load(&last_code), 0);
  assert_int_equal(r.ntrailers, 1);
  assert_string_equal(rc_trailer(&r, "x-sum"), "9");
  if (fx_h2())
    assert_int_equal(stream_of(c, &r)->data_ended, 0);
  else
    assert_string_equal(raw_body(&r), "3\r\nabc\r\n5\r\n23456\r\n0\r\nx-sum: 9\r\n\r\n");
  rc_response_free(&r);

  assert_int_equal(rc_send_str(c, "GET /empty HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "", &r);
  assert_int_equal(r.ntrailers, 2);
  assert_string_equal(r.trailers[0].value, "1");
  assert_string_equal(r.trailers[1].value, "2");
  if (fx_h2()) {
    /* No DATA frame: an empty one without END_STREAM is left out. */
    const h2_stream_t *st = stream_of(c, &r);
    assert_int_equal(st->data_frames, 0);
    assert_int_equal(st->ended, 1);
  } else {
    assert_string_equal(raw_body(&r), "0\r\nx-a: 1\r\nx-a: 2\r\n\r\n");
  }
  rc_response_free(&r);
  unlink(path);
}

/* Names and values refused, and responses that cannot carry trailers. */
static void test_response_trailer_errors(void **state) {
  fx_t *fx = start(state);
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  assert_int_equal(rc_send_str(c, "GET /bad HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK",
                  "before=HR_ESTATE|HR_EINVAL,HR_EINVAL,HR_EINVAL,HR_EINVAL,HR_EINVAL,"
                  "HR_EINVAL,HR_EINVAL,HR_EINVAL,HR_EINVAL,HR_EINVAL,HR_EINVAL,HR_EINVAL,"
                  "HR_EINVAL,HR_EINVAL|empty=OK",
                  &r);
  assert_int_equal(r.ntrailers, 1);
  assert_string_equal(r.trailers[0].name, "x-empty");
  assert_string_equal(r.trailers[0].value, "");
  rc_response_free(&r);

  atomic_store(&last_code, 1);
  assert_int_equal(rc_send_str(c, "GET /fixed HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "ok", &r);
  assert_int_equal(atomic_load(&last_code), HR_ESTATE);
  assert_int_equal(r.ntrailers, 0);
  expect_field(&r, "Content-Length", "2", 0);
  rc_response_free(&r);

  atomic_store(&last_code, 1);
  assert_int_equal(rc_send_str(c, "HEAD /grpc HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_head_response(c, "HTTP/1.1 200 OK", &r);
  assert_int_equal(atomic_load(&last_code), HR_ESTATE);
  assert_int_equal(r.ntrailers, 0);
  rc_response_free(&r);

  atomic_store(&last_code, 1);
  assert_int_equal(rc_send_str(c, "GET /nocontent HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 204 No Content", "", &r);
  assert_int_equal(atomic_load(&last_code), HR_ESTATE);
  assert_int_equal(r.ntrailers, 0);
  rc_response_free(&r);

  /* The connection is still good. */
  assert_int_equal(rc_send_str(c, "GET /grpc HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", &r);
  assert_int_equal(r.ntrailers, 2);
  rc_response_free(&r);
}

/* HTTP/1.0: the body is delimited by the connection's end, so no trailer
 * section can follow it. */
static void test_response_trailers_http10(void **state) {
  fx_t *fx;
  rc_t *c;
  rc_response_t r;
  fx_h1_only("HTTP/1.0 is HTTP/1.1's");
  fx = start(state);
  c = fx_connect(fx);
  atomic_store(&last_code, 1);
  assert_int_equal(rc_send_str(c, "GET /grpc HTTP/1.0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "abc", &r);
  assert_int_equal(atomic_load(&last_code), HR_ESTATE);
  assert_int_equal(r.until_close, 1);
  assert_int_equal(r.ntrailers, 0);
  rc_response_free(&r);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_request_trailers_buffered),
      T(test_request_trailers_streamed),
      T(test_request_trailers_over_limits),
      T(test_request_trailers_fault_before_limit),
      T(test_request_trailers_framing_fields),
      T(test_response_trailers),
      T(test_response_trailers_file_and_empty),
      T(test_response_trailer_errors),
      T(test_response_trailers_http10),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
