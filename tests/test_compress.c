/* SPDX-License-Identifier: MIT */
/*
 * Response compression (hr_compress_options_t) over a real connection,
 * every answer decoded and compared with what the handler wrote:
 * negotiation (each coding; q-values; the server's order on ties; "*";
 * q=0 refusing; no field; identity; x-gzip); Vary on every answer that
 * could have been compressed and on no other; the ETag made weak; HEAD
 * saying what GET says (the same coding and length, no body); what rules
 * compression out: a small body, a type not listed, a Content-Encoding
 * already there, Cache-Control: no-transform, Range, 204, a route with
 * no_compress, a body that does not get smaller (sent as it is); a
 * borrowed body; streamed bodies of unknown and of declared length, each
 * coding, chunked; the server's own answers (an error body).
 *
 * ctest-protocols: h1 h2
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode.h"
#include "fixture.h"
#include "sync.h"

static char text[4000], noise[4000];

static void fill(void) {
  size_t i;
  unsigned x = 12345;
  for (i = 0; i < sizeof text; i++) text[i] = "hroute compresses text, "[i % 24];
  for (i = 0; i < sizeof noise; i++) {
    x = x * 1103515245u + 12345u;
    noise[i] = (char)(x >> 16);
  }
}

static void h_text(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain; charset=utf-8"));
  hr_response_add_field(res, HR_SPAN_LIT("ETag"), HR_SPAN_LIT("\"v7\""));
  if (udata != NULL) hr_response_add_field(res, HR_SPAN_LIT("Cache-Control"), hr_span_cstr(udata));
  hr_response_send(res, 200, text, sizeof text);
}

static void h_small(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain"));
  hr_response_send(res, 200, text, 100);
}

static void h_png(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("image/png"));
  hr_response_send(res, 200, text, sizeof text);
}

static void h_coded(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/json"));
  hr_response_add_field(res, HR_SPAN_LIT("Content-Encoding"), HR_SPAN_LIT("gzip"));
  hr_response_send(res, 200, text, sizeof text);
}

static void h_noise(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain"));
  hr_response_send(res, 200, noise, sizeof noise);
}

static void h_borrowed(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("image/svg+xml"));
  hr_response_send_borrowed(res, 200, text, sizeof text, NULL, NULL);
}

/* Three writes, of unknown length (udata NULL) or declared. */
static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/vnd.x+json"));
  hr_response_start(res, 200, udata != NULL ? (int64_t)sizeof text : HR_LENGTH_UNKNOWN);
  hr_response_write(res, text, 1000);
  hr_response_write(res, text + 1000, 2000);
  hr_response_write(res, text + 3000, 1000);
  hr_response_end(res);
}

/* A route whose constant fields carry the type, a strong ETag and a Vary
 * of its own. */
static void h_plain(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, text, sizeof text);
}

static int trailer_rc;

static void h_declared_trailer(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain"));
  hr_response_start(res, 200, (int64_t)sizeof text);
  hr_response_write(res, text, sizeof text);
  trailer_rc = hr_response_add_trailer(res, HR_SPAN_LIT("X-T"), HR_SPAN_LIT("1"));
  hr_response_end(res);
}

static void h_events(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/event-stream"));
  hr_response_send(res, 200, text, sizeof text);
}

static void h_empty(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain"));
  hr_response_send(res, 204, NULL, 0);
}

static void routes(fx_t *fx) {
  hr_route_options_t o;
  static hr_compress_options_t co;
  fill();
  hr_compress_options_init(&co);
  co.gzip_level = 1;
  fx->opts.compress = &co;
  fx_route(fx, "GET", "/text", h_text, NULL);
  fx_route(fx, "GET", "/no-transform", h_text, "public, no-transform");
  fx_route(fx, "GET", "/small", h_small, NULL);
  fx_route(fx, "GET", "/png", h_png, NULL);
  fx_route(fx, "GET", "/coded", h_coded, NULL);
  fx_route(fx, "GET", "/noise", h_noise, NULL);
  fx_route(fx, "GET", "/borrowed", h_borrowed, NULL);
  fx_route(fx, "GET", "/stream", h_stream, NULL);
  fx_route(fx, "GET", "/stream-length", h_stream, (void *)1);
  fx_route(fx, "GET", "/empty", h_empty, NULL);
  hr_route_options_init(&o);
  o.no_compress = 1;
  fx_route_opts(fx, "GET", "/never", h_text, NULL, &o);
  {
    static const hr_field_t constant[] = {
        {HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/html")},
        {HR_SPAN_LIT("ETag"), HR_SPAN_LIT("\"r1\"")},
        {HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Cookie")},
    };
    hr_route_options_init(&o);
    o.fields = constant;
    o.nfields = 3;
    fx_route_opts(fx, "GET", "/constant", h_plain, NULL, &o);
  }
  fx_route(fx, "GET", "/declared-trailer", h_declared_trailer, NULL);
  fx_route(fx, "GET", "/events", h_events, NULL);
}

/* Every Vary line's value, ", " between them, in order. */
static void vary_lines(const rc_response_t *r, char *out, size_t cap) {
  size_t i, n = 0;
  out[0] = '\0';
  for (i = 0; i < r->nheaders; i++)
    if (strcasecmp(r->headers[i].name, "Vary") == 0)
      n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ", " : "", r->headers[i].value);
}

/* GET `path` with `accept` (NULL: no Accept-Encoding) and `extra` fields. */
static void get(rc_t *c, const char *method, const char *path, const char *accept,
                const char *extra, rc_response_t *r) {
  char req[512];
  snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: a\r\n%s%s%s%s\r\n", method, path,
           accept ? "Accept-Encoding: " : "", accept ? accept : "", accept ? "\r\n" : "",
           extra ? extra : "");
  assert_int_equal(rc_send_str(c, req), 0);
  assert_int_equal(rc_read_response(c, r, strcmp(method, "HEAD") == 0), RC_OK);
}

/* The body decoded with the response's Content-Encoding equals want. */
static void expect_decoded(const rc_response_t *r, const char *coding, const void *want,
                           size_t len) {
  const char *ce = rc_header(r, "Content-Encoding");
  char *plain;
  size_t n;
  if (coding == NULL) {
    assert_null(ce);
    assert_int_equal(r->body_len, len);
    assert_memory_equal(r->body, want, len);
    return;
  }
  assert_non_null(ce);
  assert_string_equal(ce, coding);
  if (!dec_available(coding)) return;
  plain = dec_whole(coding, r->body, r->body_len, &n);
  assert_non_null(plain);
  assert_int_equal(n, len);
  assert_memory_equal(plain, want, len);
  assert_true(r->body_len < len / 4); /* it is compressed text */
  free(plain);
}

static void test_negotiation(void **state) {
  static const struct {
    const char *accept, *coding;
  } cases[] = {
      {"gzip", "gzip"},
      {"x-gzip", "gzip"},
      {"br", "br"},
      {"zstd", "zstd"},
      {"gzip, br, zstd", "zstd"},         /* equal q: the server's order */
      {"gzip;q=0.5, br;q=0.9", "br"},     /* the highest q */
      {"gzip;q=1.0, br;q=0.999", "gzip"},
      {"*", "zstd"},
      {"*;q=0.1, gzip", "gzip"},
      {"*;q=0, br", "br"},
      {"gzip;q=0", NULL},                 /* refused */
      {"identity", NULL},
      {"", NULL},
      {"compress, deflate", NULL},        /* not offered */
      {"GZIP;Q=0.5", "gzip"},
      {"gzip;q=2", NULL},                 /* a weight out of range: skipped */
  };
  fx_t *fx = *state;
  rc_response_t r;
  size_t i;
  rc_t *c;
  routes(fx);
  fx_start(fx, 1);
  c = fx_connect(fx);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    get(c, "GET", "/text", cases[i].accept, NULL, &r);
    if ((cases[i].coding == NULL) != (rc_header(&r, "Content-Encoding") == NULL))
      fail_msg("Accept-Encoding: %s gave %s", cases[i].accept,
               rc_header(&r, "Content-Encoding") ? rc_header(&r, "Content-Encoding") : "none");
    expect_decoded(&r, cases[i].coding, text, sizeof text);
    expect_field(&r, "Vary", "Accept-Encoding", 0);
    /* Weak when coded (RFC 9110 §8.8.1), as it was otherwise. */
    expect_field(&r, "ETag", cases[i].coding ? "W/\"v7\"" : "\"v7\"", 0);
    rc_response_free(&r);
  }
  /* No Accept-Encoding: identity, and still Vary. */
  get(c, "GET", "/text", NULL, NULL, &r);
  expect_decoded(&r, NULL, text, sizeof text);
  expect_field(&r, "Vary", "Accept-Encoding", 0);
  rc_response_free(&r);
  fx_drop(fx, c);
}

static void test_what_rules_it_out(void **state) {
  fx_t *fx = *state;
  rc_response_t r, g;
  rc_t *c;
  routes(fx);
  fx_start(fx, 1);
  c = fx_connect(fx);
  /* Not compressed, and nothing to vary: */
  get(c, "GET", "/small", "gzip", NULL, &r); /* under min_length */
  expect_decoded(&r, NULL, text, 100);
  expect_no_field(&r, "Vary");
  rc_response_free(&r);
  get(c, "GET", "/png", "gzip", NULL, &r); /* a type not listed */
  expect_decoded(&r, NULL, text, sizeof text);
  expect_no_field(&r, "Vary");
  rc_response_free(&r);
  get(c, "GET", "/coded", "br", NULL, &r); /* coded already: untouched */
  expect_field(&r, "Content-Encoding", "gzip", 0);
  assert_int_equal(r.body_len, sizeof text);
  expect_no_field(&r, "Vary");
  rc_response_free(&r);
  get(c, "GET", "/no-transform", "gzip", NULL, &r);
  expect_decoded(&r, NULL, text, sizeof text);
  rc_response_free(&r);
  get(c, "GET", "/text", "gzip", "Range: bytes=0-9\r\n", &r);
  expect_decoded(&r, NULL, text, sizeof text);
  rc_response_free(&r);
  get(c, "GET", "/never", "gzip", NULL, &r);
  expect_decoded(&r, NULL, text, sizeof text);
  expect_no_field(&r, "Vary");
  rc_response_free(&r);
  get(c, "GET", "/empty", "gzip", NULL, &r);
  assert_int_equal(r.status, 204);
  expect_no_field(&r, "Content-Encoding");
  rc_response_free(&r);
  /* A body that does not get smaller goes as it is, and varies. */
  get(c, "GET", "/noise", "gzip", NULL, &r);
  expect_decoded(&r, NULL, noise, sizeof noise);
  expect_field(&r, "Vary", "Accept-Encoding", 0);
  rc_response_free(&r);
  /* A route's constant fields: its Vary stays beside Accept-Encoding,
   * its strong ETag becomes weak when coded. */
  {
    char vary[128];
    get(c, "GET", "/constant", "gzip", NULL, &r);
    expect_decoded(&r, "gzip", text, sizeof text);
    vary_lines(&r, vary, sizeof vary);
    assert_string_equal(vary, "Cookie, Accept-Encoding");
    expect_field(&r, "ETag", "W/\"r1\"", 0);
    rc_response_free(&r);
    get(c, "GET", "/constant", NULL, NULL, &r);
    vary_lines(&r, vary, sizeof vary);
    assert_string_equal(vary, "Cookie, Accept-Encoding");
    expect_field(&r, "ETag", "\"r1\"", 0);
    rc_response_free(&r);
  }
  /* Event streams are left out of the default types. */
  get(c, "GET", "/events", "gzip", NULL, &r);
  expect_decoded(&r, NULL, text, sizeof text);
  expect_no_field(&r, "Vary");
  rc_response_free(&r);
  /* A declared length takes no trailer, compressed or not. */
  trailer_rc = 0;
  get(c, "GET", "/declared-trailer", "gzip", NULL, &r);
  expect_decoded(&r, "gzip", text, sizeof text);
  assert_int_equal(trailer_rc, HR_ESTATE);
  rc_response_free(&r);
  /* HEAD says what GET says. */
  get(c, "GET", "/text", "br", NULL, &g);
  get(c, "HEAD", "/text", "br", NULL, &r);
  expect_field(&r, "Content-Encoding", "br", 0);
  expect_field(&r, "Content-Length", rc_header(&g, "Content-Length"), 0);
  assert_int_equal(r.body_len, 0);
  rc_response_free(&r);
  rc_response_free(&g);
  fx_drop(fx, c);
}

/* The outcome's body bytes of each exchange, in order (after-middleware,
 * the loop's thread): the compressed bytes a client received. */
static struct {
  pthread_mutex_t mu;
  ev_t ev;
  uint64_t bytes[16];
  unsigned long n, seen;
} sent = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void mw_sent(hr_request_t *req, int status, void *udata) {
  hr_outcome_t o;
  (void)status;
  (void)udata;
  pthread_mutex_lock(&sent.mu);
  if (hr_request_outcome(req, &o) == 0 && sent.n < 16) sent.bytes[sent.n] = o.bytes;
  sent.n++;
  pthread_mutex_unlock(&sent.mu);
  ev_signal(&sent.ev);
}

/* The outcome of the next exchange says `len` body bytes. */
static void expect_sent(size_t len) {
  uint64_t got;
  assert_true(ev_wait(&sent.ev, ++sent.seen, RC_TIMEOUT_MS));
  pthread_mutex_lock(&sent.mu);
  got = sent.bytes[sent.seen - 1];
  pthread_mutex_unlock(&sent.mu);
  assert_int_equal(got, len);
}

static void test_borrowed_streams_and_answers(void **state) {
  static const char *const codings[] = {"gzip", "br", "zstd"};
  fx_t *fx = *state;
  rc_response_t r;
  size_t i;
  rc_t *c;
  routes(fx);
  ev_init(&sent.ev);
  sent.n = sent.seen = 0;
  assert_int_equal(hr_router_use(fx->router, NULL, NULL, NULL, mw_sent, NULL), 0);
  fx_start(fx, 1);
  c = fx_connect(fx);
  get(c, "GET", "/borrowed", "gzip", NULL, &r);
  expect_decoded(&r, "gzip", text, sizeof text);
  expect_sent(r.body_len);
  rc_response_free(&r);
  for (i = 0; i < 3; i++) {
    get(c, "GET", "/stream", codings[i], NULL, &r);
    expect_decoded(&r, codings[i], text, sizeof text);
    expect_field(&r, "Vary", "Accept-Encoding", 0);
    if (!fx_h2()) expect_field(&r, "Transfer-Encoding", "chunked", 0);
    /* The access log's bytes: the coded ones, as for a whole body. */
    expect_sent(r.body_len);
    rc_response_free(&r);
    /* A declared length bounds what the handler writes; the coded
     * stream goes of unknown length. */
    get(c, "GET", "/stream-length", codings[i], NULL, &r);
    expect_decoded(&r, codings[i], text, sizeof text);
    expect_no_field(&r, "Content-Length");
    expect_sent(r.body_len);
    rc_response_free(&r);
  }
  get(c, "GET", "/stream", NULL, NULL, &r);
  expect_decoded(&r, NULL, text, sizeof text);
  expect_sent(sizeof text);
  rc_response_free(&r);
  fx_drop(fx, c);
  ev_destroy(&sent.ev);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_negotiation),
      T(test_what_rules_it_out),
      T(test_borrowed_streams_and_answers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
