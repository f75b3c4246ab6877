/* SPDX-License-Identifier: MIT */
/*
 * The router without a server: pattern registration and its errors, and
 * hr_router_match — priorities (literal > parameter > catch-all, whatever
 * the registration order, with fallback when a more specific branch dead
 * ends), parameters as spans into the input path, 404/405 with Allow, HEAD
 * served by GET, and no allocation while matching.  And hr_router_match's
 * contract with concurrent writers: its result stays valid until the
 * caller's read-side section ends, while another thread replaces the
 * route and the replaced tables wait to be reclaimed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "countalloc.h"
#include "fixture.h"
#include "routerfx.h"


/* ---- priorities and parameters ------------------------------------------ */

static const struct {
  const char *pattern;
  int id;
} prio_routes[] = {
    {"/", 1},
    {"/users/me", 2},
    {"/users/:id", 3},
    {"/users/*rest", 4},
    {"/users/:id/posts/:post", 5},
    {"/files/*path", 6},
    {"/a/:x/c", 7},
    {"/a/b/d", 8},
    {"/a/*rest", 9},
    {"/static/x/y", 10},
};
#define N_PRIO (sizeof prio_routes / sizeof prio_routes[0])

typedef struct prio_case_s {
  const char *path;
  int status;
  int id;
  size_t nparams;
  const char *names[2];
  const char *values[2];
  size_t offsets[2]; /* where each value starts inside path */
} prio_case_t;

static const prio_case_t prio_cases[] = {
    {"/", 200, 1, 0, {0}, {0}, {0}},
    {"/users/me", 200, 2, 0, {0}, {0}, {0}},
    {"/users/42", 200, 3, 1, {"id"}, {"42"}, {7}},
    {"/users/42/x", 200, 4, 1, {"rest"}, {"42/x"}, {7}},
    {"/users/42/posts/9", 200, 5, 2, {"id", "post"}, {"42", "9"}, {7, 16}},
    /* literal "me" dead-ends at "posts": fall back to the parameter */
    {"/users/me/posts/1", 200, 5, 2, {"id", "post"}, {"me", "1"}, {7, 16}},
    {"/users/me/other", 200, 4, 1, {"rest"}, {"me/other"}, {7}},
    {"/files/a/b/c.txt", 200, 6, 1, {"path"}, {"a/b/c.txt"}, {7}},
    {"/files/x", 200, 6, 1, {"path"}, {"x"}, {7}},
    {"/a/b/c", 200, 7, 1, {"x"}, {"b"}, {3}},
    {"/a/b/d", 200, 8, 0, {0}, {0}, {0}},
    {"/a/z/d", 200, 9, 1, {"rest"}, {"z/d"}, {3}},
    {"/a/b", 200, 9, 1, {"rest"}, {"b"}, {3}},
    {"/a/b/c/d", 200, 9, 1, {"rest"}, {"b/c/d"}, {3}},
    {"/files", 404, 0, 0, {0}, {0}, {0}},
    {"/files/", 404, 0, 0, {0}, {0}, {0}}, /* catch-all needs a non-empty rest */
    {"/users", 404, 0, 0, {0}, {0}, {0}},
    {"/nope", 404, 0, 0, {0}, {0}, {0}},
    {"/static/x", 404, 0, 0, {0}, {0}, {0}},
    {"/static/x/y/z", 404, 0, 0, {0}, {0}, {0}},
    {"/USERS/me", 404, 0, 0, {0}, {0}, {0}}, /* paths are case-sensitive */
};

static void run_prio_cases(hr_router_t *r, const char *order) {
  size_t i, k;
  for (i = 0; i < sizeof prio_cases / sizeof prio_cases[0]; i++) {
    const prio_case_t *c = &prio_cases[i];
    hr_span_t path = hr_span_cstr(c->path);
    hr_match_t m;
    memset(&m, 0xEE, sizeof m);
    assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT(""),
                                     path, NULL, 0, &m),
                     0);
    if (m.status != c->status)
      fail_msg("%s order, GET %s: status %d, want %d", order, c->path,
               m.status, c->status);
    if (c->status != 200) {
      assert_null(m.route);
      assert_int_equal(m.nparams, 0);
      assert_int_equal(m.allow.len, 0);
      continue;
    }
    assert_non_null(m.route);
    if (hr_route_udata(m.route) != RT_ID(c->id))
      fail_msg("%s order, GET %s: route %d (%.*s), want %d", order, c->path,
               (int)(intptr_t)hr_route_udata(m.route),
               (int)hr_route_pattern(m.route).len,
               hr_route_pattern(m.route).ptr, c->id);
    assert_int_equal(m.nparams, c->nparams);
    for (k = 0; k < c->nparams; k++) {
      assert_true(hr_span_eq(m.params[k].name, hr_span_cstr(c->names[k])));
      assert_true(hr_span_eq(m.params[k].value, hr_span_cstr(c->values[k])));
      /* a span into the input, not a copy */
      assert_ptr_equal(m.params[k].value.ptr, path.ptr + c->offsets[k]);
    }
  }
}

static void test_priority_forward_order(void **state) {
  hr_router_t *r = rt_new_router();
  size_t i;
  (void)state;
  for (i = 0; i < N_PRIO; i++)
    rt_add(r, "GET", prio_routes[i].pattern, prio_routes[i].id);
  run_prio_cases(r, "forward");
  rt_forget(r);
}

static void test_priority_reverse_order(void **state) {
  hr_router_t *r = rt_new_router();
  size_t i;
  (void)state;
  for (i = N_PRIO; i-- > 0;)
    rt_add(r, "GET", prio_routes[i].pattern, prio_routes[i].id);
  run_prio_cases(r, "reverse");
  rt_forget(r);
}

static void test_pattern_and_udata_accessors(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/users/:id/posts/:post", 77);
  m = rt_match(r, "GET", "/users/1/posts/2");
  assert_int_equal(m.status, 200);
  assert_true(hr_span_eq(hr_route_pattern(m.route),
                         HR_SPAN_LIT("/users/:id/posts/:post")));
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(77));
  rt_forget(r);
}

/* HR_MAX_PARAMS parameters are fine; one more is a pattern error. */
static void test_max_params(void **state) {
  hr_router_t *r = rt_new_router();
  char pat[512], path[512];
  size_t i, pl = 0, ql = 0;
  hr_match_t m;
  (void)state;
  for (i = 0; i < HR_MAX_PARAMS; i++) {
    pl += (size_t)snprintf(pat + pl, sizeof pat - pl, "/:p%zu", i);
    ql += (size_t)snprintf(path + ql, sizeof path - ql, "/v%zu", i);
  }
  assert_int_equal(hr_router_add(r, "GET", pat, rt_noop, NULL, NULL), 0);
  m = rt_match(r, "GET", path);
  assert_int_equal(m.status, 200);
  assert_int_equal(m.nparams, HR_MAX_PARAMS);
  assert_true(hr_span_eq(m.params[15].name, HR_SPAN_LIT("p15")));
  assert_true(hr_span_eq(m.params[15].value, HR_SPAN_LIT("v15")));
  snprintf(pat + pl, sizeof pat - pl, "/:p%d", HR_MAX_PARAMS);
  assert_int_equal(hr_router_add(r, "POST", pat, rt_noop, NULL, NULL),
                   HR_EPATTERN);
  rt_forget(r);
}

/* ---- methods, 404, 405 -------------------------------------------------- */

static void test_methods_and_405(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "PUT", "/x", 1);
  rt_add(r, "DELETE,POST", "/x", 2);
  rt_add(r, "GET,POST", "/g", 3);
  rt_add(r, "*", "/any", 4);
  rt_add(r, "get", "/lower", 5);

  m = rt_match(r, "POST", "/x");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(2));
  m = rt_match(r, "DELETE", "/x");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(2));
  m = rt_match(r, "PUT", "/x");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(1));

  m = rt_match(r, "GET", "/x");
  assert_int_equal(m.status, 405);
  assert_null(m.route);
  assert_true(allow_equiv(m.allow.ptr, m.allow.len, "DELETE, POST, PUT"));
  m = rt_match(r, "HEAD", "/x"); /* no GET route, so HEAD is not served either */
  assert_int_equal(m.status, 405);
  assert_true(allow_equiv(m.allow.ptr, m.allow.len, "DELETE, POST, PUT"));

  /* GET answers HEAD. */
  m = rt_match(r, "HEAD", "/g");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(3));
  m = rt_match(r, "DELETE", "/g");
  assert_int_equal(m.status, 405);
  /* HEAD may or may not be listed next to GET, but sorted, once. */
  assert_true(allow_equiv(m.allow.ptr, m.allow.len, "GET, POST"));

  m = rt_match(r, "PURGE", "/any");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(4));
  m = rt_match(r, "GET", "/any");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(4));

  /* Methods are case-sensitive. */
  m = rt_match(r, "get", "/lower");
  assert_int_equal(m.status, 200);
  m = rt_match(r, "GET", "/lower");
  assert_int_equal(m.status, 405);
  assert_true(allow_equiv(m.allow.ptr, m.allow.len, "get"));

  m = rt_match(r, "GET", "/missing");
  assert_int_equal(m.status, 404);
  assert_int_equal(m.allow.len, 0);
  rt_forget(r);
}

/* An explicit HEAD route wins over GET for HEAD, in either order. */
static void test_head_route_wins(void **state) {
  int order;
  (void)state;
  for (order = 0; order < 2; order++) {
    hr_router_t *r = rt_new_router();
    hr_match_t m;
    if (order == 0) {
      rt_add(r, "GET", "/h", 1);
      rt_add(r, "HEAD", "/h", 2);
    } else {
      rt_add(r, "HEAD", "/h", 2);
      rt_add(r, "GET", "/h", 1);
    }
    m = rt_match(r, "HEAD", "/h");
    assert_ptr_equal(hr_route_udata(m.route), RT_ID(2));
    m = rt_match(r, "GET", "/h");
    assert_ptr_equal(hr_route_udata(m.route), RT_ID(1));
    rt_forget(r);
  }
}

/* Allow when several patterns match the path: sorted, no duplicates. */
static void test_allow_sorted_unique(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  char buf[128];
  (void)state;
  rt_add(r, "POST,PUT", "/x", 1);
  rt_add(r, "PUT,DELETE", "/:p", 2);
  rt_add(r, "PATCH", "/y", 3);
  m = rt_match(r, "PATCH", "/x");
  assert_int_equal(m.status, 405);
  assert_true(m.allow.len < sizeof buf);
  memcpy(buf, m.allow.ptr, m.allow.len);
  buf[m.allow.len] = '\0';
  /* Every route whose path matches counts, the parameter one too. */
  assert_string_equal(buf, "DELETE, OPTIONS, POST, PUT");
  /* OPTIONS without a route of its own: the router answers, with the same
   * union. */
  m = rt_match(r, "OPTIONS", "/x");
  assert_int_equal(m.status, 200);
  assert_null(m.route);
  assert_int_equal(m.allow.len, strlen("DELETE, OPTIONS, POST, PUT"));
  assert_memory_equal(m.allow.ptr, "DELETE, OPTIONS, POST, PUT", m.allow.len);
  rt_forget(r);
}

static void test_match_bad_target(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/", 1);
  m = rt_match(r, "GET", "x/y");
  assert_int_equal(m.status, 400);
  assert_null(m.route);
  m = rt_match(r, "GET", "");
  assert_int_equal(m.status, 400);
  assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT(""),
                                   HR_SPAN_LIT("/"), NULL, 0, NULL),
                   HR_EINVAL);
  rt_forget(r);
}

static void test_empty_router(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  m = rt_match(r, "GET", "/");
  assert_int_equal(m.status, 404);
  assert_null(m.route);
  rt_forget(r);
  hr_router_free(NULL);
}

/* ---- child dispatch ------------------------------------------------------ */

/* A node finds its static children by first byte: a short list below
 * HR__INDEX_MIN (6) children, an index from there.  Every fan-out from 1 to
 * 9 around that boundary, then a node with a child for every byte a pattern
 * may start a segment with (each byte reached through its %XX form). */
static void test_fanout(void **state) {
  static const char letters[] = "qwertyuio";
  size_t n, i;
  (void)state;
  for (n = 1; n <= 9; n++) {
    hr_router_t *r = rt_new_router();
    char pat[16], path[16];
    hr_match_t m;
    for (i = 0; i < n; i++) {
      snprintf(pat, sizeof pat, "/k/%cz", letters[i]);
      rt_add(r, "GET", pat, (int)(i + 1));
    }
    for (i = 0; i < n; i++) {
      snprintf(path, sizeof path, "/k/%cz", letters[i]);
      m = rt_match(r, "GET", path);
      assert_int_equal(m.status, 200);
      assert_ptr_equal(hr_route_udata(m.route), RT_ID(i + 1));
      path[4] = 'y'; /* first byte right, rest wrong */
      assert_int_equal(rt_match(r, "GET", path).status, 404);
    }
    /* first bytes no child has */
    assert_int_equal(rt_match(r, "GET", "/k/az").status, 404);
    assert_int_equal(rt_match(r, "GET", "/k/pz").status, 404);
    rt_forget(r);
  }
}

static int pattern_may_start_segment(unsigned b) {
  return b >= 0x21 && b != 0x7f && b != '?' && b != '#' && b != '%' &&
         b != ':' && b != '*' && b != '/';
}

static void test_fanout_every_byte(void **state) {
  hr_router_t *r = rt_new_router();
  unsigned b;
  size_t kids = 0;
  (void)state;
  for (b = 1; b < 256; b++) {
    char pat[8] = {'/', 'w', '/', (char)b, 'x', '\0'};
    if (!pattern_may_start_segment(b)) continue;
    rt_add(r, "GET", pat, (int)b);
    kids++;
  }
  assert_int_equal(kids, 216); /* 0x21..0xff (223 bytes) less 7 */
  for (b = 1; b < 256; b++) {
    char path[16];
    hr_match_t m;
    snprintf(path, sizeof path, "/w/%%%02Xx", b);
    m = rt_match(r, "GET", path);
    if (pattern_may_start_segment(b)) {
      assert_int_equal(m.status, 200);
      assert_ptr_equal(hr_route_udata(m.route), RT_ID(b));
    } else {
      /* no such child ('/' and '?' stay encoded, so no child either) */
      assert_int_equal(m.status, 404);
    }
  }
}

/* A parameter ends at the first '/', also when a '.' comes right before it
 * in the same eight bytes (the word-wide search must not stop there). */
static void test_param_ends_at_slash(void **state) {
  static const char *values[] = {"abcdef.", "abcde..", "v1.2.", ".", "a.b.c.d.e.f.g.h."};
  hr_router_t *r = rt_new_router();
  size_t i;
  (void)state;
  rt_add(r, "GET", "/f/:name/meta", 1);
  for (i = 0; i < sizeof values / sizeof values[0]; i++) {
    char path[64];
    hr_match_t m;
    snprintf(path, sizeof path, "/f/%s/meta", values[i]);
    m = rt_match(r, "GET", path);
    if (strcmp(values[i], ".") == 0) {
      assert_int_equal(m.status, 301); /* a dot segment: cleaned */
      continue;
    }
    assert_int_equal(m.status, 200);
    assert_int_equal(m.nparams, 1);
    assert_int_equal(m.params[0].value.len, strlen(values[i]));
    assert_memory_equal(m.params[0].value.ptr, values[i], strlen(values[i]));
  }
}

/* ---- the same route: replace, remove, stats ------------------------------ */

/* "The same pattern" is the router's: equal up to parameter names, and to
 * the case of literal text on a case-insensitive router. */
static void test_same_pattern_up_to_names_and_case(void **state) {
  hr_router_t *r = rt_new_router_opts(HR_SLASH_STRICT, HR_CLEAN_REDIRECT, 1);
  hr_route_options_t o;
  hr_route_stats_t st;
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/Users", 1);
  rt_add(r, "GET", "/u/:id", 2);
  assert_int_equal(hr_router_add(r, "GET", "/u/:x", rt_noop, RT_ID(9), NULL), HR_EEXIST);
  hr_route_options_init(&o);
  o.replace = 1;
  assert_int_equal(hr_router_add(r, "GET", "/u/:x", rt_noop, RT_ID(3), &o), 0);
  m = rt_match(r, "GET", "/u/7");
  assert_int_equal(m.status, 200);
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(3));
  assert_int_equal(m.params[0].name.len, 1);
  assert_memory_equal(m.params[0].name.ptr, "x", 1);
  assert_int_equal(hr_router_route_stats(r, NULL, "GET", "/u/:other", &st), 0);
  assert_int_equal(hr_router_route_stats(r, NULL, "POST", "/u/:other", &st), HR_ENOTFOUND);
  assert_int_equal(hr_router_add(r, "GET", "/USERS", rt_noop, RT_ID(4), &o), 0);
  assert_ptr_equal(hr_route_udata(rt_match(r, "GET", "/users").route), RT_ID(4));
  assert_int_equal(hr_router_remove(r, "GET", "/uSeRs"), 0);
  assert_int_equal(rt_match(r, "GET", "/users").status, 404);
  assert_int_equal(hr_router_remove(r, "GET", "/u/:y"), 0);
  assert_int_equal(rt_match(r, "GET", "/u/7").status, 404);
  assert_int_equal(hr_router_remove(r, "GET", "/u/:y"), HR_ENOTFOUND);
  /* a catch-all is not a parameter, and literal text is not either */
  rt_add(r, "GET", "/v/:id", 5);
  assert_int_equal(hr_router_remove(r, "GET", "/v/*id"), HR_ENOTFOUND);
  assert_int_equal(hr_router_remove(r, "GET", "/v/id"), HR_ENOTFOUND);
}

/* ---- group hosts ---------------------------------------------------------- */

static void test_group_host_names(void **state) {
  static const char *bad[] = {"example.com:8080", "[::1]:80", "[::1", "::1", "a[b]",
                              ".", "", "a b", "a/b", "a@b"};
  hr_router_t *r = rt_new_router();
  hr_group_t *g;
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (hr_router_group(r, bad[i], NULL, &g) != HR_EINVAL)
      fail_msg("host \"%s\" accepted", bad[i]);
  assert_int_equal(hr_router_group(r, "Example.ORG.", NULL, &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/a", rt_noop, RT_ID(1), NULL), 0);
  assert_int_equal(hr_router_group(r, "[::1]", NULL, &g), 0);
  assert_int_equal(hr_group_add(g, "GET", "/a", rt_noop, RT_ID(2), NULL), 0);
  rt_add(r, "GET", "/a", 3);
  /* port removed and trailing dot ignored, on both sides */
  assert_ptr_equal(hr_route_udata(rt_match_host(r, "GET", "example.org", "/a").route), RT_ID(1));
  assert_ptr_equal(hr_route_udata(rt_match_host(r, "GET", "EXAMPLE.org.:8080", "/a").route),
                   RT_ID(1));
  assert_ptr_equal(hr_route_udata(rt_match_host(r, "GET", "", "http://example.org.:80/a").route),
                   RT_ID(1));
  assert_ptr_equal(hr_route_udata(rt_match_host(r, "GET", "[::1]:8080", "/a").route), RT_ID(2));
  assert_ptr_equal(hr_route_udata(rt_match_host(r, "GET", "example.net", "/a").route), RT_ID(3));
  assert_ptr_equal(hr_route_udata(rt_match_host(r, "GET", "example.org..", "/a").route), RT_ID(3));
}

/* ---- registration errors ------------------------------------------------ */

static const struct {
  const char *methods;
  const char *pattern;
  int rc;
} bad_cases[] = {
    {"GET", "/a/*x/b", HR_EPATTERN},   /* catch-all not last */
    {"GET", "/a/:", HR_EPATTERN},      /* empty parameter name */
    {"GET", "/a/:b-c", HR_EPATTERN},   /* '-' not in [A-Za-z0-9_] */
    {"GET", "/a/*", HR_EPATTERN},      /* empty catch-all name */
    {"GET", "/a/*x-y", HR_EPATTERN},
    {"GET", "a/b", HR_EPATTERN},       /* not starting with '/' */
    {"GET", "", HR_EPATTERN},
    {"GET", "*x", HR_EPATTERN},
    {"", "/ok", HR_EINVAL},
    {"G T", "/ok", HR_EINVAL},
    {"GE(T", "/ok", HR_EINVAL},
    {"GET,", "/ok", HR_EINVAL},
    {",GET", "/ok", HR_EINVAL},
    {"GET,,POST", "/ok", HR_EINVAL},
    {"GET\r\n", "/ok", HR_EINVAL},
    {"GET,GET", "/ok", HR_EINVAL},       /* repeated method */
    {"GET,*", "/ok", HR_EINVAL},         /* "*" (every method) stands alone */
    {"*,GET", "/ok", HR_EINVAL},
    {"*,*", "/ok", HR_EINVAL},
    {"GET", "/a%2", HR_EPATTERN},        /* '%' starts an escape */
    {"GET", "/a%zz", HR_EPATTERN},
    {"GET", "/a%00", HR_EPATTERN},       /* as in a request */
    {"GET", "/{}", HR_EPATTERN},         /* empty name */
    {"GET", "/{*a}/b", HR_EPATTERN},     /* a catch-all is last */
    {"GET", "/{a b}", HR_EPATTERN},
    {"GET", "/d/:x/:x", HR_EPATTERN},    /* a name used twice */
    {"GET", "/d/{x}/{*x}", HR_EPATTERN},
    {"GET", "/f/%2E%2E", HR_EPATTERN},   /* a dot segment, escaped */
    {"GET", "/f/%2e", HR_EPATTERN},
    {"GET", "/g/.%2e/x", HR_EPATTERN},
    {"GET", "/a/:x:y", HR_EPATTERN},     /* two parameters in a segment */
    {"GET", "/a/\x01", HR_EPATTERN},     /* control byte */
};

static void test_registration_errors(void **state) {
  hr_router_t *r = rt_new_router();
  size_t i;
  hr_match_t m;
  (void)state;
  for (i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    int rc = hr_router_add(r, bad_cases[i].methods, bad_cases[i].pattern,
                           rt_noop, NULL, NULL);
    if (rc != bad_cases[i].rc)
      fail_msg("add \"%s\" \"%s\": %s, want %s", bad_cases[i].methods,
               bad_cases[i].pattern, hr_err_name(rc),
               hr_err_name(bad_cases[i].rc));
  }
  /* On error nothing changed. */
  m = rt_match(r, "GET", "/ok");
  assert_int_equal(m.status, 404);
  m = rt_match(r, "GET", "/a/x/b");
  assert_int_equal(m.status, 404);
  rt_forget(r);
}

static void test_bad_route_fields(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_options_t o;
  hr_field_t bad_name[] = {{HR_SPAN_LIT("Bad Name"), HR_SPAN_LIT("x")}};
  hr_field_t bad_value[] = {{HR_SPAN_LIT("X-A"), HR_SPAN_LIT("a\r\nb")}};
  hr_field_t nul_value[] = {{HR_SPAN_LIT("X-A"), {"a\0b", 3}}};
  hr_field_t good[] = {{HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain")}};
  (void)state;
  hr_route_options_init(&o);
  o.fields = bad_name;
  o.nfields = 1;
  assert_int_equal(hr_router_add(r, "GET", "/f", rt_noop, NULL, &o), HR_EINVAL);
  o.fields = bad_value;
  assert_int_equal(hr_router_add(r, "GET", "/f", rt_noop, NULL, &o), HR_EINVAL);
  o.fields = nul_value;
  assert_int_equal(hr_router_add(r, "GET", "/f", rt_noop, NULL, &o), HR_EINVAL);
  assert_int_equal(rt_match(r, "GET", "/f").status, 404);
  o.fields = good;
  assert_int_equal(hr_router_add(r, "GET", "/f", rt_noop, NULL, &o), 0);
  assert_int_equal(rt_match(r, "GET", "/f").status, 200);
  rt_forget(r);
}

static void test_duplicates(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m;
  (void)state;
  rt_add(r, "GET", "/d", 1);
  rt_add(r, "GET", "/d/:x", 2);
  assert_int_equal(hr_router_add(r, "GET", "/d", rt_noop, RT_ID(9), NULL),
                   HR_EEXIST);
  /* Same method and pattern up to parameter names: HR_EEXIST. */
  assert_int_equal(hr_router_add(r, "GET", "/d/:y", rt_noop, RT_ID(9), NULL),
                   HR_EEXIST);
  /* Same position, other name, other method: a route of its own, which
   * reports its own name. */
  rt_add(r, "PUT", "/d/:y", 5);
  m = rt_match(r, "PUT", "/d/7");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(5));
  assert_int_equal(m.params[0].name.len, 1);
  assert_memory_equal(m.params[0].name.ptr, "y", 1);
  m = rt_match(r, "GET", "/d/7");
  assert_memory_equal(m.params[0].name.ptr, "x", 1);
  rt_add(r, "DELETE", "/d/:x", 4);
  /* One duplicate method fails the whole call: POST is not added. */
  assert_int_equal(hr_router_add(r, "POST,GET", "/d", rt_noop, RT_ID(9), NULL),
                   HR_EEXIST);
  m = rt_match(r, "POST", "/d");
  /* No POST route anywhere: POST is standard, so 405 on a path that
   * matches (issue 24), not 501. */
  assert_int_equal(m.status, 405);
  m = rt_match(r, "GET", "/d");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(1));
  m = rt_match(r, "GET", "/d/7");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(2));
  /* Another method on the same pattern is fine. */
  rt_add(r, "POST", "/d", 3);
  m = rt_match(r, "POST", "/d");
  assert_ptr_equal(hr_route_udata(m.route), RT_ID(3));
  rt_forget(r);
}

/* ---- allocation --------------------------------------------------------- */

/* At most 64 distinct extension methods per router; the 65th is refused
 * and changes nothing, and a repeated one costs nothing more. */
static void test_extension_method_limit(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_options_t o;
  hr_route_error_t err;
  char m[16], p[32];
  int i;
  (void)state;
  for (i = 0; i < 64; i++) {
    snprintf(m, sizeof m, "X%d", i);
    snprintf(p, sizeof p, "/m/%d", i);
    assert_int_equal(hr_router_add(r, m, p, rt_noop, RT_ID(i), NULL), 0);
  }
  assert_int_equal(hr_router_add(r, "X0", "/again", rt_noop, RT_ID(100), NULL), 0);
  hr_route_options_init(&o);
  o.error = &err;
  assert_int_equal(hr_router_add(r, "X64", "/m/64", rt_noop, RT_ID(64), &o), HR_ETOOLARGE);
  assert_int_equal(err.code, HR_ETOOLARGE);
  assert_int_equal(err.conflict_len, 0); /* no registered route is in the way */
  assert_int_equal(rt_match(r, "X64", "/m/64").status, 501);
  assert_ptr_equal(hr_route_udata(rt_match(r, "X63", "/m/63").route), RT_ID(63));
  /* 405 lists extension methods, sorted with the standard ones. */
  assert_int_equal(rt_match(r, "X1", "/m/2").status, 405);
  assert_int_equal(rt_match(r, "X1", "/m/2").allow.len, strlen("OPTIONS, X2"));
  assert_memory_equal(rt_match(r, "X1", "/m/2").allow.ptr, "OPTIONS, X2", strlen("OPTIONS, X2"));
  rt_forget(r);
}

/* hr_match_t.need suffices, exactly: here for a trailing-slash redirect
 * whose Location encodes 200 raw bytes (three bytes each) after the
 * decoded path. */
static void test_need_suffices(void **state) {
  hr_router_t *r = rt_new_router_opts(1, 0, 0);
  char target[256], *buf;
  hr_match_t m;
  size_t i;
  (void)state;
  rt_add(r, "GET", "/h/:me/", 1);
  memcpy(target, "/h/%C2", 6);
  memset(target + 6, 0xff, 200);
  assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT(""),
                                   (hr_span_t){target, 206}, NULL, 0, &m),
                   HR_ENOSPC);
  buf = malloc(m.need);
  assert_non_null(buf);
  assert_int_equal(hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT(""),
                                   (hr_span_t){target, 206}, buf, m.need, &m),
                   0);
  assert_int_equal(m.status, 301);
  assert_int_equal(m.location.len, 6 + 3 * 200 + 1);
  assert_memory_equal(m.location.ptr, "/h/%C2%FF%FF", 12);
  assert_int_equal(m.location.ptr[m.location.len - 1], '/');
  for (i = 0; i < m.location.len; i++) assert_true((unsigned char)m.location.ptr[i] < 0x80);
  free(buf);
  rt_forget(r);
}

/* HEAD: a route naming GET is more specific than a "*" route at the same
 * place; a HEAD route more still. */
static void test_head_prefers_get_to_any(void **state) {
  hr_router_t *r = rt_new_router();
  (void)state;
  rt_add(r, "GET", "/u/:id", 1);
  rt_add(r, "*", "/u/:star", 2);
  assert_ptr_equal(hr_route_udata(rt_match(r, "HEAD", "/u/7").route), RT_ID(1));
  assert_ptr_equal(hr_route_udata(rt_match(r, "PUT", "/u/7").route), RT_ID(2));
  assert_memory_equal(rt_match(r, "HEAD", "/u/7").params[0].name.ptr, "id", 2);
  assert_memory_equal(rt_match(r, "PUT", "/u/7").params[0].name.ptr, "star", 4);
  rt_add(r, "HEAD", "/u/:h", 3);
  assert_ptr_equal(hr_route_udata(rt_match(r, "HEAD", "/u/7").route), RT_ID(3));
  rt_forget(r);
}

/* A redirect never leads to a 400: a path whose parameter would decode to
 * a ".." segment is refused at once, cleaned or not. */
static void test_redirect_never_to_400(void **state) {
  hr_router_t *r = rt_new_router_opts(1, 0, 0);
  (void)state;
  rt_add(r, "GET", "/f/:name", 1);
  rt_add(r, "GET", "/s/:name/", 2);
  assert_int_equal(rt_match(r, "GET", "/f/..%2F").status, 400);
  assert_int_equal(rt_match(r, "GET", "/f/./..%2F").status, 400);   /* was 301 to it */
  assert_int_equal(rt_match(r, "GET", "//f/x%2F..").status, 400);
  assert_int_equal(rt_match(r, "GET", "/s/..%2F").status, 400);     /* was 301 to ../ */
  assert_int_equal(rt_match(r, "GET", "/s/x").status, 301);
  assert_int_equal(rt_match(r, "GET", "/f/./a..%2Fb").status, 301); /* no ".." segment */
  rt_forget(r);
}

static void test_match_does_not_allocate(void **state) {
  ca_t ca;
  hr_router_options_t ro;
  hr_router_t *r = NULL;
  uint64_t before;
  int i;
  hr_match_t m;
  (void)state;
  ca_init(&ca);
  hr_router_options_init(&ro);
  ro.allocator = &ca.hook;
  assert_int_equal(hr_router_new(&r, &ro), 0);
  assert_int_equal(hr_router_add(r, "GET", "/users/:id", rt_noop, NULL, NULL),
                   0);
  assert_int_equal(hr_router_add(r, "GET", "/f/*rest", rt_noop, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "POST", "/p", rt_noop, NULL, NULL), 0);
  assert_true(ca_calls(&ca) > 0); /* the hook is used */
  before = ca_calls(&ca);
  for (i = 0; i < 1000; i++) {
    m = rt_match(r, "GET", "/users/42");
    assert_int_equal(m.status, 200);
    m = rt_match(r, "GET", "/f/a/b");
    assert_int_equal(m.status, 200);
    m = rt_match(r, "GET", "/p");
    assert_int_equal(m.status, 405);
    m = rt_match(r, "GET", "/zzz");
    assert_int_equal(m.status, 404);
  }
  assert_int_equal(ca_calls(&ca), before);
  rt_forget(r);
  assert_int_equal(ca_live(&ca), 0);
  ca_destroy(&ca);
}

/* ---- a match's result and concurrent writers ------------------------------- */

enum { REPLACEMENTS = 40 }; /* more than a batch of replaced tables (16) */

static void *replace_item(void *arg) {
  hr_router_t *r = arg;
  hr_route_options_t o;
  intptr_t i, failed = 0;
  hr_route_options_init(&o);
  o.replace = 1;
  for (i = 0; i < REPLACEMENTS; i++)
    if (hr_router_add(r, "GET", "/item/:id", rt_noop, RT_ID(2), &o) != 0) failed++;
  return (void *)failed;
}

/* The section taken around hr_router_match (it takes none itself) keeps
 * the matched route, its parameter names and its Allow valid while
 * another thread replaces the route: the writer's reclamation waits for
 * the unlock.  Under ASan a dangling result would be a use-after-free. */
static void test_match_result_lives_until_unlock(void **state) {
  hr_router_t *r = rt_new_router();
  hr_match_t m, m405, now;
  pthread_t writer;
  void *failed, *seen_new, *udata;
  unsigned long long end;
  int pattern_ok, names_ok, allow_ok;
  (void)state;
  rt_add(r, "GET", "/item/:id", 1);
  rt_add(r, "GET,DELETE", "/other/:x", 3);
  rt_add(r, "PUT", "/third", 4);
  hr_router_read_lock();
  m = rt_match(r, "GET", "/item/7");
  m405 = rt_match(r, "PUT", "/other/1");
  assert_int_equal(pthread_create(&writer, NULL, replace_item, r), 0);
  /* Wait until this section sees the writer's first table. */
  end = now_ms() + RC_TIMEOUT_MS;
  do {
    seen_new = NULL;
    if (hr_router_match(r, HR_SPAN_LIT("GET"), HR_SPAN_LIT("a"), HR_SPAN_LIT("/item/7"), NULL,
                        0, &now) == 0 &&
        now.route != NULL)
      seen_new = hr_route_udata(now.route);
  } while (seen_new != RT_ID(2) && now_ms() < end);
  /* The first result, from the replaced table, is still whole (read
   * here, asserted after the unlock so that a failure leaves no section
   * open under the blocked writer). */
  udata = m.route != NULL ? hr_route_udata(m.route) : NULL;
  pattern_ok = m.route != NULL && hr_span_eq(hr_route_pattern(m.route), HR_SPAN_LIT("/item/:id"));
  names_ok = m.nparams == 1 && hr_span_eq(m.params[0].name, HR_SPAN_LIT("id")) &&
             hr_span_eq(m.params[0].value, HR_SPAN_LIT("7"));
  allow_ok = m405.status == 405 && allow_equiv(m405.allow.ptr, m405.allow.len, "DELETE, GET");
  hr_router_read_unlock();
  assert_int_equal(pthread_join(writer, &failed), 0);
  assert_null(failed);
  assert_int_equal(m.status, 200);
  assert_ptr_equal(seen_new, RT_ID(2));
  assert_ptr_equal(udata, RT_ID(1));
  assert_true(pattern_ok);
  assert_true(names_ok);
  assert_true(allow_ok);
  now = rt_match(r, "GET", "/item/7");
  assert_ptr_equal(hr_route_udata(now.route), RT_ID(2));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_priority_forward_order, rt_free_routers),
      cmocka_unit_test_teardown(test_priority_reverse_order, rt_free_routers),
      cmocka_unit_test_teardown(test_pattern_and_udata_accessors, rt_free_routers),
      cmocka_unit_test_teardown(test_max_params, rt_free_routers),
      cmocka_unit_test_teardown(test_methods_and_405, rt_free_routers),
      cmocka_unit_test_teardown(test_head_route_wins, rt_free_routers),
      cmocka_unit_test_teardown(test_allow_sorted_unique, rt_free_routers),
      cmocka_unit_test_teardown(test_match_bad_target, rt_free_routers),
      cmocka_unit_test_teardown(test_empty_router, rt_free_routers),
      cmocka_unit_test_teardown(test_fanout, rt_free_routers),
      cmocka_unit_test_teardown(test_fanout_every_byte, rt_free_routers),
      cmocka_unit_test_teardown(test_param_ends_at_slash, rt_free_routers),
      cmocka_unit_test_teardown(test_same_pattern_up_to_names_and_case, rt_free_routers),
      cmocka_unit_test_teardown(test_group_host_names, rt_free_routers),
      cmocka_unit_test_teardown(test_registration_errors, rt_free_routers),
      cmocka_unit_test_teardown(test_bad_route_fields, rt_free_routers),
      cmocka_unit_test_teardown(test_duplicates, rt_free_routers),
      cmocka_unit_test_teardown(test_extension_method_limit, rt_free_routers),
      cmocka_unit_test_teardown(test_need_suffices, rt_free_routers),
      cmocka_unit_test_teardown(test_head_prefers_get_to_any, rt_free_routers),
      cmocka_unit_test_teardown(test_redirect_never_to_400, rt_free_routers),
      cmocka_unit_test_teardown(test_match_does_not_allocate, rt_free_routers),
      cmocka_unit_test_teardown(test_match_result_lives_until_unlock, rt_free_routers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
