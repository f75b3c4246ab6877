/* SPDX-License-Identifier: MIT */
/*
 * CORS (hroute/cors.h), through the in-process test client.  Each answer is
 * judged the way a browser judges it: the Fetch standard's CORS check and
 * its CORS-preflight checks are written out below (cors_check,
 * preflight_ok), one branch per step, and every step is made to pass and
 * made to fail: the allowed origin missing, "*" with credentials, another
 * origin, Access-Control-Allow-Credentials missing, a preflight status that
 * is not ok, a method not allowed (safelisted ones always are), a request
 * header not allowed.  Besides: Vary on every answer that depends on the
 * origin, exposed headers, Max-Age, the three ways to allow origins (a
 * list, https suffixes, a callback), the methods from the router's Allow
 * set, a configured list, or a path with an OPTIONS route of its own
 * (answered before its handler), and every configuration the policy
 * refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <hroute.h>

static int custom_options_ran;

static void h_ok(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("ETag"), HR_SPAN_LIT("\"v1\""));
  hr_response_send(res, 200, "ok", 2);
}

static void h_custom_options(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  custom_options_ran++;
  hr_response_send(res, 200, "mine", 4);
}

/* ---- what a browser checks (Fetch) ---------------------------------------- */

static int list_has(const char *list, const char *item, int nocase) {
  char buf[256], *save = NULL, *tok;
  if (list == NULL) return 0;
  snprintf(buf, sizeof buf, "%s", list);
  for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save))
    if (nocase ? strcasecmp(tok, item) == 0 : strcmp(tok, item) == 0) return 1;
  return 0;
}

/* The CORS check (Fetch §4.9): 1 success, 0 failure. */
static int cors_check(const hr_test_response_t *r, const char *origin, int credentials) {
  const char *acao = hr_test_field(r, "Access-Control-Allow-Origin");
  const char *acac;
  if (acao == NULL) return 0;                             /* step 2 */
  if (!credentials && strcmp(acao, "*") == 0) return 1;   /* step 3 */
  if (strcmp(acao, origin) != 0) return 0;                /* step 4 */
  if (!credentials) return 1;                             /* step 5 */
  acac = hr_test_field(r, "Access-Control-Allow-Credentials");
  return acac != NULL && strcmp(acac, "true") == 0;       /* steps 6, 7 */
}

static int safelisted(const char *m) {
  return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "POST") == 0;
}

/* The CORS-preflight fetch's checks (Fetch §4.8): ok status, the CORS
 * check, then the methods and the request headers. */
static int preflight_ok(const hr_test_response_t *r, const char *origin, int credentials,
                        const char *method, const char *headers) {
  const char *acam = hr_test_field(r, "Access-Control-Allow-Methods");
  const char *acah = hr_test_field(r, "Access-Control-Allow-Headers");
  char buf[256], *save = NULL, *tok;
  if (r->status < 200 || r->status > 299) return 0;
  if (!cors_check(r, origin, credentials)) return 0;
  if (!list_has(acam, method, 0) && !safelisted(method) &&
      (credentials || !list_has(acam, "*", 0)))
    return 0;
  if (headers == NULL) return 1;
  snprintf(buf, sizeof buf, "%s", headers);
  for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save))
    if (!list_has(acah, tok, 1) && (credentials || !list_has(acah, "*", 0))) return 0;
  return 1;
}

/* ---- requests --------------------------------------------------------------- */

static hr_router_t *routes(void) {
  hr_router_t *r;
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET,PUT", "/items/:id", h_ok, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "GET", "/custom", h_ok, NULL, NULL), 0);
  assert_int_equal(hr_router_add(r, "OPTIONS", "/custom", h_custom_options, NULL, NULL), 0);
  {
    static const hr_field_t vary = {HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Cookie")};
    hr_route_options_t ro;
    hr_route_options_init(&ro);
    ro.fields = &vary;
    ro.nfields = 1;
    assert_int_equal(hr_router_add(r, "GET", "/varied", h_ok, NULL, &ro), 0);
  }
  return r;
}

typedef struct {
  hr_router_t *router;
  hr_cors_t *cors;
  hr_test_t *t;
} env_t;

static void env_open(env_t *e, const hr_cors_options_t *o) {
  e->router = routes();
  assert_int_equal(hr_cors_new(&e->cors, e->router, o), 0);
  assert_int_equal(hr_router_use(e->router, NULL, NULL, hr_cors_before, NULL, e->cors), 0);
  assert_int_equal(hr_test_new(&e->t, e->router, NULL), 0);
}

static void env_close(env_t *e) {
  hr_test_free(e->t);
  hr_router_free(e->router);
  hr_cors_free(e->cors);
}

/* A request with Origin (NULL: none); a preflight when `acrm` is set. */
static void ask(env_t *e, const char *method, const char *target, const char *origin,
                const char *acrm, const char *acrh, hr_test_response_t *res) {
  hr_field_t f[3];
  hr_test_request_t req;
  size_t n = 0;
  if (origin) f[n++] = (hr_field_t){HR_SPAN_LIT("Origin"), hr_span_cstr(origin)};
  if (acrm) f[n++] = (hr_field_t){HR_SPAN_LIT("Access-Control-Request-Method"), hr_span_cstr(acrm)};
  if (acrh) f[n++] = (hr_field_t){HR_SPAN_LIT("Access-Control-Request-Headers"), hr_span_cstr(acrh)};
  memset(&req, 0, sizeof req);
  req.method = method;
  req.target = target;
  req.fields = f;
  req.nfields = n;
  assert_int_equal(hr_test_do(e->t, &req, 0, res), 0);
}

static const char *const app[] = {"https://app.example", "http://localhost:8080"};

static void test_listed_origins_with_credentials(void **state) {
  hr_cors_options_t o;
  hr_test_response_t r;
  env_t e;
  (void)state;
  hr_cors_options_init(&o);
  o.origins = app;
  o.norigins = 2;
  o.credentials = 1;
  o.expose_headers = "ETag";
  o.max_age = 600;
  env_open(&e, &o);

  /* An actual request from an allowed origin passes the CORS check. */
  ask(&e, "GET", "/items/1", "https://app.example", NULL, NULL, &r);
  assert_int_equal(r.status, 200);
  assert_true(cors_check(&r, "https://app.example", 1));
  assert_string_equal(hr_test_field(&r, "Access-Control-Expose-Headers"), "ETag");
  assert_string_equal(hr_test_field(&r, "Vary"), "Origin");
  hr_test_response_free(&r);
  /* Another origin: the handler answers, the browser refuses (step 2). */
  ask(&e, "GET", "/items/1", "https://evil.example", NULL, NULL, &r);
  assert_int_equal(r.status, 200);
  assert_false(cors_check(&r, "https://evil.example", 1));
  assert_null(hr_test_field(&r, "Access-Control-Allow-Origin"));
  assert_string_equal(hr_test_field(&r, "Vary"), "Origin");
  hr_test_response_free(&r);
  /* A route's own Vary stays beside the policy's. */
  ask(&e, "GET", "/varied", "https://app.example", NULL, NULL, &r);
  {
    size_t i, seen = 0;
    for (i = 0; i < r.nfields; i++)
      if (strcasecmp(r.fields[i].name.ptr, "Vary") == 0)
        seen |= strcmp(r.fields[i].value.ptr, "Cookie") == 0 ? 1u : strcmp(r.fields[i].value.ptr, "Origin") == 0 ? 2u : 4u;
    assert_int_equal(seen, 3);
  }
  hr_test_response_free(&r);
  /* No Origin: same-origin or not a browser; still Vary. */
  ask(&e, "GET", "/items/1", NULL, NULL, NULL, &r);
  assert_null(hr_test_field(&r, "Access-Control-Allow-Origin"));
  assert_string_equal(hr_test_field(&r, "Vary"), "Origin");
  hr_test_response_free(&r);
  /* The check compares byte for byte (step 4): the answer is the origin
   * as sent. */
  ask(&e, "GET", "/items/1", "http://localhost:8080", NULL, NULL, &r);
  assert_true(cors_check(&r, "http://localhost:8080", 1));
  assert_false(cors_check(&r, "https://app.example", 1));
  hr_test_response_free(&r);

  /* A preflight for PUT, which the path answers: 204 and every check
   * passes; the methods are the path's Allow set. */
  ask(&e, "OPTIONS", "/items/1", "https://app.example", "PUT", "content-type", &r);
  assert_int_equal(r.status, 204);
  assert_true(preflight_ok(&r, "https://app.example", 1, "PUT", "content-type"));
  assert_string_equal(hr_test_field(&r, "Access-Control-Allow-Methods"), "GET, HEAD, OPTIONS, PUT");
  assert_string_equal(hr_test_field(&r, "Access-Control-Allow-Headers"), "content-type");
  assert_string_equal(hr_test_field(&r, "Access-Control-Max-Age"), "600");
  assert_string_equal(hr_test_field(&r, "Vary"),
                      "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
  hr_test_response_free(&r);
  /* DELETE, which it does not: the router's own OPTIONS answer, without
   * CORS fields: the methods check fails as the CORS check does. */
  ask(&e, "OPTIONS", "/items/1", "https://app.example", "DELETE", NULL, &r);
  assert_int_equal(r.status, 200);
  assert_string_equal(hr_test_field(&r, "Allow"), "GET, HEAD, OPTIONS, PUT");
  assert_false(preflight_ok(&r, "https://app.example", 1, "DELETE", NULL));
  hr_test_response_free(&r);
  /* No route at all: 404, not ok. */
  ask(&e, "OPTIONS", "/nothing", "https://app.example", "GET", NULL, &r);
  assert_int_equal(r.status, 404);
  assert_false(preflight_ok(&r, "https://app.example", 1, "GET", NULL));
  hr_test_response_free(&r);
  /* An origin not allowed. */
  ask(&e, "OPTIONS", "/items/1", "https://evil.example", "PUT", NULL, &r);
  assert_false(preflight_ok(&r, "https://evil.example", 1, "PUT", NULL));
  hr_test_response_free(&r);
  /* A path with an OPTIONS route of its own: the preflight is answered
   * before that handler; the method is the one asked, when a route has it;
   * a plain OPTIONS still reaches the handler. */
  custom_options_ran = 0;
  ask(&e, "OPTIONS", "/custom", "https://app.example", "GET", NULL, &r);
  assert_int_equal(r.status, 204);
  assert_true(preflight_ok(&r, "https://app.example", 1, "GET", NULL));
  assert_string_equal(hr_test_field(&r, "Access-Control-Allow-Methods"), "GET");
  hr_test_response_free(&r);
  ask(&e, "OPTIONS", "/custom", "https://app.example", "PUT", NULL, &r);
  assert_false(preflight_ok(&r, "https://app.example", 1, "PUT", NULL));
  hr_test_response_free(&r);
  assert_int_equal(custom_options_ran, 1);
  ask(&e, "OPTIONS", "/custom", NULL, NULL, NULL, &r);
  assert_string_equal(r.body, "mine");
  hr_test_response_free(&r);
  assert_int_equal(custom_options_ran, 2);
  env_close(&e);
}

static void test_credentials_and_headers_checks(void **state) {
  static const char *const any[] = {"*"};
  hr_cors_options_t o;
  hr_test_response_t r;
  env_t e;
  (void)state;
  /* "*": any origin, no credentials, no Vary on Origin. */
  hr_cors_options_init(&o);
  o.origins = any;
  o.norigins = 1;
  o.allow_headers = "Content-Type, X-Token";
  o.methods = "GET, PUT, PATCH";
  env_open(&e, &o);
  ask(&e, "GET", "/items/1", "https://who.example", NULL, NULL, &r);
  assert_string_equal(hr_test_field(&r, "Access-Control-Allow-Origin"), "*");
  assert_true(cors_check(&r, "https://who.example", 0));
  assert_false(cors_check(&r, "https://who.example", 1)); /* "*" with credentials */
  assert_null(hr_test_field(&r, "Vary"));
  hr_test_response_free(&r);
  /* Headers: all asked for must be allowed (case-insensitively). */
  ask(&e, "OPTIONS", "/items/1", "https://who.example", "PATCH", "x-token,content-type", &r);
  assert_int_equal(r.status, 204);
  assert_true(preflight_ok(&r, "https://who.example", 0, "PATCH", "x-token,content-type"));
  assert_string_equal(hr_test_field(&r, "Access-Control-Allow-Methods"), "GET, PUT, PATCH");
  assert_string_equal(hr_test_field(&r, "Access-Control-Allow-Headers"), "Content-Type, X-Token");
  assert_null(hr_test_field(&r, "Access-Control-Max-Age"));
  assert_string_equal(hr_test_field(&r, "Vary"),
                      "Access-Control-Request-Method, Access-Control-Request-Headers");
  hr_test_response_free(&r);
  ask(&e, "OPTIONS", "/items/1", "https://who.example", "PUT", "x-token, x-other", &r);
  assert_false(preflight_ok(&r, "https://who.example", 0, "PUT", "x-token, x-other"));
  assert_null(hr_test_field(&r, "Access-Control-Allow-Headers"));
  hr_test_response_free(&r);
  /* A configured list: DELETE is not in it; POST is safelisted. */
  ask(&e, "OPTIONS", "/items/1", "https://who.example", "DELETE", NULL, &r);
  assert_false(preflight_ok(&r, "https://who.example", 0, "DELETE", NULL));
  hr_test_response_free(&r);
  ask(&e, "OPTIONS", "/items/1", "https://who.example", "POST", NULL, &r);
  assert_true(preflight_ok(&r, "https://who.example", 0, "POST", NULL));
  hr_test_response_free(&r);
  env_close(&e);

  /* Credentials allowed but the answer's Access-Control-Allow-Credentials
   * missing fails the check (steps 6, 7): a policy without credentials,
   * judged by a request with them. */
  hr_cors_options_init(&o);
  o.origins = app;
  o.norigins = 1;
  env_open(&e, &o);
  ask(&e, "GET", "/items/1", "https://app.example", NULL, NULL, &r);
  assert_true(cors_check(&r, "https://app.example", 0));
  assert_false(cors_check(&r, "https://app.example", 1));
  assert_null(hr_test_field(&r, "Access-Control-Expose-Headers"));
  hr_test_response_free(&r);
  env_close(&e);
}

static int allow_partner(hr_span_t origin, void *udata) {
  (*(int *)udata)++;
  return hr_span_eq(origin, HR_SPAN_LIT("https://partner.example"));
}

static void test_suffixes_and_callback(void **state) {
  static const char *const suffixes[] = {".example.com"};
  static const struct {
    const char *origin;
    int ok;
  } cases[] = {
      {"https://a.example.com", 1},
      {"https://b.a.example.com:8443", 1},
      {"HTTPS://A.EXAMPLE.COM", 1},
      {"https://example.com", 0},
      {"http://a.example.com", 0},
      {"https://a.example.com.evil.net", 0},
      {"https://evilexample.com", 0},
      {"https://a.example.com/x", 0},
      {"https://user@a.example.com", 0},
      {"null", 0},
      {"https://evil.com?.example.com", 0},
      {"https://evil.com#.example.com", 0},
      {"https://evil, x.example.com", 0},
      {"https://a.example.com:", 0},
      {"https://a.example.com:84x3", 0},
      {"https://partner.example", 1},
  };
  hr_cors_options_t o;
  hr_test_response_t r;
  env_t e;
  size_t i;
  int asked = 0;
  (void)state;
  hr_cors_options_init(&o);
  o.https_suffixes = suffixes;
  o.nsuffixes = 1;
  o.origin_cb = allow_partner;
  o.origin_udata = &asked;
  env_open(&e, &o);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ask(&e, "GET", "/items/1", cases[i].origin, NULL, NULL, &r);
    if (cases[i].ok != cors_check(&r, cases[i].origin, 0)) fail_msg("origin %s", cases[i].origin);
    hr_test_response_free(&r);
  }
  /* The callback is asked only when the lists say no. */
  assert_int_equal(asked, 13);
  env_close(&e);
}

static void test_refused_policies(void **state) {
  static const char *const star_and_more[] = {"*", "https://a.example"};
  static const char *const star[] = {"*"};
  static const char *const bad_suffix[] = {"example.com"};
  static const char *const ctl[] = {"https://a.example\r\n"};
  hr_router_t *r = routes();
  hr_cors_options_t o;
  hr_cors_t *c;
  (void)state;
  hr_cors_options_init(&o);
  assert_int_equal(hr_cors_new(NULL, r, &o), HR_EINVAL);
  assert_int_equal(hr_cors_new(&c, NULL, &o), HR_EINVAL);
  assert_int_equal(hr_cors_new(&c, r, NULL), HR_EINVAL);
  o.origins = star;
  o.norigins = 1;
  o.credentials = 1;
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL); /* "*" with credentials */
  o.credentials = 0;
  o.origins = star_and_more;
  o.norigins = 2;
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL);
  o.origins = ctl;
  o.norigins = 1;
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL);
  o.origins = NULL;
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL); /* a count without a list */
  o.norigins = 0;
  o.https_suffixes = bad_suffix;
  o.nsuffixes = 1;
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL);
  o.nsuffixes = 0;
  o.methods = "GET\n";
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL);
  o.methods = NULL;
  o.max_age = -2;
  assert_int_equal(hr_cors_new(&c, r, &o), HR_EINVAL);
  o.max_age = 0;
  assert_int_equal(hr_cors_new(&c, r, &o), 0);
  hr_cors_free(c);
  hr_cors_free(NULL);
  hr_router_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_listed_origins_with_credentials),
      cmocka_unit_test(test_credentials_and_headers_checks),
      cmocka_unit_test(test_suffixes_and_callback),
      cmocka_unit_test(test_refused_policies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
