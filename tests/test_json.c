/* SPDX-License-Identifier: MIT */
/*
 * The JSON module (hroute/json.h) through the in-process test client: a
 * body read and sent back (compact, in order); every refusal with its
 * status and place: malformed (line and column, on the first line and on a
 * later one), not UTF-8, a duplicate key, a NUL in a string, nested deeper
 * than the limit (and exactly at it), a Content-Type that is not JSON (none,
 * text/plain, a charset other than UTF-8) against the ones that are
 * (application/json, +json); a scalar at the top; error bodies with
 * escaped messages; the error_body hook making the router's own 404 JSON;
 * a response over the stack buffer; a value hr_json_send will not encode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hroute.h>
#include <hroute/json.h>

static int scalar_rc;

/* Echoes the body it read, or lets hr_json_body answer. */
static void h_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  json_t *v = hr_json_body(req, res, (size_t)(uintptr_t)udata);
  if (v == NULL) return;
  assert_int_equal(hr_json_send(res, 200, v, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER), 0);
  json_decref(v);
}

static void h_error(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  assert_int_equal(hr_json_error(res, 99, NULL), HR_EINVAL);
  hr_json_error(res, 422, "a \"name\" is needed\n");
}

static void h_big(hr_request_t *req, hr_response_t *res, void *udata) {
  json_t *a = json_array(), *five = json_integer(5);
  int i;
  (void)req;
  (void)udata;
  for (i = 0; i < 1000; i++) json_array_append_new(a, json_integer(i));
  scalar_rc = hr_json_send(res, 200, five, 0); /* needs JSON_ENCODE_ANY */
  json_decref(five);
  assert_int_equal(hr_json_send(res, 200, a, 0), 0);
  json_decref(a);
}

typedef struct {
  hr_router_t *r;
  hr_test_t *t;
} env_t;

static void env_open(env_t *e) {
  hr_answers_t an;
  assert_int_equal(hr_router_new(&e->r, NULL), 0);
  assert_int_equal(hr_router_add(e->r, "POST", "/echo", h_echo, NULL, NULL), 0);
  assert_int_equal(hr_router_add(e->r, "POST", "/shallow", h_echo, (void *)(uintptr_t)2, NULL), 0);
  assert_int_equal(hr_router_add(e->r, "GET", "/error", h_error, NULL, NULL), 0);
  assert_int_equal(hr_router_add(e->r, "GET", "/big", h_big, NULL, NULL), 0);
  hr_answers_init(&an);
  an.error_body = hr_json_error_body;
  assert_int_equal(hr_router_set_answers(e->r, NULL, &an), 0);
  assert_int_equal(hr_test_new(&e->t, e->r, NULL), 0);
}

static void env_close(env_t *e) {
  hr_test_free(e->t);
  hr_router_free(e->r);
}

/* POSTs `body` with `ctype` (NULL: none) to `target`. */
static void post(env_t *e, const char *target, const char *ctype, const char *body, size_t len,
                 hr_test_response_t *res) {
  hr_field_t f = {HR_SPAN_LIT("Content-Type"), {ctype, ctype ? strlen(ctype) : 0}};
  hr_test_request_t req;
  memset(&req, 0, sizeof req);
  req.method = "POST";
  req.target = target;
  req.fields = ctype ? &f : NULL;
  req.nfields = ctype ? 1 : 0;
  req.body = body;
  req.body_len = len;
  assert_int_equal(hr_test_do(e->t, &req, 0, res), 0);
}

static void expect(env_t *e, const char *target, const char *ctype, const char *body, int status,
                   const char *want) {
  hr_test_response_t res;
  post(e, target, ctype, body, strlen(body), &res);
  if (res.status != status || strcmp(res.body, want) != 0)
    fail_msg("%s %s: %d %s, want %d %s", ctype ? ctype : "-", body, res.status, res.body, status,
             want);
  assert_string_equal(hr_test_field(&res, "Content-Type"), "application/json");
  hr_test_response_free(&res);
}

static void test_bodies(void **state) {
  env_t e;
  char deep[80];
  int i;
  (void)state;
  env_open(&e);
  expect(&e, "/echo", "application/json", "{\"b\": [1, 2.5, \"x\"], \"a\": {\"n\": null}}", 200,
         "{\"b\":[1,2.5,\"x\"],\"a\":{\"n\":null}}");
  expect(&e, "/echo", "application/vnd.api+json; charset=UTF-8", "42", 200, "42");
  expect(&e, "/echo", "application/json", "{\"a\": }", 400,
         "{\"status\":400,\"error\":\"unexpected token near '}'\",\"line\":1,\"column\":7}");
  expect(&e, "/echo", "application/json", "{\n  \"a\": 1,\n  \"b\": x\n}", 400,
         "{\"status\":400,\"error\":\"invalid token near 'x'\",\"line\":3,\"column\":8}");
  expect(&e, "/echo", "application/json", "", 400,
         "{\"status\":400,\"error\":\"unexpected token near end of file\",\"line\":1,"
         "\"column\":0}");
  expect(&e, "/echo", "application/json", "{\"a\": 1, \"a\": 2}", 400,
         "{\"status\":400,\"error\":\"duplicate object key near '\\\"a\\\"'\",\"line\":1,\"column\":12}");
  expect(&e, "/echo", "application/json", "[\"\\u0000\"]", 400,
         "{\"status\":400,\"error\":\"\\\\u0000 in a string\","
         "\"line\":1,\"column\":9}");
  expect(&e, "/echo", "application/json", "[\"\xff\"]", 400,
         "{\"status\":400,\"error\":\"unable to decode byte 0xff near '\\\"'\",\"line\":1,"
         "\"column\":2}");
  expect(&e, "/echo", NULL, "{}", 415,
         "{\"status\":415,\"error\":\"the body must be application/json (UTF-8)\"}");
  expect(&e, "/echo", "text/plain", "{}", 415,
         "{\"status\":415,\"error\":\"the body must be application/json (UTF-8)\"}");
  expect(&e, "/echo", "application/json; charset=latin1", "{}", 415,
         "{\"status\":415,\"error\":\"the body must be application/json (UTF-8)\"}");
  /* Depth: the default (32) exactly, then one more; a route's own limit. */
  for (i = 0; i < 32; i++) deep[i] = '[';
  for (i = 0; i < 32; i++) deep[32 + i] = ']';
  deep[64] = '\0';
  expect(&e, "/echo", "application/json", deep, 200, deep);
  memmove(deep + 1, deep, 65);
  deep[0] = '[';
  strcat(deep, "]");
  expect(&e, "/echo", "application/json", deep, 400,
         "{\"status\":400,\"error\":\"arrays and objects nested deeper than 32\"}");
  expect(&e, "/shallow", "application/json", "[[1]]", 200, "[[1]]");
  expect(&e, "/shallow", "application/json", "{\"a\":[{}]}", 400,
         "{\"status\":400,\"error\":\"arrays and objects nested deeper than 2\"}");
  env_close(&e);
}

static void test_answers(void **state) {
  env_t e;
  hr_test_response_t res;
  size_t i;
  char want[16];
  (void)state;
  env_open(&e);
  assert_int_equal(hr_test_get(e.t, "/error", &res), 0);
  assert_int_equal(res.status, 422);
  assert_string_equal(res.body, "{\"status\":422,\"error\":\"a \\\"name\\\" is needed\\n\"}");
  hr_test_response_free(&res);
  /* The router's own 404, through the hook. */
  assert_int_equal(hr_test_get(e.t, "/nothing", &res), 0);
  assert_int_equal(res.status, 404);
  assert_string_equal(hr_test_field(&res, "Content-Type"), "application/json");
  assert_string_equal(res.body, "{\"status\":404,\"error\":\"Not Found\"}");
  hr_test_response_free(&res);
  /* Over the stack buffer; and a scalar without JSON_ENCODE_ANY. */
  scalar_rc = 0;
  assert_int_equal(hr_test_get(e.t, "/big", &res), 0);
  assert_int_equal(scalar_rc, HR_EINVAL);
  assert_int_equal(res.status, 200);
  assert_memory_equal(res.body, "[0,1,2,", 7);
  snprintf(want, sizeof want, ",999]");
  assert_string_equal(res.body + res.body_len - strlen(want), want);
  for (i = 0; i < res.body_len; i++) assert_true(res.body[i] != ' ');
  hr_test_response_free(&res);
  /* The hook refuses a buffer too small. */
  {
    char small[8];
    const char *ct = NULL;
    assert_int_equal(hr_json_error_body(NULL, 404, small, sizeof small, &ct), 0);
    assert_null(ct);
  }
  env_close(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bodies),
      cmocka_unit_test(test_answers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
