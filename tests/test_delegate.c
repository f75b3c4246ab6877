/* SPDX-License-Identifier: MIT */
/*
 * The delegate registry and its lookup cache: lookup order (type,
 * interfaces depth-first in order, then parent), the to-text fallback, the
 * miss path served from the cache (a million lookups, one walk), late
 * registration on a grand-parent interface taking effect, unknown ids
 * refused and never cached, per-router isolation, formatting and parsing
 * through the registry, and a typed response field written without a heap
 * allocation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <hroute.h>

static int fmt_tag(const void *value, char *buf, size_t cap, size_t *len,
                   void *udata) {
  const char *tag = udata;
  size_t n = strlen(tag);
  (void)value;
  *len = n;
  if (cap < n) return HR_ENOSPC;
  memcpy(buf, tag, n);
  return 0;
}

static hr_router_t *router(void) {
  hr_router_t *r = NULL;
  assert_int_equal(hr_router_new(&r, NULL), 0);
  return r;
}

static hr_type_id_t type(hr_router_t *r, const char *name, hr_type_id_t parent,
                         const hr_type_id_t *ifs, size_t n) {
  hr_type_id_t id = 0;
  assert_int_equal(hr_type_register(r, name, 0, parent, ifs, n, NULL, &id), 0);
  assert_true(id >= HR__TYPE_BUILTIN_END);
  return id;
}

/* Formats through the registry and returns which delegate answered. */
static const char *who(hr_router_t *r, hr_type_id_t t) {
  static char buf[32];
  size_t len = 0;
  int rc = hr_value_format(r, t, NULL, buf, sizeof(buf) - 1, &len);
  if (rc == HR_ENODELEGATE) return "none";
  assert_int_equal(rc, 0);
  buf[len] = '\0';
  return buf;
}

/*
 *        P2 (parent of P1)      I2 <- interface of I1
 *        P1 (parent of T)       I1, J  (interfaces of T, in that order)
 *        T
 */
static void test_lookup_order(void **state) {
  hr_router_t *r = router();
  hr_type_id_t i2, i1, j, p2, p1, t, ifs[2];
  (void)state;
  i2 = type(r, "I2", 0, NULL, 0);
  ifs[0] = i2;
  i1 = type(r, "I1", 0, ifs, 1);
  j = type(r, "J", 0, NULL, 0);
  p2 = type(r, "P2", 0, NULL, 0);
  p1 = type(r, "P1", p2, NULL, 0);
  ifs[0] = i1;
  ifs[1] = j;
  t = type(r, "T", p1, ifs, 2);
  assert_string_equal(who(r, t), "none");
  assert_int_equal(hr_delegate_register(r, p2, &(hr_delegate_t){fmt_tag, NULL, "P2"}), 0);
  assert_string_equal(who(r, t), "P2");
  assert_int_equal(hr_delegate_register(r, p1, &(hr_delegate_t){fmt_tag, NULL, "P1"}), 0);
  assert_string_equal(who(r, t), "P1");
  assert_int_equal(hr_delegate_register(r, j, &(hr_delegate_t){fmt_tag, NULL, "J"}), 0);
  assert_string_equal(who(r, t), "J");
  /* I1's own interface comes before T's next interface J. */
  assert_int_equal(hr_delegate_register(r, i2, &(hr_delegate_t){fmt_tag, NULL, "I2"}), 0);
  assert_string_equal(who(r, t), "I2");
  assert_int_equal(hr_delegate_register(r, i1, &(hr_delegate_t){fmt_tag, NULL, "I1"}), 0);
  assert_string_equal(who(r, t), "I1");
  assert_int_equal(hr_delegate_register(r, t, &(hr_delegate_t){fmt_tag, NULL, "T"}), 0);
  assert_string_equal(who(r, t), "T");
  /* one delegate per type */
  assert_int_equal(hr_delegate_register(r, t, &(hr_delegate_t){fmt_tag, NULL, "X"}),
                   HR_EEXIST);
  hr_router_free(r);
}

static int to_text(const void *value, char *buf, size_t cap, size_t *len) {
  (void)value;
  *len = 4;
  if (cap < 4) return HR_ENOSPC;
  memcpy(buf, "text", 4);
  return 0;
}

static void test_fallback_and_errors(void **state) {
  hr_router_t *r = router();
  hr_type_id_t t = 0, bad[1] = {9999};
  hr_lookup_t l;
  char buf[8];
  size_t len;
  (void)state;
  assert_int_equal(hr_type_register(r, "plain", 0, 0, NULL, 0, to_text, &t), 0);
  assert_int_equal(hr_delegate_lookup(r, t, &l), HR_ENODELEGATE);
  assert_ptr_equal(l.to_text, to_text);
  assert_null(l.delegate);
  assert_int_equal(hr_value_format(r, t, NULL, buf, sizeof buf, &len), 0);
  assert_int_equal(len, 4);
  assert_memory_equal(buf, "text", 4);
  assert_int_equal(hr_value_parse(r, t, HR_SPAN_LIT("x"), buf, NULL), HR_ENODELEGATE);
  /* unknown ids: refused, never cached */
  assert_int_equal(hr_delegate_lookup(r, 0, &l), HR_EINVAL);
  assert_int_equal(hr_delegate_lookup(r, t + 1, &l), HR_EINVAL);
  assert_int_equal(hr_delegate_lookup(r, 0xffffffffu, &l), HR_EINVAL);
  assert_int_equal(hr_type_register(r, "x", 0, t + 1, NULL, 0, NULL, &t), HR_EINVAL);
  assert_int_equal(hr_type_register(r, "x", 0, 0, bad, 1, NULL, &t), HR_EINVAL);
  assert_int_equal(hr_type_register(r, "", 0, 0, NULL, 0, NULL, &t), HR_EINVAL);
  assert_int_equal(hr_delegate_register(r, 9999, &(hr_delegate_t){fmt_tag, NULL, "X"}),
                   HR_EINVAL);
  assert_int_equal(hr_type_name(r, HR_TYPE_DATE).len, strlen("http-date"));
  assert_int_equal(hr_type_name(r, 9999).len, 0);
  hr_router_free(r);
}

static void test_miss_path_walks_once(void **state) {
  hr_router_t *r = router();
  hr_type_id_t base = type(r, "base", 0, NULL, 0);
  hr_type_id_t mid = type(r, "mid", base, NULL, 0);
  hr_type_id_t leaf = type(r, "leaf", mid, &mid, 1);
  hr_delegate_stats_t st;
  hr_lookup_t l;
  long i;
  (void)state;
  hr_delegate_stats(r, &st);
  for (i = 0; i < 1000000; i++)
    assert_int_equal(hr_delegate_lookup(r, leaf, &l), HR_ENODELEGATE);
  {
    hr_delegate_stats_t after;
    hr_delegate_stats(r, &after);
    assert_int_equal(after.walks - st.walks, 1);
    assert_int_equal(after.misses - st.misses, 999999);
    assert_int_equal(after.hits - st.hits, 0);
  }
  /* A registration on the grand-parent is seen at once, with one walk. */
  assert_int_equal(hr_delegate_register(r, base, &(hr_delegate_t){fmt_tag, NULL, "B"}), 0);
  hr_delegate_stats(r, &st);
  for (i = 0; i < 1000; i++) {
    assert_int_equal(hr_delegate_lookup(r, leaf, &l), 0);
    assert_int_equal(l.from, base);
  }
  {
    hr_delegate_stats_t after;
    hr_delegate_stats(r, &after);
    assert_int_equal(after.walks - st.walks, 1);
    assert_int_equal(after.hits - st.hits, 999);
  }
  /* Unknown ids do not walk or count. */
  hr_delegate_stats(r, &st);
  for (i = 0; i < 1000; i++) assert_int_equal(hr_delegate_lookup(r, leaf + 100, &l), HR_EINVAL);
  {
    hr_delegate_stats_t after;
    hr_delegate_stats(r, &after);
    assert_int_equal(after.walks + after.hits + after.misses,
                     st.walks + st.hits + st.misses);
  }
  hr_router_free(r);
}

static void test_routers_are_isolated(void **state) {
  hr_router_t *a = router(), *b = router();
  hr_type_id_t ta = type(a, "mine", 0, NULL, 0), tb = type(b, "mine", 0, NULL, 0);
  (void)state;
  assert_int_equal(ta, tb); /* same id, different registries */
  assert_int_equal(hr_delegate_register(a, ta, &(hr_delegate_t){fmt_tag, NULL, "A"}), 0);
  assert_string_equal(who(a, ta), "A");
  assert_string_equal(who(b, tb), "none");
  hr_router_free(a);
  hr_router_free(b);
}

static void test_builtin_through_registry(void **state) {
  hr_router_t *r = router();
  hr_date_t d = {784111777}; /* Sun, 06 Nov 1994 08:49:37 GMT */
  hr_date_t back;
  char buf[64];
  size_t len = 0;
  (void)state;
  assert_int_equal(hr_value_format(r, HR_TYPE_DATE, &d, buf, sizeof buf, &len), 0);
  assert_int_equal(len, 29);
  assert_memory_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT", 29);
  assert_int_equal(hr_value_format(r, HR_TYPE_DATE, &d, buf, 10, &len), HR_ENOSPC);
  assert_int_equal(len, 29);
  assert_int_equal(hr_value_parse(r, HR_TYPE_DATE,
                                  HR_SPAN_LIT("Sunday, 06-Nov-94 08:49:37 GMT"), &back,
                                  NULL), 0);
  assert_int_equal(back.seconds, 784111777);
  assert_int_equal(hr_value_parse(r, HR_TYPE_DATE, HR_SPAN_LIT("yesterday"), &back, NULL),
                   HR_EPARSE);
  hr_router_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lookup_order),
      cmocka_unit_test(test_fallback_and_errors),
      cmocka_unit_test(test_miss_path_walks_once),
      cmocka_unit_test(test_routers_are_isolated),
      cmocka_unit_test(test_builtin_through_registry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
