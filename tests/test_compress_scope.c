/* SPDX-License-Identifier: MIT */
/*
 * Where response compression settings come from: a route's own
 * (hr_route_options_t.compress), its host table's (hr_router_set_compress
 * for a host, or for the default table and every host without its own),
 * the server's (hr_server_options_t.compress), in that order, with
 * no_compress above them all and an order starting with
 * HR_CODING_IDENTITY turning it off at that level; removing settings
 * falls back a level; settings changed while requests are served (threads
 * under TSan) never mix and never free what a request still uses (ASan).
 * Through the in-process test client (hroute/testing.h): each answer's
 * Content-Encoding, Vary and decoded body checked exactly.
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/rcu.h"

#include "countalloc.h"
#include "decode.h"
#include "fixture.h"
#include "held.h"
#include "hroute/testing.h"

static char text[3000];

static void fill(void) {
  size_t i;
  for (i = 0; i + 1 < sizeof text; i++) text[i] = "settings by scope "[i % 18];
  text[sizeof text - 1] = '\0'; /* a string too, for held_complete */
}

static void h_text(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain"));
  hr_response_send(res, 200, text, sizeof text - 1);
}

static void h_json(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("application/json"));
  hr_response_send(res, 200, text, sizeof text - 1);
}

/* Settings offering only `coding` (identity: none); JSON left out of the
 * types when `text_only`. */
static hr_compress_options_t only(int coding, int text_only) {
  static const char *const plain[] = {"text/plain"};
  hr_compress_options_t o;
  hr_compress_options_init(&o);
  o.order[0] = (uint8_t)coding;
  o.order[1] = o.order[2] = HR_CODING_IDENTITY;
  o.min_length = 100;
  if (text_only) {
    o.media_types = plain;
    o.nmedia_types = 1;
  }
  return o;
}

/* GET `target` from `host` accepting everything; the coding it came in
 * ("" for none), its body checked against text. */
static const char *coding_of(hr_test_t *t, const char *host, const char *target) {
  static char got[16];
  static const hr_field_t ae[] = {{HR_SPAN_LIT("Accept-Encoding"), HR_SPAN_LIT("gzip, br, zstd")}};
  hr_test_request_t req = {.target = target, .host = host, .fields = ae, .nfields = 1};
  hr_test_response_t res;
  const char *ce;
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  assert_int_equal(res.status, 200);
  ce = hr_test_field(&res, "Content-Encoding");
  snprintf(got, sizeof got, "%s", ce != NULL ? ce : "");
  if (ce == NULL) {
    assert_int_equal(res.body_len, sizeof text - 1);
    assert_memory_equal(res.body, text, sizeof text - 1);
  } else {
    size_t n = 0;
    char *d = dec_whole(ce, res.body, res.body_len, &n);
    if (d != NULL) { /* a decoder built in: the body is exactly the text */
      assert_int_equal(n, sizeof text - 1);
      assert_memory_equal(d, text, sizeof text - 1);
      free(d);
    }
  }
  hr_test_response_free(&res);
  return got;
}

static int have(int coding) {
  static const char *const names[] = {"", "gzip", "br", "zstd"};
  return dec_available(names[coding]);
}

static void test_levels(void **state) {
  hr_router_t *r;
  hr_test_t *t;
  hr_server_options_t so;
  hr_compress_options_t server = only(HR_CODING_GZIP, 0), route = only(HR_CODING_ZSTD, 0),
                        host = only(HR_CODING_BR, 0), def = only(HR_CODING_ZSTD, 1),
                        off = only(HR_CODING_IDENTITY, 0);
  hr_route_options_t ro;
  (void)state;
  if (!have(HR_CODING_GZIP) || !have(HR_CODING_BR) || !have(HR_CODING_ZSTD)) skip();
  fill();
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/text", h_text, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/json", h_json, NULL, NULL), 0);
  hr_route_options_init(&ro);
  ro.compress = &route;
  assert_int_equal(hr_router_add(r, "GET", "/own", h_text, NULL, &ro), 0);
  ro.compress = &off;
  assert_int_equal(hr_router_add(r, "GET", "/off", h_text, NULL, &ro), 0);
  ro.compress = &route;
  ro.no_compress = 1;
  assert_int_equal(hr_router_add(r, "GET", "/never", h_text, NULL, &ro), 0);
  {
    hr_group_t *g;
    assert_int_equal(hr_router_group(r, "api.example", "", &g), 0);
    assert_int_equal(hr_group_add(g, "GET", "/text", h_text, NULL, NULL), 0);
    assert_int_equal(hr_group_add(g, "GET", "/json", h_json, NULL, NULL), 0);
  }
  hr_server_options_init(&so);
  so.compress = &server;
  assert_int_equal(hr_test_new(&t, r, &so), 0);

  /* The server's, then a route's own, off, and no_compress above all. */
  assert_string_equal(coding_of(t, NULL, "/text"), "gzip");
  assert_string_equal(coding_of(t, "api.example", "/text"), "gzip");
  assert_string_equal(coding_of(t, NULL, "/own"), "zstd");
  assert_string_equal(coding_of(t, NULL, "/off"), "");
  assert_string_equal(coding_of(t, NULL, "/never"), "");

  /* The default table's settings: every host without its own too. */
  assert_int_equal(hr_router_set_compress(r, NULL, &def), 0);
  assert_string_equal(coding_of(t, NULL, "/text"), "zstd");
  assert_string_equal(coding_of(t, NULL, "/json"), ""); /* not in its types */
  assert_string_equal(coding_of(t, "api.example", "/text"), "zstd");
  assert_string_equal(coding_of(t, NULL, "/own"), "zstd"); /* the route's */

  /* A host's own, then removed: back to the default table's, then the
   * server's. */
  assert_int_equal(hr_router_set_compress(r, "API.example", &host), 0);
  assert_string_equal(coding_of(t, "api.example", "/text"), "br");
  assert_string_equal(coding_of(t, "api.example", "/json"), "br");
  assert_string_equal(coding_of(t, NULL, "/text"), "zstd");
  assert_int_equal(hr_router_set_compress(r, "api.example", NULL), 0);
  assert_string_equal(coding_of(t, "api.example", "/text"), "zstd");
  assert_int_equal(hr_router_set_compress(r, NULL, NULL), 0);
  assert_string_equal(coding_of(t, "api.example", "/text"), "gzip");
  assert_string_equal(coding_of(t, NULL, "/json"), "gzip");

  /* Off for one host. */
  assert_int_equal(hr_router_set_compress(r, "api.example", &off), 0);
  assert_string_equal(coding_of(t, "api.example", "/text"), "");
  assert_string_equal(coding_of(t, NULL, "/text"), "gzip");
  /* Removing what is not there changes nothing. */
  assert_int_equal(hr_router_set_compress(r, "other.example", NULL), 0);
  assert_string_equal(coding_of(t, NULL, "/text"), "gzip");

  hr_test_free(t);
  hr_router_free(r);
}

/* No settings at the server: the router's alone compress. */
static void test_router_without_server(void **state) {
  hr_router_t *r;
  hr_test_t *t;
  hr_compress_options_t def = only(HR_CODING_GZIP, 0);
  (void)state;
  if (!have(HR_CODING_GZIP)) skip();
  fill();
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/text", h_text, NULL, NULL), 0);
  assert_int_equal(hr_test_new(&t, r, NULL), 0);
  assert_string_equal(coding_of(t, NULL, "/text"), "");
  assert_int_equal(hr_router_set_compress(r, NULL, &def), 0);
  assert_string_equal(coding_of(t, NULL, "/text"), "gzip");
  hr_test_free(t);
  hr_router_free(r);
}

/* hr_response_coding, hr_compress and hr_response_send_coded from a
 * handler: X-Case picks what it tries; X-Rc says what the call returned
 * when it refused (the handler then answers 400 itself). */
static void h_coded(hr_request_t *req, hr_response_t *res, void *udata) {
  static unsigned char out[8192];
  hr_coding_t coding;
  hr_span_t v;
  char rc_text[16];
  int level, could, rc, k;
  size_t n;
  (void)udata;
  assert_int_equal(hr_request_field(req, HR_SPAN_LIT("X-Case"), NULL, &v), 0);
  k = v.ptr[0] - '0';
  hr_response_add_field(res, HR_SPAN_LIT("ETag"), HR_SPAN_LIT("\"c1\""));
  could = hr_response_coding(res, 200, sizeof text - 1, "text/plain", &coding, &level);
  assert_int_equal(could, 1);
  n = hr_compress(HR_CODING_GZIP, 6, text, sizeof text - 1, out, sizeof out);
  assert_true(n > 0);
  if (k == 1) hr_response_add_field(res, HR_SPAN_LIT("Content-Encoding"), HR_SPAN_LIT("gzip"));
  rc = k == 2   ? hr_response_send_coded(res, 200, HR_CODING_IDENTITY, out, n, NULL, NULL)
       : k == 3 ? hr_response_send_coded(res, 200, HR_CODING_GZIP, out, 0, NULL, NULL)
       : k == 4 ? hr_response_send_coded(res, 206, HR_CODING_GZIP, out, n, NULL, NULL)
       : k == 5 ? hr_response_send_coded(res, 204, HR_CODING_GZIP, out, n, NULL, NULL)
                : hr_response_send_coded(res, 200, HR_CODING_GZIP, out, n, NULL, NULL);
  if (rc == 0) return;
  snprintf(rc_text, sizeof rc_text, "%s", hr_err_name(rc));
  hr_response_add_field(res, HR_SPAN_LIT("X-Rc"), hr_span_cstr(rc_text));
  hr_response_send(res, 400, NULL, 0);
}

static void coded_case(hr_test_t *t, int k, const char *accept, const char *want_rc) {
  char kc[2] = {(char)('0' + k), 0};
  hr_field_t f[2] = {{HR_SPAN_LIT("X-Case"), {kc, 1}},
                     {HR_SPAN_LIT("Accept-Encoding"), hr_span_cstr(accept ? accept : "")}};
  hr_test_request_t req = {.target = "/coded", .fields = f, .nfields = accept ? 2 : 1};
  hr_test_response_t res;
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  if (want_rc == NULL) {
    size_t n = 0;
    char *d;
    assert_int_equal(res.status, 200);
    assert_string_equal(hr_test_field(&res, "Content-Encoding"), "gzip");
    assert_string_equal(hr_test_field(&res, "Vary"), "Accept-Encoding");
    assert_string_equal(hr_test_field(&res, "ETag"), "W/\"c1\"");
    d = dec_whole("gzip", res.body, res.body_len, &n);
    assert_non_null(d);
    assert_int_equal(n, sizeof text - 1);
    free(d);
  } else {
    assert_int_equal(res.status, 400);
    assert_string_equal(hr_test_field(&res, "X-Rc"), want_rc);
    /* Nothing of the refused call stayed (the handler's own line aside). */
    assert_int_equal(hr_test_field(&res, "Content-Encoding") != NULL, k == 1);
    assert_null(hr_test_field(&res, "Vary"));
  }
  hr_test_response_free(&res);
}

static void test_send_coded(void **state) {
  hr_router_t *r;
  hr_test_t *t;
  hr_server_options_t so;
  hr_compress_options_t gz = only(HR_CODING_GZIP, 0);
  (void)state;
  if (!have(HR_CODING_GZIP)) skip();
  fill();
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/coded", h_coded, NULL, NULL), 0);
  hr_server_options_init(&so);
  so.compress = &gz;
  assert_int_equal(hr_test_new(&t, r, &so), 0);
  coded_case(t, 0, "gzip", NULL);
  coded_case(t, 1, "gzip", "HR_EINVAL"); /* coded already */
  coded_case(t, 2, "gzip", "HR_EINVAL"); /* identity is no coding */
  coded_case(t, 3, "gzip", "HR_EINVAL"); /* an empty body */
  coded_case(t, 4, "gzip", "HR_EINVAL"); /* 206 */
  coded_case(t, 5, "gzip", "HR_EINVAL"); /* 204 */
  coded_case(t, 0, "br", "HR_EINVAL");   /* a coding the client does not take */
  coded_case(t, 0, "gzip;q=0, *", "HR_EINVAL");
  coded_case(t, 0, "*", NULL);
  coded_case(t, 0, NULL, "HR_EINVAL"); /* no Accept-Encoding: identity, as the server's */
  hr_test_free(t);
  hr_router_free(r);
}

/* hr_compress refuses levels outside hr_compress_options_t's ranges and
 * lengths whose bound would wrap. */
static void test_compress_levels(void **state) {
  static unsigned char out[8192];
  (void)state;
  fill();
  if (have(HR_CODING_GZIP)) {
    assert_int_equal(hr_compress(HR_CODING_GZIP, 0, text, 100, out, sizeof out), 0);
    assert_int_equal(hr_compress(HR_CODING_GZIP, 1000, text, 100, out, sizeof out), 0);
    assert_true(hr_compress(HR_CODING_GZIP, 9, text, 100, out, sizeof out) > 0);
  }
  if (have(HR_CODING_BR)) {
    assert_int_equal(hr_compress(HR_CODING_BR, -1, text, 100, out, sizeof out), 0);
    assert_int_equal(hr_compress(HR_CODING_BR, 12, text, 100, out, sizeof out), 0);
    assert_true(hr_compress(HR_CODING_BR, 0, text, 100, out, sizeof out) > 0);
    assert_int_equal(hr_compress_bound(HR_CODING_BR, SIZE_MAX), 0);
  }
  if (have(HR_CODING_ZSTD)) {
    assert_int_equal(hr_compress(HR_CODING_ZSTD, 0, text, 100, out, sizeof out), 0);
    assert_int_equal(hr_compress(HR_CODING_ZSTD, 20, text, 100, out, sizeof out), 0);
    assert_true(hr_compress(HR_CODING_ZSTD, 19, text, 100, out, sizeof out) > 0);
  }
  assert_int_equal(hr_compress(HR_CODING_IDENTITY, 1, text, 100, out, sizeof out), 0);
  assert_int_equal(hr_compress_bound(HR_CODING_GZIP, SIZE_MAX), 0);
  assert_int_equal(hr_compress(HR_CODING_GZIP, 6, text, 100, out, 10), 0); /* cap too small */
}

/* "*" + "/" + "*" names every type. */
static void test_every_type(void **state) {
  static const char *const all[] = {"*/*"};
  hr_router_t *r;
  hr_test_t *t;
  hr_server_options_t so;
  hr_compress_options_t co = only(HR_CODING_GZIP, 0);
  (void)state;
  if (!have(HR_CODING_GZIP)) skip();
  fill();
  co.media_types = all;
  co.nmedia_types = 1;
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/json", h_json, NULL, NULL), 0);
  hr_server_options_init(&so);
  so.compress = &co;
  assert_int_equal(hr_test_new(&t, r, &so), 0);
  assert_string_equal(coding_of(t, NULL, "/json"), "gzip");
  hr_test_free(t);
  hr_router_free(r);
}

static void test_bad_settings(void **state) {
  hr_router_t *r;
  hr_server_t *s;
  hr_server_options_t so;
  hr_compress_options_t bad;
  hr_route_options_t ro;
  hr_route_error_t err;
  static const char *const no_subtype[] = {"text/html", "text"};
  static const char *const reasons[] = {
      "br_level outside 0..11", "zstd_level outside 1..19", "nmedia_types without media_types",
      "order names a value that is no hr_coding_t",
      "a media type is not \"type/subtype\" (no parameters, spaces or commas)"};
  size_t i;
  (void)state;
  assert_int_equal(hr_router_new(&r, NULL), 0);
  hr_compress_options_init(&bad);
  bad.gzip_level = 13;
  assert_int_equal(hr_router_set_compress(r, NULL, &bad), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL), "compression settings: gzip_level outside 1..12");
  assert_int_equal(hr_router_set_compress(r, "bad host!", NULL), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL),
                      "host is not a host name (letters, digits, '-', '.' and '_', "
                      "or an IP literal in brackets)");
  assert_int_equal(hr_router_set_compress(NULL, NULL, NULL), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL), hr_strerror(HR_EINVAL)); /* forgotten */
  hr_route_options_init(&ro);
  ro.compress = &bad;
  ro.error = &err;
  assert_int_equal(hr_router_add(r, "GET", "/x", h_text, NULL, &ro), HR_EINVAL);
  assert_string_equal(err.reason, "gzip_level outside 1..12");
  /* Each setting named; hr_server_new says the same. */
  for (i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
    hr_compress_options_init(&bad);
    bad.br_level = i == 0 ? 12 : bad.br_level;
    bad.zstd_level = i == 1 ? 0 : bad.zstd_level;
    bad.nmedia_types = i == 2 ? 1 : i == 4 ? 2 : 0;
    bad.order[1] = i == 3 ? 4 : bad.order[1];
    bad.media_types = i == 4 ? no_subtype : NULL;
    assert_int_equal(hr_router_add(r, "GET", "/x", h_text, NULL, &ro), HR_EINVAL);
    assert_string_equal(err.reason, reasons[i]);
  }
  hr_server_options_init(&so);
  so.compress = &bad;
  assert_int_equal(hr_server_new(&s, r, &so), HR_EINVAL);
  assert_null(s);
  assert_string_equal(hr_error_detail(HR_EINVAL),
                      "compression settings: a media type is not \"type/subtype\" "
                      "(no parameters, spaces or commas)");
  bad.nmedia_types = 1; /* "text/html" alone: good */
  assert_int_equal(hr_server_new(&s, r, &so), 0);
  assert_string_equal(hr_error_detail(HR_EINVAL), hr_strerror(HR_EINVAL));
  hr_server_free(s);
  hr_router_free(r);
}

/* ---- changed under load ---------------------------------------------------------- */

static _Atomic int stop_flip;

static void *flipper(void *arg) {
  hr_router_t *r = arg;
  hr_compress_options_t a = only(HR_CODING_GZIP, 0), b = only(HR_CODING_IDENTITY, 0);
  int i;
  for (i = 0; i < 400 && !atomic_load(&stop_flip); i++) {
    assert_int_equal(hr_router_set_compress(r, NULL, (i & 1) ? &a : &b), 0);
    assert_int_equal(hr_router_set_compress(r, "api.example", (i % 3) ? &a : NULL), 0);
  }
  return NULL;
}

static void test_changed_while_serving(void **state) {
  fx_t *fx = *state;
  pthread_t th;
  hr_group_t *g;
  int i;
  if (!have(HR_CODING_GZIP)) skip();
  fill();
  fx_route(fx, "GET", "/text", h_text, NULL);
  assert_int_equal(hr_router_group(fx->router, "api.example", "", &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/text", h_text, NULL, NULL), 0);
  fx_start(fx, 2);
  atomic_store(&stop_flip, 0);
  assert_int_equal(pthread_create(&th, NULL, flipper, fx->router), 0);
  for (i = 0; i < 200; i++) {
    rc_t *c = fx_connect(fx);
    rc_response_t res;
    const char *ce;
    assert_int_equal(rc_send_str(c, i & 1 ? "GET /text HTTP/1.1\r\nHost: api.example\r\n"
                                            "Accept-Encoding: gzip\r\n\r\n"
                                          : "GET /text HTTP/1.1\r\nHost: a\r\n"
                                            "Accept-Encoding: gzip\r\n\r\n"),
                     0);
    assert_int_equal(rc_read_response(c, &res, 0), RC_OK);
    assert_int_equal(res.status, 200);
    /* One table's settings or another's, never a mix: gzip or nothing. */
    ce = rc_header(&res, "Content-Encoding");
    if (ce != NULL) {
      size_t n = 0;
      char *d;
      assert_string_equal(ce, "gzip");
      d = dec_whole("gzip", res.body, res.body_len, &n);
      assert_non_null(d);
      assert_int_equal(n, sizeof text - 1);
      assert_memory_equal(d, text, n);
      free(d);
    } else {
      assert_int_equal(res.body_len, sizeof text - 1);
    }
    rc_response_free(&res);
    fx_drop(fx, c);
  }
  atomic_store(&stop_flip, 1);
  assert_int_equal(pthread_join(th, NULL), 0);
}

/* ---- a request in flight keeps its table's settings ------------------------------ */

static ca_t ca;

/* A response held while its settings are removed and every replaced table
 * is reclaimed: it still goes out by the settings of the table it was
 * matched in (its exchange's reference keeps them: without it, ASan sees
 * the settings freed), and nothing leaks. */
static void test_in_flight_keeps_settings(void **state) {
  fx_t *fx = *state;
  hr_route_options_t o;
  hr_field_t ct = {HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain")};
  hr_compress_options_t gz = only(HR_CODING_GZIP, 0);
  rc_t *c;
  rc_response_t res;
  size_t n = 0;
  char *d;
  int i;
  if (!have(HR_CODING_GZIP)) skip();
  fill();
  ca_init(&ca);
  held_init(&held_default);
  fx_use_allocator(fx, &ca.hook);
  hr_route_options_init(&o);
  o.fields = &ct;
  o.nfields = 1;
  fx_route_opts(fx, "GET", "/slow", held_handler, NULL, &o);
  assert_int_equal(hr_router_set_compress(fx->router, NULL, &gz), 0);
  fx_start(fx, 2);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /slow HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n"),
                   0);
  assert_true(ev_wait(&held_default.ev_held, 1, RC_TIMEOUT_MS));
  assert_int_equal(hr_router_set_compress(fx->router, NULL, NULL), 0);
  /* More changes than a batch of replaced tables (16, publish.c), then
   * every queued reclamation run: the tables that held the settings are
   * gone. */
  for (i = 0; i < 20; i++) {
    fx_route(fx, "GET", "/churn", h_text, NULL);
    assert_int_equal(hr_router_remove(fx->router, "GET", "/churn"), 0);
  }
  hr__rcu_barrier();
  assert_int_equal(held_complete(&held_default, 1, 200, text), 0);
  assert_int_equal(rc_read_response(c, &res, 0), RC_OK);
  assert_string_equal(rc_header(&res, "Content-Encoding"), "gzip");
  d = dec_whole("gzip", res.body, res.body_len, &n);
  assert_non_null(d);
  assert_int_equal(n, sizeof text - 1);
  assert_memory_equal(d, text, n);
  free(d);
  rc_response_free(&res);
  fx_drop(fx, c);
  assert_int_equal(fx_stop(fx, 2000), 0);
  hr_router_free(fx->router);
  fx->router = NULL;
  assert_int_equal(ca_live(&ca), 0); /* the settings too */
  held_destroy(&held_default);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_router_without_server),
      cmocka_unit_test(test_bad_settings),
      cmocka_unit_test(test_send_coded),
      cmocka_unit_test(test_compress_levels),
      cmocka_unit_test(test_every_type),
      cmocka_unit_test_setup_teardown(test_changed_while_serving, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_in_flight_keeps_settings, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
