/* SPDX-License-Identifier: MIT */
/* Helpers for the router tests (see routerfx.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "routerfx.h"

char rt_scratch[4096];

static hr_router_t *made[16];
static size_t nmade;

void rt_noop(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

hr_router_t *rt_remember(hr_router_t *r) {
  if (nmade < sizeof made / sizeof made[0]) made[nmade++] = r;
  return r;
}

void rt_forget(hr_router_t *r) {
  size_t i;
  for (i = 0; i < nmade; i++)
    if (made[i] == r) made[i] = made[--nmade];
  hr_router_free(r);
}

int rt_free_routers(void **state) {
  (void)state;
  while (nmade > 0) hr_router_free(made[--nmade]);
  return 0;
}

hr_router_t *rt_new_router_opts(int slash, int clean, int nocase) {
  hr_router_t *r = NULL;
  hr_router_options_t o;
  hr_router_options_init(&o);
  o.trailing_slash = (hr_slash_policy_t)slash;
  o.unclean_path = (hr_clean_policy_t)clean;
  o.case_insensitive = nocase;
  assert_int_equal(hr_router_new(&r, &o), 0);
  assert_non_null(r);
  return rt_remember(r);
}

hr_router_t *rt_new_router(void) {
  return rt_new_router_opts(HR_SLASH_STRICT, HR_CLEAN_REDIRECT, 0);
}

void rt_add(hr_router_t *r, const char *methods, const char *pattern, int id) {
  int rc = hr_router_add(r, methods, pattern, rt_noop, RT_ID(id), NULL);
  if (rc != 0) fail_msg("add %s %s: %s", methods, pattern, hr_err_name(rc));
}

hr_match_t rt_match_host(hr_router_t *r, const char *method, const char *host,
                         const char *target) {
  hr_match_t m;
  memset(&m, 0xEE, sizeof m);
  assert_int_equal(hr_router_match(r, hr_span_cstr(method), hr_span_cstr(host),
                                   hr_span_cstr(target), rt_scratch,
                                   sizeof rt_scratch, &m),
                   0);
  return m;
}

hr_match_t rt_match(hr_router_t *r, const char *method, const char *target) {
  return rt_match_host(r, method, "", target);
}
