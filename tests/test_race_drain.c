/* SPDX-License-Identifier: MIT */
/*
 * hr_server_drain against the workers' end (hr_server_stop on the same
 * server), in the two interleavings drain.pml names, forced with test
 * points (util/testpoint.h) so that each runs every time:
 *
 * - Every worker ends between the drain's first check (a worker still
 *   runs) and its arming: no worker sees the drain at its end, so the
 *   drain's late check must call the callback itself, once.
 * - Every worker ends after the drain armed and before its late check:
 *   the last worker and the late check both find the callback due, and
 *   it must still run once.
 *
 * ctest-labels: tsan
 * ctest-needs: testpoints
 */
#include <stdatomic.h>
#include <string.h>

#include "fixture.h"
#include "util/testpoint.h"

static struct {
  hr__tp_t at;          /* where the workers are made to end */
  _Atomic int stopped;  /* hr_server_stop's result + 1 */
  _Atomic int calls;    /* the drain callback's */
} g;

static void hook(hr__tp_t tp, void *arg) {
  hr_server_t *s = arg;
  if (tp != g.at || atomic_load(&g.stopped) != 0) return;
  /* On the draining thread: end every worker now (joined when it returns). */
  atomic_store(&g.stopped, hr_server_stop(s, 1000) + 1);
}

static void on_drained(hr_server_t *s, void *udata) {
  (void)s;
  (void)udata;
  atomic_fetch_add(&g.calls, 1);
}

static void drain_with_workers_ending_at(fx_t *fx, hr__tp_t at) {
  memset(&g, 0, sizeof g);
  g.at = at;
  fx_route(fx, "GET", "/hello/:name", ta_text, "hello");
  fx_start(fx, 2);
  hr__tp_set(hook);
  assert_int_equal(hr_server_drain(fx->server, 1000, 1000, on_drained, NULL), 0);
  hr__tp_set(NULL);
  fx->started = 0; /* stopped by the hook */
  assert_int_equal(atomic_load(&g.stopped), 0 + 1);
  /* The callback ran on the last worker or inside the call: either way it
   * has run by now (the workers are joined). */
  assert_int_equal(atomic_load(&g.calls), 1);
}

static void test_workers_end_before_the_drain_arms(void **state) {
  drain_with_workers_ending_at(*state, HR__TP_DRAIN_CHECKED);
}

static void test_workers_end_before_the_late_check(void **state) {
  drain_with_workers_ending_at(*state, HR__TP_DRAIN_ARMED);
}

static int teardown(void **state) {
  hr__tp_set(NULL);
  return fx_teardown(state);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_workers_end_before_the_drain_arms),
      T(test_workers_end_before_the_late_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
