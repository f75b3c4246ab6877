/* SPDX-License-Identifier: MIT */
/*
 * Cookies (RFC 6265): the Set-Cookie delegate for hr_set_cookie_t and the
 * Cookie delegate for hr_cookies_t.
 *
 * Writing follows the strict server grammar of §4.1.1 and §4.2.1: the name
 * is a token, the value is *cookie-octet (no quotes are added), Domain is
 * letters, digits, "-" and "." without a leading ".", Path starts with "/"
 * and holds no control bytes or ";"; attributes come in a fixed order
 * (Expires as IMF-fixdate, Max-Age, Domain, Path, Secure, HttpOnly,
 * SameSite), pairs are separated by "; ".  Anything else is HR_EINVAL.
 *
 * Reading follows the lenient algorithms of §5.2 (Set-Cookie) and §5.4
 * (Cookie, whose server side §5 leaves to us), except that a name must be a
 * token and a value may hold no control bytes:
 *  - pairs and attributes are split at ";", and at their first "=", then
 *    trimmed of SP and HTAB; a value wrapped in one pair of DQUOTEs is
 *    stored without them; empty pieces ("a=1;;b=2", a trailing ";") are
 *    skipped;
 *  - in a Cookie field, a pair that cannot be read (no "=", a name that is
 *    not a token such as PHP's "cart[1]", an empty name, a control byte in
 *    the value) is dropped and counted in hr_cookies_t.dropped, as §5.2
 *    drops such a cookie and as browsers send them: the other pairs stay
 *    readable.  A Cookie field with no readable pair is HR_EPARSE;
 *  - a Set-Cookie whose name=value cannot be read is HR_EPARSE;
 *  - attribute names are case-insensitive; an attribute whose value cannot
 *    be used, and any unknown attribute, is ignored (nothing is stored);
 *    when an attribute repeats, the last usable one counts (§5.3);
 *  - Expires is read with the cookie-date algorithm of §5.1.1 (so
 *    "Wed, 09-Jun-2021 10:18:14 GMT" and other real-world forms work); a
 *    date before the epoch is stored as 0, still in the past;
 *  - Max-Age of zero or less is stored as 0 ("expire now", §5.2.2), a value
 *    too large for int64_t as INT64_MAX;
 *  - Domain loses one leading "." (§5.2.3) and keeps its case (compare it
 *    case-insensitively); an empty Domain is ignored.  A Path that is empty
 *    or does not start with "/" means the default path (§5.2.4): the path
 *    is cleared;
 *  - SameSite is Strict, Lax or None, case-insensitively; any other value
 *    is ignored (RFC 6265bis).
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

#include <string.h>

/* cookie-octet: %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E */
static int is_cookie_octet(unsigned char c) {
  return c == 0x21 || (c >= 0x23 && c <= 0x2B) || (c >= 0x2D && c <= 0x3A) ||
         (c >= 0x3C && c <= 0x5B) || (c >= 0x5D && c <= 0x7E);
}

static hr_span_t trim(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  while (end > p && (end[-1] == ' ' || end[-1] == '\t')) end--;
  return (hr_span_t){p, (size_t)(end - p)};
}

/* Splits [p, end) at its first '=' into trimmed name and value. */
static int split_eq(const char *p, const char *end, hr_span_t *name,
                    hr_span_t *value) {
  const char *eq = memchr(p, '=', (size_t)(end - p));
  if (eq == NULL) return 0;
  *name = trim(p, eq);
  *value = trim(eq + 1, end);
  return 1;
}

/* name "=" value of a pair: the name a token, DQUOTEs taken off the value,
 * no control bytes in it. */
static int parse_pair(const char *p, const char *end, hr_span_t *name,
                      hr_span_t *value) {
  size_t i;
  if (!split_eq(p, end, name, value) || !hr__is_token(*name)) return HR_EPARSE;
  if (value->len >= 2 && value->ptr[0] == '"' &&
      value->ptr[value->len - 1] == '"') {
    value->ptr++;
    value->len -= 2;
  }
  for (i = 0; i < value->len; i++) {
    unsigned char c = (unsigned char)value->ptr[i];
    if ((c < 0x20 && c != '\t') || c == 0x7F) return HR_EPARSE;
  }
  return 0;
}

static int format_pair(hr__tw_t *o, hr_span_t name, hr_span_t value) {
  size_t i;
  if (hr__tw_token(o, name) != 0) return HR_EINVAL;
  for (i = 0; i < value.len; i++)
    if (!is_cookie_octet((unsigned char)value.ptr[i])) return HR_EINVAL;
  hr__tw_char(o, '=');
  hr__tw_span(o, value);
  return 0;
}

/* ---- cookie-date (RFC 6265 §5.1.1) -------------------------------------- */

static int is_delimiter(unsigned char c) {
  return c == 0x09 || (c >= 0x20 && c <= 0x2F) || (c >= 0x3B && c <= 0x40) ||
         (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Reads min..max digits at t[*i] into *v. */
static int take_digits(hr_span_t t, size_t *i, int min, int max, int *v) {
  int n = 0;
  *v = 0;
  while (*i < t.len && n < max && is_digit((unsigned char)t.ptr[*i])) {
    *v = *v * 10 + (t.ptr[(*i)++] - '0');
    n++;
  }
  return n >= min;
}

/* 1*2DIGIT or 2*4DIGIT ( non-digit *OCTET ) */
static int number_token(hr_span_t t, int min, int max, int *v) {
  size_t i = 0;
  if (!take_digits(t, &i, min, max, v)) return 0;
  return i == t.len || !is_digit((unsigned char)t.ptr[i]);
}

/* hms-time ( non-digit *OCTET ) */
static int time_token(hr_span_t t, int *h, int *m, int *s) {
  size_t i = 0;
  if (!take_digits(t, &i, 1, 2, h) || i == t.len || t.ptr[i++] != ':' ||
      !take_digits(t, &i, 1, 2, m) || i == t.len || t.ptr[i++] != ':' ||
      !take_digits(t, &i, 1, 2, s))
    return 0;
  return i == t.len || !is_digit((unsigned char)t.ptr[i]);
}

static int month_token(hr_span_t t, int *m) {
  static const char names[] = "janfebmaraprmayjunjulaugsepoctnovdec";
  int k;
  if (t.len < 3) return 0;
  for (k = 0; k < 12; k++)
    if (hr_span_eq_nocase((hr_span_t){t.ptr, 3},
                          (hr_span_t){names + 3 * k, 3})) {
      *m = k + 1;
      return 1;
    }
  return 0;
}

static int cookie_date(hr_span_t text, int64_t *out) {
  int h = 0, mi = 0, s = 0, dom = 0, mon = 0, year = 0;
  int have_time = 0, have_dom = 0, have_mon = 0, have_year = 0;
  size_t i = 0;
  hr_date_t d;
  char fixdate[29];
  static const char mname[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  static const char wname[] = "SunMonTueWedThuFriSat";
  while (i < text.len) {
    hr_span_t t;
    while (i < text.len && is_delimiter((unsigned char)text.ptr[i])) i++;
    t.ptr = text.ptr + i;
    while (i < text.len && !is_delimiter((unsigned char)text.ptr[i])) i++;
    t.len = (size_t)(text.ptr + i - t.ptr);
    if (t.len == 0) break;
    if (!have_time && time_token(t, &h, &mi, &s))
      have_time = 1;
    else if (!have_dom && number_token(t, 1, 2, &dom))
      have_dom = 1;
    else if (!have_mon && month_token(t, &mon))
      have_mon = 1;
    else if (!have_year && number_token(t, 2, 4, &year))
      have_year = 1;
  }
  if (!have_time || !have_dom || !have_mon || !have_year) return 0;
  if (year >= 70 && year <= 99) year += 1900;
  if (year <= 69) year += 2000;
  if (dom < 1 || dom > 31 || year < 1601 || h > 23 || mi > 59 || s > 59)
    return 0;
  /* Hand the fields to the date delegate as an IMF-fixdate, so that the
   * calendar arithmetic and the check for days that do not exist (Feb 30)
   * live in one place.  It insists on the right day name, which a cookie
   * date need not carry: try the seven until one fits. */
  memcpy(fixdate, "Sun, 00 Jan 0000 00:00:00 GMT", sizeof fixdate);
  fixdate[5] = (char)('0' + dom / 10);
  fixdate[6] = (char)('0' + dom % 10);
  memcpy(fixdate + 8, mname + 3 * (mon - 1), 3);
  fixdate[12] = (char)('0' + year / 1000);
  fixdate[13] = (char)('0' + year / 100 % 10);
  fixdate[14] = (char)('0' + year / 10 % 10);
  fixdate[15] = (char)('0' + year % 10);
  fixdate[17] = (char)('0' + h / 10);
  fixdate[18] = (char)('0' + h % 10);
  fixdate[20] = (char)('0' + mi / 10);
  fixdate[21] = (char)('0' + mi % 10);
  fixdate[23] = (char)('0' + s / 10);
  fixdate[24] = (char)('0' + s % 10);
  for (i = 0; i < 7; i++) {
    memcpy(fixdate, &wname[3 * i], 3);
    if (hr__delegate_date.parse((hr_span_t){fixdate, sizeof fixdate}, &d, NULL,
                                NULL) == 0) {
      *out = d.seconds < 0 ? 0 : d.seconds;
      return 1;
    }
  }
  return 0; /* no such day in that month */
}

/* ---- Set-Cookie --------------------------------------------------------- */

static void attribute(hr_set_cookie_t *sc, hr_span_t name, hr_span_t value) {
  if (hr_span_eq_nocase(name, HR_SPAN_LIT("Expires"))) {
    int64_t t;
    if (cookie_date(value, &t)) sc->expires = t;
  } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("Max-Age"))) {
    hr__lex_t lx;
    uint64_t v;
    int neg, clamped = 0;
    hr__lex_init(&lx, value);
    neg = hr__lex_eat(&lx, '-');
    if (hr__lex_digits(&lx, INT64_MAX, &v, &clamped) != 0 || lx.p != lx.end)
      return;
    sc->max_age = neg ? 0 : (int64_t)v;
  } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("Domain"))) {
    if (value.len > 0 && value.ptr[0] == '.') {
      value.ptr++;
      value.len--;
    }
    if (value.len > 0) sc->domain = value;
  } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("Path"))) {
    if (value.len > 0 && value.ptr[0] == '/')
      sc->path = value;
    else
      sc->path = (hr_span_t){NULL, 0};
  } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("Secure"))) {
    sc->secure = 1;
  } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("HttpOnly"))) {
    sc->http_only = 1;
  } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("SameSite"))) {
    if (hr_span_eq_nocase(value, HR_SPAN_LIT("Strict")))
      sc->same_site = HR_SAME_SITE_STRICT;
    else if (hr_span_eq_nocase(value, HR_SPAN_LIT("Lax")))
      sc->same_site = HR_SAME_SITE_LAX;
    else if (hr_span_eq_nocase(value, HR_SPAN_LIT("None")))
      sc->same_site = HR_SAME_SITE_NONE;
  }
}

static int parse_set_cookie(hr_span_t text, void *value, const hr_mem_t *mem,
                            void *udata) {
  hr_set_cookie_t *sc = value;
  const char *p, *end, *semi;
  (void)udata;
  (void)mem;
  memset(sc, 0, sizeof *sc);
  sc->expires = sc->max_age = -1;
  if (text.len == 0) return HR_EPARSE;
  p = text.ptr;
  end = text.ptr + text.len;
  semi = memchr(p, ';', text.len);
  if (semi == NULL) semi = end;
  if (parse_pair(p, semi, &sc->name, &sc->value) != 0) return HR_EPARSE;
  while (semi < end) {
    hr_span_t name, val;
    p = semi + 1;
    semi = memchr(p, ';', (size_t)(end - p));
    if (semi == NULL) semi = end;
    if (!split_eq(p, semi, &name, &val)) {
      name = trim(p, semi);
      val = (hr_span_t){NULL, 0};
    }
    attribute(sc, name, val);
  }
  return 0;
}

static int format_set_cookie(const void *value, char *buf, size_t cap,
                             size_t *len, void *udata) {
  static const char *const same_site[] = {NULL, "Strict", "Lax", "None"};
  const hr_set_cookie_t *sc = value;
  hr__tw_t o;
  size_t i;
  (void)udata;
  hr__tw_init(&o, buf, cap);
  if (format_pair(&o, sc->name, sc->value) != 0) return HR_EINVAL;
  if (sc->expires >= 0) {
    hr_date_t d = {sc->expires};
    char date[29];
    size_t n;
    if (hr__delegate_date.format(&d, date, sizeof date, &n, NULL) != 0)
      return HR_EINVAL;
    hr__tw_cstr(&o, "; Expires=");
    hr__tw_bytes(&o, date, n);
  }
  if (sc->max_age >= 0) {
    hr__tw_cstr(&o, "; Max-Age=");
    hr__tw_u64(&o, (uint64_t)sc->max_age);
  }
  if (sc->domain.len > 0) {
    /* RFC 1034 letters, digits, hyphens and dots; no leading dot, which a
     * reader drops (§5.2.3): write the bare domain. */
    if (sc->domain.ptr[0] == '.') return HR_EINVAL;
    for (i = 0; i < sc->domain.len; i++) {
      char c = sc->domain.ptr[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.'))
        return HR_EINVAL;
    }
    hr__tw_cstr(&o, "; Domain=");
    hr__tw_span(&o, sc->domain);
  }
  if (sc->path.len > 0) {
    /* <any CHAR except CTLs or ";">, starting with "/" so that a reader
     * does not take it for the default path. */
    if (sc->path.ptr[0] != '/') return HR_EINVAL;
    for (i = 0; i < sc->path.len; i++) {
      unsigned char c = (unsigned char)sc->path.ptr[i];
      if (c < 0x20 || c >= 0x7F || c == ';') return HR_EINVAL;
    }
    hr__tw_cstr(&o, "; Path=");
    hr__tw_span(&o, sc->path);
  }
  if (sc->secure) hr__tw_cstr(&o, "; Secure");
  if (sc->http_only) hr__tw_cstr(&o, "; HttpOnly");
  if (sc->same_site != HR_SAME_SITE_NONE_SET) {
    if ((int)sc->same_site < HR_SAME_SITE_STRICT ||
        (int)sc->same_site > HR_SAME_SITE_NONE)
      return HR_EINVAL;
    hr__tw_cstr(&o, "; SameSite=");
    hr__tw_cstr(&o, same_site[sc->same_site]);
  }
  return hr__tw_finish(&o, len);
}

/* ---- Cookie ------------------------------------------------------------- */

/* Room for the pairs (the non-empty pieces between ";"), counted first. */
static int parse_cookies(hr_span_t text, void *value, const hr_mem_t *mem,
                         void *udata) {
  hr_cookies_t *c = value;
  const char *p, *end;
  size_t room;
  void *pairs;
  (void)udata;
  c->n = 0;
  c->dropped = 0;
  c->pairs = NULL;
  if (text.len == 0) return HR_EPARSE;
  hr__count_list(text, ';', HR__COUNT_FIRST, &room, NULL);
  if (hr__mem_items(mem, room, sizeof(hr_cookie_t), &pairs, 0, 0, NULL) != 0)
    return HR_ENOMEM;
  c->pairs = pairs;
  p = text.ptr;
  end = text.ptr + text.len;
  for (;;) {
    const char *semi = memchr(p, ';', (size_t)(end - p));
    if (semi == NULL) semi = end;
    if (trim(p, semi).len > 0) {
      if (c->n == room) return HR__ROOM_SHORT();
      if (parse_pair(p, semi, &c->pairs[c->n].name, &c->pairs[c->n].value) == 0)
        c->n++;
      else
        c->dropped++;
    }
    if (semi == end) break;
    p = semi + 1;
  }
  return c->n > 0 ? 0 : HR_EPARSE;
}

static int format_cookies(const void *value, char *buf, size_t cap, size_t *len,
                          void *udata) {
  const hr_cookies_t *c = value;
  hr__tw_t o;
  size_t i;
  (void)udata;
  if (c->n == 0 || c->pairs == NULL) return HR_EINVAL;
  hr__tw_init(&o, buf, cap);
  for (i = 0; i < c->n; i++) {
    if (i > 0) hr__tw_bytes(&o, "; ", 2);
    if (format_pair(&o, c->pairs[i].name, c->pairs[i].value) != 0)
      return HR_EINVAL;
  }
  return hr__tw_finish(&o, len);
}

hr_span_t hr_cookies_get(const hr_cookies_t *c, hr_span_t name) {
  hr_span_t none = {NULL, 0};
  size_t i;
  if (c == NULL || c->pairs == NULL) return none;
  for (i = 0; i < c->n; i++)
    if (hr_span_eq(c->pairs[i].name, name)) return c->pairs[i].value;
  return none;
}

const hr_delegate_t hr__delegate_set_cookie = {format_set_cookie,
                                               parse_set_cookie, NULL};
const hr_delegate_t hr__delegate_cookies = {format_cookies, parse_cookies,
                                            NULL};
