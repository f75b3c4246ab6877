/* SPDX-License-Identifier: MIT */
/*
 * The Cache-Control delegate (RFC 9111 §5.2) for hr_cache_control_t.
 *
 *   Cache-Control   = #cache-directive
 *   cache-directive = token [ "=" ( token / quoted-string ) ]
 *
 * Directive names compare case-insensitively.  The directives of RFC 9111
 * and immutable (RFC 8246) go into the struct's fields; any other directive
 * is kept in ext as written (a directive without an argument has an empty,
 * unquoted value).  Choices where the RFCs leave room:
 *  - delta-seconds arguments (max-age, s-maxage, max-stale, min-fresh) are
 *    accepted as token or quoted-string, as §5.2 asks of recipients; a value
 *    above 2147483648 (2^31) becomes 2147483648 (§1.2.2).  A missing or
 *    non-numeric argument is HR_EPARSE.
 *  - max-stale without an argument ("any staleness", §5.2.1.2) is stored as
 *    INT64_MAX, and INT64_MAX is written back as a bare max-stale.
 *  - A directive that appears twice keeps its first value (§4.2.1).
 *  - no-cache and private may carry a list of field names (§5.2.2.4,
 *    §5.2.2.7).  The flag is set and the list is checked for syntax and
 *    then dropped: hr_cache_control_t has nowhere to keep it, and a cache
 *    that ignores the list treats the whole response as no-cache or
 *    private, the more restrictive reading.  Any other argument-less
 *    directive given an argument is HR_EPARSE.
 * Formatting writes the flags, then the numbers, in the order of `known`
 * below, then ext in its order, separated by ", ".
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

#include <string.h>

#define DELTA_MAX 2147483648LL

enum kind { FLAG, FLAG_LIST, DELTA, DELTA_OPT };

static const struct {
  const char *name;
  enum kind kind;
} known[] = {
    {"no-cache", FLAG_LIST},     {"no-store", FLAG},
    {"no-transform", FLAG},      {"only-if-cached", FLAG},
    {"must-revalidate", FLAG},   {"proxy-revalidate", FLAG},
    {"must-understand", FLAG},   {"public", FLAG},
    {"private", FLAG_LIST},      {"immutable", FLAG},
    {"max-age", DELTA},          {"s-maxage", DELTA},
    {"max-stale", DELTA_OPT},    {"min-fresh", DELTA},
};
#define NKNOWN (sizeof known / sizeof known[0])

static int find_known(hr_span_t name) {
  size_t i;
  for (i = 0; i < NKNOWN; i++)
    if (hr_span_eq_nocase(name, hr_span_cstr(known[i].name))) return (int)i;
  return -1;
}

/* Flags by their index in `known` (bit-fields have no address). */
static unsigned get_flag(const hr_cache_control_t *cc, int i) {
  switch (i) {
    case 0: return cc->no_cache;
    case 1: return cc->no_store;
    case 2: return cc->no_transform;
    case 3: return cc->only_if_cached;
    case 4: return cc->must_revalidate;
    case 5: return cc->proxy_revalidate;
    case 6: return cc->must_understand;
    case 7: return cc->is_public;
    case 8: return cc->is_private;
    default: return cc->immutable;
  }
}

static void set_flag(hr_cache_control_t *cc, int i) {
  switch (i) {
    case 0: cc->no_cache = 1; break;
    case 1: cc->no_store = 1; break;
    case 2: cc->no_transform = 1; break;
    case 3: cc->only_if_cached = 1; break;
    case 4: cc->must_revalidate = 1; break;
    case 5: cc->proxy_revalidate = 1; break;
    case 6: cc->must_understand = 1; break;
    case 7: cc->is_public = 1; break;
    case 8: cc->is_private = 1; break;
    default: cc->immutable = 1; break;
  }
}

/* Numbers by their index in `known`. */
static int64_t *number(hr_cache_control_t *cc, int i) {
  switch (i) {
    case 10: return &cc->max_age;
    case 11: return &cc->s_maxage;
    case 12: return &cc->max_stale;
    default: return &cc->min_fresh;
  }
}

static int64_t get_number(const hr_cache_control_t *cc, int i) {
  switch (i) {
    case 10: return cc->max_age;
    case 11: return cc->s_maxage;
    case 12: return cc->max_stale;
    default: return cc->min_fresh;
  }
}

static int parse_directive(hr__lex_t *lx, hr_cache_control_t *cc) {
  hr_mparam_t d;
  int k, has_value = 0;
  if (hr__lex_token(lx, &d.name) != 0) return HR_EPARSE;
  d.value.ptr = lx->p;
  d.value.len = 0;
  d.quoted = 0;
  if (hr__lex_eat(lx, '=')) {
    has_value = 1;
    if (hr__lex_peek(lx) == '"') {
      if (hr__lex_quoted(lx, &d.value) != 0) return HR_EPARSE;
      d.quoted = 1;
    } else if (hr__lex_token(lx, &d.value) != 0) {
      return HR_EPARSE;
    }
  }
  k = find_known(d.name);
  if (k < 0) {
    if (cc->n_ext == HR_MAX_ITEMS) return HR_EPARSE;
    cc->ext[cc->n_ext++] = d;
    return 0;
  }
  switch (known[k].kind) {
    case FLAG:
      if (has_value) return HR_EPARSE;
      /* fall through */
    case FLAG_LIST:
      set_flag(cc, k);
      return 0;
    case DELTA:
    case DELTA_OPT: {
      int64_t *field = number(cc, k);
      uint64_t v = INT64_MAX;
      int clamped = 0;
      if (has_value) {
        hr__lex_t num;
        hr__lex_init(&num, d.value);
        if (hr__lex_digits(&num, DELTA_MAX, &v, &clamped) != 0 ||
            num.p != num.end)
          return HR_EPARSE;
      } else if (known[k].kind == DELTA) {
        return HR_EPARSE;
      }
      if (*field == -1) *field = (int64_t)v; /* the first one counts */
      return 0;
    }
  }
  return HR_EPARSE;
}

static int parse_cache_control(hr_span_t text, void *value, void *udata) {
  hr_cache_control_t *cc = value;
  hr__lex_t lx;
  (void)udata;
  memset(cc, 0, sizeof *cc);
  cc->max_age = cc->s_maxage = cc->max_stale = cc->min_fresh = -1;
  hr__lex_init(&lx, text);
  while (hr__lex_list_next(&lx)) {
    if (parse_directive(&lx, cc) != 0 || hr__lex_list_after(&lx) != 0)
      return HR_EPARSE;
  }
  return 0;
}

static int format_cache_control(const void *value, char *buf, size_t cap,
                                size_t *len, void *udata) {
  const hr_cache_control_t *cc = value;
  hr__out_t o;
  size_t i;
  int first = 1;
  (void)udata;
  if (cc->n_ext > HR_MAX_ITEMS) return HR_EINVAL;
  hr__out_init(&o, buf, cap);
  for (i = 0; i < NKNOWN; i++) {
    int64_t v = 0;
    if (known[i].kind == FLAG || known[i].kind == FLAG_LIST) {
      if (!get_flag(cc, (int)i)) continue;
    } else {
      v = get_number(cc, (int)i);
      if (v == -1) continue;
      if (v < -1) return HR_EINVAL;
    }
    if (!first) hr__out_bytes(&o, ", ", 2);
    first = 0;
    hr__out_cstr(&o, known[i].name);
    if (known[i].kind == DELTA ||
        (known[i].kind == DELTA_OPT && v != INT64_MAX)) {
      hr__out_char(&o, '=');
      hr__out_u64(&o, (uint64_t)v);
    }
  }
  for (i = 0; i < cc->n_ext; i++) {
    /* A known name in ext would be read back into its field. */
    if (find_known(cc->ext[i].name) >= 0) return HR_EINVAL;
    if (!first) hr__out_bytes(&o, ", ", 2);
    first = 0;
    if (hr__out_param(&o, &cc->ext[i], HR__PARAM_NOVALUE) != 0)
      return HR_EINVAL;
  }
  return hr__out_finish(&o, len);
}

const hr_delegate_t hr__delegate_cache_control = {format_cache_control,
                                                  parse_cache_control, NULL};
