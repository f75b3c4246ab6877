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

#include <stddef.h>
#include <string.h>

#define DELTA_MAX 2147483648LL

enum kind { FLAG, FLAG_LIST, DELTA, DELTA_OPT };

/* The known directives, in the order they are written.  Flags are bits of
 * a mask (bit i for entry i: bit-fields have no address); numbers are
 * reached through their offset. */
static const struct {
  const char *name;
  enum kind kind;
  size_t off; /* numbers: offset of the int64_t field */
} known[] = {
    {"no-cache", FLAG_LIST, 0},
    {"no-store", FLAG, 0},
    {"no-transform", FLAG, 0},
    {"only-if-cached", FLAG, 0},
    {"must-revalidate", FLAG, 0},
    {"proxy-revalidate", FLAG, 0},
    {"must-understand", FLAG, 0},
    {"public", FLAG, 0},
    {"private", FLAG_LIST, 0},
    {"immutable", FLAG, 0},
    {"max-age", DELTA, offsetof(hr_cache_control_t, max_age)},
    {"s-maxage", DELTA, offsetof(hr_cache_control_t, s_maxage)},
    {"max-stale", DELTA_OPT, offsetof(hr_cache_control_t, max_stale)},
    {"min-fresh", DELTA, offsetof(hr_cache_control_t, min_fresh)},
};
#define NKNOWN (sizeof known / sizeof known[0])

static int find_known(hr_span_t name) {
  size_t i;
  for (i = 0; i < NKNOWN; i++)
    if (hr_span_eq_nocase(name, hr_span_cstr(known[i].name))) return (int)i;
  return -1;
}

static unsigned get_flags(const hr_cache_control_t *cc) {
  return cc->no_cache | cc->no_store << 1 | cc->no_transform << 2 |
         cc->only_if_cached << 3 | cc->must_revalidate << 4 |
         cc->proxy_revalidate << 5 | cc->must_understand << 6 |
         cc->is_public << 7 | cc->is_private << 8 | cc->immutable << 9;
}

static void set_flags(hr_cache_control_t *cc, unsigned f) {
  cc->no_cache = f & 1;
  cc->no_store = f >> 1 & 1;
  cc->no_transform = f >> 2 & 1;
  cc->only_if_cached = f >> 3 & 1;
  cc->must_revalidate = f >> 4 & 1;
  cc->proxy_revalidate = f >> 5 & 1;
  cc->must_understand = f >> 6 & 1;
  cc->is_public = f >> 7 & 1;
  cc->is_private = f >> 8 & 1;
  cc->immutable = f >> 9 & 1;
}

static int64_t *number(hr_cache_control_t *cc, int i) {
  return (int64_t *)((char *)cc + known[i].off);
}

static int64_t get_number(const hr_cache_control_t *cc, int i) {
  return *(const int64_t *)((const char *)cc + known[i].off);
}

/* Room for the directives hroute does not know: taken from `mem` at the
 * first one, as many as the field has directives. */
typedef struct ext_room_s {
  const hr_mem_t *mem;
  hr_span_t text;
  size_t left;
} ext_room_t;

static int parse_directive(hr__lex_t *lx, hr_cache_control_t *cc,
                           unsigned *flags, ext_room_t *room) {
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
    if (cc->ext == NULL) {
      void *ext;
      hr__count_list(room->text, ',', HR__COUNT_FIRST | HR__COUNT_QUOTES, &room->left, NULL);
      if (hr__mem_items(room->mem, room->left, sizeof(hr_mparam_t), &ext, 0, 0, NULL) != 0)
        return HR_ENOMEM;
      cc->ext = ext;
    }
    if (room->left == 0) return HR__ROOM_SHORT();
    cc->ext[cc->n_ext++] = d;
    room->left--;
    return 0;
  }
  switch (known[k].kind) {
    case FLAG:
      if (has_value) return HR_EPARSE;
      /* fall through */
    case FLAG_LIST:
      *flags |= 1u << k;
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

static int parse_cache_control(hr_span_t text, void *value, const hr_mem_t *mem,
                               void *udata) {
  hr_cache_control_t *cc = value;
  hr__lex_t lx;
  unsigned flags = 0;
  ext_room_t room;
  int rc;
  (void)udata;
  memset(cc, 0, sizeof *cc);
  cc->max_age = cc->s_maxage = cc->max_stale = cc->min_fresh = -1;
  room.mem = mem;
  room.text = text;
  room.left = 0;
  hr__lex_init(&lx, text);
  while (hr__lex_list_next(&lx)) {
    if ((rc = parse_directive(&lx, cc, &flags, &room)) != 0) return rc;
    if (hr__lex_list_after(&lx) != 0) return HR_EPARSE;
  }
  set_flags(cc, flags);
  return 0;
}

static int format_cache_control(const void *value, char *buf, size_t cap,
                                size_t *len, void *udata) {
  const hr_cache_control_t *cc = value;
  hr__tw_t o;
  size_t i;
  int first = 1;
  unsigned flags = get_flags(cc);
  (void)udata;
  if (cc->n_ext > 0 && cc->ext == NULL) return HR_EINVAL;
  hr__tw_init(&o, buf, cap);
  for (i = 0; i < NKNOWN; i++) {
    int64_t v = 0;
    if (known[i].kind == FLAG || known[i].kind == FLAG_LIST) {
      if (!(flags >> i & 1)) continue;
    } else {
      v = get_number(cc, (int)i);
      if (v == -1) continue;
      if (v < -1) return HR_EINVAL;
    }
    if (!first) hr__tw_bytes(&o, ", ", 2);
    first = 0;
    hr__tw_cstr(&o, known[i].name);
    if (known[i].kind == DELTA ||
        (known[i].kind == DELTA_OPT && v != INT64_MAX)) {
      hr__tw_char(&o, '=');
      hr__tw_u64(&o, (uint64_t)v);
    }
  }
  for (i = 0; i < cc->n_ext; i++) {
    /* A known name in ext would be read back into its field. */
    if (find_known(cc->ext[i].name) >= 0) return HR_EINVAL;
    if (!first) hr__tw_bytes(&o, ", ", 2);
    first = 0;
    if (hr__tw_param(&o, &cc->ext[i], HR__PARAM_NOVALUE) != 0)
      return HR_EINVAL;
  }
  return hr__tw_finish(&o, len);
}

const hr_delegate_t hr__delegate_cache_control = {format_cache_control,
                                                  parse_cache_control, NULL};
