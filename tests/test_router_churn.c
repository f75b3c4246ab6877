/* SPDX-License-Identifier: MIT */
/*
 * Single changes to a large route table (the persistent tree, wtree.c):
 * one change allocates in proportion to its path, not to the table; nodes
 * shared between tables outlive the table that made them (a block is
 * freed only once no published table reaches any of its nodes: under ASan
 * an early free is a use after free here); changes a path at a time answer
 * exactly as a whole build of the same routes; compaction keeps the bytes
 * of a table that is changed without end bounded; every allocation failure
 * of a replace, an add and a remove leaves the router answering as before
 * (through the failing allocator, under ASan no leak), a whole build for a
 * new host too; removals compact before their splits pile up.
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
#include "util/rcu.h"

#define N 5000 /* routes of the large table */

static int id_of(hr_router_t *r, const char *target) {
  hr_match_t m = rt_match(r, "GET", target);
  if (m.status == 404) return 0;
  if (m.status != 200 || m.route == NULL) return -m.status;
  return (int)(intptr_t)hr_route_udata(m.route);
}

/* Route i of the large table, and a target that reaches it. */
static void pattern(int i, char *p, size_t n) {
  snprintf(p, n, "/api/v%d/res%d/:id/items/{item}", i % 3, i);
}
static void target(int i, char *p, size_t n) {
  snprintf(p, n, "/api/v%d/res%d/7/items/x", i % 3, i);
}

static hr_router_t *large(hr_router_options_t *o) {
  hr_router_t *r;
  hr_txn_t *t;
  char p[96];
  int i;
  assert_int_equal(hr_router_new(&r, o), 0);
  assert_int_equal(hr_router_begin(r, &t), 0);
  for (i = 0; i < N; i++) {
    pattern(i, p, sizeof p);
    assert_int_equal(hr_txn_add(t, NULL, "GET", p, rt_noop, RT_ID(1 + i), NULL), 0);
  }
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  return r;
}

static int replace(hr_router_t *r, const char *p, int id) {
  hr_route_options_t ro;
  hr_route_options_init(&ro);
  ro.replace = 1;
  return hr_router_add(r, "GET", p, rt_noop, RT_ID(id), &ro);
}

static void test_one_change_allocates_its_path(void **state) {
  ca_t ca;
  hr_router_options_t o;
  hr_router_stats_t st;
  hr_router_t *r;
  size_t before, most = 0;
  char p[96];
  int i;
  (void)state;
  ca_init(&ca);
  hr_router_options_init(&o);
  o.allocator = &ca.hook;
  r = large(&o);
  hr_router_stats(r, &st);
  assert_int_equal(st.routes, N);
  for (i = 0; i < 40; i++) {
    pattern(i * 97 % N, p, sizeof p);
    ca_reset_peak(&ca);
    before = ca_bytes(&ca);
    assert_int_equal(replace(r, p, 100000 + i), 0);
    if (ca_peak(&ca) - before > most) most = ca_peak(&ca) - before;
  }
  /* The table is hundreds of KiB (st.table_bytes); a change's path, its
   * invoker and the new table's header are a few KiB. */
  assert_true(st.table_bytes > 1000 * 1024);
  assert_true(most < 16 * 1024);
  target(97, p, sizeof p);
  assert_int_equal(id_of(r, p), 100001);
  target(98, p, sizeof p);
  assert_int_equal(id_of(r, p), 99);
  hr_router_free(r);
  assert_int_equal(ca_live(&ca), 0);
  ca_destroy(&ca);
}

static void test_shared_nodes_outlive_their_table(void **state) {
  hr_router_t *r;
  char p[96];
  int i, k;
  (void)state;
  r = large(NULL);
  /* Each change kills nodes of the whole build's block and keeps the
   * rest of it in use; after every batch of replaced tables has been
   * reclaimed, every route still answers from what is left of it. */
  for (k = 0; k < 4; k++) {
    for (i = k; i < N; i += 50) {
      pattern(i, p, sizeof p);
      assert_int_equal(hr_router_remove(r, "GET", p), 0);
    }
    hr__rcu_barrier();
    for (i = 0; i < N; i++) {
      target(i, p, sizeof p);
      assert_int_equal(id_of(r, p), i % 50 <= k ? 0 : 1 + i);
    }
  }
  hr_router_free(r);
}

/* Every route of both routers, and a miss, answer alike. */
static void same_answers(hr_router_t *a, hr_router_t *b) {
  char p[96];
  int i;
  for (i = 0; i < N; i++) {
    target(i, p, sizeof p);
    assert_int_equal(id_of(a, p), id_of(b, p));
  }
  assert_int_equal(id_of(a, "/api/v1/res"), id_of(b, "/api/v1/res"));
}

static void test_changes_answer_as_a_whole_build(void **state) {
  hr_router_t *a, *b;
  hr_router_stats_t sa, sb;
  hr_txn_t *t;
  char p[96];
  int i;
  (void)state;
  a = large(NULL);
  b = large(NULL);
  /* a: changed route by route; b: the same changes in one transaction,
   * built whole. */
  assert_int_equal(hr_router_begin(b, &t), 0);
  for (i = 0; i < N; i += 7) {
    hr_route_options_t ro;
    pattern(i, p, sizeof p);
    hr_route_options_init(&ro);
    ro.replace = 1;
    if (i % 2) {
      assert_int_equal(hr_router_remove(a, "GET", p), 0);
      assert_int_equal(hr_txn_remove(t, NULL, "GET", p), 0);
    } else {
      assert_int_equal(replace(a, p, 100000 + i), 0);
      assert_int_equal(hr_txn_add(t, NULL, "GET", p, rt_noop, RT_ID(100000 + i), &ro), 0);
    }
  }
  assert_int_equal(hr_router_add(a, "GET", "/api/v1/res", rt_noop, RT_ID(9), NULL), 0);
  assert_int_equal(hr_txn_add(t, NULL, "GET", "/api/v1/res", rt_noop, RT_ID(9), NULL), 0);
  assert_int_equal(hr_txn_commit(t, NULL), 0);
  same_answers(a, b);
  hr_router_stats(a, &sa);
  hr_router_stats(b, &sb);
  assert_int_equal(sa.routes, sb.routes);
  hr_router_free(a);
  hr_router_free(b);
}

static void test_compaction_bounds_the_bytes(void **state) {
  hr_router_t *r;
  hr_router_stats_t first, st;
  size_t most = 0;
  char p[96];
  int i;
  (void)state;
  r = large(NULL);
  hr_router_stats(r, &first);
  /* Every change leaves dead nodes in the blocks that are still in use;
   * a whole build compacts them once they outweigh the live ones. */
  for (i = 0; i < 20000; i++) {
    pattern(i % N, p, sizeof p);
    assert_int_equal(replace(r, p, i), 0);
    hr_router_stats(r, &st);
    if (st.table_bytes > most) most = st.table_bytes;
  }
  assert_true(most <= 3 * first.table_bytes + 3 * 65536);
  assert_int_equal(st.routes, N);
  target(N - 1, p, sizeof p);
  assert_int_equal(id_of(r, p), 19999);
  hr_router_free(r);
}

/* Removals leave splits that only a whole build merges: adding and
 * removing a route at every prefix of one long literal route would leave a
 * chain of one-byte nodes that each lookup of it walks.  Once removals
 * outnumber half the routes (plus 64), a change compacts. */
static void test_removals_compact(void **state) {
  hr_router_t *r = rt_new_router();
  hr_router_stats_t st;
  char p[210], q[210];
  int i;
  (void)state;
  memset(p, 0, sizeof p);
  p[0] = '/';
  memset(p + 1, 'a', 200);
  rt_add(r, "GET", p, 1);
  for (i = 199; i >= 1; i--) {
    memcpy(q, p, (size_t)i + 1);
    q[i + 1] = '\0';
    rt_add(r, "GET", q, 2);
    assert_int_equal(hr_router_remove(r, "GET", q), 0);
  }
  hr_router_stats(r, &st);
  assert_int_equal(st.routes, 1);
  /* 199 removals: compacted at the 65th and the 130th and the 195th, so
   * at most the last few splits are left. */
  assert_true(st.nodes <= 8);
  assert_int_equal(id_of(r, p), 1);
}

/* One step of the sweep: the change under a failing allocator (3: a
 * route of a new host, which builds the whole table). */
static int sweep_step(hr_router_t *r, int what) {
  hr_group_t *g;
  switch (what) {
    case 0: return replace(r, "/api/v1/res1/:id/items/{item}", 77);
    case 1: return hr_router_add(r, "GET", "/api/v2/res1/:id/new", rt_noop, RT_ID(78), NULL);
    case 2: return hr_router_remove(r, "GET", "/api/v1/res1/:id/items/{item}");
    default:
      if (hr_router_group(r, "a.example", NULL, &g) != 0) return HR_ENOMEM;
      return hr_group_add(g, "GET", "/x", rt_noop, RT_ID(79), NULL);
  }
}

static void test_allocation_failures(void **state) {
  int what;
  (void)state;
  for (what = 0; what < 4; what++) {
    uint64_t n;
    int done = 0;
    for (n = 1; !done && n < 200; n++) {
      ca_t ca;
      hr_router_options_t o;
      hr_router_t *r;
      int rc;
      ca_init(&ca);
      hr_router_options_init(&o);
      o.allocator = &ca.hook;
      assert_int_equal(hr_router_new(&r, &o), 0);
      rt_add(r, "GET", "/api/v1/res1/:id/items/{item}", 2);
      rt_add(r, "GET", "/api/v1/res10/:id", 3);
      rt_add(r, "GET", "/api/v2/res1/:id", 4);
      ca_fail_at(&ca, ca_calls(&ca) + n, 0);
      rc = sweep_step(r, what);
      ca_fail_at(&ca, 0, 0);
      if (rc == 0) done = 1;
      else assert_int_equal(rc, HR_ENOMEM);
      assert_int_equal(id_of(r, "/api/v1/res1/5/items/x"),
                       rc != 0 || what == 1 || what == 3 ? 2 : what == 0 ? 77 : 0);
      assert_int_equal(id_of(r, "/api/v2/res1/5/new"), rc == 0 && what == 1 ? 78 : 0);
      assert_int_equal(id_of(r, "/api/v1/res10/5"), 3);
      assert_int_equal(id_of(r, "/api/v2/res1/5"), 4);
      /* And the change goes through once memory is there. */
      if (rc != 0 && what < 3) assert_int_equal(sweep_step(r, what), 0);
      hr_router_free(r);
      assert_int_equal(ca_live(&ca), 0);
      ca_destroy(&ca);
    }
    assert_true(done);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_change_allocates_its_path),
      cmocka_unit_test(test_shared_nodes_outlive_their_table),
      cmocka_unit_test(test_changes_answer_as_a_whole_build),
      cmocka_unit_test(test_compaction_bounds_the_bytes),
      cmocka_unit_test_teardown(test_removals_compact, rt_free_routers),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
