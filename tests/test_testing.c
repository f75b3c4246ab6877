/* SPDX-License-Identifier: MIT */
/*
 * The in-process test client (hroute/testing.h): status, fields and body of
 * a plain response; HEAD; a request body; a streamed (chunked) response
 * with trailers; a handler that answers from another thread through
 * hr_response_post; the router's own answers (404, 405 with Allow); a
 * request that asks to close its connection and one the server refuses
 * (400, closed); a handler that never answers (the timeout); requests the
 * client refuses to send; many requests on one client without a leak
 * (ASan).
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <hroute.h>

static void h_hello(hr_request_t *req, hr_response_t *res, void *udata) {
  char body[64];
  hr_span_t name = hr_request_param(req, 0);
  int n = snprintf(body, sizeof body, "Hello, %.*s!\n", (int)name.len, name.ptr);
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("X-Greeting"), HR_SPAN_LIT("yes"));
  hr_response_send(res, 200, body, (size_t)n);
}

static void h_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t b = hr_request_body(req);
  (void)udata;
  hr_response_send(res, 201, b.ptr, b.len);
}

static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_start(res, 200, HR_LENGTH_UNKNOWN);
  hr_response_write(res, "one,", 4);
  hr_response_write(res, "two", 3);
  hr_response_add_trailer(res, HR_SPAN_LIT("X-Sum"), HR_SPAN_LIT("7"));
  hr_response_end(res);
}

static void h_never(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata; /* answers nothing: the client's timeout ends it */
}

/* Answers from another thread, as a handler waiting on a database would. */
static void answer_later(hr_response_t *res, void *udata) {
  (void)udata;
  hr_response_send(res, 202, "later", 5);
}

static void *poster(void *arg) {
  hr_response_post(arg, answer_later, NULL);
  return NULL;
}

static pthread_t poster_thread;

static void h_async(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  assert_int_equal(pthread_create(&poster_thread, NULL, poster, res), 0);
}

static hr_router_t *router(void) {
  hr_router_t *r;
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/hello/:name", h_hello, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "POST", "/echo", h_echo, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/stream", h_stream, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/never", h_never, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/async", h_async, NULL, NULL), 0);
  return r;
}

static void test_plain_head_and_body(void **state) {
  hr_router_t *r = router();
  hr_test_t *t;
  hr_test_response_t res;
  hr_test_request_t req;
  (void)state;
  assert_int_equal(hr_test_new(&t, r, NULL), 0);
  assert_int_equal(hr_test_get(t, "/hello/ada", &res), 0);
  assert_int_equal(res.status, 200);
  assert_string_equal(res.body, "Hello, ada!\n");
  assert_int_equal(res.body_len, 12);
  assert_string_equal(hr_test_field(&res, "x-greeting"), "yes");
  assert_string_equal(hr_test_field(&res, "Content-Length"), "12");
  assert_null(hr_test_field(&res, "X-None"));
  assert_int_equal(res.closed, 0);
  hr_test_response_free(&res);
  assert_null(res.body);

  memset(&req, 0, sizeof req);
  req.method = "HEAD";
  req.target = "/hello/ada";
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  assert_int_equal(res.status, 200);
  assert_string_equal(res.body, "");
  assert_string_equal(hr_test_field(&res, "Content-Length"), "12");
  hr_test_response_free(&res);

  req.method = "POST";
  req.target = "/echo";
  req.body = "payload";
  req.body_len = 7;
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  assert_int_equal(res.status, 201);
  assert_memory_equal(res.body, "payload", 8);
  hr_test_response_free(&res);
  hr_test_free(t);
  hr_router_free(r);
}

static void test_stream_trailers_and_async(void **state) {
  hr_router_t *r = router();
  hr_test_t *t;
  hr_test_response_t res;
  (void)state;
  assert_int_equal(hr_test_new(&t, r, NULL), 0);
  assert_int_equal(hr_test_get(t, "/stream", &res), 0);
  assert_int_equal(res.status, 200);
  assert_string_equal(res.body, "one,two");
  assert_string_equal(hr_test_field(&res, "Transfer-Encoding"), "chunked");
  assert_int_equal(res.ntrailers, 1);
  assert_string_equal(res.trailers[0].name.ptr, "X-Sum");
  assert_string_equal(res.trailers[0].value.ptr, "7");
  hr_test_response_free(&res);

  assert_int_equal(hr_test_get(t, "/async", &res), 0);
  pthread_join(poster_thread, NULL);
  assert_int_equal(res.status, 202);
  assert_string_equal(res.body, "later");
  hr_test_response_free(&res);
  hr_test_free(t);
  hr_router_free(r);
}

static void test_router_answers_and_closing(void **state) {
  hr_router_t *r = router();
  hr_test_t *t;
  hr_test_response_t res;
  hr_test_request_t req;
  hr_field_t bad = {HR_SPAN_LIT("Content-Length"), HR_SPAN_LIT("12x")};
  hr_field_t close = {HR_SPAN_LIT("Connection"), HR_SPAN_LIT("close")};
  (void)state;
  assert_int_equal(hr_test_new(&t, r, NULL), 0);
  assert_int_equal(hr_test_get(t, "/nope", &res), 0);
  assert_int_equal(res.status, 404);
  hr_test_response_free(&res);

  memset(&req, 0, sizeof req);
  req.method = "DELETE";
  req.target = "/echo";
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  assert_int_equal(res.status, 405);
  assert_string_equal(hr_test_field(&res, "Allow"), "OPTIONS, POST");
  hr_test_response_free(&res);

  /* The client asks to close: so does the server, after its answer. */
  req.method = NULL;
  req.target = "/hello/cy";
  req.fields = &close;
  req.nfields = 1;
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  assert_int_equal(res.status, 200);
  assert_string_equal(res.body, "Hello, cy!\n");
  assert_string_equal(hr_test_field(&res, "Connection"), "close");
  assert_int_equal(res.closed, 1);
  hr_test_response_free(&res);

  /* Framing in doubt: 400 and the connection closed. */
  req.method = "POST";
  req.target = "/echo";
  req.fields = &bad;
  req.nfields = 1;
  assert_int_equal(hr_test_do(t, &req, 0, &res), 0);
  assert_int_equal(res.status, 400);
  assert_int_equal(res.closed, 1);
  hr_test_response_free(&res);
  hr_test_free(t);
  hr_router_free(r);
}

static void test_timeout_and_refusals(void **state) {
  hr_router_t *r = router();
  hr_test_t *t;
  hr_test_response_t res;
  hr_test_request_t req;
  hr_field_t crlf = {HR_SPAN_LIT("X-A"), HR_SPAN_LIT("a\r\nInjected: 1")};
  hr_field_t noname = {HR_SPAN_LIT("X A"), HR_SPAN_LIT("v")};
  (void)state;
  assert_int_equal(hr_test_new(NULL, r, NULL), HR_EINVAL);
  assert_int_equal(hr_test_new(&t, NULL, NULL), HR_EINVAL);
  assert_int_equal(hr_test_new(&t, r, NULL), 0);

  memset(&req, 0, sizeof req);
  req.target = "/never";
  assert_int_equal(hr_test_do(t, &req, 50, &res), UV_ETIMEDOUT);
  assert_null(res.body);

  assert_int_equal(hr_test_do(t, NULL, 0, &res), HR_EINVAL);
  req.target = NULL;
  assert_int_equal(hr_test_do(t, &req, 0, &res), HR_EINVAL);
  req.target = "/a b";
  assert_int_equal(hr_test_do(t, &req, 0, &res), HR_EINVAL);
  req.target = "/hello/x";
  req.method = "GE T";
  assert_int_equal(hr_test_do(t, &req, 0, &res), HR_EINVAL);
  req.method = NULL;
  req.fields = &crlf;
  req.nfields = 1;
  assert_int_equal(hr_test_do(t, &req, 0, &res), HR_EINVAL);
  req.fields = &noname;
  assert_int_equal(hr_test_do(t, &req, 0, &res), HR_EINVAL);
  req.fields = NULL;
  req.nfields = 0;
  req.host = "a\nb";
  assert_int_equal(hr_test_do(t, &req, 0, &res), HR_EINVAL);
  /* The client still works after all that. */
  assert_int_equal(hr_test_get(t, "/hello/bo", &res), 0);
  assert_string_equal(res.body, "Hello, bo!\n");
  hr_test_response_free(&res);
  hr_test_response_free(NULL);
  hr_test_free(t);
  hr_test_free(NULL);
  hr_router_free(r);
}

static void test_many_requests(void **state) {
  hr_router_t *r = router();
  hr_test_t *t;
  hr_test_response_t res;
  char target[32], want[32];
  int i;
  (void)state;
  assert_int_equal(hr_test_new(&t, r, NULL), 0);
  for (i = 0; i < 500; i++) {
    snprintf(target, sizeof target, "/hello/n%d", i);
    snprintf(want, sizeof want, "Hello, n%d!\n", i);
    assert_int_equal(hr_test_get(t, target, &res), 0);
    assert_string_equal(res.body, want);
    hr_test_response_free(&res);
  }
  hr_test_free(t);
  hr_router_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_head_and_body),
      cmocka_unit_test(test_stream_trailers_and_async),
      cmocka_unit_test(test_router_answers_and_closing),
      cmocka_unit_test(test_timeout_and_refusals),
      cmocka_unit_test(test_many_requests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
