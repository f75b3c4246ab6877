/* SPDX-License-Identifier: MIT */
/*
 * Static files compressed on the fly (hr_static_options_t.compress) over
 * loopback, every compressed body decoded and compared with the file: a
 * file read and compressed on the thread pool (Content-Encoding, Vary, a
 * weak ETag, its Content-Length), the same again from the loop's cache
 * and a HEAD with the GET's length; a file changed on disk answered with
 * its new bytes, never the cached old ones; identity with Vary for a
 * client that accepts nothing or a file that does not shrink; none of it
 * for a Range (206 of the file), a type the settings leave out, a file
 * over compress_max_bytes, compress off, or a precompressed sibling (sent
 * instead); If-None-Match with the weak tag (304); no cache at all; and a
 * small file from memory, compressed by the response.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "static/static.h"

#include "decode.h"
#include "fixture.h"
#include "tmptree.h"

static char top[64], root[96];
static char big[100000], noise[20000], small[2000];

static void put(const char *rel, const void *data, size_t n) { tt_put(root, rel, data, n); }

/* Gives the file an mtime of its own (seconds since the epoch). */
static void touch_at(const char *rel, time_t when) {
  char path[256];
  struct timespec t[2] = {{when, 0}, {when, 0}};
  snprintf(path, sizeof path, "%s/%s", root, rel);
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static void make_tree(void) {
  size_t i;
  unsigned x = 99;
  for (i = 0; i < sizeof big; i++) big[i] = "static text, compressed on the fly\n"[i % 35];
  for (i = 0; i < sizeof noise; i++) {
    x = x * 1103515245u + 12345u;
    noise[i] = (char)(x >> 16);
  }
  for (i = 0; i < sizeof small; i++) small[i] = "small "[i % 6];
  tt_make("hroute-zstatic", top, sizeof top, root, sizeof root);
  put("big.txt", big, sizeof big);
  put("noise.txt", noise, sizeof noise);
  put("small.txt", small, sizeof small);
  put("image.png", big, sizeof big);
  put("sib.css", big, sizeof big);
  put("sib.css.gz", "GZ-BYTES", 8);
}

static hr_static_t *st;

/* The server compresses gzip at level 6, text types only; the static
 * options as `tune` leaves them. */
static void start(fx_t *fx, void (*tune)(hr_static_options_t *)) {
  static const char *const types[] = {"text/*"};
  static hr_compress_options_t co;
  hr_static_options_t o;
  hr_compress_options_init(&co);
  co.order[0] = HR_CODING_GZIP;
  co.order[1] = co.order[2] = HR_CODING_IDENTITY;
  co.media_types = types;
  co.nmedia_types = 1;
  fx->opts.compress = &co;
  hr_static_options_init(&o);
  o.cache_valid_ms = 0; /* every request opens the file again: changes show at once */
  if (tune != NULL) tune(&o);
  assert_int_equal(hr_static_new(&st, root, &o), 0);
  assert_int_equal(hr_static_mount(fx->router, NULL, NULL, st), 0);
  fx_start(fx, 1);
}

static void stop(fx_t *fx) {
  fx_stop(fx, 1000);
  hr_server_free(fx->server);
  fx->server = NULL;
  hr_static_free(st);
  st = NULL;
  /* A fresh router for the next start's mount. */
  hr_router_free(fx->router);
  assert_int_equal(hr_router_new(&fx->router, NULL), 0);
}

/* Sends `req` (fields after the request line, CRLF each) for `path`; the
 * response in *r. */
static void get(fx_t *fx, const char *method, const char *path, const char *fields,
                rc_response_t *r) {
  rc_t *c = fx_connect(fx);
  char req[512];
  snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: a\r\n%s\r\n", method, path, fields);
  assert_int_equal(rc_send_str(c, req), 0);
  assert_int_equal(rc_read_response(c, r, strcmp(method, "HEAD") == 0), RC_OK);
  fx_drop(fx, c);
}

/* A gzip answer of `want` (n bytes): its fields and decoded body. */
static void expect_gzip(const rc_response_t *r, const void *want, size_t n) {
  size_t got = 0;
  char *d;
  const char *etag = rc_header(r, "ETag");
  assert_string_equal(r->status_line, "HTTP/1.1 200 OK");
  assert_string_equal(rc_header(r, "Content-Encoding"), "gzip");
  assert_string_equal(rc_header(r, "Vary"), "Accept-Encoding");
  assert_non_null(etag);
  assert_memory_equal(etag, "W/\"", 3);
  assert_true(r->body_len < n);
  d = dec_whole("gzip", r->body, r->body_len, &got);
  assert_non_null(d);
  assert_int_equal(got, n);
  assert_memory_equal(d, want, n);
  free(d);
}

static void expect_plain(const rc_response_t *r, const char *status, const void *want, size_t n,
                         const char *vary) {
  assert_string_equal(r->status_line, status);
  assert_null(rc_header(r, "Content-Encoding"));
  if (vary != NULL)
    assert_string_equal(rc_header(r, "Vary"), vary);
  else
    assert_null(rc_header(r, "Vary"));
  assert_int_equal(r->body_len, n);
  assert_memory_equal(r->body, want, n);
}

#define GZ "Accept-Encoding: gzip\r\n"

static void test_on_the_fly_and_cached(void **state) {
  fx_t *fx = *state;
  rc_response_t r, again, head;
  char weak[128], fields[256];
  if (!dec_available("gzip")) skip();
  start(fx, NULL);
  get(fx, "GET", "/big.txt", GZ, &r); /* read and compressed on the pool */
  expect_gzip(&r, big, sizeof big);
  get(fx, "GET", "/big.txt", GZ, &again); /* from the loop's cache */
  expect_gzip(&again, big, sizeof big);
  assert_int_equal(again.body_len, r.body_len);
  assert_memory_equal(again.body, r.body, r.body_len);
  assert_string_equal(rc_header(&again, "ETag"), rc_header(&r, "ETag"));
  /* HEAD: the GET's fields and length, no body. */
  get(fx, "HEAD", "/big.txt", GZ, &head);
  assert_string_equal(rc_header(&head, "Content-Encoding"), "gzip");
  assert_int_equal(strtoull(rc_header(&head, "Content-Length"), NULL, 10), r.body_len);
  assert_int_equal(head.body_len, 0);
  rc_response_free(&head);
  /* Revalidation with the weak tag: 304. */
  snprintf(weak, sizeof weak, "%s", rc_header(&r, "ETag"));
  snprintf(fields, sizeof fields, GZ "If-None-Match: %s\r\n", weak);
  rc_response_free(&again);
  get(fx, "GET", "/big.txt", fields, &again);
  assert_string_equal(again.status_line, "HTTP/1.1 304 Not Modified");
  /* §15.4.5: the ETag and Vary the 200 would have. */
  assert_string_equal(rc_header(&again, "ETag"), weak);
  assert_string_equal(rc_header(&again, "Vary"), "Accept-Encoding");
  rc_response_free(&again);
  rc_response_free(&r);

  /* Changed on disk (same size, another mtime): the new bytes, compressed
   * again, never the cached old ones. */
  big[0] = 'S';
  put("big.txt", big, sizeof big);
  touch_at("big.txt", 1700000000);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_gzip(&r, big, sizeof big);
  rc_response_free(&r);
  big[0] = 's';
  put("big.txt", big, sizeof big);
  touch_at("big.txt", 1700000100);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_gzip(&r, big, sizeof big);
  rc_response_free(&r);
  /* Rewritten in place with its mtime set back (cp -p does that): the
   * change time still moves, and the new bytes go out. */
  big[0] = 'Z';
  put("big.txt", big, sizeof big);
  touch_at("big.txt", 1700000100);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_gzip(&r, big, sizeof big);
  rc_response_free(&r);
  big[0] = 's';
  put("big.txt", big, sizeof big);
  stop(fx);
}

/* What one client can make it cost: a file that does not shrink is
 * compressed once (then noted), and a burst of first requests for one
 * file is one compression. */
static void test_bounded_work(void **state) {
  fx_t *fx = *state;
  rc_t *c[10];
  rc_response_t r;
  int i;
  if (!dec_available("gzip")) skip();
  start(fx, NULL);
  for (i = 0; i < 3; i++) {
    get(fx, "GET", "/noise.txt", GZ, &r);
    expect_plain(&r, "HTTP/1.1 200 OK", noise, sizeof noise, "Accept-Encoding");
    rc_response_free(&r);
  }
  assert_int_equal(atomic_load(&st->compressions), 1);
  for (i = 0; i < 10; i++) {
    c[i] = fx_connect(fx);
    assert_int_equal(rc_send_str(c[i], "GET /big.txt HTTP/1.1\r\nHost: a\r\n" GZ "\r\n"), 0);
  }
  for (i = 0; i < 10; i++) {
    assert_int_equal(rc_read_response(c[i], &r, 0), RC_OK);
    expect_gzip(&r, big, sizeof big);
    rc_response_free(&r);
    fx_drop(fx, c[i]);
  }
  assert_int_equal(atomic_load(&st->compressions), 2);
  stop(fx);
}

static void test_left_alone(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  if (!dec_available("gzip")) skip();
  start(fx, NULL);
  /* A client that accepts nothing: the file, and Vary. */
  get(fx, "GET", "/big.txt", "", &r);
  expect_plain(&r, "HTTP/1.1 200 OK", big, sizeof big, "Accept-Encoding");
  rc_response_free(&r);
  /* Noise does not shrink: sent as it is. */
  get(fx, "GET", "/noise.txt", GZ, &r);
  expect_plain(&r, "HTTP/1.1 200 OK", noise, sizeof noise, "Accept-Encoding");
  rc_response_free(&r);
  /* A range is of the file itself. */
  get(fx, "GET", "/big.txt", GZ "Range: bytes=10-19\r\n", &r);
  expect_plain(&r, "HTTP/1.1 206 Partial Content", big + 10, 10, NULL);
  rc_response_free(&r);
  /* A type the settings leave out. */
  get(fx, "GET", "/image.png", GZ, &r);
  expect_plain(&r, "HTTP/1.1 200 OK", big, sizeof big, NULL);
  rc_response_free(&r);
  /* Small, from memory: the response compresses it. */
  get(fx, "GET", "/small.txt", GZ, &r);
  expect_gzip(&r, small, sizeof small);
  rc_response_free(&r);
  stop(fx);
}

static void no_compress(hr_static_options_t *o) { o->compress = 0; }
static void max_small(hr_static_options_t *o) { o->compress_max_bytes = 50000; }
static void no_cache(hr_static_options_t *o) { o->compress_cache_bytes = 0; }
static void siblings(hr_static_options_t *o) { o->precompressed = 1; }

static void test_options(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  if (!dec_available("gzip")) skip();
  start(fx, no_compress);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_plain(&r, "HTTP/1.1 200 OK", big, sizeof big, NULL);
  rc_response_free(&r);
  stop(fx);

  start(fx, max_small);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_plain(&r, "HTTP/1.1 200 OK", big, sizeof big, NULL);
  rc_response_free(&r);
  stop(fx);

  start(fx, no_cache); /* compressed anew each time */
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_gzip(&r, big, sizeof big);
  rc_response_free(&r);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_gzip(&r, big, sizeof big);
  rc_response_free(&r);
  stop(fx);

  /* A precompressed sibling is sent instead; a file without one is
   * compressed on the fly. */
  start(fx, siblings);
  get(fx, "GET", "/sib.css", GZ, &r);
  assert_string_equal(rc_header(&r, "Content-Encoding"), "gzip");
  assert_int_equal(r.body_len, 8);
  assert_memory_equal(r.body, "GZ-BYTES", 8);
  rc_response_free(&r);
  get(fx, "GET", "/big.txt", GZ, &r);
  expect_gzip(&r, big, sizeof big);
  rc_response_free(&r);
  stop(fx);
}

static int group_setup(void **state) {
  (void)state;
  make_tree();
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  return tt_remove(top);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_on_the_fly_and_cached, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_left_alone, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_bounded_work, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_options, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
