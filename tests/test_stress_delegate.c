/* SPDX-License-Identifier: MIT */
/*
 * Late registration under concurrency (run under ThreadSanitizer in CI):
 * reader threads look up a type three levels deep, with interfaces, while a
 * writer registers a delegate on an interface of its grand-parent.  Every
 * reader must come to see the new delegate, and once it has seen it, no
 * later lookup may answer "no delegate" again.  A second writer keeps
 * registering unrelated types and delegates meanwhile, so generations keep
 * moving under the readers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#include <hroute.h>

#define READERS 3
#define LIMIT 200000000L /* lookups a reader may need before it fails */

static hr_router_t *r;
static hr_type_id_t leaf, gp_iface;
static atomic_int started, registered;
static atomic_long reverts, unseen;

static int fmt(const void *v, char *buf, size_t cap, size_t *len, void *u) {
  (void)v;
  (void)u;
  *len = 1;
  if (cap < 1) return HR_ENOSPC;
  buf[0] = 'x';
  return 0;
}

static void reader(void *arg) {
  long i, seen_at = -1;
  hr_lookup_t l;
  (void)arg;
  atomic_fetch_add(&started, 1);
  for (i = 0; i < LIMIT; i++) {
    int rc = hr_delegate_lookup(r, leaf, &l);
    if (rc == 0) {
      if (l.from != gp_iface) atomic_fetch_add(&reverts, 1);
      if (seen_at < 0) seen_at = i;
      /* keep going a while: the answer must not change back */
      if (i - seen_at > 100000) return;
    } else if (seen_at >= 0) {
      atomic_fetch_add(&reverts, 1); /* went back to "no delegate" */
      return;
    }
  }
  atomic_fetch_add(&unseen, 1);
}

static void churn(void *arg) {
  int i;
  (void)arg;
  /* Unrelated registrations bump the generation all along. */
  for (i = 0; i < 200; i++) {
    hr_type_id_t t;
    char name[32];
    snprintf(name, sizeof name, "noise%d", i);
    assert_int_equal(hr_type_register(r, name, 0, 0, NULL, 0, NULL, &t), 0);
    if (i % 2) assert_int_equal(hr_delegate_register(r, t, &(hr_delegate_t){fmt, NULL, NULL}), 0);
  }
}

static void test_late_registration(void **state) {
  uv_thread_t th[READERS], noise;
  hr_type_id_t gp, parent, iface, ifs[1];
  int i;
  (void)state;
  assert_int_equal(hr_router_new(&r, NULL), 0);
  assert_int_equal(hr_type_register(r, "gp-iface", 0, 0, NULL, 0, NULL, &gp_iface), 0);
  ifs[0] = gp_iface;
  assert_int_equal(hr_type_register(r, "grand-parent", 0, 0, ifs, 1, NULL, &gp), 0);
  assert_int_equal(hr_type_register(r, "iface", 0, 0, NULL, 0, NULL, &iface), 0);
  ifs[0] = iface;
  assert_int_equal(hr_type_register(r, "parent", 0, gp, ifs, 1, NULL, &parent), 0);
  assert_int_equal(hr_type_register(r, "leaf", 0, parent, ifs, 1, NULL, &leaf), 0);
  for (i = 0; i < READERS; i++) assert_int_equal(uv_thread_create(&th[i], reader, NULL), 0);
  assert_int_equal(uv_thread_create(&noise, churn, NULL), 0);
  while (atomic_load(&started) < READERS) uv_sleep(1); /* readers running: not a race */
  assert_int_equal(hr_delegate_register(r, gp_iface, &(hr_delegate_t){fmt, NULL, NULL}), 0);
  atomic_store(&registered, 1);
  for (i = 0; i < READERS; i++) uv_thread_join(&th[i]);
  uv_thread_join(&noise);
  assert_int_equal(atomic_load(&reverts), 0);
  assert_int_equal(atomic_load(&unseen), 0);
  hr_router_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_late_registration),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
