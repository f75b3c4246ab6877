/* SPDX-License-Identifier: MIT */
/*
 * hr_router_match on whole request targets, without a server: percent
 * decoding (RFC 3986 §2.1, %2F kept inside its segment), dot segments and
 * "//" (redirect 301/308 or 400), the trailing-slash policy, OPTIONS
 * answered by the router, host tables and groups, case-insensitive
 * literals, "::" for a literal ':', HR_ENOSPC for a short buffer, and the
 * registration error details.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <hroute.h>

#include "routerfx.h"


#define assert_span(s, want)                                            \
  do {                                                                  \
    hr_span_t s_ = (s);                                                 \
    if (!hr_span_eq(s_, hr_span_cstr(want)))                            \
      fail_msg("%s is \"%.*s\", want \"%s\"", #s, (int)s_.len,          \
               s_.len ? s_.ptr : "", want);                             \
  } while (0)

static void expect_route(hr_router_t *r, const char *method,
                         const char *target, int id) {
  hr_match_t m = rt_match(r, method, target);
  if (m.status != 200 || m.route == NULL)
    fail_msg("%s %s: status %d", method, target, m.status);
  if (hr_route_udata(m.route) != RT_ID(id))
    fail_msg("%s %s: route %d, want %d", method, target,
             (int)(intptr_t)hr_route_udata(m.route), id);
}

static void expect_status(hr_router_t *r, const char *method,
                          const char *target, int status) {
  hr_match_t m = rt_match(r, method, target);
  if (m.status != status)
    fail_msg("%s %s: status %d, want %d", method, target, m.status, status);
}

/* ---- percent decoding ---------------------------------------------------- */

static void test_percent_decoding(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/files/:name", 1);
  rt_add(r, "GET", "/a~b/x", 2);
  rt_add(r, "GET", "/raw/*rest", 3);

  m = rt_match(r, "GET", "/files/a%20b");
  assert_int_equal(m.status, 200);
  assert_span(m.params[0].value, "a b");
  /* %2F stays inside its segment while matching; the value is decoded */
  m = rt_match(r, "GET", "/files/a%2Fb");
  assert_int_equal(m.status, 200);
  assert_span(m.params[0].value, "a/b");
  /* literal segments match their decoded form */
  m = rt_match(r, "GET", "/fil%65s/x?q=%41");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(1));
  assert_span(m.params[0].value, "x");
  assert_span(m.path, "/files/x");
  assert_span(m.query, "q=%41");
  expect_route(r, "GET", "/a%7Eb/x", 2);
  m = rt_match(r, "GET", "/raw/a%2Fb/c%3Fd");
  assert_int_equal(m.status, 200);
  assert_span(m.params[0].value, "a/b/c?d");
  /* no '%': values are spans into the target itself, no buffer needed */
  {
    static const char t[] = "/files/plain?x";
    assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT(""),
                                     HR_SPAN_LIT(t), NULL, 0, &m),
                     0);
    assert_int_equal(m.status, 200);
    assert_ptr_equal(m.params[0].value.ptr, t + 7);
    assert_span(m.query, "x");
  }
  /* malformed escapes and %00 */
  expect_status(r, "GET", "/files/%zz", 400);
  expect_status(r, "GET", "/files/%4", 400);
  expect_status(r, "GET", "/files/a%00", 400);
  /* a buffer too small for a target that needs decoding */
  assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT(""),
                                   HR_SPAN_LIT("/files/a%20b"), rt_scratch, 1, &m),
                   HR_ENOSPC);
  rt_forget(r);
}

/* ---- dot segments and "//" ------------------------------------------------ */

static void test_unclean_paths_redirect(void **state) {
  static const struct {
    const char *method, *target;
    int status;
    const char *location;
  } t[] = {
      {"GET", "/a/./b", 301, "/a/b"},
      {"HEAD", "/a/./b", 301, "/a/b"},
      {"POST", "/a/./b", 308, "/a/b"},
      {"GET", "/a/../b?x=1", 301, "/b?x=1"},
      {"GET", "/a/x/../b", 301, "/a/b"},
      {"GET", "//a/b", 301, "/a/b"},
      {"GET", "/a//b", 301, "/a/b"},
      {"GET", "/a/%2e%2E/b", 301, "/b"},
      {"GET", "/a/%2e/b", 301, "/a/b"},
  };
  hr_router_t *r = rt_new_router();
  size_t i;
  (void)state;
  rt_add(r, "GET,POST", "/a/b", 1);
  rt_add(r, "GET", "/b", 2);
  for (i = 0; i < sizeof t / sizeof t[0]; i++) {
    hr_match_t m = rt_match(r, t[i].method, t[i].target);
    if (m.status != t[i].status)
      fail_msg("%s %s: status %d, want %d", t[i].method, t[i].target,
               m.status, t[i].status);
    assert_null(m.route);
    assert_span(m.location, t[i].location);
  }
  expect_status(r, "GET", "/..", 400);
  expect_status(r, "GET", "/a/../../b", 400);
  expect_route(r, "GET", "/a/b", 1);
  rt_forget(r);
}

static void test_unclean_paths_reject(void **state) {
  hr_router_t *r = rt_new_router_opts(HR_SLASH_STRICT, HR_CLEAN_REJECT, 0);
  (void)state;
  rt_add(r, "GET", "/a/b", 1);
  expect_status(r, "GET", "/a/./b", 400);
  expect_status(r, "GET", "/a//b", 400);
  expect_status(r, "POST", "/x/../a/b", 400);
  expect_route(r, "GET", "/a/b", 1);
  rt_forget(r);
}

/* ---- trailing slash -------------------------------------------------------- */

static void test_trailing_slash(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "GET,POST", "/t", 1);
  rt_add(r, "GET", "/u/", 2);
  expect_status(r, "GET", "/t/", 404);
  expect_status(r, "GET", "/u", 404);
  expect_route(r, "GET", "/u/", 2);
  rt_forget(r);

  r = rt_new_router_opts(HR_SLASH_REDIRECT, HR_CLEAN_REDIRECT, 0);
  rt_add(r, "GET,POST", "/t", 1);
  rt_add(r, "GET", "/u/", 2);
  m = rt_match(r, "GET", "/t/?k=v");
  assert_int_equal(m.status, 301);
  assert_span(m.location, "/t?k=v");
  m = rt_match(r, "POST", "/t/");
  assert_int_equal(m.status, 308);
  assert_span(m.location, "/t");
  m = rt_match(r, "GET", "/u");
  assert_int_equal(m.status, 301);
  assert_span(m.location, "/u/");
  expect_route(r, "GET", "/t", 1);
  expect_status(r, "GET", "/v/", 404);
  rt_forget(r);
}

/* ---- OPTIONS ---------------------------------------------------------------- */

/* Checks that `allow` is a ", "-separated list in strictly ascending order
 * that contains every method of `must`. */
static void expect_allow_has(hr_span_t allow, const char *const *must,
                             size_t n) {
  char buf[256], *tok, *save = NULL, prev[32] = "";
  size_t i;
  assert_true(allow.len > 0 && allow.len < sizeof buf);
  memcpy(buf, allow.ptr, allow.len);
  buf[allow.len] = '\0';
  for (i = 0; i < n; i++)
    if (strstr(buf, must[i]) == NULL) fail_msg("Allow \"%s\" lacks %s", buf, must[i]);
  for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    if (strcmp(prev, tok) >= 0) fail_msg("Allow not sorted/unique at %s", tok);
    snprintf(prev, sizeof prev, "%s", tok);
  }
}

static void test_options(void **state) {
  static const char *const o_methods[] = {"GET", "POST"};
  static const char *const all_methods[] = {"DELETE", "GET", "POST"};
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "GET,POST", "/o", 1);
  rt_add(r, "DELETE", "/p", 2);
  rt_add(r, "OPTIONS,GET", "/q", 3);
  m = rt_match(r, "OPTIONS", "/o");
  assert_int_equal(m.status, 200);
  assert_null(m.route);
  expect_allow_has(m.allow, o_methods, 2);
  expect_route(r, "OPTIONS", "/q", 3); /* an OPTIONS route answers itself */
  m = rt_match(r, "OPTIONS", "*");
  assert_int_equal(m.status, 200);
  assert_null(m.route);
  expect_allow_has(m.allow, all_methods, 3);
  expect_status(r, "OPTIONS", "/none", 404);
  rt_forget(r);
}

/* ---- hosts and groups ------------------------------------------------------- */

static void test_hosts_and_groups(void **state) {
  hr_router_t *r = rt_new_router();
  hr_group_t *api = NULL, *ver = NULL, *plain = NULL;
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/", 1);
  assert_int_equal(hr_router_group(r, "api.example", "/v1", &api), 0);
  assert_int_equal(hr_group_add(api, "GET", "/items/:id", rt_noop, RT_ID(2), NULL), 0);
  assert_int_equal(hr_router_group(r, NULL, "/api/:ver", &ver), 0);
  assert_int_equal(hr_group_add(ver, "GET,POST", "/x", rt_noop, RT_ID(3), NULL), 0);
  assert_int_equal(hr_router_group(r, NULL, NULL, &plain), 0);
  assert_int_equal(hr_group_add(plain, "GET", "/plain", rt_noop, RT_ID(4), NULL), 0);

  m = rt_match_host(r, "GET", "api.example", "/v1/items/3");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(2));
  assert_span(m.params[0].value, "3");
  assert_span(hr_route_pattern(m.route), "/v1/items/:id");
  m = rt_match_host(r, "GET", "API.Example:8080", "/v1/items/4");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(2));
  /* other hosts use the default table */
  m = rt_match_host(r, "GET", "other.example", "/v1/items/3");
  assert_int_equal(m.status, 404);
  m = rt_match_host(r, "GET", "", "/v1/items/3");
  assert_int_equal(m.status, 404);
  m = rt_match_host(r, "GET", "other.example", "/");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(1));

  m = rt_match(r, "POST", "/api/2/x");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(3));
  assert_int_equal(m.nparams, 1);
  assert_span(m.params[0].name, "ver");
  assert_span(m.params[0].value, "2");
  assert_span(hr_route_pattern(m.route), "/api/:ver/x");
  assert_span(hr_route_methods(m.route), "GET,POST");
  expect_route(r, "GET", "/plain", 4);

  assert_int_equal(hr_router_group(r, NULL, "no-slash", &api), HR_EPATTERN);
  assert_int_equal(hr_group_add(plain, "GET", "x", rt_noop, NULL, NULL), HR_EPATTERN);
  {
    hr_router_stats_t st;
    memset(&st, 0, sizeof st);
    hr_router_stats(r, &st);
    assert_int_equal(st.routes, 4);
    assert_int_equal(st.hosts, 1);
    assert_true(st.nodes > 0);
    assert_true(st.table_bytes > 0);
  }
  rt_forget(r);
}

/* ---- literal forms ----------------------------------------------------------- */

static void test_case_insensitive_and_colon(void **state) {
  hr_router_t *r = rt_new_router_opts(HR_SLASH_STRICT, HR_CLEAN_REDIRECT, 1);
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/Static/:Name", 1);
  rt_add(r, "GET", "/a::b", 2);
  m = rt_match(r, "GET", "/STATIC/MiXed");
  assert_int_equal(m.status, 200);
  assert_span(m.params[0].value, "MiXed"); /* values keep their case */
  expect_route(r, "GET", "/static/x", 1);
  expect_route(r, "GET", "/a:b", 2);
  expect_status(r, "get", "/static/x", 501); /* methods stay case-sensitive: "get" is no route's */
  rt_forget(r);

  r = rt_new_router();
  rt_add(r, "GET", "/Static", 1);
  expect_status(r, "GET", "/static", 404);
  rt_forget(r);
}

/* ---- error details ------------------------------------------------------------ */

static void test_error_details(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_error_t err;
  hr_route_options_t o;
  (void)state;
  hr_route_options_init(&o);
  o.error = &err;
  memset(&err, 0, sizeof err);
  assert_int_equal(hr_router_add(r, "GET", "/a/:b-c", rt_noop, NULL, &o),
                   HR_EPATTERN);
  assert_int_equal(err.code, HR_EPATTERN);
  assert_non_null(err.reason);
  assert_true(err.offset >= 3 && err.offset <= 6); /* inside ":b-c" */
  assert_int_equal(err.conflict_len, 0);

  rt_add(r, "GET", "/u/:id", 1);
  memset(&err, 0, sizeof err);
  /* Another name at the same position is another route's own business. */
  assert_int_equal(hr_router_add(r, "POST", "/u/:name", rt_noop, NULL, &o), 0);
  memset(&err, 0, sizeof err);
  assert_int_equal(hr_router_add(r, "GET", "/u/:other", rt_noop, NULL, &o),
                   HR_EEXIST);
  assert_int_equal(err.code, HR_EEXIST);
  assert_string_equal(err.conflict, "GET /u/:id");
  assert_int_equal(err.conflict_len, strlen("GET /u/:id"));
  rt_forget(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_percent_decoding, rt_free_routers),
      cmocka_unit_test_teardown(test_unclean_paths_redirect, rt_free_routers),
      cmocka_unit_test_teardown(test_unclean_paths_reject, rt_free_routers),
      cmocka_unit_test_teardown(test_trailing_slash, rt_free_routers),
      cmocka_unit_test_teardown(test_options, rt_free_routers),
      cmocka_unit_test_teardown(test_hosts_and_groups, rt_free_routers),
      cmocka_unit_test_teardown(test_case_insensitive_and_colon, rt_free_routers),
      cmocka_unit_test_teardown(test_error_details, rt_free_routers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
