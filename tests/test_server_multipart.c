/* SPDX-License-Identifier: MIT */
/*
 * multipart/form-data through the server: a streaming route feeds the body
 * to the parser as it arrives (hr_request_read_body) and answers with what
 * the parts held -- a field and a 200 KB file, sent in odd pieces -- or
 * 400 for a malformed body and 413 for a part over its limit.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <stdio.h>
#include <string.h>

#include <hroute/multipart.h>

#include "fixture.h"

typedef struct upload_s {
  hr_multipart_t mp;
  hr_response_t *res;
  char names[256];
  size_t nlen;
  uint64_t bytes[4];
  unsigned long sum;
  size_t part;
} upload_t;

static int up_part(void *u, const hr_multipart_part_t *p) {
  upload_t *up = u;
  up->part = p->index;
  up->nlen += (size_t)snprintf(up->names + up->nlen, sizeof up->names - up->nlen, "%s%.*s%s%.*s",
                               up->nlen ? "," : "", (int)p->name.len, p->name.ptr,
                               p->filename.len ? "=" : "", (int)p->filename.len, p->filename.ptr);
  return 0;
}

static int up_data(void *u, hr_span_t d) {
  upload_t *up = u;
  size_t i;
  if (up->part < 4) up->bytes[up->part] += d.len;
  for (i = 0; i < d.len; i++) up->sum += (unsigned char)d.ptr[i];
  return 0;
}

static void up_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  upload_t *up = udata;
  char out[512];
  int rc, n;
  (void)req;
  if (status < 0) return; /* the exchange is gone */
  rc = status == 0 ? hr_multipart_feed(&up->mp, chunk) : hr_multipart_finish(&up->mp);
  if (rc == HR_ETOOLARGE || rc == HR_EPARSE) {
    /* Answer at once; the rest of the body is skipped. */
    if (up->res != NULL) hr_response_send(up->res, rc == HR_ETOOLARGE ? 413 : 400, hr_err_name(rc), strlen(hr_err_name(rc)));
    up->res = NULL;
    return;
  }
  if (status == 1 && up->res != NULL) {
    n = snprintf(out, sizeof out, "%s|%llu,%llu|%lu", up->names, (unsigned long long)up->bytes[0],
                 (unsigned long long)up->bytes[1], up->sum);
    hr_response_send(up->res, 200, out, (size_t)n);
    up->res = NULL;
  }
}

static void h_upload(hr_request_t *req, hr_response_t *res, void *udata) {
  static const hr_multipart_cbs_t cbs = {up_part, up_data, NULL};
  hr_multipart_limits_t lim;
  hr_span_t ct, boundary;
  upload_t *up = hr_request_alloc(req, sizeof *up);
  (void)udata;
  if (up == NULL) {
    hr_response_send(res, 503, NULL, 0);
    return;
  }
  memset(up, 0, offsetof(upload_t, mp) + sizeof(up->mp) - sizeof(up->mp.head_inline));
  memset(&up->res, 0, sizeof *up - offsetof(upload_t, res));
  up->res = res;
  memset(&lim, 0, sizeof lim);
  lim.max_part_bytes = 300000;
  if (hr_request_field(req, HR_SPAN_LIT("Content-Type"), NULL, &ct) != 0 ||
      hr_multipart_boundary(ct, &boundary) != 0 ||
      hr_multipart_init(&up->mp, boundary, &cbs, up, &lim) != 0) {
    hr_response_send(res, 415, NULL, 0);
    return;
  }
  assert_int_equal(hr_request_read_body(req, up_body, up), 0);
}

static size_t make_body(char *b, size_t cap, size_t file_len, unsigned long *sum) {
  size_t n = 0, i;
  n += (size_t)snprintf(b + n, cap - n,
                        "--B0undary\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n"
                        "holiday\r\n--B0undary\r\nContent-Disposition: form-data; name=\"photo\"; "
                        "filename=\"beach.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n");
  *sum = 0;
  for (i = 0; i < 7; i++) *sum += (unsigned char)"holiday"[i];
  for (i = 0; i < file_len; i++) {
    char c = (char)("\r\n-B0xyz"[i % 8]); /* lots of near-delimiters */
    b[n++] = c;
    *sum += (unsigned char)c;
  }
  n += (size_t)snprintf(b + n, cap - n, "\r\n--B0undary--\r\n");
  return n;
}

static void test_upload(void **state) {
  static char body[320000];
  fx_t *fx = *state;
  hr_route_options_t o;
  unsigned long sum;
  size_t len = make_body(body, sizeof body, 200000, &sum);
  char head[256], want[256];
  rc_t *c;
  hr_route_options_init(&o);
  o.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/upload", h_upload, NULL, &o);
  fx_start(fx, 1);
  c = fx_connect(fx);
  snprintf(head, sizeof head,
           "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; "
           "boundary=B0undary\r\nContent-Length: %zu\r\n\r\n", len);
  assert_int_equal(rc_send_str(c, head), 0);
  assert_int_equal(rc_send_split(c, body, len, 1237, 0), 0);
  snprintf(want, sizeof want, "title,photo=beach.jpg|7,200000|%lu", sum);
  expect_response(c, "HTTP/1.1 200 OK", want, NULL);
  /* A malformed body: 400, the rest skipped. */
  snprintf(head, sizeof head,
           "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; "
           "boundary=B0undary\r\nContent-Length: 30\r\n\r\n--B0undary\r\nnot a header\r\n\r\n");
  assert_int_equal(rc_send_str(c, head), 0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "HR_EPARSE", NULL);
  fx_drop(fx, c);
  /* A part over its limit: 413. */
  len = make_body(body, sizeof body, 300001, &sum);
  c = fx_connect(fx);
  snprintf(head, sizeof head,
           "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Type: multipart/form-data; "
           "boundary=B0undary\r\nContent-Length: %zu\r\n\r\n", len);
  assert_int_equal(rc_send_str(c, head), 0);
  assert_int_equal(rc_send(c, body, len), 0);
  expect_response(c, "HTTP/1.1 413 Content Too Large", "HR_ETOOLARGE", NULL);
  fx_drop(fx, c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_upload, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
