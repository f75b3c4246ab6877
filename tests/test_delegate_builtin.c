/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the built-in header delegates (src/delegate/builtin_*.c),
 * called directly, without a router.  Table-driven: canonical forms (parse,
 * then format, gives the canonical text, and the canonical text is a fixed
 * point), the examples of RFC 9110, RFC 6265 and RFC 8288, malformed inputs
 * (HR_EPARSE), unwritable values (HR_EINVAL), values built in code that
 * must survive format then parse, HR_ENOSPC with the exact length for every
 * short buffer, and lists far longer than any fixed cap.  Every input is
 * parsed from an exact-size heap copy, with its items in a heap block of
 * exactly the size the parser asked for (a first parse without memory
 * learns it), and every format goes into an exact-size heap buffer, so
 * AddressSanitizer catches a byte read or written outside them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "delegate/builtin.h"
#include "delegate/lex.h"

/* ---- the delegates under test and how to compare their values ----------- */

typedef union value_u {
  int64_t i64;
  uint64_t u64;
  hr_date_t date;
  hr_media_type_t mt;
  hr_media_ranges_t mr;
  hr_etag_t etag;
  hr_etag_list_t el;
  hr_cache_control_t cc;
  hr_set_cookie_t sc;
  hr_cookies_t ck;
  hr_links_t lk;
} value_t;

enum {
  K_INT64,
  K_UINT64,
  K_DATE,
  K_MEDIA_TYPE,
  K_MEDIA_RANGES,
  K_ETAG,
  K_ETAG_LIST,
  K_CACHE_CONTROL,
  K_SET_COOKIE,
  K_COOKIES,
  K_LINK,
  K_COUNT
};

/* A parameter value with its quoted-pairs undone, byte by byte. */
static int vbyte(const hr_mparam_t *p, size_t *i) {
  unsigned char c = (unsigned char)p->value.ptr[(*i)++];
  if (p->quoted && c == '\\' && *i < p->value.len)
    c = (unsigned char)p->value.ptr[(*i)++];
  return c;
}

/* Same name, same value once escapes are undone (quoted or not), and an
 * empty value only equals an empty value written the same way (bare vs
 * ""). */
static int param_eq(const hr_mparam_t *a, const hr_mparam_t *b) {
  size_t i = 0, j = 0;
  if (!hr_span_eq(a->name, b->name)) return 0;
  if (a->value.len == 0 || b->value.len == 0)
    return a->value.len == b->value.len && a->quoted == b->quoted;
  while (i < a->value.len && j < b->value.len)
    if (vbyte(a, &i) != vbyte(b, &j)) return 0;
  return i == a->value.len && j == b->value.len;
}

static int params_eq(const hr_mparam_t *a, size_t na, const hr_mparam_t *b,
                     size_t nb) {
  size_t i;
  if (na != nb) return 0;
  for (i = 0; i < na; i++)
    if (!param_eq(&a[i], &b[i])) return 0;
  return 1;
}

static int mt_eq(const hr_media_type_t *a, const hr_media_type_t *b) {
  return hr_span_eq(a->type, b->type) && hr_span_eq(a->subtype, b->subtype) &&
         params_eq(a->params, a->nparams, b->params, b->nparams);
}

static int etag_eq(const hr_etag_t *a, const hr_etag_t *b) {
  return a->weak == b->weak && hr_span_eq(a->tag, b->tag);
}

static int value_eq(int k, const value_t *a, const value_t *b) {
  size_t i;
  switch (k) {
    case K_INT64:
      return a->i64 == b->i64;
    case K_UINT64:
      return a->u64 == b->u64;
    case K_DATE:
      return a->date.seconds == b->date.seconds;
    case K_MEDIA_TYPE:
      return mt_eq(&a->mt, &b->mt);
    case K_MEDIA_RANGES:
      if (a->mr.n != b->mr.n) return 0;
      for (i = 0; i < a->mr.n; i++)
        if (a->mr.ranges[i].q != b->mr.ranges[i].q ||
            !mt_eq(&a->mr.ranges[i].media, &b->mr.ranges[i].media))
          return 0;
      return 1;
    case K_ETAG:
      return etag_eq(&a->etag, &b->etag);
    case K_ETAG_LIST:
      if (a->el.any != b->el.any || a->el.n != b->el.n) return 0;
      for (i = 0; i < a->el.n; i++)
        if (!etag_eq(&a->el.tags[i], &b->el.tags[i])) return 0;
      return 1;
    case K_CACHE_CONTROL: {
      const hr_cache_control_t *x = &a->cc, *y = &b->cc;
      return x->max_age == y->max_age && x->s_maxage == y->s_maxage &&
             x->max_stale == y->max_stale && x->min_fresh == y->min_fresh &&
             x->no_cache == y->no_cache && x->no_store == y->no_store &&
             x->no_transform == y->no_transform &&
             x->only_if_cached == y->only_if_cached &&
             x->must_revalidate == y->must_revalidate &&
             x->proxy_revalidate == y->proxy_revalidate &&
             x->must_understand == y->must_understand &&
             x->is_public == y->is_public && x->is_private == y->is_private &&
             x->immutable == y->immutable &&
             params_eq(x->ext, x->n_ext, y->ext, y->n_ext);
    }
    case K_SET_COOKIE: {
      const hr_set_cookie_t *x = &a->sc, *y = &b->sc;
      return hr_span_eq(x->name, y->name) && hr_span_eq(x->value, y->value) &&
             x->expires == y->expires && x->max_age == y->max_age &&
             hr_span_eq(x->domain, y->domain) && hr_span_eq(x->path, y->path) &&
             x->secure == y->secure && x->http_only == y->http_only &&
             x->same_site == y->same_site;
    }
    case K_COOKIES:
      if (a->ck.n != b->ck.n) return 0;
      for (i = 0; i < a->ck.n; i++)
        if (!hr_span_eq(a->ck.pairs[i].name, b->ck.pairs[i].name) ||
            !hr_span_eq(a->ck.pairs[i].value, b->ck.pairs[i].value))
          return 0;
      return 1;
    case K_LINK:
      if (a->lk.n != b->lk.n) return 0;
      for (i = 0; i < a->lk.n; i++) {
        const hr_link_t *x = &a->lk.links[i], *y = &b->lk.links[i];
        if (!hr_span_eq(x->target, y->target) ||
            !params_eq(x->params, x->nparams, y->params, y->nparams))
          return 0;
      }
      return 1;
  }
  return 0;
}

static const struct {
  const char *name;
  const hr_delegate_t *d;
} kinds[K_COUNT] = {
    {"int64", &hr__delegate_int64},
    {"uint64", &hr__delegate_uint64},
    {"date", &hr__delegate_date},
    {"media type", &hr__delegate_media_type},
    {"media ranges", &hr__delegate_media_ranges},
    {"etag", &hr__delegate_etag},
    {"etag list", &hr__delegate_etag_list},
    {"cache-control", &hr__delegate_cache_control},
    {"set-cookie", &hr__delegate_set_cookie},
    {"cookies", &hr__delegate_cookies},
    {"link", &hr__delegate_link},
};

/* ---- helpers ------------------------------------------------------------ */

/* The item memory of each live parsed value, by the copy its spans point
 * into: release(copy) frees both. */
static struct {
  char *copy;
  void *items;
} live[8];

static void release(char *copy) {
  size_t i;
  for (i = 0; i < sizeof live / sizeof live[0]; i++)
    if (live[i].copy == copy && copy != NULL) {
      free(live[i].items);
      live[i].copy = NULL;
      live[i].items = NULL;
    }
  free(copy);
}

/* Parses n bytes of s from an exact-size heap copy, which is kept in
 * *copy (the value's spans point into it; release() frees it).  A first
 * parse with no memory at all says how much the items need; the second
 * gets exactly that, from the heap. */
static int parse_n(int k, const char *s, size_t n, value_t *v, char **copy) {
  char *buf = malloc(n);
  hr_mem_buffer_t mb;
  void *items = NULL;
  size_t i;
  int rc;
  assert_non_null(buf);
  if (n > 0) memcpy(buf, s, n);
  *copy = buf;
  hr_mem_buffer_init(&mb, NULL, 0);
  memset(v, 0xA5, sizeof *v); /* the parser must set what it reports */
  rc = kinds[k].d->parse((hr_span_t){buf, n}, v, &mb.mem, kinds[k].d->udata);
  if (rc != HR_ENOMEM) {
    assert_int_equal(mb.need, 0); /* a parse that succeeds asks for nothing */
    return rc;
  }
  assert_true(mb.need > 0);
  items = malloc(mb.need);
  assert_non_null(items);
  hr_mem_buffer_init(&mb, items, mb.need);
  memset(v, 0xA5, sizeof *v);
  rc = kinds[k].d->parse((hr_span_t){buf, n}, v, &mb.mem, kinds[k].d->udata);
  assert_int_not_equal(rc, HR_ENOMEM); /* what it asked for was enough */
  assert_int_equal(mb.used, mb.need);  /* and it asked once */
  for (i = 0; i < sizeof live / sizeof live[0]; i++)
    if (live[i].copy == NULL) break;
  assert_true(i < sizeof live / sizeof live[0]);
  live[i].copy = buf;
  live[i].items = items;
  return rc;
}

/* Storage for values built in code: blank() points a value's item arrays
 * here. */
static struct {
  hr_mparam_t params[8];
  hr_media_range_t ranges[8];
  hr_mparam_t range_params[8][8];
  hr_etag_t tags[4];
  hr_cookie_t pairs[4];
  hr_link_t links[4];
  hr_mparam_t link_params[4][8];
} st;

/* Zeroes *v for kind k, with its arrays pointing at `st`. */
static void blank(value_t *v, int k) {
  size_t i;
  memset(v, 0, sizeof *v);
  memset(&st, 0, sizeof st);
  switch (k) {
    case K_MEDIA_TYPE:
      v->mt.params = st.params;
      break;
    case K_MEDIA_RANGES:
      v->mr.ranges = st.ranges;
      for (i = 0; i < 8; i++) st.ranges[i].media.params = st.range_params[i];
      break;
    case K_ETAG_LIST:
      v->el.tags = st.tags;
      break;
    case K_CACHE_CONTROL:
      v->cc.ext = st.params;
      break;
    case K_COOKIES:
      v->ck.pairs = st.pairs;
      break;
    case K_LINK:
      v->lk.links = st.links;
      for (i = 0; i < 4; i++) st.links[i].params = st.link_params[i];
      break;
  }
}

static int parse(int k, const char *s, value_t *v, char **copy) {
  return parse_n(k, s, strlen(s), v, copy);
}

/* Formats v into a heap string (NUL-terminated; the caller frees it),
 * checking on the way that a buffer of exactly the needed size is used in
 * full.  Returns the format's result; *out is NULL unless it is 0. */
static int format(int k, const value_t *v, char **out) {
  size_t need = (size_t)-1, len = (size_t)-1;
  char *buf;
  int rc = kinds[k].d->format(v, NULL, 0, &need, kinds[k].d->udata);
  *out = NULL;
  if (rc == 0) assert_int_equal(need, 0);
  if (rc != 0 && rc != HR_ENOSPC) return rc;
  buf = malloc(need);
  assert_non_null(buf);
  rc = kinds[k].d->format(v, buf, need, &len, kinds[k].d->udata);
  if (rc != 0) {
    free(buf);
    return rc;
  }
  assert_int_equal(len, need);
  *out = malloc(len + 1);
  assert_non_null(*out);
  if (len > 0) memcpy(*out, buf, len);
  (*out)[len] = '\0';
  free(buf);
  return 0;
}

/* ---- canonical forms and the RFC examples ------------------------------- */

typedef struct canon_s {
  int k;
  const char *in;
  const char *canon; /* what formatting the parsed value writes */
} canon_t;

static const canon_t canon_cases[] = {
    {K_INT64, "0", "0"},
    {K_INT64, "-0", "0"},
    {K_INT64, "007", "7"},
    {K_INT64, "-1", "-1"},
    {K_INT64, "9223372036854775807", "9223372036854775807"},
    {K_INT64, "-9223372036854775808", "-9223372036854775808"},
    {K_UINT64, "0", "0"},
    {K_UINT64, "00042", "42"},
    {K_UINT64, "18446744073709551615", "18446744073709551615"},

    /* RFC 9110 §5.6.7: the three forms of one instant */
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sunday, 06-Nov-94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sun Nov 06 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Thu, 01 Jan 1970 00:00:00 GMT", "Thu, 01 Jan 1970 00:00:00 GMT"},
    {K_DATE, "Thursday, 01-Jan-70 00:00:00 GMT",
     "Thu, 01 Jan 1970 00:00:00 GMT"},
    {K_DATE, "Friday, 31-Dec-99 23:59:59 GMT", "Fri, 31 Dec 1999 23:59:59 GMT"},
    {K_DATE, "Saturday, 01-Jan-00 00:00:00 GMT",
     "Sat, 01 Jan 2000 00:00:00 GMT"},
    {K_DATE, "Tuesday, 31-Dec-69 23:59:59 GMT",
     "Tue, 31 Dec 2069 23:59:59 GMT"},
    {K_DATE, "Tue, 29 Feb 2000 12:00:00 GMT", "Tue, 29 Feb 2000 12:00:00 GMT"},
    {K_DATE, "Sat, 31 Dec 2016 23:59:60 GMT", "Sun, 01 Jan 2017 00:00:00 GMT"},
    {K_DATE, "Fri, 31 Dec 9999 23:59:59 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"},
    {K_DATE, "Sat, 01 Jan 0000 00:00:00 GMT", "Sat, 01 Jan 0000 00:00:00 GMT"},

    /* RFC 9110 §8.3.1: equivalent spellings (case and quoting are kept) */
    {K_MEDIA_TYPE, "text/html;charset=utf-8", "text/html;charset=utf-8"},
    {K_MEDIA_TYPE, "text/html;charset=UTF-8", "text/html;charset=UTF-8"},
    {K_MEDIA_TYPE, "Text/HTML;Charset=\"utf-8\"",
     "Text/HTML;Charset=\"utf-8\""},
    {K_MEDIA_TYPE, "text/html; charset=\"utf-8\"",
     "text/html;charset=\"utf-8\""},
    {K_MEDIA_TYPE, "text/plain ;\ta=b ; c=d", "text/plain;a=b;c=d"},
    {K_MEDIA_TYPE, "text/plain;;a=b;", "text/plain;a=b"},
    {K_MEDIA_TYPE, "multipart/form-data; boundary=\"a b,c\"",
     "multipart/form-data;boundary=\"a b,c\""},
    {K_MEDIA_TYPE, "a/b;x=\"q\\\"uote\\\\\"", "a/b;x=\"q\\\"uote\\\\\""},
    {K_MEDIA_TYPE, "a/b;x=\"\"", "a/b;x=\"\""},
    {K_MEDIA_TYPE, "application/vnd.api+json", "application/vnd.api+json"},

    /* RFC 9110 §12.5.1 examples */
    {K_MEDIA_RANGES, "audio/*; q=0.2, audio/basic",
     "audio/*;q=0.2, audio/basic"},
    {K_MEDIA_RANGES,
     "text/plain; q=0.5, text/html, text/x-dvi; q=0.8, text/x-c",
     "text/plain;q=0.5, text/html, text/x-dvi;q=0.8, text/x-c"},
    {K_MEDIA_RANGES, "text/*, text/plain, text/plain;format=flowed, */*",
     "text/*, text/plain, text/plain;format=flowed, */*"},
    {K_MEDIA_RANGES,
     "text/*;q=0.3, text/plain;q=0.7, text/plain;format=flowed, "
     "text/plain;format=fixed;q=0.4, */*;q=0.5",
     "text/*;q=0.3, text/plain;q=0.7, text/plain;format=flowed, "
     "text/plain;format=fixed;q=0.4, */*;q=0.5"},
    {K_MEDIA_RANGES, "a/b;q=1.000", "a/b"},
    {K_MEDIA_RANGES, "a/b;q=1.", "a/b"},
    {K_MEDIA_RANGES, "a/b;Q=0.250", "a/b;q=0.25"},
    {K_MEDIA_RANGES, "a/b;q=0", "a/b;q=0"},
    {K_MEDIA_RANGES, "a/b;q=0.", "a/b;q=0"},
    {K_MEDIA_RANGES, "a/b;q=0.001", "a/b;q=0.001"},
    {K_MEDIA_RANGES, "a/b;q=0.05", "a/b;q=0.05"},
    {K_MEDIA_RANGES, "a/b;level=1;q=0.5;ext=x;y=\"z\"", "a/b;level=1;q=0.5"},
    {K_MEDIA_RANGES, "", ""},
    {K_MEDIA_RANGES, ",, a/b ,,c/d,", "a/b, c/d"},
    /* Java's HttpURLConnection default: "*" alone and ".2" */
    {K_MEDIA_RANGES, "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2",
     "text/html, image/gif, image/jpeg, */*;q=0.2, */*;q=0.2"},
    {K_MEDIA_RANGES, "*", "*/*"},
    {K_MEDIA_RANGES, "a/b;q=.125", "a/b;q=0.125"},
    {K_MEDIA_RANGES,
     "text/html,application/xhtml+xml,application/xml;q=0.9,"
     "image/avif,*/*;q=0.8",
     "text/html, application/xhtml+xml, application/xml;q=0.9, image/avif, "
     "*/*;q=0.8"},

    /* RFC 9110 §8.8.3 and §13.1.1, §13.1.2 */
    {K_ETAG, "\"xyzzy\"", "\"xyzzy\""},
    {K_ETAG, "W/\"xyzzy\"", "W/\"xyzzy\""},
    {K_ETAG, "\"\"", "\"\""},
    {K_ETAG, "W/\"\"", "W/\"\""},
    {K_ETAG, "\"a,b;W/\\\xC3\xA9\"", "\"a,b;W/\\\xC3\xA9\""},
    {K_ETAG_LIST, "*", "*"},
    {K_ETAG_LIST, "\"xyzzy\"", "\"xyzzy\""},
    {K_ETAG_LIST, "W/\"xyzzy\"", "W/\"xyzzy\""},
    {K_ETAG_LIST, "\"xyzzy\", \"r2d2xxxx\", \"c3piozzzz\"",
     "\"xyzzy\", \"r2d2xxxx\", \"c3piozzzz\""},
    {K_ETAG_LIST, "W/\"xyzzy\", W/\"r2d2xxxx\", W/\"c3piozzzz\"",
     "W/\"xyzzy\", W/\"r2d2xxxx\", W/\"c3piozzzz\""},
    {K_ETAG_LIST, "\"a\",W/\"b\"", "\"a\", W/\"b\""},
    {K_ETAG_LIST, "\"a,b\", \"c\"", "\"a,b\", \"c\""},
    {K_ETAG_LIST, ", \"a\" ,,", "\"a\""},
    {K_ETAG_LIST, "", ""},

    /* RFC 9111 §5.2, RFC 8246 */
    {K_CACHE_CONTROL, "max-age=60", "max-age=60"},
    {K_CACHE_CONTROL, "no-store, no-cache, must-revalidate",
     "no-cache, no-store, must-revalidate"},
    {K_CACHE_CONTROL, "public, max-age=31536000, immutable",
     "public, immutable, max-age=31536000"},
    {K_CACHE_CONTROL, "private, community=\"UCI\"",
     "private, community=\"UCI\""},
    {K_CACHE_CONTROL, "MAX-AGE=\"5\"", "max-age=5"},
    {K_CACHE_CONTROL, "max-age=99999999999999999999999", "max-age=2147483648"},
    {K_CACHE_CONTROL, "s-maxage=2147483649", "s-maxage=2147483648"},
    {K_CACHE_CONTROL, "max-age=2147483648", "max-age=2147483648"},
    {K_CACHE_CONTROL, "max-age=5, max-age=10", "max-age=5"},
    {K_CACHE_CONTROL, "max-stale", "max-stale"},
    {K_CACHE_CONTROL, "max-stale=10, min-fresh=0", "max-stale=10, min-fresh=0"},
    {K_CACHE_CONTROL, "no-cache=\"Set-Cookie, Set-Cookie2\"", "no-cache"},
    {K_CACHE_CONTROL, "private=x, no-transform, only-if-cached",
     "no-transform, only-if-cached, private"},
    {K_CACHE_CONTROL, "proxy-revalidate,must-understand,no-store",
     "no-store, proxy-revalidate, must-understand"},
    {K_CACHE_CONTROL, "stale-while-revalidate=60, Foo, bar=\"a b\", baz=\"\"",
     "stale-while-revalidate=60, Foo, bar=\"a b\", baz=\"\""},
    {K_CACHE_CONTROL, "", ""},
    {K_CACHE_CONTROL, " , ,max-age=1 ,", "max-age=1"},

    /* RFC 6265 §3.1 examples, and the §5.2 leniency */
    {K_SET_COOKIE, "SID=31d4d96e407aad42", "SID=31d4d96e407aad42"},
    {K_SET_COOKIE, "SID=31d4d96e407aad42; Path=/; Domain=example.com",
     "SID=31d4d96e407aad42; Domain=example.com; Path=/"},
    {K_SET_COOKIE, "SID=31d4d96e407aad42; Path=/; Secure; HttpOnly",
     "SID=31d4d96e407aad42; Path=/; Secure; HttpOnly"},
    {K_SET_COOKIE, "lang=en-US; Path=/; Domain=example.com",
     "lang=en-US; Domain=example.com; Path=/"},
    {K_SET_COOKIE, "lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
     "lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT"},
    {K_SET_COOKIE, "lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT",
     "lang=; Expires=Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_SET_COOKIE, "id=a3fWa; Expires=Wed, 21-Oct-2015 07:28:00 GMT",
     "id=a3fWa; Expires=Wed, 21 Oct 2015 07:28:00 GMT"},
    {K_SET_COOKIE, "id=1; expires=Sunday, 06-Nov-94 08:49:37 GMT",
     "id=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_SET_COOKIE, "id=1; Expires=6 nov 1994 8:49:37",
     "id=1; Expires=Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_SET_COOKIE, "id=1; Expires=Fri, 01 Jan 1601 00:00:00 GMT",
     "id=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT"},
    {K_SET_COOKIE,
     " a = \"b\" ;path=/x; SECURE; httponly=1; samesite=lax; max-age=0; "
     "domain=.Example.COM; foo=bar; ;",
     "a=b; Max-Age=0; Domain=Example.COM; Path=/x; Secure; HttpOnly; "
     "SameSite=Lax"},
    {K_SET_COOKIE, "a=b; SameSite=Strict", "a=b; SameSite=Strict"},
    {K_SET_COOKIE, "a=b; SameSite=None; Secure", "a=b; Secure; SameSite=None"},
    {K_SET_COOKIE, "a=b; SameSite=Bogus", "a=b"},
    {K_SET_COOKIE, "a=b; SameSite=Lax; SameSite=Bogus", "a=b; SameSite=Lax"},
    {K_SET_COOKIE, "a=b; Max-Age=-5", "a=b; Max-Age=0"},
    {K_SET_COOKIE, "a=b; Max-Age=99999999999999999999",
     "a=b; Max-Age=9223372036854775807"},
    {K_SET_COOKIE, "a=b; Max-Age=abc; Max-Age=+1; Max-Age=", "a=b"},
    {K_SET_COOKIE, "a=b; Max-Age=1; Max-Age=2", "a=b; Max-Age=2"},
    {K_SET_COOKIE, "a=b; Expires=garbage; Expires=Sun, 31 Feb 2021 00:00:00",
     "a=b"},
    {K_SET_COOKIE, "a=b; Path=x", "a=b"},
    {K_SET_COOKIE, "a=b; Path=/a; Path=", "a=b"},
    {K_SET_COOKIE, "a=b; Domain=", "a=b"},
    {K_SET_COOKIE, "a=b; Unknown=1; Version=1; Comment=\"x\"", "a=b"},
    {K_SET_COOKIE, "a=", "a="},
    {K_SET_COOKIE, "a=\"\"", "a="},

    /* RFC 6265 §3.1, §4.2.1, and lenient spacing */
    {K_COOKIES, "SID=31d4d96e407aad42", "SID=31d4d96e407aad42"},
    {K_COOKIES, "SID=31d4d96e407aad42; lang=en-US",
     "SID=31d4d96e407aad42; lang=en-US"},
    {K_COOKIES, "a=1;b=2", "a=1; b=2"},
    {K_COOKIES, " a = \"x\" ;\tb=; ", "a=x; b="},
    {K_COOKIES, "a=1;;b=2;", "a=1; b=2"},
    {K_COOKIES, "a=b=c", "a=b=c"},
    /* pairs that cannot be read are left out, the rest kept (§5.2) */
    {K_COOKIES, "a=1; b", "a=1"},
    {K_COOKIES, "a=1; =2", "a=1"},
    {K_COOKIES, "a=1; b\"=2", "a=1"},
    {K_COOKIES, "a=1;;b", "a=1"},
    {K_COOKIES, "cart[1]=x; sid=1; a@b=2; x:y=3; =anon; novalue", "sid=1"},

    /* RFC 8288 §3.5 examples (folded lines joined) */
    {K_LINK,
     "<http://example.com/TheBook/chapter2>; rel=\"previous\"; "
     "title=\"previous chapter\"",
     "<http://example.com/TheBook/chapter2>; rel=\"previous\"; "
     "title=\"previous chapter\""},
    {K_LINK, "</>; rel=\"http://example.net/foo\"",
     "</>; rel=\"http://example.net/foo\""},
    {K_LINK, "</terms>; rel=\"copyright\"; anchor=\"#foo\"",
     "</terms>; rel=\"copyright\"; anchor=\"#foo\""},
    {K_LINK,
     "</TheBook/chapter2>; rel=\"previous\"; "
     "title*=UTF-8'de'letztes%20Kapitel, </TheBook/chapter4>; rel=\"next\"; "
     "title*=UTF-8'de'n%c3%a4chstes%20Kapitel",
     "</TheBook/chapter2>; rel=\"previous\"; "
     "title*=UTF-8'de'letztes%20Kapitel, </TheBook/chapter4>; rel=\"next\"; "
     "title*=UTF-8'de'n%c3%a4chstes%20Kapitel"},
    {K_LINK,
     "<http://example.org/>; rel=\"start http://example.net/relation/other\"",
     "<http://example.org/>; rel=\"start http://example.net/relation/other\""},
    {K_LINK, "<a>;rel=next", "<a>; rel=next"},
    {K_LINK, "<a> ; rel = next ;\tcrossorigin", "<a>; rel=next; crossorigin"},
    {K_LINK, "<a,b;c>; title=\"x, y; z\",<d>",
     "<a,b;c>; title=\"x, y; z\", <d>"},
    {K_LINK, "<>", "<>"},
    {K_LINK, "", ""},
    {K_LINK, ", <a>, , <b>,", "<a>, <b>"},
};

static void test_canonical(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof canon_cases / sizeof canon_cases[0]; i++) {
    const canon_t *c = &canon_cases[i];
    value_t v, w;
    char *copy, *copy2, *text, *text2;
    int rc = parse(c->k, c->in, &v, &copy);
    if (rc != 0)
      fail_msg("%s: parse of '%s' gave %d", kinds[c->k].name, c->in, rc);
    rc = format(c->k, &v, &text);
    if (rc != 0 || strcmp(text, c->canon) != 0)
      fail_msg("%s: '%s' formats as '%s' (%d), want '%s'", kinds[c->k].name,
               c->in, text ? text : "", rc, c->canon);
    /* The canonical form parses to an equal value and is a fixed point. */
    assert_int_equal(parse(c->k, text, &w, &copy2), 0);
    if (!value_eq(c->k, &v, &w))
      fail_msg("%s: '%s' and '%s' parse differently", kinds[c->k].name, c->in,
               text);
    assert_int_equal(format(c->k, &w, &text2), 0);
    assert_string_equal(text, text2);
    release(copy);
    release(copy2);
    free(text);
    free(text2);
  }
}

/* ---- malformed input ---------------------------------------------------- */

typedef struct bad_s {
  int k;
  const char *in;
} bad_t;

static const bad_t bad_cases[] = {
    {K_INT64, ""},
    {K_INT64, "-"},
    {K_INT64, "+1"},
    {K_INT64, " 1"},
    {K_INT64, "1 "},
    {K_INT64, "1a"},
    {K_INT64, "--1"},
    {K_INT64, "1-"},
    {K_INT64, "0x10"},
    {K_INT64, "1.0"},
    {K_INT64, "9223372036854775808"},
    {K_INT64, "-9223372036854775809"},
    {K_INT64, "99999999999999999999999"},

    {K_UINT64, ""},
    {K_UINT64, "-1"},
    {K_UINT64, "-0"},
    {K_UINT64, "+1"},
    {K_UINT64, " 1"},
    {K_UINT64, "1\t"},
    {K_UINT64, "a"},
    {K_UINT64, "1e3"},
    {K_UINT64, "1,2"},
    {K_UINT64, "18446744073709551616"},
    {K_UINT64, "184467440737095516150"},

    {K_DATE, ""},
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 GMT "},
    {K_DATE, " Sun, 06 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 GM"},
    {K_DATE, "Mon, 06 Nov 1994 08:49:37 GMT"}, /* wrong weekday */
    {K_DATE, "sun, 06 Nov 1994 08:49:37 GMT"}, /* case-sensitive */
    {K_DATE, "Sun, 06 nov 1994 08:49:37 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 gmt"},
    {K_DATE, "Sun, 6 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sun,  6 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sun, 06 Nov 94 08:49:37 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 8:49:37 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 24:00:00 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 08:60:37 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 08:49:61 GMT"},
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 UTC"},
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 +0000"},
    {K_DATE, "Sun, 06 Xyz 1994 08:49:37 GMT"},
    {K_DATE, "Sun, 00 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Thu, 31 Nov 1994 08:49:37 GMT"}, /* no 31 November */
    {K_DATE, "Mon, 29 Feb 2100 00:00:00 GMT"}, /* 2100 is no leap year */
    {K_DATE, "Sun, 06 Nov 1994 08:49 GMT"},
    {K_DATE, "Sun, 06 Nov 1994T08:49:37 GMT"},
    {K_DATE, "Sunday, 06-Nov-1994 08:49:37 GMT"},
    {K_DATE, "Sun, 06-Nov-94 08:49:37 GMT"},
    {K_DATE, "Sunday, 06 Nov 1994 08:49:37 GMT"},
    {K_DATE, "Sunday, 06-Nov-94 08:49:37"},
    {K_DATE, "Monday, 06-Nov-94 08:49:37 GMT"},
    {K_DATE, "Sun Nov 6 08:49:37 1994"},
    {K_DATE, "Sun Nov  6 08:49:37 1994 GMT"},
    {K_DATE, "Sun Nov  6 08:49:37 94"},
    {K_DATE, "Sun Nov   6 08:49:37 1994"},
    {K_DATE, "1994-11-06T08:49:37Z"},
    {K_DATE, "784111777"},
    {K_DATE, "Sun"},

    {K_MEDIA_TYPE, ""},
    {K_MEDIA_TYPE, "text"},
    {K_MEDIA_TYPE, "text/"},
    {K_MEDIA_TYPE, "/html"},
    {K_MEDIA_TYPE, "text /html"},
    {K_MEDIA_TYPE, "text/ html"},
    {K_MEDIA_TYPE, "text/html/x"},
    {K_MEDIA_TYPE, "text/html;charset"},
    {K_MEDIA_TYPE, "text/html;charset="},
    {K_MEDIA_TYPE, "text/html;charset =utf-8"},
    {K_MEDIA_TYPE, "text/html;charset= utf-8"},
    {K_MEDIA_TYPE, "text/html;charset=\"utf-8"},
    {K_MEDIA_TYPE, "text/html;charset=\"a\\\""},
    {K_MEDIA_TYPE, "text/html;=x"},
    {K_MEDIA_TYPE, "text/html charset=x"},
    {K_MEDIA_TYPE, "text/html,text/plain"},
    {K_MEDIA_TYPE, "te(xt/html"},
    {K_MEDIA_TYPE, "text/html;a=b c"},
    {K_MEDIA_TYPE, "text/html;a=\"x\x01\""},
    {K_MEDIA_TYPE, "text/html;a=\"x\"y"},
    {K_MEDIA_TYPE, "text/html;a=\"x\x7f\""},

    {K_MEDIA_RANGES, "*/html"},
    {K_MEDIA_RANGES, "text/html, */plain"},
    {K_MEDIA_RANGES, "text"},
    {K_MEDIA_RANGES, "text/"},
    {K_MEDIA_RANGES, "text/html text/plain"},
    {K_MEDIA_RANGES, "text/html;q=2"},
    {K_MEDIA_RANGES, "text/html;q=1.001"},
    {K_MEDIA_RANGES, "text/html;q=1.5"},
    {K_MEDIA_RANGES, "text/html;q=0.1234"},
    {K_MEDIA_RANGES, "text/html;q="},
    {K_MEDIA_RANGES, "text/html;q"},
    {K_MEDIA_RANGES, "text/html;q=."},
    {K_MEDIA_RANGES, "text/html;q=.5000"},
    {K_MEDIA_RANGES, "text/html;q=.x"},
    {K_MEDIA_RANGES, "text/html;q=..5"},
    {K_MEDIA_RANGES, "text/html;q=-1"},
    {K_MEDIA_RANGES, "text/html;q=01"},
    {K_MEDIA_RANGES, "text/html;q=0.5x"},
    {K_MEDIA_RANGES, "text/html;q=\"0.5\""},
    {K_MEDIA_RANGES, "text/html;q=0,5"},
    {K_MEDIA_RANGES, "text/html;q=0.5;ext"},
    {K_MEDIA_RANGES, "text/html;level"},
    {K_MEDIA_RANGES,
     "text/html;"
     "a=\"unterminated, text/plain"},

    {K_ETAG, ""},
    {K_ETAG, "xyzzy"},
    {K_ETAG, "\"xyzzy"},
    {K_ETAG, "xyzzy\""},
    {K_ETAG, "w/\"xyzzy\""},
    {K_ETAG, "W/xyzzy"},
    {K_ETAG, "W/ \"xyzzy\""},
    {K_ETAG, "W\"xyzzy\""},
    {K_ETAG, "\"a\"b\""},
    {K_ETAG, "\"x\" "},
    {K_ETAG, "\"x\"\"y\""},
    {K_ETAG, "\"a b\""},
    {K_ETAG, "\"a\x7f\""},
    {K_ETAG, "\"a\tb\""},
    {K_ETAG, "*"},
    {K_ETAG, "\"a\", \"b\""},

    {K_ETAG_LIST, "\"a\" \"b\""},
    {K_ETAG_LIST, "\"a\";\"b\""},
    {K_ETAG_LIST, "*, \"a\""},
    {K_ETAG_LIST, "\"a\", *"},
    {K_ETAG_LIST, "**"},
    {K_ETAG_LIST, "* "},
    {K_ETAG_LIST, "a"},
    {K_ETAG_LIST, "\"a"},
    {K_ETAG_LIST, "W/"},
    {K_ETAG_LIST, "\"a\",\"b"},
    {K_ETAG_LIST, "W/\"a\" W/\"b\""},
    {K_ETAG_LIST, "\"a\"x"},
    {K_ETAG_LIST, "w/\"a\""},
    {K_ETAG_LIST, "\"a b\", \"c\""},

    {K_CACHE_CONTROL, "max-age"},
    {K_CACHE_CONTROL, "max-age="},
    {K_CACHE_CONTROL, "max-age=abc"},
    {K_CACHE_CONTROL, "max-age=-1"},
    {K_CACHE_CONTROL, "max-age=1.5"},
    {K_CACHE_CONTROL, "max-age=\"1a\""},
    {K_CACHE_CONTROL, "max-age=\"\""},
    {K_CACHE_CONTROL, "min-fresh"},
    {K_CACHE_CONTROL, "s-maxage=+1"},
    {K_CACHE_CONTROL, "no-store=1"},
    {K_CACHE_CONTROL, "public=yes"},
    {K_CACHE_CONTROL, "=x"},
    {K_CACHE_CONTROL, "a b"},
    {K_CACHE_CONTROL, "max-age = 5"},
    {K_CACHE_CONTROL, "max-age =5"},
    {K_CACHE_CONTROL, "a=\"unterminated"},
    {K_CACHE_CONTROL, "a=b c"},
    {K_CACHE_CONTROL, "a=,b"},
    {K_CACHE_CONTROL, "max-age=5;s-maxage=6"},
    {K_CACHE_CONTROL, "no-cache=\"a"},

    {K_SET_COOKIE, ""},
    {K_SET_COOKIE, "noequals"},
    {K_SET_COOKIE, "noequals; a=b"},
    {K_SET_COOKIE, "=value"},
    {K_SET_COOKIE, " =value; Path=/"},
    {K_SET_COOKIE, "; Path=/"},
    {K_SET_COOKIE, "na me=v"},
    {K_SET_COOKIE, "n\"x=v"},
    {K_SET_COOKIE, "(n)=v"},
    {K_SET_COOKIE, "n@=v"},
    {K_SET_COOKIE, "na,me=v"},
    {K_SET_COOKIE, "n=v\x01"},
    {K_SET_COOKIE, "n=\x7f"},
    {K_SET_COOKIE, "n\x01=v"},

    {K_COOKIES, ""},
    {K_COOKIES, ";"},
    {K_COOKIES, " ; ;"},
    {K_COOKIES, "a"},
    {K_COOKIES, "=1"},
    {K_COOKIES, "a b=1"},
    {K_COOKIES, "a=1\x01"},
    {K_COOKIES, "(a)=1"},
    {K_COOKIES, "novalue; =x; (a)=1"},
    {K_COOKIES, "a\x7f=1; ;"},

    {K_LINK, "http://x"},
    {K_LINK, "<http://x"},
    {K_LINK, "http://x>"},
    {K_LINK, "<a b>"},
    {K_LINK, "<a<b>"},
    {K_LINK, "<a\x01>"},
    {K_LINK, "<a\xC3\xA9>"},
    {K_LINK, "<a>;"},
    {K_LINK, "<a>;;rel=x"},
    {K_LINK, "<a> rel=x"},
    {K_LINK, "<a>; rel=\"x"},
    {K_LINK, "<a>; =x"},
    {K_LINK, "<a>; rel="},
    {K_LINK, "<a>; rel=x y"},
    {K_LINK, "<a>; rel=\"a\"x"},
    {K_LINK, "<a>, b"},
    {K_LINK, "<a><b>"},
    {K_LINK, "<a> <b>"},
    {K_LINK, "<a>; rel=next,,x"},
};

static void test_malformed(void **state) {
  size_t i;
  int count[K_COUNT] = {0}, k;
  (void)state;
  for (i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_t *c = &bad_cases[i];
    value_t v;
    char *copy;
    int rc = parse(c->k, c->in, &v, &copy);
    if (rc != HR_EPARSE)
      fail_msg("%s: '%s' gave %d, want HR_EPARSE", kinds[c->k].name, c->in, rc);
    release(copy);
    count[c->k]++;
  }
  for (k = 0; k < K_COUNT; k++)
    if (count[k] < 10)
      fail_msg("%s: only %d malformed cases", kinds[k].name, count[k]);
}

/* A truncated input is malformed, or a shorter valid value: whichever, the
 * parser reads none of the bytes past the cut (ASan would say so). */
static void test_truncated(void **state) {
  size_t i, n;
  (void)state;
  for (i = 0; i < sizeof canon_cases / sizeof canon_cases[0]; i++) {
    const canon_t *c = &canon_cases[i];
    for (n = 0; n < strlen(c->in); n++) {
      value_t v;
      char *copy;
      int rc = parse_n(c->k, c->in, n, &v, &copy);
      assert_true(rc == 0 || rc == HR_EPARSE);
      release(copy);
    }
  }
}

/* An empty span may carry a NULL pointer (include/hroute/common.h). */
static void test_empty_null(void **state) {
  static const int want[K_COUNT] = {
      [K_INT64] = HR_EPARSE,
      [K_UINT64] = HR_EPARSE,
      [K_DATE] = HR_EPARSE,
      [K_MEDIA_TYPE] = HR_EPARSE,
      [K_MEDIA_RANGES] = 0,
      [K_ETAG] = HR_EPARSE,
      [K_ETAG_LIST] = 0,
      [K_CACHE_CONTROL] = 0,
      [K_SET_COOKIE] = HR_EPARSE,
      [K_COOKIES] = HR_EPARSE,
      [K_LINK] = 0,
  };
  int k;
  (void)state;
  for (k = 0; k < K_COUNT; k++) {
    value_t v;
    int rc = kinds[k].d->parse((hr_span_t){NULL, 0}, &v, NULL, NULL);
    if (rc != want[k])
      fail_msg("%s: gave %d, want %d", kinds[k].name, rc, want[k]);
  }
}

/* ---- HR_ENOSPC: the exact length, for every short buffer ---------------- */

static const canon_t nospc_samples[] = {
    {K_INT64, "-9223372036854775808", NULL},
    {K_UINT64, "18446744073709551615", NULL},
    {K_DATE, "Sun, 06 Nov 1994 08:49:37 GMT", NULL},
    {K_MEDIA_TYPE, "text/html;charset=\"utf-8\";x=\"a\\\"b\"", NULL},
    {K_MEDIA_RANGES, "text/*;q=0.3, text/plain;format=flowed, */*;q=0.05",
     NULL},
    {K_ETAG, "W/\"xyzzy\"", NULL},
    {K_ETAG_LIST, "\"xyzzy\", W/\"r2d2xxxx\"", NULL},
    {K_CACHE_CONTROL, "no-cache, private, max-age=60, max-stale, x=\"a b\"",
     NULL},
    {K_SET_COOKIE,
     "SID=31d4; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Max-Age=60; "
     "Domain=example.com; Path=/; Secure; HttpOnly; SameSite=Strict",
     NULL},
    {K_COOKIES, "SID=31d4d96e407aad42; lang=en-US", NULL},
    {K_LINK, "</a>; rel=\"next\"; crossorigin, </b>; title=x", NULL},
};

static void test_enospc(void **state) {
  size_t i, cap;
  (void)state;
  for (i = 0; i < sizeof nospc_samples / sizeof nospc_samples[0]; i++) {
    const canon_t *c = &nospc_samples[i];
    value_t v;
    char *copy;
    size_t need = strlen(c->in), len;
    assert_int_equal(parse(c->k, c->in, &v, &copy), 0);
    for (cap = 0; cap <= need; cap++) {
      char *buf = malloc(cap);
      int rc;
      assert_true(cap == 0 || buf != NULL);
      len = (size_t)-1;
      rc = kinds[c->k].d->format(&v, buf, cap, &len, NULL);
      if (cap < need) {
        if (rc != HR_ENOSPC || len != need)
          fail_msg("%s: cap %zu gave %d, len %zu; want HR_ENOSPC, %zu",
                   kinds[c->k].name, cap, rc, len, need);
      } else {
        assert_int_equal(rc, 0);
        assert_int_equal(len, need);
        assert_memory_equal(buf, c->in, need);
      }
      free(buf);
    }
    /* A roomier buffer: only the needed bytes are written. */
    {
      char big[512];
      memset(big, '#', sizeof big);
      assert_int_equal(kinds[c->k].d->format(&v, big, sizeof big, &len, NULL),
                       0);
      assert_int_equal(len, need);
      assert_int_equal(big[need], '#');
    }
    release(copy);
  }
}

/* ---- long lists: no fixed cap ------------------------------------------ */

/* Builds `prefix` + n items (item(i) printed with fmt, joined by sep). */
static char *build_list(const char *prefix, const char *fmt, const char *sep,
                        int n) {
  size_t cap = 65536, len;
  char *s = malloc(cap);
  int i;
  assert_non_null(s);
  len = (size_t)snprintf(s, cap, "%s", prefix);
  for (i = 0; i < n; i++) {
    if (i > 0) len += (size_t)snprintf(s + len, cap - len, "%s", sep);
    len += (size_t)snprintf(s + len, cap - len, fmt, i, i);
    assert_true(len < cap);
  }
  return s;
}

typedef struct items_case_s {
  int k;
  const char *prefix, *fmt, *sep;
} items_case_t;

static const items_case_t items_cases[] = {
    {K_MEDIA_TYPE, "text/plain;", "p%d=v%d", ";"},
    {K_MEDIA_RANGES, "", "t%d/s%d", ", "},
    {K_MEDIA_RANGES, "text/html;q=0.5;ext=1, a/b;", "p%d=\"v%d\"", "; "},
    {K_ETAG_LIST, "", "W/\"t%d-%d\"", ", "},
    {K_CACHE_CONTROL, "no-store, max-age=5, ", "x%d=%d", ", "},
    {K_COOKIES, "", "c%d=v%d", "; "},
    {K_LINK, "", "</%d>; rel=r%d", ", "},
    {K_LINK, "</x>, </y>", "; p%d=%d", ""},
};

static size_t item_count(int k, const value_t *v) {
  switch (k) {
    case K_MEDIA_TYPE:
      return v->mt.nparams;
    case K_MEDIA_RANGES:
      return v->mr.n == 2 ? v->mr.ranges[1].media.nparams : v->mr.n;
    case K_ETAG_LIST:
      return v->el.n;
    case K_CACHE_CONTROL:
      return v->cc.n_ext;
    case K_COOKIES:
      return v->ck.n;
    case K_LINK:
      return v->lk.n == 2 ? v->lk.links[1].nparams : v->lk.n;
  }
  return 0;
}

/* 17 (one past the old cap of 16) and 1000 items parse, every one kept, and
 * format back to the same text. */
static void test_many_items(void **state) {
  static const int counts[] = {17, 1000};
  size_t i, j;
  (void)state;
  for (i = 0; i < sizeof items_cases / sizeof items_cases[0]; i++) {
    for (j = 0; j < 2; j++) {
      const items_case_t *c = &items_cases[i];
      char *in = build_list(c->prefix, c->fmt, c->sep, counts[j]);
      char *copy, *text;
      value_t v;
      int rc = parse(c->k, in, &v, &copy);
      if (rc != 0 || item_count(c->k, &v) != (size_t)counts[j])
        fail_msg("%s: %d items gave %d, %zu items", kinds[c->k].name, counts[j], rc,
                 item_count(c->k, &v));
      assert_int_equal(format(c->k, &v, &text), 0);
      if (c->k != K_MEDIA_RANGES || i == 1) /* the q=0.5;ext=1 range is rewritten */
        assert_string_equal(text, in);
      free(text);
      release(copy);
      free(in);
    }
  }
}

/* The caller-sized buffer: `need` is exact, short by one byte is HR_ENOMEM,
 * and a parse with no memory at all still reads lists without items. */
static void test_mem_buffer(void **state) {
  static const char accept[] = "text/html, application/xhtml+xml;level=1, */*;q=0.8";
  _Alignas(8) char buf[1024];
  hr_mem_buffer_t mb;
  hr_media_ranges_t mr;
  size_t need;
  (void)state;
  hr_mem_buffer_init(&mb, NULL, 0);
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(accept), &mr, &mb.mem, NULL),
                   HR_ENOMEM);
  /* 3 ranges (2 commas + 1) and 2 parameters (2 semicolons), in one piece. */
  need = 3 * sizeof(hr_media_range_t) + 2 * sizeof(hr_mparam_t);
  assert_int_equal(mb.need, (need + 7) / 8 * 8);
  need = mb.need;
  hr_mem_buffer_init(&mb, buf, need - 1);
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(accept), &mr, &mb.mem, NULL),
                   HR_ENOMEM);
  assert_int_equal(mb.used, 0);
  hr_mem_buffer_init(&mb, buf, need);
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(accept), &mr, &mb.mem, NULL), 0);
  assert_int_equal(mb.used, need);
  assert_int_equal(mr.n, 3);
  assert_int_equal(mr.ranges[1].media.nparams, 1);
  assert_true(hr_span_eq(mr.ranges[1].media.params[0].value, HR_SPAN_LIT("1")));
  assert_int_equal(mr.ranges[2].q, 800);
  assert_null(mr.ranges[0].media.params);
  /* A buffer that is not 8-byte aligned: its first bytes are skipped. */
  hr_mem_buffer_init(&mb, buf + 1, need + 7);
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(accept), &mr, &mb.mem, NULL), 0);
  assert_int_equal((uintptr_t)mr.ranges % 8, 0);
  hr_mem_buffer_init(&mb, buf + 1, 7);
  assert_null(mb.buf);
  assert_int_equal(mb.cap, 0);
  /* Memory follows the items, not the separators: empty elements and
   * separators inside quotes cost nothing. */
  hr_mem_buffer_init(&mb, NULL, 0);
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(",,, ,\t,,"), &mr, &mb.mem, NULL),
                   0);
  assert_int_equal(mb.need, 0);
  assert_int_equal(mr.n, 0);
  hr_mem_buffer_init(&mb, NULL, 0);
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(",,a/b;;x=\",;,\";;,,"), &mr,
                                                   &mb.mem, NULL),
                   HR_ENOMEM);
  assert_int_equal(mb.need, (sizeof(hr_media_range_t) + sizeof(hr_mparam_t) + 7) / 8 * 8);
  {
    hr_cookies_t ck;
    hr_etag_list_t el;
    hr_mem_buffer_init(&mb, NULL, 0);
    assert_int_equal(hr__delegate_cookies.parse(HR_SPAN_LIT(";;; ;a=1;;;"), &ck, &mb.mem, NULL),
                     HR_ENOMEM);
    assert_int_equal(mb.need, (sizeof(hr_cookie_t) + 7) / 8 * 8);
    hr_mem_buffer_init(&mb, NULL, 0);
    assert_int_equal(hr__delegate_etag_list.parse(HR_SPAN_LIT(", W/\"a,b,c\",,\"d\","), &el,
                                                  &mb.mem, NULL),
                     HR_ENOMEM);
    assert_int_equal(mb.need, (2 * sizeof(hr_etag_t) + 7) / 8 * 8);
  }
  /* No memory: an empty list and a list without items still parse. */
  assert_int_equal(hr__delegate_media_ranges.parse(HR_SPAN_LIT(""), &mr, NULL, NULL), 0);
  assert_int_equal(mr.n, 0);
  {
    hr_cache_control_t cc;
    assert_int_equal(
        hr__delegate_cache_control.parse(HR_SPAN_LIT("no-store, max-age=5"), &cc, NULL, NULL),
        0);
    assert_int_equal(cc.max_age, 5);
    assert_int_equal(cc.n_ext, 0);
    assert_int_equal(
        hr__delegate_cache_control.parse(HR_SPAN_LIT("no-store, x=1"), &cc, NULL, NULL),
        HR_ENOMEM);
  }
}

/* hr_cookies_get: the first of a repeated name, exact case, empty values. */
static void test_cookies_get(void **state) {
  value_t v;
  char *copy;
  hr_span_t got;
  (void)state;
  assert_int_equal(parse(K_COOKIES, "a=1; A=2; a=3; e=", &v, &copy), 0);
  got = hr_cookies_get(&v.ck, HR_SPAN_LIT("a"));
  assert_true(hr_span_eq(got, HR_SPAN_LIT("1")));
  got = hr_cookies_get(&v.ck, HR_SPAN_LIT("A"));
  assert_true(hr_span_eq(got, HR_SPAN_LIT("2")));
  got = hr_cookies_get(&v.ck, HR_SPAN_LIT("e"));
  assert_non_null(got.ptr);
  assert_int_equal(got.len, 0);
  got = hr_cookies_get(&v.ck, HR_SPAN_LIT("b"));
  assert_null(got.ptr);
  assert_null(hr_cookies_get(NULL, HR_SPAN_LIT("a")).ptr);
  assert_int_equal(v.ck.dropped, 0);
  release(copy);
  /* What browsers send besides well-formed pairs: counted, left out. */
  assert_int_equal(parse(K_COOKIES, "cart[1]=x; sid=s1; novalue; a=1, b=2; =anon; c=\x01",
                         &v, &copy), 0);
  assert_int_equal(v.ck.n, 2);
  assert_int_equal(v.ck.dropped, 4);
  assert_true(hr_span_eq(hr_cookies_get(&v.ck, HR_SPAN_LIT("sid")), HR_SPAN_LIT("s1")));
  assert_true(hr_span_eq(hr_cookies_get(&v.ck, HR_SPAN_LIT("a")), HR_SPAN_LIT("1, b=2")));
  assert_null(hr_cookies_get(&v.ck, HR_SPAN_LIT("cart[1]")).ptr);
  release(copy);
  /* Nothing readable at all: HR_EPARSE. */
  assert_int_equal(parse(K_COOKIES, "novalue; =x; (a)=1", &v, &copy), HR_EPARSE);
  release(copy);
}

/* ---- numbers ------------------------------------------------------------ */

static void test_int_values(void **state) {
  static const struct {
    const char *in;
    int64_t want;
  } i64[] = {{"0", 0},
             {"-0", 0},
             {"42", 42},
             {"-42", -42},
             {"9223372036854775807", INT64_MAX},
             {"-9223372036854775808", INT64_MIN},
             {"-9223372036854775807", -INT64_MAX}};
  static const struct {
    const char *in;
    uint64_t want;
  } u64[] = {{"0", 0},
             {"18446744073709551615", UINT64_MAX},
             {"18446744073709551614", UINT64_MAX - 1},
             {"0000000000000000000000000001", 1}};
  size_t i;
  value_t v;
  char *copy;
  (void)state;
  for (i = 0; i < sizeof i64 / sizeof i64[0]; i++) {
    assert_int_equal(parse(K_INT64, i64[i].in, &v, &copy), 0);
    assert_true(v.i64 == i64[i].want);
    release(copy);
  }
  for (i = 0; i < sizeof u64 / sizeof u64[0]; i++) {
    assert_int_equal(parse(K_UINT64, u64[i].in, &v, &copy), 0);
    assert_true(v.u64 == u64[i].want);
    release(copy);
  }
}

/* ---- dates: against the C library, over the whole range ----------------- */

static const int64_t rfc_example_seconds =
    784111777; /* Sun, 06 Nov 1994 08:49:37 */

static void check_date_text(const char *text, int64_t want) {
  value_t v;
  char *copy;
  int rc = parse(K_DATE, text, &v, &copy);
  if (rc != 0 || v.date.seconds != want)
    fail_msg("'%s' gave %d, %lld; want %lld", text, rc,
             (long long)v.date.seconds, (long long)want);
  release(copy);
}

static void date_round_trip(int64_t s) {
  value_t v, w;
  char *text, *copy;
  v.date.seconds = s;
  assert_int_equal(format(K_DATE, &v, &text), 0);
  assert_int_equal(strlen(text), 29);
  assert_int_equal(parse(K_DATE, text, &w, &copy), 0);
  if (w.date.seconds != s)
    fail_msg("%lld formats as '%s', which parses as %lld", (long long)s, text,
             (long long)w.date.seconds);
  /* Compare with the C library where strftime can write four-digit years. */
  if (s >= -30610224000LL) { /* 1000-01-01 */
    time_t t = (time_t)s;
    struct tm tm;
    char want[64];
    assert_non_null(gmtime_r(&t, &tm));
    strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    assert_string_equal(text, want);
    if (tm.tm_year >= 70 && tm.tm_year <= 169) { /* the RFC 850 window */
      strftime(want, sizeof want, "%A, %d-%b-%y %H:%M:%S GMT", &tm);
      check_date_text(want, s);
    }
    strftime(want, sizeof want, "%a %b %e %H:%M:%S %Y", &tm);
    check_date_text(want, s);
  }
  free(text);
  release(copy);
}

static void test_date_values(void **state) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  int64_t day, i;
  const int64_t min = -62167219200LL, max = 253402300799LL;
  value_t v;
  char *text;
  (void)state;
  check_date_text("Sun, 06 Nov 1994 08:49:37 GMT", rfc_example_seconds);
  check_date_text("Sunday, 06-Nov-94 08:49:37 GMT", rfc_example_seconds);
  check_date_text("Sun Nov  6 08:49:37 1994", rfc_example_seconds);
  /* Every day from 1600 to 2400, at a second that moves through the day. */
  for (day = -135140; day < 157054; day++)
    date_round_trip(day * 86400 + (day * 7919) % 86400);
  /* Random seconds over the whole range, and its ends. */
  for (i = 0; i < 200000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    date_round_trip(min + (int64_t)(x % (uint64_t)(max - min + 1)));
  }
  date_round_trip(min);
  date_round_trip(max);
  date_round_trip(-1);
  date_round_trip(0);
  /* Out of the four-digit years: HR_EINVAL. */
  v.date.seconds = max + 1;
  assert_int_equal(format(K_DATE, &v, &text), HR_EINVAL);
  v.date.seconds = min - 1;
  assert_int_equal(format(K_DATE, &v, &text), HR_EINVAL);
  v.date.seconds = INT64_MIN;
  assert_int_equal(format(K_DATE, &v, &text), HR_EINVAL);
  v.date.seconds = INT64_MAX;
  assert_int_equal(format(K_DATE, &v, &text), HR_EINVAL);
}

/* ---- values built in code: format, parse, equal ------------------------- */

#define S(lit) HR_SPAN_LIT(lit)
#define P(n, v, q) ((hr_mparam_t){S(n), S(v), (q)})

static void round_trip(int k, const value_t *v, const char *want) {
  value_t w;
  char *text, *copy;
  int rc = format(k, v, &text);
  if (rc != 0) fail_msg("%s: format gave %d", kinds[k].name, rc);
  if (want != NULL && strcmp(text, want) != 0)
    fail_msg("%s: wrote '%s', want '%s'", kinds[k].name, text, want);
  rc = parse(k, text, &w, &copy);
  if (rc != 0)
    fail_msg("%s: '%s' does not parse (%d)", kinds[k].name, text, rc);
  if (!value_eq(k, v, &w))
    fail_msg("%s: '%s' parses to a different value", kinds[k].name, text);
  free(text);
  release(copy);
}

static void test_format_parse(void **state) {
  static const int64_t i64[] = {INT64_MIN, -1, 0, 1, INT64_MAX};
  static const uint64_t u64[] = {0, 1, UINT64_MAX};
  value_t v;
  size_t i;
  (void)state;
  for (i = 0; i < sizeof i64 / sizeof i64[0]; i++) {
    v.i64 = i64[i];
    round_trip(K_INT64, &v, NULL);
  }
  for (i = 0; i < sizeof u64 / sizeof u64[0]; i++) {
    v.u64 = u64[i];
    round_trip(K_UINT64, &v, NULL);
  }

  /* Raw (unquoted) values that need quoting get escaped. */
  blank(&v, K_MEDIA_TYPE);
  v.mt.type = S("application");
  v.mt.subtype = S("vnd.x+json");
  v.mt.params[0] = P("charset", "utf-8", 0);
  v.mt.params[1] = P("title", "say \"hi\" \\ bye", 0);
  v.mt.params[2] = P("empty", "", 1);
  v.mt.params[3] = P("tok", "abc", 1);
  v.mt.params[4] = P("esc", "a\\\"b", 1);
  v.mt.nparams = 5;
  round_trip(K_MEDIA_TYPE, &v,
             "application/vnd.x+json;charset=utf-8;"
             "title=\"say \\\"hi\\\" \\\\ bye\";empty=\"\";tok=\"abc\";"
             "esc=\"a\\\"b\"");

  blank(&v, K_MEDIA_RANGES);
  {
    static const int qs[] = {1000, 999, 500, 50, 5, 0, 250, 1};
    for (i = 0; i < 8; i++) {
      v.mr.ranges[i].media.type = i == 0 ? S("*") : S("text");
      v.mr.ranges[i].media.subtype = i < 2 ? S("*") : S("html");
      v.mr.ranges[i].q = qs[i];
    }
    v.mr.ranges[3].media.params[0] = P("level", "1", 0);
    v.mr.ranges[3].media.nparams = 1;
    v.mr.n = 8;
  }
  round_trip(K_MEDIA_RANGES, &v,
             "*/*, text/*;q=0.999, text/html;q=0.5, text/html;level=1;q=0.05, "
             "text/html;q=0.005, text/html;q=0, text/html;q=0.25, "
             "text/html;q=0.001");
  v.mr.n = 0;
  round_trip(K_MEDIA_RANGES, &v, "");

  blank(&v, K_ETAG);
  v.etag.tag = S("a,b\x80\xff!");
  v.etag.weak = 1;
  round_trip(K_ETAG, &v, "W/\"a,b\x80\xff!\"");
  v.etag.tag = S("");
  v.etag.weak = 0;
  round_trip(K_ETAG, &v, "\"\"");

  blank(&v, K_ETAG_LIST);
  v.el.any = 1;
  round_trip(K_ETAG_LIST, &v, "*");
  v.el.any = 0;
  v.el.tags[0].tag = S("1");
  v.el.tags[1].tag = S("2");
  v.el.tags[1].weak = 1;
  v.el.tags[2].tag = S("");
  v.el.n = 3;
  round_trip(K_ETAG_LIST, &v, "\"1\", W/\"2\", \"\"");
  v.el.n = 0;
  round_trip(K_ETAG_LIST, &v, "");

  blank(&v, K_CACHE_CONTROL);
  v.cc.max_age = 0;
  v.cc.s_maxage = 2147483648LL;
  v.cc.max_stale = INT64_MAX;
  v.cc.min_fresh = 7;
  v.cc.no_cache = v.cc.no_store = v.cc.no_transform = v.cc.only_if_cached = 1;
  v.cc.must_revalidate = v.cc.proxy_revalidate = v.cc.must_understand = 1;
  v.cc.is_public = v.cc.is_private = v.cc.immutable = 1;
  v.cc.ext[0] = P("stale-if-error", "60", 0);
  v.cc.ext[1] = P("bare", "", 0);
  v.cc.ext[2] = P("sp", "a b", 0);
  v.cc.ext[3] = P("e", "", 1);
  v.cc.n_ext = 4;
  round_trip(K_CACHE_CONTROL, &v,
             "no-cache, no-store, no-transform, only-if-cached, "
             "must-revalidate, proxy-revalidate, must-understand, public, "
             "private, immutable, max-age=0, s-maxage=2147483648, max-stale, "
             "min-fresh=7, stale-if-error=60, bare, sp=\"a b\", e=\"\"");
  blank(&v, K_CACHE_CONTROL);
  v.cc.max_age = v.cc.s_maxage = v.cc.max_stale = v.cc.min_fresh = -1;
  round_trip(K_CACHE_CONTROL, &v, "");

  blank(&v, K_SET_COOKIE);
  v.sc.name = S("__Host-id");
  v.sc.value = S("a!#$%&'()*+-./0:<=>?@[]^_`{|}~");
  v.sc.expires = rfc_example_seconds;
  v.sc.max_age = 0;
  v.sc.domain = S("sub.example-1.com");
  v.sc.path = S("/a b/c");
  v.sc.secure = v.sc.http_only = 1;
  v.sc.same_site = HR_SAME_SITE_NONE;
  round_trip(K_SET_COOKIE, &v,
             "__Host-id=a!#$%&'()*+-./0:<=>?@[]^_`{|}~; "
             "Expires=Sun, 06 Nov 1994 08:49:37 GMT; Max-Age=0; "
             "Domain=sub.example-1.com; Path=/a b/c; Secure; HttpOnly; "
             "SameSite=None");
  blank(&v, K_SET_COOKIE);
  v.sc.name = S("n");
  v.sc.expires = v.sc.max_age = -1;
  round_trip(K_SET_COOKIE, &v, "n=");

  blank(&v, K_COOKIES);
  v.ck.pairs[0].name = S("a");
  v.ck.pairs[0].value = S("1");
  v.ck.pairs[1].name = S("b");
  v.ck.pairs[2].name = S("c");
  v.ck.pairs[2].value = S("x=y");
  v.ck.n = 3;
  round_trip(K_COOKIES, &v, "a=1; b=; c=x=y");

  blank(&v, K_LINK);
  v.lk.links[0].target = S("https://example.com/a?b=c,d;e");
  v.lk.links[0].params[0] = P("rel", "next", 0);
  v.lk.links[0].params[1] = P("title", "A, \"B\"; C", 0);
  v.lk.links[0].params[2] = P("crossorigin", "", 0);
  v.lk.links[0].nparams = 3;
  v.lk.links[1].target = S("");
  v.lk.n = 2;
  round_trip(K_LINK, &v,
             "<https://example.com/a?b=c,d;e>; rel=next; "
             "title=\"A, \\\"B\\\"; C\"; crossorigin, <>");
}

/* ---- values that cannot be written: HR_EINVAL --------------------------- */

static void expect_einval(int k, const value_t *v, const char *what) {
  char *text;
  size_t len;
  char buf[256];
  int rc = format(k, v, &text);
  if (rc != HR_EINVAL)
    fail_msg("%s: %s gave %d, want HR_EINVAL", kinds[k].name, what, rc);
  /* Whatever the buffer size. */
  assert_int_equal(kinds[k].d->format(v, buf, sizeof buf, &len, NULL),
                   HR_EINVAL);
}

static void test_format_invalid(void **state) {
  value_t v;
  (void)state;

  blank(&v, K_MEDIA_TYPE);
  v.mt.type = S("text");
  v.mt.subtype = S("html");
  v.mt.type = S("te xt");
  expect_einval(K_MEDIA_TYPE, &v, "a type that is not a token");
  v.mt.type = S("");
  expect_einval(K_MEDIA_TYPE, &v, "an empty type");
  v.mt.type = S("text");
  v.mt.subtype = S("");
  expect_einval(K_MEDIA_TYPE, &v, "an empty subtype");
  v.mt.subtype = S("html/x");
  expect_einval(K_MEDIA_TYPE, &v, "a subtype with '/'");
  v.mt.subtype = S("html");
  v.mt.params[0] = P("a b", "x", 0);
  v.mt.nparams = 1;
  expect_einval(K_MEDIA_TYPE, &v, "a parameter name that is not a token");
  v.mt.params[0] = P("a", "x\x01", 0);
  expect_einval(K_MEDIA_TYPE, &v, "a control byte in a value");
  v.mt.params[0] = P("a", "x\\", 1);
  expect_einval(K_MEDIA_TYPE, &v, "a quoted value ending in a backslash");
  v.mt.params[0] = P("a", "x\"y", 1);
  expect_einval(K_MEDIA_TYPE, &v, "a quoted value with a bare DQUOTE");
  v.mt.params = NULL;
  expect_einval(K_MEDIA_TYPE, &v, "parameters without an array");

  blank(&v, K_MEDIA_RANGES);
  v.mr.ranges[0].media.type = S("*");
  v.mr.ranges[0].media.subtype = S("html");
  v.mr.ranges[0].q = 1000;
  v.mr.n = 1;
  expect_einval(K_MEDIA_RANGES, &v, "*/html");
  v.mr.ranges[0].media.type = S("text");
  v.mr.ranges[0].q = 1001;
  expect_einval(K_MEDIA_RANGES, &v, "q above 1");
  v.mr.ranges[0].q = -1;
  expect_einval(K_MEDIA_RANGES, &v, "q below 0");
  v.mr.ranges[0].q = 500;
  v.mr.ranges[0].media.params[0] = P("Q", "1", 0);
  v.mr.ranges[0].media.nparams = 1;
  expect_einval(K_MEDIA_RANGES, &v, "a media parameter named q");
  v.mr.ranges[0].media.params = NULL;
  expect_einval(K_MEDIA_RANGES, &v, "range parameters without an array");
  v.mr.ranges[0].media.nparams = 0;
  v.mr.ranges = NULL;
  expect_einval(K_MEDIA_RANGES, &v, "ranges without an array");

  blank(&v, K_ETAG);
  v.etag.tag = S("a\"b");
  expect_einval(K_ETAG, &v, "a DQUOTE in a tag");
  v.etag.tag = S("a b");
  expect_einval(K_ETAG, &v, "a space in a tag");
  v.etag.tag = S("a\x7f");
  expect_einval(K_ETAG, &v, "DEL in a tag");

  blank(&v, K_ETAG_LIST);
  v.el.any = 1;
  v.el.tags[0].tag = S("a");
  v.el.n = 1;
  expect_einval(K_ETAG_LIST, &v, "* with tags");
  v.el.any = 0;
  v.el.tags[0].tag = S("\"");
  expect_einval(K_ETAG_LIST, &v, "a DQUOTE in a tag");
  v.el.tags = NULL;
  expect_einval(K_ETAG_LIST, &v, "tags without an array");

  blank(&v, K_CACHE_CONTROL);
  v.cc.max_age = v.cc.s_maxage = v.cc.max_stale = v.cc.min_fresh = -1;
  v.cc.max_age = -2;
  expect_einval(K_CACHE_CONTROL, &v, "a negative max-age");
  v.cc.max_age = -1;
  v.cc.ext[0] = P("Max-Age", "5", 0);
  v.cc.n_ext = 1;
  expect_einval(K_CACHE_CONTROL, &v, "a known directive in ext");
  v.cc.ext[0] = P("a b", "", 0);
  expect_einval(K_CACHE_CONTROL, &v, "an extension name that is not a token");
  v.cc.ext[0] = P("a", "\x01", 0);
  expect_einval(K_CACHE_CONTROL, &v, "a control byte in a value");
  v.cc.ext = NULL;
  expect_einval(K_CACHE_CONTROL, &v, "extensions without an array");

  blank(&v, K_SET_COOKIE);
  v.sc.name = S("a b");
  v.sc.value = S("v");
  v.sc.expires = v.sc.max_age = -1;
  expect_einval(K_SET_COOKIE, &v, "a name that is not a token");
  v.sc.name = S("");
  expect_einval(K_SET_COOKIE, &v, "an empty name");
  v.sc.name = S("n");
  v.sc.value = S("a;b");
  expect_einval(K_SET_COOKIE, &v, "';' in a value");
  v.sc.value = S("a b");
  expect_einval(K_SET_COOKIE, &v, "a space in a value");
  v.sc.value = S("a,b");
  expect_einval(K_SET_COOKIE, &v, "',' in a value");
  v.sc.value = S("\"v\"");
  expect_einval(K_SET_COOKIE, &v, "DQUOTE in a value");
  v.sc.value = S("a\\b");
  expect_einval(K_SET_COOKIE, &v, "a backslash in a value");
  v.sc.value = S("\xC3\xA9");
  expect_einval(K_SET_COOKIE, &v, "non-ASCII in a value");
  v.sc.value = S("v");
  v.sc.domain = S("ex ample.com");
  expect_einval(K_SET_COOKIE, &v, "a space in Domain");
  v.sc.domain = S(".example.com");
  expect_einval(K_SET_COOKIE, &v, "a leading '.' in Domain");
  v.sc.domain = S("");
  v.sc.path = S("nopath");
  expect_einval(K_SET_COOKIE, &v, "a Path without '/'");
  v.sc.path = S("/a;b");
  expect_einval(K_SET_COOKIE, &v, "';' in Path");
  v.sc.path = S("/a\x01");
  expect_einval(K_SET_COOKIE, &v, "a control byte in Path");
  v.sc.path = S("");
  v.sc.same_site = (hr_same_site_t)7;
  expect_einval(K_SET_COOKIE, &v, "an unknown SameSite");
  v.sc.same_site = HR_SAME_SITE_NONE_SET;
  v.sc.expires = 253402300800LL;
  expect_einval(K_SET_COOKIE, &v, "Expires past 9999");

  blank(&v, K_COOKIES);
  expect_einval(K_COOKIES, &v, "no pairs");
  v.ck.pairs[0].name = S("a=b");
  v.ck.pairs[0].value = S("1");
  v.ck.n = 1;
  expect_einval(K_COOKIES, &v, "'=' in a name");
  v.ck.pairs[0].name = S("a");
  v.ck.pairs[0].value = S("1;2");
  expect_einval(K_COOKIES, &v, "';' in a value");
  v.ck.pairs = NULL;
  expect_einval(K_COOKIES, &v, "pairs without an array");

  blank(&v, K_LINK);
  v.lk.links[0].target = S("a b");
  v.lk.n = 1;
  expect_einval(K_LINK, &v, "a space in a target");
  v.lk.links[0].target = S("a>b");
  expect_einval(K_LINK, &v, "'>' in a target");
  v.lk.links[0].target = S("a");
  v.lk.links[0].params[0] = P("r l", "x", 0);
  v.lk.links[0].nparams = 1;
  expect_einval(K_LINK, &v, "a parameter name that is not a token");
  v.lk.links[0].target = S("a");
  v.lk.links[0].params = NULL;
  expect_einval(K_LINK, &v, "parameters without an array");
  v.lk.links[0].nparams = 0;
  v.lk.links = NULL;
  expect_einval(K_LINK, &v, "links without an array");
}

/* ---- parsed fields ------------------------------------------------------ */

static void test_parsed_fields(void **state) {
  value_t v;
  char *copy;
  (void)state;

  assert_int_equal(
      parse(K_MEDIA_TYPE, "Text/HTML;Charset=\"utf-8\"", &v, &copy), 0);
  assert_true(hr_span_eq(v.mt.type, S("Text")));
  assert_true(hr_span_eq(v.mt.subtype, S("HTML")));
  assert_int_equal(v.mt.nparams, 1);
  assert_true(hr_span_eq(v.mt.params[0].name, S("Charset")));
  assert_true(hr_span_eq(v.mt.params[0].value, S("utf-8")));
  assert_int_equal(v.mt.params[0].quoted, 1);
  release(copy);

  assert_int_equal(
      parse(K_MEDIA_RANGES, "audio/*; q=0.2, audio/basic", &v, &copy), 0);
  assert_int_equal(v.mr.n, 2);
  assert_int_equal(v.mr.ranges[0].q, 200);
  assert_true(hr_span_eq(v.mr.ranges[0].media.subtype, S("*")));
  assert_int_equal(v.mr.ranges[0].media.nparams, 0);
  assert_int_equal(v.mr.ranges[1].q, 1000);
  release(copy);

  assert_int_equal(parse(K_ETAG_LIST, "*", &v, &copy), 0);
  assert_int_equal(v.el.any, 1);
  assert_int_equal(v.el.n, 0);
  release(copy);
  assert_int_equal(parse(K_ETAG_LIST, "W/\"xyzzy\", \"r2d2xxxx\"", &v, &copy),
                   0);
  assert_int_equal(v.el.any, 0);
  assert_int_equal(v.el.n, 2);
  assert_int_equal(v.el.tags[0].weak, 1);
  assert_true(hr_span_eq(v.el.tags[0].tag, S("xyzzy")));
  assert_int_equal(v.el.tags[1].weak, 0);
  release(copy);

  assert_int_equal(parse(K_CACHE_CONTROL, "", &v, &copy), 0);
  assert_true(v.cc.max_age == -1 && v.cc.s_maxage == -1 &&
              v.cc.max_stale == -1 && v.cc.min_fresh == -1);
  assert_int_equal(v.cc.no_cache | v.cc.no_store | v.cc.is_public, 0);
  assert_int_equal(v.cc.n_ext, 0);
  release(copy);
  assert_int_equal(
      parse(K_CACHE_CONTROL, "max-stale, No-Cache=\"a\", x", &v, &copy), 0);
  assert_true(v.cc.max_stale == INT64_MAX);
  assert_int_equal(v.cc.no_cache, 1);
  assert_int_equal(v.cc.n_ext, 1);
  assert_true(hr_span_eq(v.cc.ext[0].name, S("x")));
  assert_int_equal(v.cc.ext[0].value.len, 0);
  assert_int_equal(v.cc.ext[0].quoted, 0);
  release(copy);

  assert_int_equal(parse(K_SET_COOKIE, "a=b", &v, &copy), 0);
  assert_true(v.sc.expires == -1 && v.sc.max_age == -1);
  assert_int_equal(v.sc.domain.len + v.sc.path.len, 0);
  assert_int_equal(v.sc.secure | v.sc.http_only, 0);
  assert_int_equal(v.sc.same_site, HR_SAME_SITE_NONE_SET);
  release(copy);
  assert_int_equal(parse(K_SET_COOKIE,
                         "lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT; "
                         "DOMAIN=.example.com; pAtH=/docs",
                         &v, &copy),
                   0);
  assert_true(v.sc.expires == 1623233894);
  assert_true(hr_span_eq(v.sc.domain, S("example.com")));
  assert_true(hr_span_eq(v.sc.path, S("/docs")));
  release(copy);

  assert_int_equal(parse(K_COOKIES, "SID=\"31d4\"; lang=en-US", &v, &copy), 0);
  assert_int_equal(v.ck.n, 2);
  assert_true(hr_span_eq(v.ck.pairs[0].name, S("SID")));
  assert_true(hr_span_eq(v.ck.pairs[0].value, S("31d4")));
  assert_true(hr_span_eq(v.ck.pairs[1].value, S("en-US")));
  release(copy);

  assert_int_equal(parse(K_LINK, "<a,b>; rel=\"x, y\"; t = z, <c>", &v, &copy),
                   0);
  assert_int_equal(v.lk.n, 2);
  assert_true(hr_span_eq(v.lk.links[0].target, S("a,b")));
  assert_int_equal(v.lk.links[0].nparams, 2);
  assert_true(hr_span_eq(v.lk.links[0].params[0].value, S("x, y")));
  assert_int_equal(v.lk.links[0].params[0].quoted, 1);
  assert_true(hr_span_eq(v.lk.links[0].params[1].name, S("t")));
  assert_true(hr_span_eq(v.lk.links[0].params[1].value, S("z")));
  assert_true(hr_span_eq(v.lk.links[1].target, S("c")));
  assert_int_equal(v.lk.links[1].nparams, 0);
  release(copy);
}

/* ---- negotiation -------------------------------------------------------- */

/* Parses an Accept value and a list of offers ("a/b;p=v" strings). */
typedef struct nego_s {
  const char *accept;
  const char *offers[6];
  int want;
} nego_t;

static const nego_t nego_cases[] = {
    /* RFC 9110 §12.5.1 */
    {"audio/*; q=0.2, audio/basic", {"audio/mpeg", "audio/basic"}, 1},
    {"audio/*; q=0.2, audio/basic", {"audio/mpeg"}, 0},
    {"audio/*; q=0.2, audio/basic", {"video/mp4"}, -1},
    {"text/plain; q=0.5, text/html, text/x-dvi; q=0.8, text/x-c",
     {"text/plain", "text/x-dvi", "text/html"},
     2},
    {"text/plain; q=0.5, text/html, text/x-dvi; q=0.8, text/x-c",
     {"text/plain", "text/x-dvi"},
     1},
    {"text/plain; q=0.5, text/html, text/x-dvi; q=0.8, text/x-c",
     {"text/x-c", "text/html"},
     0},
    /* precedence: the most specific range wins, whatever its weight */
    {"text/*;q=0.9, text/plain;q=0.2", {"text/plain", "text/html"}, 1},
    {"text/plain;q=0.2, text/*;q=0.9", {"text/plain", "text/html"}, 1},
    {"*/*;q=0.9, text/*;q=0.1", {"text/plain", "image/png"}, 1},
    {"text/plain;format=flowed;q=0.1, text/plain;q=0.9",
     {"text/plain;format=flowed", "text/plain"},
     1},
    {"text/plain;q=0.1, text/plain;format=flowed;q=0.9",
     {"text/plain", "text/plain;format=flowed"},
     1},
    {"text/plain;format=flowed;charset=utf-8;q=0.1, "
     "text/plain;format=flowed;q=0.9",
     {"text/plain;charset=utf-8;format=flowed", "text/plain;format=flowed"},
     1},
    /* q=0 excludes */
    {"text/html;q=0, */*", {"text/html", "image/png"}, 1},
    {"text/html;q=0", {"text/html"}, -1},
    {"*/*;q=0", {"text/html", "a/b"}, -1},
    {"text/*;q=0, text/plain", {"text/html", "text/plain"}, 1},
    /* ties go to the earlier offer */
    {"text/html, application/json", {"application/json", "text/html"}, 0},
    {"*/*", {"a/b", "c/d"}, 0},
    {"text/*;q=0.5, application/*;q=0.5", {"application/x", "text/y"}, 0},
    /* case, quoting */
    {"TEXT/HTML", {"text/html"}, 0},
    {"text/plain;charset=\"UTF-8\"", {"text/plain;Charset=utf-8"}, 0},
    {"text/plain;charset=\"utf\\-8\"", {"text/plain;charset=utf-8"}, 0},
    /* A parameter the offer lacks is no conflict (issue 12); another value
     * is. */
    {"text/plain;charset=utf-8",
     {"text/plain;charset=latin1", "text/plain"},
     1},
    {"application/json; charset=utf-8", {"application/json"}, 0},
    /* A range missing one of its parameters in the offer ranks below a
     * range without any: text/html gives q=1, not the q=0 of the first. */
    {"text/html;charset=utf-8;level=1;q=0, text/html", {"text/html;charset=utf-8"}, 0},
    {"application/json;charset=utf-8, application/json;q=0.5",
     {"application/json;charset=utf-8", "application/json"},
     0},
    {"text/plain;charset=utf-8",
     {"text/plain;charset=latin1;x=1", "text/plain;x=1;charset=utf-8"},
     1},
    /* no Accept field: the first offer */
    {"", {"a/b", "c/d"}, 0},
    {"", {NULL}, -1},
    /* a wildcard range with a parameter */
    {"text/*;charset=utf-8, */*;q=0.1",
     {"text/plain;charset=latin1", "text/plain;charset=utf-8"},
     1},
};

static void test_negotiate(void **state) {
  size_t i, j;
  (void)state;
  for (i = 0; i < sizeof nego_cases / sizeof nego_cases[0]; i++) {
    const nego_t *c = &nego_cases[i];
    hr_media_type_t offers[6];
    char *copies[7];
    value_t accept, mt;
    size_t n = 0;
    int got;
    assert_int_equal(parse(K_MEDIA_RANGES, c->accept, &accept, &copies[0]), 0);
    for (j = 0; j < 6 && c->offers[j] != NULL; j++, n++) {
      assert_int_equal(parse(K_MEDIA_TYPE, c->offers[j], &mt, &copies[j + 1]),
                       0);
      offers[j] = mt.mt;
    }
    got = hr_media_negotiate(&accept.mr, n ? offers : NULL, n);
    if (got != c->want)
      fail_msg("Accept '%s': picked %d, want %d", c->accept, got, c->want);
    for (j = 0; j <= n; j++) release(copies[j]);
  }
}

/* RFC 9110 §12.5.1's table of quality values (with erratum 7138:
 * text/html;level=3 gets 0.3, from text/ *).  Each pair of offers is
 * ordered by the weights the table gives them. */
static void test_negotiate_rfc_table(void **state) {
  static const struct {
    const char *type;
    int q;
  } table[] = {
      {"text/plain;format=flowed", 1000},
      {"text/plain", 700},
      {"text/html", 300},
      {"image/jpeg", 500},
      {"text/plain;format=fixed", 400},
      {"text/html;level=3", 300},
  };
  const char *accept =
      "text/*;q=0.3, text/plain;q=0.7, text/plain;format=flowed, "
      "text/plain;format=fixed;q=0.4, */*;q=0.5";
  value_t ranges, a, b;
  char *c0, *c1, *c2;
  size_t i, j;
  (void)state;
  assert_int_equal(parse(K_MEDIA_RANGES, accept, &ranges, &c0), 0);
  for (i = 0; i < 6; i++) {
    for (j = 0; j < 6; j++) {
      hr_media_type_t offers[2];
      int want = table[j].q > table[i].q ? 1 : 0, got;
      assert_int_equal(parse(K_MEDIA_TYPE, table[i].type, &a, &c1), 0);
      assert_int_equal(parse(K_MEDIA_TYPE, table[j].type, &b, &c2), 0);
      offers[0] = a.mt;
      offers[1] = b.mt;
      got = hr_media_negotiate(&ranges.mr, offers, 2);
      if (got != want)
        fail_msg("%s vs %s: picked %d, want %d", table[i].type, table[j].type,
                 got, want);
      release(c1);
      release(c2);
    }
  }
  release(c0);
}

/* ---- entity-tag comparison (RFC 9110 §8.8.3.2) -------------------------- */

static void test_etag_compare(void **state) {
  static const struct {
    const char *a, *b;
    int strong, weak;
  } table[] = {
      {"W/\"1\"", "W/\"1\"", 0, 1}, {"W/\"1\"", "W/\"2\"", 0, 0},
      {"W/\"1\"", "\"1\"", 0, 1},   {"\"1\"", "\"1\"", 1, 1},
      {"\"1\"", "\"2\"", 0, 0},     {"\"\"", "\"\"", 1, 1},
      {"\"1\"", "\"10\"", 0, 0},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    value_t a, b;
    char *ca, *cb;
    assert_int_equal(parse(K_ETAG, table[i].a, &a, &ca), 0);
    assert_int_equal(parse(K_ETAG, table[i].b, &b, &cb), 0);
    assert_int_equal(hr__etag_match(&a.etag, &b.etag, 0), table[i].strong);
    assert_int_equal(hr__etag_match(&a.etag, &b.etag, 1), table[i].weak);
    /* symmetric */
    assert_int_equal(hr__etag_match(&b.etag, &a.etag, 0), table[i].strong);
    assert_int_equal(hr__etag_match(&b.etag, &a.etag, 1), table[i].weak);
    free(ca);
    free(cb);
  }
}

/* Forwarded (RFC 7239 §4): the document's examples, extensions skipped,
 * empty pairs allowed, a parameter twice refused, and writing back. */
static void test_forwarded(void **state) {
  char mem[1024], out[256];
  hr_mem_buffer_t mb;
  hr_forwarded_t f;
  size_t len;
  static const char *const bad[] = {"", "for", "for=", "for=a;for=b", "=x", "for=\"x",
                                    "for=a b", ","};
  size_t i;
  (void)state;
  hr_mem_buffer_init(&mb, mem, sizeof mem);
  assert_int_equal(hr__delegate_forwarded.parse(
                       HR_SPAN_LIT("for=\"_gazonk\", For=\"[2001:db8:cafe::17]:4711\", "
                                   "for=192.0.2.60;proto=http;by=203.0.113.43;ext=1, ;;host=a"),
                       &f, &mb.mem, NULL),
                   0);
  assert_int_equal(f.n, 4);
  assert_int_equal(f.elems[0].node_for.len, 7);
  assert_memory_equal(f.elems[0].node_for.ptr, "_gazonk", 7);
  assert_int_equal(f.elems[1].node_for.len, 24);
  assert_memory_equal(f.elems[2].proto.ptr, "http", 4);
  assert_memory_equal(f.elems[2].node_by.ptr, "203.0.113.43", 12);
  assert_null(f.elems[3].node_for.ptr);
  assert_memory_equal(f.elems[3].host.ptr, "a", 1);
  assert_int_equal(hr__delegate_forwarded.format(&f, out, sizeof out, &len, NULL), 0);
  out[len] = '\0';
  assert_string_equal(out, "for=\"_gazonk\", for=\"[2001:db8:cafe::17]:4711\", "
                           "for=192.0.2.60;by=203.0.113.43;proto=http, host=a");
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hr_mem_buffer_init(&mb, mem, sizeof mem);
    if (hr__delegate_forwarded.parse((hr_span_t){bad[i], strlen(bad[i])}, &f, &mb.mem, NULL) !=
        HR_EPARSE)
      fail_msg("accepted: \"%s\"", bad[i]);
  }
  /* An element that says nothing cannot be written. */
  {
    hr_forwarded_elem_t e;
    memset(&e, 0, sizeof e);
    f.n = 1;
    f.elems = &e;
    assert_int_equal(hr__delegate_forwarded.format(&f, out, sizeof out, &len, NULL), HR_EINVAL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forwarded),
      cmocka_unit_test(test_canonical),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_empty_null),
      cmocka_unit_test(test_enospc),
      cmocka_unit_test(test_many_items),
      cmocka_unit_test(test_mem_buffer),
      cmocka_unit_test(test_cookies_get),
      cmocka_unit_test(test_int_values),
      cmocka_unit_test(test_date_values),
      cmocka_unit_test(test_format_parse),
      cmocka_unit_test(test_format_invalid),
      cmocka_unit_test(test_parsed_fields),
      cmocka_unit_test(test_negotiate),
      cmocka_unit_test(test_negotiate_rfc_table),
      cmocka_unit_test(test_etag_compare),
  };
  return cmocka_run_group_tests_name("delegate_builtin", tests, NULL, NULL);
}
