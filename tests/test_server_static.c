/* SPDX-License-Identifier: MIT */
/*
 * The static handler (hr_static_*) through the server, over loopback:
 * index files and directory redirects, content types, dotfiles, traversal
 * in every form the router lets through (encoded separators, dot
 * components, NUL, empty components, links out of the root), FIFOs, the
 * preconditions of RFC 9110 §13 and the ranges of §14 with exact heads
 * (one range, suffixes, open ends, 416, multipart/byteranges, sets that are
 * ignored, If-Range), HEAD, precompressed siblings, Cache-Control, a mount
 * under a prefix, a file that changes between requests, refusals in the
 * router's error_body format, listings with nothing to list, and the
 * error detail of a root that cannot be served.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "tmptree.h"

static char top[64], root[96];

static void put(const char *rel, const char *data, size_t n) { tt_put(root, rel, data, n); }

static void put_str(const char *rel, const char *s) { put(rel, s, strlen(s)); }

static void make_tree(void) {
  char path[256], digits[1000];
  size_t i;
  for (i = 0; i < sizeof digits; i++) digits[i] = (char)('0' + i % 10);
  tt_make("hroute-static", top, sizeof top, root, sizeof root);
  snprintf(path, sizeof path, "%s/secret", top);
  {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    assert_int_equal(write(fd, "SECRET", 6), 6);
    close(fd);
  }
  put_str("index.html", "<h1>home</h1>");
  put("digits.txt", digits, sizeof digits);
  put_str("style.css", "body{color:red}");
  put_str("style.css.gz", "GZ-BYTES");
  put_str("style.css.br", "BR-BYTES");
  put_str("data.BIN", "\x01\x02");
  put_str(".env", "PASSWORD=1");
  snprintf(path, sizeof path, "%s/.well-known", root);
  assert_int_equal(mkdir(path, 0755), 0);
  put_str(".well-known/acme", "token");
  snprintf(path, sizeof path, "%s/sub", root);
  assert_int_equal(mkdir(path, 0755), 0);
  put_str("sub/index.html", "sub home");
  snprintf(path, sizeof path, "%s/empty", root);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/link-in", root);
  assert_int_equal(symlink("digits.txt", path), 0);
  snprintf(path, sizeof path, "%s/link-out", root);
  assert_int_equal(symlink("../secret", path), 0);
  snprintf(path, sizeof path, "%s/dirlink", root);
  assert_int_equal(symlink("sub", path), 0);
  snprintf(path, sizeof path, "%s/fifo", root);
  assert_int_equal(mkfifo(path, 0644), 0);
  {
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/sock", root);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
  }
  put_str("empty.txt", "");
}

static hr_static_t *st;

static uint32_t valid_ms = 1000; /* the cache's trust, per test */

static void start(fx_t *fx, const char *prefix, int precompressed) {
  hr_static_options_t o;
  hr_static_options_init(&o);
  o.precompressed = precompressed;
  o.cache_control = "max-age=60";
  o.cache_valid_ms = valid_ms;
  assert_int_equal(hr_static_new(&st, root, &o), 0);
  assert_int_equal(hr_static_mount(fx->router, NULL, prefix, st), 0);
  fx_start(fx, 1);
}

static void stop(fx_t *fx) {
  fx_stop(fx, 1000);
  hr_server_free(fx->server);
  fx->server = NULL;
  hr_static_free(st);
  st = NULL;
}

/* Sends `req` on a fresh connection; asserts status line and body (unless
 * NULL); leaves the response in *r. */
static void get(fx_t *fx, const char *req, const char *status, const char *body,
                rc_response_t *r) {
  rc_t *c = fx_connect(fx);
  int head = strncmp(req, "HEAD ", 5) == 0;
  assert_int_equal(rc_send_str(c, req), 0);
  assert_int_equal(rc_read_response(c, r, head), RC_OK);
  if (strcmp(r->status_line, status) != 0)
    fail_msg("%s-> %s, want %s", req, r->status_line, status);
  if (body != NULL && (r->body_len != strlen(body) || memcmp(r->body, body, r->body_len) != 0))
    fail_msg("%s-> body \"%.*s\", want \"%s\"", req, (int)r->body_len, r->body, body);
  fx_drop(fx, c);
}

static void get_status(fx_t *fx, const char *req, const char *status) {
  rc_response_t r;
  get(fx, req, status, NULL, &r);
  if (r.body_len >= 6 && memmem(r.body, r.body_len, "SECRET", 6) != NULL)
    fail_msg("%s leaked the file outside the root", req);
  rc_response_free(&r);
}

#define REQ(line) line " HTTP/1.1\r\nHost: a\r\n\r\n"

static void test_names(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  start(fx, NULL, 0);
  get(fx, REQ("GET /"), "HTTP/1.1 200 OK", "<h1>home</h1>", &r);
  expect_field(&r, "Content-Type", "text/html; charset=utf-8", 0);
  expect_field(&r, "Accept-Ranges", "bytes", 0);
  expect_field(&r, "Cache-Control", "max-age=60", 0);
  expect_field(&r, "Content-Length", "13", 0);
  expect_no_field(&r, "Vary");
  rc_response_free(&r);
  get(fx, REQ("GET /digits.txt"), "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.body_len, 1000);
  expect_field(&r, "Content-Type", "text/plain; charset=utf-8", 0);
  rc_response_free(&r);
  get(fx, REQ("GET /data.BIN"), "HTTP/1.1 200 OK", "\x01\x02", &r);
  expect_field(&r, "Content-Type", "application/octet-stream", 0);
  rc_response_free(&r);
  /* Directories: the slash, the index, no listing. */
  get(fx, REQ("GET /sub"), "HTTP/1.1 301 Moved Permanently", NULL, &r);
  expect_field(&r, "Location", "/sub/", 0);
  rc_response_free(&r);
  get(fx, REQ("GET /sub?x=1"), "HTTP/1.1 301 Moved Permanently", NULL, &r);
  expect_field(&r, "Location", "/sub/?x=1", 0);
  rc_response_free(&r);
  get(fx, REQ("GET /sub/"), "HTTP/1.1 200 OK", "sub home", &r);
  rc_response_free(&r);
  get_status(fx, REQ("GET /empty/"), "HTTP/1.1 403 Forbidden");
  get_status(fx, REQ("GET /nothing"), "HTTP/1.1 404 Not Found");
  get_status(fx, REQ("GET /digits.txt/"), "HTTP/1.1 404 Not Found");
  /* Dotfiles stay hidden, .well-known does not. */
  get_status(fx, REQ("GET /.env"), "HTTP/1.1 404 Not Found");
  get(fx, REQ("GET /.well-known/acme"), "HTTP/1.1 200 OK", "token", &r);
  rc_response_free(&r);
  /* Links: within the root followed, out of it not. */
  get(fx, REQ("GET /link-in"), "HTTP/1.1 200 OK", NULL, &r);
  assert_int_equal(r.body_len, 1000);
  rc_response_free(&r);
  get(fx, REQ("GET /dirlink/index.html"), "HTTP/1.1 200 OK", "sub home", &r);
  rc_response_free(&r);
  get_status(fx, REQ("GET /link-out"), "HTTP/1.1 404 Not Found");
  /* A FIFO is never opened for reading into a response (nor blocks). */
  get_status(fx, REQ("GET /fifo"), "HTTP/1.1 404 Not Found");
  get_status(fx, REQ("GET /sock"), "HTTP/1.1 404 Not Found");
  stop(fx);
}

/* Every way out of the root the router lets through, and those it does
 * not: none answers the file above the root. */
static void test_traversal(void **state) {
  static const struct {
    const char *req, *status;
  } cases[] = {
      {REQ("GET /..%2Fsecret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /sub/..%2F..%2Fsecret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /%2e%2e%2fsecret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /sub%2F%2E%2E%2F..%2Fsecret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /%252e%252e%252fsecret"), "HTTP/1.1 404 Not Found"}, /* double-encoded */
      {REQ("GET /digits.txt%00"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET //secret"), "HTTP/1.1 301 Moved Permanently"}, /* the router: to /secret */
      {REQ("GET /sub//index.html"), "HTTP/1.1 301 Moved Permanently"}, /* to /sub/index.html */
      {REQ("GET /.%2e/secret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /../secret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /sub/../../secret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /..\\secret"), "HTTP/1.1 400 Bad Request"},
      {REQ("GET /link-out/x"), "HTTP/1.1 404 Not Found"},
  };
  fx_t *fx = *state;
  size_t i;
  start(fx, NULL, 0);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) get_status(fx, cases[i].req, cases[i].status);
  stop(fx);
}

/* RFC 9110 §13: the preconditions against the file's validators. */
static void test_preconditions(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char etag[128], lm[64], req[512];
  start(fx, NULL, 0);
  get(fx, REQ("GET /digits.txt"), "HTTP/1.1 200 OK", NULL, &r);
  snprintf(etag, sizeof etag, "%s", rc_header(&r, "ETag"));
  snprintf(lm, sizeof lm, "%s", rc_header(&r, "Last-Modified"));
  assert_int_equal(etag[0], '"'); /* strong */
  rc_response_free(&r);
  snprintf(req, sizeof req, "GET /digits.txt HTTP/1.1\r\nHost: a\r\nIf-None-Match: %s\r\n\r\n", etag);
  get(fx, req, "HTTP/1.1 304 Not Modified", "", &r);
  expect_field(&r, "ETag", etag, 0);
  expect_field(&r, "Cache-Control", "max-age=60", 0);
  rc_response_free(&r);
  snprintf(req, sizeof req, "GET /digits.txt HTTP/1.1\r\nHost: a\r\nIf-Modified-Since: %s\r\n\r\n", lm);
  get(fx, req, "HTTP/1.1 304 Not Modified", "", &r);
  rc_response_free(&r);
  get_status(fx, "GET /digits.txt HTTP/1.1\r\nHost: a\r\nIf-Match: \"other\"\r\n\r\n",
             "HTTP/1.1 412 Precondition Failed");
  get_status(fx,
             "GET /digits.txt HTTP/1.1\r\nHost: a\r\n"
             "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n",
             "HTTP/1.1 412 Precondition Failed");
  snprintf(req, sizeof req, "GET /digits.txt HTTP/1.1\r\nHost: a\r\nIf-Match: %s\r\n\r\n", etag);
  get(fx, req, "HTTP/1.1 200 OK", NULL, &r);
  rc_response_free(&r);
  stop(fx);
}

/* The digits file: byte i is '0' + i % 10. */
static void expect_digits(const rc_response_t *r, uint64_t first, uint64_t n) {
  uint64_t i;
  assert_int_equal(r->body_len, n);
  for (i = 0; i < n; i++)
    if (r->body[i] != (char)('0' + (first + i) % 10)) fail_msg("byte %llu", (unsigned long long)i);
}

static void range(fx_t *fx, const char *spec, const char *status, const char *crange,
                  uint64_t first, uint64_t n) {
  char req[512];
  rc_response_t r;
  snprintf(req, sizeof req, "GET /digits.txt HTTP/1.1\r\nHost: a\r\nRange: %s\r\n\r\n", spec);
  get(fx, req, status, NULL, &r);
  if (crange != NULL)
    expect_field(&r, "Content-Range", crange, 0);
  else
    expect_no_field(&r, "Content-Range");
  if (n != (uint64_t)-1) expect_digits(&r, first, n);
  rc_response_free(&r);
}

static void test_ranges(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char req[512], etag[128], lm[64];
  const char *b;
  start(fx, NULL, 0);
  range(fx, "bytes=0-9", "HTTP/1.1 206 Partial Content", "bytes 0-9/1000", 0, 10);
  range(fx, "bytes=990-", "HTTP/1.1 206 Partial Content", "bytes 990-999/1000", 990, 10);
  range(fx, "bytes=-7", "HTTP/1.1 206 Partial Content", "bytes 993-999/1000", 993, 7);
  range(fx, "bytes=-5000", "HTTP/1.1 206 Partial Content", "bytes 0-999/1000", 0, 1000);
  range(fx, "bytes=500-99999", "HTTP/1.1 206 Partial Content", "bytes 500-999/1000", 500, 500);
  range(fx, "BYTES = 0-1", "HTTP/1.1 200 OK", NULL, 0, 1000); /* malformed: ignored */
  range(fx, "bytes=1000-", "HTTP/1.1 416 Range Not Satisfiable", "bytes */1000", 0, (uint64_t)-1);
  range(fx, "bytes=-0", "HTTP/1.1 416 Range Not Satisfiable", "bytes */1000", 0, (uint64_t)-1);
  range(fx, "bytes=2000-3000, 1000-", "HTTP/1.1 416 Range Not Satisfiable", "bytes */1000", 0,
        (uint64_t)-1);
  range(fx, "items=0-9", "HTTP/1.1 200 OK", NULL, 0, 1000);
  range(fx, "bytes=9-0", "HTTP/1.1 200 OK", NULL, 0, 1000);
  range(fx, "bytes=a-b", "HTTP/1.1 200 OK", NULL, 0, 1000);
  range(fx, "bytes=0-9,5-15", "HTTP/1.1 200 OK", NULL, 0, 1000); /* overlapping */
  range(fx, "bytes=0-1,2-3,4-5,6-7,8-9,10-11,12-13,14-15,16-17,18-19,20-21,22-23,24-25,"
            "26-27,28-29,30-31,32-33",
        "HTTP/1.1 200 OK", NULL, 0, 1000); /* 17 ranges */
  range(fx, "bytes=0-9, 2000-3000", "HTTP/1.1 206 Partial Content", "bytes 0-9/1000", 0, 10);
  range(fx, "bytes=990-99999999999999999999999", "HTTP/1.1 206 Partial Content",
        "bytes 990-999/1000", 990, 10); /* past 64 bits: to the end */
  range(fx, "bytes=99999999999999999999999-", "HTTP/1.1 416 Range Not Satisfiable",
        "bytes */1000", 0, (uint64_t)-1);
  /* An empty file: the (empty) whole, whatever the range. */
  get(fx, "GET /empty.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-\r\n\r\n", "HTTP/1.1 200 OK", "",
      &r);
  rc_response_free(&r);
  /* Two ranges: multipart/byteranges, each part with its head. */
  get(fx, "GET /digits.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-2,-3\r\n\r\n",
      "HTTP/1.1 206 Partial Content", NULL, &r);
  {
    const char *ct = rc_header(&r, "Content-Type");
    char want[512], boundary[64];
    int n;
    assert_non_null(ct);
    assert_int_equal(strncmp(ct, "multipart/byteranges; boundary=", 31), 0);
    snprintf(boundary, sizeof boundary, "%s", ct + 31);
    n = snprintf(want, sizeof want,
                 "\r\n--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes "
                 "0-2/1000\r\n\r\n012"
                 "\r\n--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes "
                 "997-999/1000\r\n\r\n789"
                 "\r\n--%s--\r\n",
                 boundary, boundary, boundary);
    assert_int_equal(r.body_len, (size_t)n);
    assert_memory_equal(r.body, want, (size_t)n);
    expect_no_field(&r, "Content-Range");
  }
  rc_response_free(&r);
  /* Many multipart answers pipelined: the part heads fill the queue past
   * the high-water mark and the writer waits for the drain; every answer
   * arrives whole. */
  {
    static char reqs[64 * 1024];
    size_t len = 0;
    int i, j;
    rc_t *c = fx_connect(fx);
    for (i = 0; i < 3; i++)
      len += (size_t)snprintf(reqs + len, sizeof reqs - len, "GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n");
    for (i = 0; i < 60; i++) {
      len += (size_t)snprintf(reqs + len, sizeof reqs - len,
                              "GET /digits.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-0");
      for (j = 2; j <= 30; j += 2) len += (size_t)snprintf(reqs + len, sizeof reqs - len, ",%d-%d", j, j);
      len += (size_t)snprintf(reqs + len, sizeof reqs - len, "\r\n\r\n");
    }
    assert_true(len < sizeof reqs);
    assert_int_equal(rc_send(c, reqs, len), 0);
    for (i = 0; i < 3; i++) expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
    for (i = 0; i < 60; i++) {
      expect_response(c, "HTTP/1.1 206 Partial Content", NULL, &r);
      assert_int_equal(r.body_len, (size_t)atoi(rc_header(&r, "Content-Length")));
      assert_non_null(memmem(r.body, r.body_len, "bytes 30-30/1000\r\n\r\n0",
                             strlen("bytes 30-30/1000\r\n\r\n0")));
      rc_response_free(&r);
    }
    fx_drop(fx, c);
  }
  /* If-Range: the current strong tag or date keeps the range. */
  get(fx, REQ("GET /digits.txt"), "HTTP/1.1 200 OK", NULL, &r);
  snprintf(etag, sizeof etag, "%s", rc_header(&r, "ETag"));
  snprintf(lm, sizeof lm, "%s", rc_header(&r, "Last-Modified"));
  rc_response_free(&r);
  snprintf(req, sizeof req, "bytes=0-0\r\nIf-Range: %s", etag);
  range(fx, req, "HTTP/1.1 206 Partial Content", "bytes 0-0/1000", 0, 1);
  snprintf(req, sizeof req, "bytes=0-0\r\nIf-Range: %s", lm);
  range(fx, req, "HTTP/1.1 206 Partial Content", "bytes 0-0/1000", 0, 1);
  range(fx, "bytes=0-0\r\nIf-Range: \"old\"", "HTTP/1.1 200 OK", NULL, 0, 1000);
  snprintf(req, sizeof req, "bytes=0-0\r\nIf-Range: W/%s", etag);
  range(fx, req, "HTTP/1.1 200 OK", NULL, 0, 1000); /* weak never matches */
  range(fx, "bytes=0-0\r\nIf-Range: Sun, 06 Nov 1994 08:49:37 GMT", "HTTP/1.1 200 OK", NULL, 0,
        1000);
  /* HEAD: the same head, no body. */
  get(fx, "HEAD /digits.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=10-19\r\n\r\n",
      "HTTP/1.1 206 Partial Content", NULL, &r);
  expect_field(&r, "Content-Range", "bytes 10-19/1000", 0);
  expect_field(&r, "Content-Length", "10", 0);
  rc_response_free(&r);
  (void)b;
  stop(fx);
}

static void test_precompressed(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  start(fx, NULL, 1);
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip, deflate\r\n\r\n",
      "HTTP/1.1 200 OK", "GZ-BYTES", &r);
  expect_field(&r, "Content-Encoding", "gzip", 0);
  expect_field(&r, "Content-Type", "text/css; charset=utf-8", 0);
  expect_field(&r, "Vary", "Accept-Encoding", 0);
  assert_non_null(strstr(rc_header(&r, "ETag"), "-gzip\""));
  rc_response_free(&r);
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip, br\r\n\r\n",
      "HTTP/1.1 200 OK", "BR-BYTES", &r);
  expect_field(&r, "Content-Encoding", "br", 0);
  rc_response_free(&r);
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br;q=0, gzip;q=0.0\r\n\r\n",
      "HTTP/1.1 200 OK", "body{color:red}", &r);
  expect_no_field(&r, "Content-Encoding");
  expect_field(&r, "Vary", "Accept-Encoding", 0);
  rc_response_free(&r);
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: *\r\n\r\n", "HTTP/1.1 200 OK",
      "BR-BYTES", &r);
  rc_response_free(&r);
  /* Only a parameter named q is a weight; a malformed weight allows nothing. */
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip;xq=0\r\n\r\n",
      "HTTP/1.1 200 OK", "GZ-BYTES", &r);
  rc_response_free(&r);
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip;q=abc, br;q=-1\r\n\r\n",
      "HTTP/1.1 200 OK", "body{color:red}", &r);
  rc_response_free(&r);
  get(fx, "GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip; q=0.001\r\n\r\n",
      "HTTP/1.1 200 OK", "GZ-BYTES", &r);
  rc_response_free(&r);
  get(fx, REQ("GET /style.css"), "HTTP/1.1 200 OK", "body{color:red}", &r);
  expect_no_field(&r, "Content-Encoding");
  rc_response_free(&r);
  /* No sibling: the file itself, still with Vary. */
  get(fx, "GET /index.html HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n",
      "HTTP/1.1 200 OK", "<h1>home</h1>", &r);
  expect_field(&r, "Vary", "Accept-Encoding", 0);
  rc_response_free(&r);
  stop(fx);
}

/* Files at the edge of what the open-file cache keeps in memory
 * (HR__SMALL_FILE, 4096 bytes): each byte-exact by GET, by HEAD only its
 * length, and a range of a kept one from the file itself. */
static void test_small_files_from_memory(void **state) {
  static const size_t sizes[] = {1, 4095, 4096, 4097, 20000};
  fx_t *fx = *state;
  rc_response_t r;
  char name[32], req[128], len[32], *data;
  size_t i, k;
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    data = malloc(sizes[i]);
    assert_non_null(data);
    for (k = 0; k < sizes[i]; k++) data[k] = (char)('a' + (k * 7 + i) % 26);
    snprintf(name, sizeof name, "size%zu.bin", sizes[i]);
    put(name, data, sizes[i]);
    free(data);
  }
  start(fx, NULL, 0);
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int pass;
    snprintf(len, sizeof len, "%zu", sizes[i]);
    for (pass = 0; pass < 2; pass++) { /* the open, then from the cache */
      snprintf(req, sizeof req, "GET /size%zu.bin HTTP/1.1\r\nHost: x\r\n\r\n", sizes[i]);
      get(fx, req, "HTTP/1.1 200 OK", NULL, &r);
      assert_int_equal(r.body_len, sizes[i]);
      for (k = 0; k < sizes[i]; k++)
        if (r.body[k] != (char)('a' + (k * 7 + i) % 26)) fail_msg("size %zu: byte %zu", sizes[i], k);
      expect_field(&r, "Content-Length", len, 0);
      rc_response_free(&r);
    }
    snprintf(req, sizeof req, "HEAD /size%zu.bin HTTP/1.1\r\nHost: x\r\n\r\n", sizes[i]);
    get(fx, req, "HTTP/1.1 200 OK", NULL, &r);
    assert_int_equal(r.body_len, 0);
    expect_field(&r, "Content-Length", len, 0);
    rc_response_free(&r);
  }
  get(fx, "GET /size4096.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=4090-\r\n\r\n",
      "HTTP/1.1 206 Partial Content", NULL, &r);
  expect_field(&r, "Content-Range", "bytes 4090-4095/4096", 0);
  assert_int_equal(r.body_len, 6);
  for (k = 0; k < 6; k++) assert_int_equal(r.body[k], (char)('a' + ((4090 + k) * 7 + 2) % 26));
  rc_response_free(&r);
  stop(fx);
}

static void test_prefix_and_changes(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char etag[128];
  struct timespec ts[2];
  char path[256];
  valid_ms = 0; /* every request opens again: a change shows at once */
  start(fx, "/assets", 0);
  valid_ms = 1000;
  get(fx, REQ("GET /assets"), "HTTP/1.1 301 Moved Permanently", NULL, &r);
  expect_field(&r, "Location", "/assets/", 0);
  rc_response_free(&r);
  get(fx, REQ("GET /assets/"), "HTTP/1.1 200 OK", "<h1>home</h1>", &r);
  rc_response_free(&r);
  get(fx, REQ("GET /assets/sub/"), "HTTP/1.1 200 OK", "sub home", &r);
  rc_response_free(&r);
  get_status(fx, REQ("GET /digits.txt"), "HTTP/1.1 404 Not Found");
  get_status(fx, REQ("POST /assets/index.html"), "HTTP/1.1 405 Method Not Allowed");
  /* The file changes: its length and tag follow (a second's mtime apart). */
  put_str("change.txt", "one");
  snprintf(path, sizeof path, "%s/change.txt", root);
  ts[0].tv_sec = ts[1].tv_sec = 1000000000;
  ts[0].tv_nsec = ts[1].tv_nsec = 0;
  assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
  get(fx, REQ("GET /assets/change.txt"), "HTTP/1.1 200 OK", "one", &r);
  snprintf(etag, sizeof etag, "%s", rc_header(&r, "ETag"));
  expect_field(&r, "Last-Modified", "Sun, 09 Sep 2001 01:46:40 GMT", 0);
  rc_response_free(&r);
  put_str("change.txt", "second");
  get(fx, REQ("GET /assets/change.txt"), "HTTP/1.1 200 OK", "second", &r);
  assert_string_not_equal(rc_header(&r, "ETag"), etag);
  rc_response_free(&r);
  /* Replaced by rename with the same size and mtime (to the nanosecond):
   * a new inode, so a new tag; an If-Range with the old one gets it all. */
  {
    char tmp[256];
    get(fx, REQ("GET /assets/change.txt"), "HTTP/1.1 200 OK", "second", &r);
    snprintf(etag, sizeof etag, "%s", rc_header(&r, "ETag"));
    rc_response_free(&r);
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    get(fx, REQ("GET /assets/change.txt"), "HTTP/1.1 200 OK", "second", &r);
    snprintf(etag, sizeof etag, "%s", rc_header(&r, "ETag"));
    rc_response_free(&r);
    put_str("change.new", "SECOND");
    snprintf(tmp, sizeof tmp, "%s/change.new", root);
    assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
    assert_int_equal(rename(tmp, path), 0);
    snprintf(tmp, sizeof tmp,
             "GET /assets/change.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-0\r\nIf-Range: %s\r\n\r\n",
             etag);
    get(fx, tmp, "HTTP/1.1 200 OK", "SECOND", &r);
    assert_string_not_equal(rc_header(&r, "ETag"), etag);
    rc_response_free(&r);
  }
  stop(fx);
}

/* The open-file cache: within its validity a file is served from the
 * descriptor it keeps, even once removed from the directory; a miss is
 * cached too, and a new name is opened. */
static void test_cache(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char path[256];
  valid_ms = 600000; /* nothing expires during the test */
  start(fx, NULL, 1);
  valid_ms = 1000;
  put_str("cached.txt", "kept");
  get(fx, REQ("GET /cached.txt"), "HTTP/1.1 200 OK", "kept", &r);
  rc_response_free(&r);
  snprintf(path, sizeof path, "%s/cached.txt", root);
  assert_int_equal(unlink(path), 0);
  get(fx, REQ("GET /cached.txt"), "HTTP/1.1 200 OK", "kept", &r);
  rc_response_free(&r);
  /* A miss stays one: the file appears, the cache has not looked. */
  get_status(fx, REQ("GET /later.txt"), "HTTP/1.1 404 Not Found");
  put_str("later.txt", "now");
  get_status(fx, REQ("GET /later.txt"), "HTTP/1.1 404 Not Found");
  /* Many names: entries are pushed out, every answer still right. */
  {
    int i;
    char req[128], body[32];
    for (i = 0; i < 1100; i++) {
      snprintf(req, sizeof req, "GET /n%d HTTP/1.1\r\nHost: a\r\n\r\n", i);
      get_status(fx, req, "HTTP/1.1 404 Not Found");
    }
    snprintf(body, sizeof body, "%s", "sub home");
    get(fx, REQ("GET /sub/"), "HTTP/1.1 200 OK", body, &r);
    rc_response_free(&r);
  }
  snprintf(path, sizeof path, "%s/later.txt", root);
  unlink(path);
  stop(fx);
}

/* With `listing` on, a directory without an index lists its entries,
 * escaped; with it off (test_names) it is 403. */
static void test_listing(void **state) {
  fx_t *fx = *state;
  hr_static_options_t o;
  rc_response_t r;
  char path[256];
  snprintf(path, sizeof path, "%s/empty/<b>&co.txt", root);
  {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    close(fd);
  }
  snprintf(path, sizeof path, "%s/empty/dir one", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/empty/.hidden", root);
  {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    close(fd);
  }
  hr_static_options_init(&o);
  o.listing = 1;
  assert_int_equal(hr_static_new(&st, root, &o), 0);
  assert_int_equal(hr_static_mount(fx->router, NULL, NULL, st), 0);
  fx_start(fx, 1);
  get(fx, REQ("GET /empty/"), "HTTP/1.1 200 OK",
      "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Index of /empty/</title>\n"
      "<h1>Index of /empty/</h1>\n<ul>\n<li><a href=\"../\">../</a></li>\n"
      "<li><a href=\"%3Cb%3E%26co.txt\">&lt;b&gt;&amp;co.txt</a></li>\n"
      "<li><a href=\"dir%20one/\">dir one/</a></li>\n</ul>\n",
      &r);
  expect_field(&r, "Content-Type", "text/html; charset=utf-8", 0);
  rc_response_free(&r);
  /* A directory with an index still answers the index. */
  get(fx, REQ("GET /sub/"), "HTTP/1.1 200 OK", "sub home", &r);
  rc_response_free(&r);
  stop(fx);
  snprintf(path, sizeof path, "%s/empty/<b>&co.txt", root);
  unlink(path);
  snprintf(path, sizeof path, "%s/empty/.hidden", root);
  unlink(path);
  snprintf(path, sizeof path, "%s/empty/dir one", root);
  rmdir(path);
}

/* The host's error_body hook: {"status":N} as JSON. */
static size_t json_error(void *udata, int status, char *buf, size_t cap, const char **ctype) {
  (void)udata;
  *ctype = "application/json";
  return (size_t)snprintf(buf, cap, "{\"status\":%d}", status);
}

/* A hook that gives no body (and sets no type): the default text. */
static size_t no_body(void *udata, int status, char *buf, size_t cap, const char **ctype) {
  (void)udata;
  (void)status;
  (void)buf;
  (void)cap;
  (void)ctype;
  return 0;
}

/* The static handler's refusals (403, 404, 416) in the router's
 * error_body format when it has one, with their own fields kept
 * (Content-Range); without one, or with one that gives no body, the
 * reason phrase as text/plain. */
static void test_refusals_error_body(void **state) {
  static const struct {
    const char *req, *status;
    int code;
  } cases[] = {
      {REQ("GET /empty/"), "HTTP/1.1 403 Forbidden", 403},
      {REQ("GET /nothing"), "HTTP/1.1 404 Not Found", 404},
      {REQ("GET /.env"), "HTTP/1.1 404 Not Found", 404},
      {"GET /digits.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=1000-\r\n\r\n",
       "HTTP/1.1 416 Range Not Satisfiable", 416},
  };
  fx_t *fx = *state;
  hr_answers_t a;
  rc_response_t r;
  char want[64];
  size_t i;
  int pass, hook;
  start(fx, NULL, 0);
  for (pass = 0; pass < 3; pass++) {
    hr_answers_init(&a);
    a.error_body = pass == 2 ? no_body : json_error;
    assert_int_equal(hr_router_set_answers(fx->router, NULL, pass ? &a : NULL), 0);
    hook = pass == 1; /* pass 2: a hook, but the default text */
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      if (hook)
        snprintf(want, sizeof want, "{\"status\":%d}", cases[i].code);
      else
        snprintf(want, sizeof want, "%s\n", hr_status_reason(cases[i].code));
      get(fx, cases[i].req, cases[i].status, want, &r);
      expect_field(&r, "Content-Type", hook ? "application/json" : "text/plain", 0);
      if (cases[i].code == 416) expect_field(&r, "Content-Range", "bytes */1000", 0);
      rc_response_free(&r);
    }
  }
  stop(fx);
}

/* A listing of a directory with no entry to show (empty, or dotfiles
 * only with dotfiles off) has no array to sort: qsort(NULL, 0) is
 * undefined (UBSan's nonnull-attribute stopped the server here). */
static void test_listing_nothing(void **state) {
  static const char *const dirs[] = {"bare", "dots"};
  fx_t *fx = *state;
  hr_static_options_t o;
  rc_response_t r;
  char path[256], want[512];
  size_t i;
  for (i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
    assert_int_equal(mkdir(path, 0755), 0);
  }
  put_str("dots/.hidden", "h");
  put_str("dots/.also", "h");
  hr_static_options_init(&o);
  o.listing = 1;
  assert_int_equal(hr_static_new(&st, root, &o), 0);
  assert_int_equal(hr_static_mount(fx->router, NULL, NULL, st), 0);
  fx_start(fx, 1);
  for (i = 0; i < 2; i++) {
    char req[64];
    snprintf(req, sizeof req, "GET /%s/ HTTP/1.1\r\nHost: a\r\n\r\n", dirs[i]);
    snprintf(want, sizeof want,
             "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Index of /%s/</title>\n"
             "<h1>Index of /%s/</h1>\n<ul>\n<li><a href=\"../\">../</a></li>\n</ul>\n",
             dirs[i], dirs[i]);
    get(fx, req, "HTTP/1.1 200 OK", want, &r);
    expect_field(&r, "Content-Type", "text/html; charset=utf-8", 0);
    rc_response_free(&r);
  }
  stop(fx);
  snprintf(path, sizeof path, "%s/dots/.hidden", root);
  unlink(path);
  snprintf(path, sizeof path, "%s/dots/.also", root);
  unlink(path);
  for (i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
    assert_int_equal(rmdir(path), 0);
  }
}

static void test_types_and_errors(void **state) {
  hr_static_t *s;
  hr_static_options_t o;
  (void)state;
  assert_int_equal(hr_static_new(&s, root, NULL), 0);
  assert_string_equal(hr_static_type(s, HR_SPAN_LIT("a/b/page.HTML")), "text/html; charset=utf-8");
  assert_string_equal(hr_static_type(s, HR_SPAN_LIT("x.woff2")), "font/woff2");
  assert_string_equal(hr_static_type(s, HR_SPAN_LIT(".bashrc")), "application/octet-stream");
  assert_string_equal(hr_static_type(s, HR_SPAN_LIT("dir.d/noext")), "application/octet-stream");
  if (access("/etc/mime.types", R_OK) == 0) /* from the system file */
    assert_string_equal(hr_static_type(s, HR_SPAN_LIT("a.odt")),
                        "application/vnd.oasis.opendocument.text");
  hr_static_free(s);
  /* The error detail names the root and why. */
  assert_int_equal(hr_static_new(&s, "/nonexistent-dir", NULL), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL),
                      "static root \"/nonexistent-dir\": no such file or directory");
  assert_int_equal(hr_static_new(&s, "/etc/hostname", NULL), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL), "static root \"/etc/hostname\": not a directory");
  assert_int_equal(hr_static_new(&s, root, NULL), 0); /* a success forgets it */
  assert_string_equal(hr_error_detail(HR_EINVAL), hr_strerror(HR_EINVAL));
  hr_static_free(s);
  hr_static_options_init(&o);
  o.symlinks = (hr_static_symlinks_t)7;
  assert_int_equal(hr_static_new(&s, root, &o), HR_EINVAL);
  {
    char longtype[601];
    memset(longtype, 'a', 600);
    longtype[600] = '\0';
    hr_static_options_init(&o);
    o.default_type = longtype; /* would not fit a part head */
    assert_int_equal(hr_static_new(&s, root, &o), HR_EINVAL);
    o.default_type = "text/plain\r\nX-Injected: 1";
    assert_int_equal(hr_static_new(&s, root, &o), HR_EINVAL);
    hr_static_options_init(&o);
    o.cache_control = "no-store\n";
    assert_int_equal(hr_static_new(&s, root, &o), HR_EINVAL);
    hr_static_options_init(&o);
    o.cache_entries = (size_t)-1;
    assert_int_equal(hr_static_new(&s, root, &o), HR_EINVAL);
  }
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
      cmocka_unit_test_setup_teardown(test_names, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_traversal, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_preconditions, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_ranges, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_precompressed, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_small_files_from_memory, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_prefix_and_changes, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_cache, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_listing, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_listing_nothing, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_refusals_error_body, fx_setup, fx_teardown),
      cmocka_unit_test(test_types_and_errors),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
