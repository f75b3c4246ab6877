/* SPDX-License-Identifier: MIT */
/*
 * The int64_t and uint64_t header delegates: decimal numbers as numeric
 * fields write them (Content-Length, Age, Max-Forwards are 1*DIGIT).  The
 * unsigned form is exactly 1*DIGIT; the signed form also takes one leading
 * "-".  No "+", no whitespace (the caller passes a trimmed field value), no
 * other bytes; leading zeros are accepted, as 1*DIGIT allows.  A value out
 * of range is HR_EPARSE, never wrapped or clamped.
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

static int parse_u64(hr_span_t text, void *value, const hr_mem_t *mem, void *udata) {
  hr__lex_t lx;
  uint64_t v;
  (void)udata;
  (void)mem;
  hr__lex_init(&lx, text);
  if (hr__lex_digits(&lx, UINT64_MAX, &v, NULL) != 0 || lx.p != lx.end)
    return HR_EPARSE;
  *(uint64_t *)value = v;
  return 0;
}

static int format_u64(const void *value, char *buf, size_t cap, size_t *len,
                      void *udata) {
  hr__tw_t o;
  (void)udata;
  hr__tw_init(&o, buf, cap);
  hr__tw_u64(&o, *(const uint64_t *)value);
  return hr__tw_finish(&o, len);
}

static int parse_i64(hr_span_t text, void *value, const hr_mem_t *mem, void *udata) {
  hr__lex_t lx;
  uint64_t mag;
  int neg;
  (void)udata;
  (void)mem;
  hr__lex_init(&lx, text);
  neg = hr__lex_eat(&lx, '-');
  /* The magnitude of INT64_MIN is INT64_MAX + 1. */
  if (hr__lex_digits(&lx, (uint64_t)INT64_MAX + neg, &mag, NULL) != 0 ||
      lx.p != lx.end)
    return HR_EPARSE;
  if (neg)
    *(int64_t *)value = mag == 0 ? 0 : -(int64_t)(mag - 1) - 1;
  else
    *(int64_t *)value = (int64_t)mag;
  return 0;
}

static int format_i64(const void *value, char *buf, size_t cap, size_t *len,
                      void *udata) {
  hr__tw_t o;
  int64_t v = *(const int64_t *)value;
  (void)udata;
  hr__tw_init(&o, buf, cap);
  if (v < 0) {
    hr__tw_char(&o, '-');
    hr__tw_u64(&o, (uint64_t)(-(v + 1)) + 1);
  } else {
    hr__tw_u64(&o, (uint64_t)v);
  }
  return hr__tw_finish(&o, len);
}

const hr_delegate_t hr__delegate_int64 = {format_i64, parse_i64, NULL};
const hr_delegate_t hr__delegate_uint64 = {format_u64, parse_u64, NULL};
