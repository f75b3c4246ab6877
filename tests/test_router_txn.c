/* SPDX-License-Identifier: MIT */
/*
 * Route transactions (router.h hr_router_begin): changes recorded and
 * checked one by one, published together by the commit -- nothing before
 * it, everything after it; additions, replacements and removals of routes
 * registered before and of routes recorded in the same transaction; each
 * rejected change reported by its own call; a commit after another
 * writer's change checks the log again (conflicts then fail the commit with
 * nothing changed, unrelated changes are kept both); the extension-method
 * limit found at the commit; abort; groups and hosts; every allocation
 * failure of begin, add and commit leaving the router as it was (through
 * the failing allocator, under ASan no leak).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <hroute.h>

#include "countalloc.h"
#include "routerfx.h"

/* The route `target` reaches with GET: its id, 0 for a 404, -status else. */
static int id_of(hr_router_t *r, const char *method, const char *target) {
  hr_match_t m = rt_match(r, method, target);
  if (m.status == 404) return 0;
  if (m.status != 200 || m.route == NULL) return -m.status;
  return (int)(intptr_t)hr_route_udata(m.route);
}

static int txn_add(hr_txn_t *t, const char *methods, const char *pattern, int id) {
  return hr_txn_add(t, NULL, methods, pattern, rt_noop, RT_ID(id), NULL);
}

static void test_bulk_load_publishes_at_commit(void **state) {
  hr_router_t *r = rt_new_router();
  hr_router_stats_t st;
  hr_txn_t *t;
  char p[64];
  int i;
  (void)state;
  rt_add(r, "GET", "/before", 1);
  assert_int_equal(hr_router_begin(r, &t), 0);
  for (i = 0; i < 2000; i++) {
    snprintf(p, sizeof p, "/api/v1/res%d/:id/items/{item}", i);
    assert_int_equal(txn_add(t, "GET", p, 100 + i), 0);
  }
  /* Nothing is visible before the commit. */
  assert_int_equal(id_of(r, "GET", "/api/v1/res7/1/items/2"), 0);
  assert_int_equal(id_of(r, "GET", "/before"), 1);
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  for (i = 0; i < 2000; i += 97) {
    snprintf(p, sizeof p, "/api/v1/res%d/42/items/x", i);
    assert_int_equal(id_of(r, "GET", p), 100 + i);
  }
  assert_int_equal(id_of(r, "GET", "/before"), 1);
  hr_router_stats(r, &st);
  assert_int_equal(st.routes, 2001);
}

static void test_each_change_checked_at_its_call(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_options_t o;
  hr_route_error_t err;
  hr_txn_t *t;
  (void)state;
  rt_add(r, "GET,POST", "/a/:x", 1);
  assert_int_equal(hr_router_begin(r, &t), 0);
  hr_route_options_init(&o);
  o.error = &err;
  /* An overlap with a registered route, a name that differs only. */
  assert_int_equal(hr_txn_add(t, NULL, "POST", "/a/:other", rt_noop, RT_ID(2), &o), HR_EEXIST);
  assert_int_equal(err.code, HR_EEXIST);
  assert_string_equal(err.conflict, "GET,POST /a/:x");
  /* A bad pattern, with its offset. */
  assert_int_equal(hr_txn_add(t, NULL, "GET", "nope", rt_noop, RT_ID(3), &o), HR_EPATTERN);
  /* A duplicate of a route recorded in this transaction. */
  assert_int_equal(txn_add(t, "GET", "/b", 4), 0);
  assert_int_equal(hr_txn_add(t, NULL, "GET", "/b", rt_noop, RT_ID(5), &o), HR_EEXIST);
  assert_string_equal(err.conflict, "GET /b");
  /* Another method at the same place is no conflict. */
  assert_int_equal(txn_add(t, "DELETE", "/a/:y", 6), 0);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/missing"), HR_ENOTFOUND);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/a/:x"), HR_ENOTFOUND); /* not the same set */
  /* The rejected ones are not recorded: the commit goes through. */
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  assert_int_equal(id_of(r, "GET", "/a/1"), 1);
  assert_int_equal(id_of(r, "POST", "/a/1"), 1);
  assert_int_equal(id_of(r, "DELETE", "/a/1"), 6);
  assert_int_equal(id_of(r, "GET", "/b"), 4);
}

static void test_replace_and_remove(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_options_t o;
  hr_router_stats_t st;
  hr_txn_t *t;
  (void)state;
  rt_add(r, "GET", "/old", 1);
  rt_add(r, "GET", "/gone", 2);
  rt_add(r, "GET", "/kept", 3);
  hr_route_options_init(&o);
  o.replace = 1;
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(hr_txn_add(t, NULL, "GET", "/old", rt_noop, RT_ID(11), &o), 0);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/gone"), 0);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/gone"), HR_ENOTFOUND); /* once */
  /* Recorded, replaced, removed, added again: the last one counts. */
  assert_int_equal(txn_add(t, "GET", "/new", 20), 0);
  assert_int_equal(hr_txn_add(t, NULL, "GET", "/new", rt_noop, RT_ID(21), &o), 0);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/new"), 0);
  assert_int_equal(txn_add(t, "GET", "/new", 22), 0);
  /* Removed, then added back within the transaction. */
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/kept"), 0);
  assert_int_equal(txn_add(t, "GET", "/kept", 33), 0);
  assert_int_equal(id_of(r, "GET", "/gone"), 2);
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  assert_int_equal(id_of(r, "GET", "/old"), 11);
  assert_int_equal(id_of(r, "GET", "/gone"), 0);
  assert_int_equal(id_of(r, "GET", "/new"), 22);
  assert_int_equal(id_of(r, "GET", "/kept"), 33);
  hr_router_stats(r, &st);
  assert_int_equal(st.routes, 3);
}

static void test_commit_after_another_writer(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_error_t err;
  hr_txn_t *t;
  (void)state;
  rt_add(r, "GET", "/x", 1);
  /* An unrelated change meanwhile: both are kept. */
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(txn_add(t, "GET", "/mine", 2), 0);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/x"), 0);
  rt_add(r, "GET", "/theirs", 3);
  assert_int_equal(hr_txn_commit(t, &err), 0);
  assert_int_equal(id_of(r, "GET", "/mine"), 2);
  assert_int_equal(id_of(r, "GET", "/theirs"), 3);
  assert_int_equal(id_of(r, "GET", "/x"), 0);
  /* A conflicting one: the commit fails and nothing of it is applied. */
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(txn_add(t, "GET", "/both", 4), 0);
  assert_int_equal(txn_add(t, "GET", "/other", 5), 0);
  rt_add(r, "GET", "/both", 6);
  assert_int_equal(hr_txn_commit(t, &err), HR_EEXIST);
  assert_int_equal(err.code, HR_EEXIST);
  assert_string_equal(err.conflict, "GET /both");
  assert_int_equal(id_of(r, "GET", "/both"), 6);
  assert_int_equal(id_of(r, "GET", "/other"), 0);
  /* A removal whose route another writer removed first. */
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/mine"), 0);
  assert_int_equal(hr_router_remove(r, "GET", "/mine"), 0);
  assert_int_equal(hr_txn_commit(t, &err), HR_ENOTFOUND);
  assert_string_equal(err.conflict, "GET /mine");
}

/* A replacement recorded when the routes-by-place index is full (its
 * entries move when it grows): the route it replaces is found again by
 * index, not by a pointer into the old entries (ASan: no use after free). */
static void test_replace_when_the_index_grows(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_options_t ro;
  hr_txn_t *t;
  char p[32];
  int i;
  (void)state;
  for (i = 0; i < 64; i++) {
    snprintf(p, sizeof p, "/r%d", i);
    rt_add(r, "GET", p, 1 + i);
  }
  hr_route_options_init(&ro);
  ro.replace = 1;
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(hr_txn_add(t, NULL, "GET", "/r5", rt_noop, RT_ID(100), &ro), 0);
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  for (i = 0; i < 64; i++) {
    snprintf(p, sizeof p, "/r%d", i);
    assert_int_equal(id_of(r, "GET", p), i == 5 ? 100 : 1 + i);
  }
}

/* Removals leave holes in the router's route array; a failed whole build
 * (a new extension method whose route conflicts) compacts it without
 * publishing.  A transaction begun before must not read the moved array
 * by its old positions: the commit takes its snapshot again. */
static void test_commit_after_a_failed_whole_build(void **state) {
  hr_router_t *r = rt_new_router();
  hr_txn_t *t;
  (void)state;
  rt_add(r, "GET", "/a", 1);
  rt_add(r, "GET", "/b", 2);
  rt_add(r, "GET", "/c", 3);
  rt_add(r, "GET", "/d", 4);
  rt_add(r, "GET", "/e", 5);
  assert_int_equal(hr_router_remove(r, "GET", "/a"), 0);
  assert_int_equal(hr_router_remove(r, "GET", "/b"), 0);
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(hr_router_add(r, "GET,MKCOL", "/c", rt_noop, RT_ID(9), NULL), HR_EEXIST);
  assert_int_equal(hr_txn_remove(t, NULL, "GET", "/e"), 0);
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  assert_int_equal(id_of(r, "GET", "/c"), 3);
  assert_int_equal(id_of(r, "GET", "/d"), 4);
  assert_int_equal(id_of(r, "GET", "/e"), 0);
  assert_int_equal(id_of(r, "GET", "/a"), 0);
}

static void test_extension_limit_at_commit(void **state) {
  hr_router_t *r = rt_new_router();
  hr_route_error_t err;
  hr_txn_t *t;
  char m[16], p[32];
  int i;
  (void)state;
  rt_add(r, "GET", "/a", 1);
  assert_int_equal(hr_router_begin(r, &t), 0);
  for (i = 0; i < 65; i++) {
    snprintf(m, sizeof m, "EXT%d", i);
    snprintf(p, sizeof p, "/e%d", i);
    assert_int_equal(txn_add(t, m, p, 10 + i), 0);
  }
  assert_int_equal(hr_txn_commit(t, &err), HR_ETOOLARGE);
  assert_int_equal(id_of(r, "GET", "/a"), 1);
  assert_int_equal(id_of(r, "EXT0", "/e0"), -501);
}

static void test_abort_groups_and_misuse(void **state) {
  hr_router_t *r = rt_new_router(), *r2 = rt_new_router();
  hr_group_t *g, *g2;
  hr_txn_t *t;
  (void)state;
  assert_int_equal(hr_router_group(r, "example.com", "/v1", &g), 0);
  assert_int_equal(hr_router_group(r2, NULL, "/v2", &g2), 0);
  assert_int_equal(hr_router_begin(NULL, &t), HR_EINVAL);
  assert_int_equal(hr_router_begin(r, NULL), HR_EINVAL);
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(hr_txn_add(t, g2, "GET", "/x", rt_noop, RT_ID(1), NULL), HR_EINVAL);
  assert_int_equal(hr_txn_add(t, NULL, "GET", "/x", NULL, RT_ID(1), NULL), HR_EINVAL);
  assert_int_equal(hr_txn_add(t, g, "GET", "/x", rt_noop, RT_ID(2), NULL), 0);
  /* The same pattern in another host's table is another place. */
  assert_int_equal(txn_add(t, "GET", "/v1/x", 3), 0);
  hr_txn_abort(t);
  assert_int_equal(id_of(r, "GET", "/v1/x"), 0);
  hr_txn_abort(NULL);
  assert_int_equal(hr_txn_commit(NULL, NULL), HR_EINVAL);
  assert_int_equal(hr_router_begin(r, &t), 0);
  assert_int_equal(hr_txn_add(t, g, "GET", "/x", rt_noop, RT_ID(2), NULL), 0);
  assert_int_equal(txn_add(t, "GET", "/v1/x", 3), 0);
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  assert_int_equal((int)(intptr_t)hr_route_udata(rt_match_host(r, "GET", "example.com", "/v1/x").route), 2);
  assert_int_equal(id_of(r, "GET", "/v1/x"), 3);
  assert_int_equal(hr_txn_remove(NULL, NULL, "GET", "/x"), HR_EINVAL);
}

/* Every allocation of begin, the adds and the commit failing in turn: an
 * error, and the router as it was (one route), never a crash or a leak. */
static void test_allocation_failures(void **state) {
  ca_t ca;
  hr_router_options_t o;
  uint64_t n;
  int done = 0;
  (void)state;
  for (n = 1; !done && n < 1000; n++) {
    hr_router_t *r;
    hr_txn_t *t = NULL;
    int rc;
    ca_init(&ca);
    hr_router_options_init(&o);
    o.allocator = &ca.hook;
    assert_int_equal(hr_router_new(&r, &o), 0);
    assert_int_equal(hr_router_add(r, "GET", "/keep", rt_noop, RT_ID(1), NULL), 0);
    ca_fail_at(&ca, ca_calls(&ca) + n, 0);
    rc = hr_router_begin(r, &t);
    if (rc == 0) rc = txn_add(t, "GET", "/a/:x", 2);
    if (rc == 0) rc = txn_add(t, "POST", "/b", 3);
    if (rc == 0) rc = hr_txn_remove(t, NULL, "GET", "/keep");
    if (rc == 0) {
      rc = hr_txn_commit(t, NULL);
      t = NULL;
    }
    hr_txn_abort(t);
    ca_fail_at(&ca, 0, 0);
    if (rc == 0) {
      done = 1;
      assert_int_equal(id_of(r, "GET", "/a/1"), 2);
      assert_int_equal(id_of(r, "GET", "/keep"), 0);
    } else {
      assert_int_equal(rc, HR_ENOMEM);
      assert_int_equal(id_of(r, "GET", "/keep"), 1);
      assert_int_equal(id_of(r, "GET", "/a/1"), 0);
    }
    hr_router_free(r);
    assert_int_equal(ca_live(&ca), 0);
    ca_destroy(&ca);
  }
  assert_true(done);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_bulk_load_publishes_at_commit, rt_free_routers),
      cmocka_unit_test_teardown(test_each_change_checked_at_its_call, rt_free_routers),
      cmocka_unit_test_teardown(test_replace_and_remove, rt_free_routers),
      cmocka_unit_test_teardown(test_commit_after_another_writer, rt_free_routers),
      cmocka_unit_test_teardown(test_extension_limit_at_commit, rt_free_routers),
      cmocka_unit_test_teardown(test_replace_when_the_index_grows, rt_free_routers),
      cmocka_unit_test_teardown(test_commit_after_a_failed_whole_build, rt_free_routers),
      cmocka_unit_test_teardown(test_abort_groups_and_misuse, rt_free_routers),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
