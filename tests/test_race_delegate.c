/* SPDX-License-Identifier: MIT */
/*
 * The delegate cache against a registration, in forced interleavings (test
 * points, util/testpoint.h).  Each test is one schedule of cache.pml's,
 * run on the C every time:
 *
 * - A lookup that loaded the generation before a registration and walks
 *   after it finds the new delegate: it must read the delegate complete
 *   (the pointer's release/acquire; ThreadSanitizer checks it).
 * - A second lookup of that generation hits the word the first stored: it
 *   must read the delegate complete too (the word's release/acquire, TSan).
 * - No revert to the word before: a miss cached before a registration,
 *   while the registration is under way (stored, not yet in force), after
 *   this reader found the delegate by walking.
 * - No revert: a reader walks before a registration stores its delegate
 *   and caches what it found after another reader found the delegate; the
 *   second reader's next lookup must still find it (the odd generation:
 *   with one bump after the store, with caching while odd, or with the
 *   generation made even before the store, it hits the stale miss).
 *
 * The threads are ordered by spinning on relaxed atomics only, which adds
 * no happens-before edge that could hide a missing one in the code.
 *
 * ctest-labels: tsan
 * ctest-needs: testpoints
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <hroute.h>

#include "sync.h"
#include "util/testpoint.h"

/* The thread roles a hook tells apart. */
enum { ROLE_NONE, ROLE_WRITER, ROLE_A, ROLE_B, ROLE_R1, ROLE_R2 };
static _Thread_local int role;

static struct {
  int schedule;
  _Atomic int a_at_gen, b_at_gen, writer_done, a_done;
  _Atomic int w_odd, r2_walked, w_stored, r1_first_done, r2_done, r1_second_done;
} g;

enum { SCHED_ONE_WALKER = 1, SCHED_WALKER_AND_HITTER, SCHED_REVERT, SCHED_OLD_WORD };

static hr_router_t *router;
static hr_type_id_t type;

static int fmt(const void *value, char *buf, size_t cap, size_t *len, void *udata) {
  (void)value;
  *len = strlen(udata);
  if (*len > cap) return HR_ETOOLARGE;
  memcpy(buf, udata, *len);
  return 0;
}

static hr_delegate_t delegate = {fmt, NULL, (void *)"from the delegate"};

static void hook(hr__tp_t tp, void *arg) {
  (void)arg;
  switch (g.schedule) {
  case SCHED_ONE_WALKER:
    if (tp == HR__TP_LOOKUP_GEN && role == ROLE_A) {
      atomic_store_explicit(&g.a_at_gen, 1, memory_order_relaxed);
      spin_until(&g.writer_done, 1);
    }
    break;
  case SCHED_WALKER_AND_HITTER:
    if (tp == HR__TP_LOOKUP_GEN && role == ROLE_A) {
      atomic_store_explicit(&g.a_at_gen, 1, memory_order_relaxed);
      spin_until(&g.writer_done, 1);
    }
    if (tp == HR__TP_LOOKUP_GEN && role == ROLE_B) {
      atomic_store_explicit(&g.b_at_gen, 1, memory_order_relaxed);
      spin_until(&g.a_done, 1);
    }
    break;
  case SCHED_REVERT:
    if (tp == HR__TP_DELEGATE_ODD && role == ROLE_WRITER) {
      atomic_store_explicit(&g.w_odd, 1, memory_order_relaxed);
      spin_until(&g.r2_walked, 1);
    }
    if (tp == HR__TP_DELEGATE_STORED && role == ROLE_WRITER) {
      atomic_store_explicit(&g.w_stored, 1, memory_order_relaxed);
      spin_until(&g.r1_second_done, 1);
    }
    if (tp == HR__TP_LOOKUP_WALKED && role == ROLE_R2) {
      atomic_store_explicit(&g.r2_walked, 1, memory_order_relaxed);
      spin_until(&g.r1_first_done, 1);
    }
    break;
  case SCHED_OLD_WORD:
    if (tp == HR__TP_DELEGATE_STORED && role == ROLE_WRITER) {
      atomic_store_explicit(&g.w_stored, 1, memory_order_relaxed);
      spin_until(&g.r1_second_done, 1);
    }
    break;
  default:
    break;
  }
}

static int setup(void **state) {
  (void)state;
  memset(&g, 0, sizeof g);
  if (hr_router_new(&router, NULL) != 0) return -1;
  /* A fresh type: nothing cached for it yet. */
  if (hr_type_register(router, "race", 8, 0, NULL, 0, NULL, &type) != 0) return -1;
  hr__tp_set(hook);
  watchdog_say(60, "a forced interleaving of the delegate cache");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  watchdog(0);
  hr__tp_set(NULL);
  hr_router_free(router);
  return 0;
}

/* A lookup's answer, formatted through the delegate it found: reads the
 * delegate (the registering thread's copy) on the looking-up thread. */
typedef struct look_s {
  int role;
  int rc;
  char text[64];
} look_t;

static void look(look_t *l) {
  hr_lookup_t out;
  size_t n = 0;
  l->rc = hr_delegate_lookup(router, type, &out);
  l->text[0] = '\0';
  if (l->rc == 0 && out.delegate->format(NULL, l->text, sizeof l->text - 1, &n,
                                         out.delegate->udata) == 0)
    l->text[n] = '\0';
}

static void *looker(void *arg) {
  look_t *l = arg;
  role = l->role;
  look(l);
  if (role == ROLE_A) atomic_store_explicit(&g.a_done, 1, memory_order_relaxed);
  return NULL;
}

static void register_now(void) {
  role = ROLE_WRITER;
  assert_int_equal(hr_delegate_register(router, type, &delegate), 0);
  role = ROLE_NONE;
  atomic_store_explicit(&g.writer_done, 1, memory_order_relaxed);
}

static void test_walk_after_registration_reads_it_complete(void **state) {
  pthread_t t;
  look_t a = {ROLE_A, -1, ""};
  (void)state;
  g.schedule = SCHED_ONE_WALKER;
  assert_int_equal(pthread_create(&t, NULL, looker, &a), 0);
  spin_until(&g.a_at_gen, 1);
  register_now();
  pthread_join(t, NULL);
  assert_int_equal(a.rc, 0);
  assert_string_equal(a.text, "from the delegate");
}

static void test_hit_on_a_walkers_word_reads_it_complete(void **state) {
  pthread_t ta, tb;
  look_t a = {ROLE_A, -1, ""}, b = {ROLE_B, -1, ""};
  hr_delegate_stats_t before, after;
  (void)state;
  g.schedule = SCHED_WALKER_AND_HITTER;
  hr_delegate_stats(router, &before);
  assert_int_equal(pthread_create(&ta, NULL, looker, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, looker, &b), 0);
  spin_until(&g.a_at_gen, 1);
  spin_until(&g.b_at_gen, 1);
  register_now();
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  hr_delegate_stats(router, &after);
  assert_int_equal(a.rc, 0);
  assert_string_equal(a.text, "from the delegate");
  assert_int_equal(b.rc, 0);
  assert_string_equal(b.text, "from the delegate");
  /* A walked; B hit the word A stored. */
  assert_int_equal(after.walks - before.walks, 1);
  assert_int_equal(after.hits - before.hits, 1);
}

/* R2: one lookup, started once the registration is under way. */
static void *r2_thread(void *arg) {
  look_t *l = arg;
  role = ROLE_R2;
  spin_until(&g.w_odd, 1);
  look(l);
  atomic_store_explicit(&g.r2_done, 1, memory_order_relaxed);
  return NULL;
}

/* R1: two lookups once the delegate is stored, around R2's store. */
typedef struct r1_s {
  look_t first, second;
} r1_t;

static void *r1_thread(void *arg) {
  r1_t *r = arg;
  role = ROLE_R1;
  spin_until(&g.w_stored, 1);
  look(&r->first);
  atomic_store_explicit(&g.r1_first_done, 1, memory_order_relaxed);
  spin_until(&g.r2_done, 1);
  look(&r->second);
  atomic_store_explicit(&g.r1_second_done, 1, memory_order_relaxed);
  return NULL;
}

static void test_no_revert_to_a_stale_miss(void **state) {
  pthread_t t1, t2;
  r1_t r1;
  look_t r2 = {ROLE_R2, -1, ""}, after = {ROLE_NONE, -1, ""};
  (void)state;
  memset(&r1, 0, sizeof r1);
  g.schedule = SCHED_REVERT;
  assert_int_equal(pthread_create(&t1, NULL, r1_thread, &r1), 0);
  assert_int_equal(pthread_create(&t2, NULL, r2_thread, &r2), 0);
  register_now();
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  /* R2 walked before the delegate was stored. */
  assert_int_equal(r2.rc, HR_ENODELEGATE);
  /* R1 found it after it was stored, and never lost it again. */
  assert_int_equal(r1.first.rc, 0);
  assert_int_equal(r1.second.rc, 0);
  assert_string_equal(r1.second.text, "from the delegate");
  look(&after);
  assert_int_equal(after.rc, 0);
}

/* R1 alone: two lookups while the registration is stored but not yet in
 * force, with a miss cached before it began. */
static void *r1_alone(void *arg) {
  r1_t *r = arg;
  role = ROLE_R1;
  spin_until(&g.w_stored, 1);
  look(&r->first);
  look(&r->second);
  atomic_store_explicit(&g.r1_second_done, 1, memory_order_relaxed);
  return NULL;
}

static void test_no_revert_to_the_word_before(void **state) {
  pthread_t t1;
  r1_t r1;
  look_t before = {ROLE_NONE, -1, ""};
  (void)state;
  memset(&r1, 0, sizeof r1);
  look(&before); /* caches the miss */
  assert_int_equal(before.rc, HR_ENODELEGATE);
  g.schedule = SCHED_OLD_WORD;
  assert_int_equal(pthread_create(&t1, NULL, r1_alone, &r1), 0);
  register_now();
  pthread_join(t1, NULL);
  /* The delegate was stored before R1 looked: a walk finds it.  R1 may
   * not answer the older miss after that. */
  assert_int_equal(r1.first.rc, 0);
  assert_int_equal(r1.second.rc, 0);
  assert_string_equal(r1.second.text, "from the delegate");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_walk_after_registration_reads_it_complete),
      T(test_hit_on_a_walkers_word_reads_it_complete),
      T(test_no_revert_to_a_stale_miss),
      T(test_no_revert_to_the_word_before),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
