/* SPDX-License-Identifier: MIT */
/*
 * The HTTP-date delegate (RFC 9110 §5.6.7) for hr_date_t, seconds since the
 * Unix epoch.  It writes IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") and
 * reads that and the two obsolete forms a recipient must accept, RFC 850
 * ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37
 * 1994").  The calendar arithmetic is done here, on the proleptic Gregorian
 * calendar (no timegm, no locale, no clock), for years 0000 to 9999: the
 * four digits IMF-fixdate has room for.
 *
 * Strictness, where the RFC leaves room:
 *  - HTTP-date is case-sensitive (RFC 9110 §5.6.7); names must match exactly.
 *  - Every field is range-checked: hour 0-23, minute 0-59, second 0-60 (60
 *    for a leap second, counted as the first second of the next minute),
 *    day 1 to the length of that month in that year.
 *  - A day name that does not match the date is rejected.  A sender that
 *    gets the weekday wrong has computed the date wrongly or assembled it
 *    by hand, and the field is then better treated as invalid (for
 *    If-Modified-Since that means ignored, RFC 9110 §13.1.3) than trusted.
 *  - RFC 850's two-digit year uses a fixed window: 70-99 are 1970-1999 and
 *    00-69 are 2000-2069.  RFC 9110 says to take the most recent past year
 *    with those digits when the year would otherwise be more than 50 years
 *    in the future, which makes the answer depend on the clock: the same
 *    bytes would parse differently over the years, and this parser would
 *    need the current time (state, and untestable results).  The fixed
 *    window keeps every RFC 850 date at or after the epoch and agrees with
 *    the RFC rule except for years "70" up to the current year + 50 (in
 *    2025: 70-75, which the RFC would put in 2070-2075).  Nobody sends RFC
 *    850 dates for times decades ahead; the form has been obsolete since
 *    1999.  Revisit the window before 2050.
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

#include <string.h>

static const char wday_short[7][4] = {"Sun", "Mon", "Tue", "Wed",
                                      "Thu", "Fri", "Sat"};
static const char *const wday_long[7] = {"Sunday",    "Monday",   "Tuesday",
                                         "Wednesday", "Thursday", "Friday",
                                         "Saturday"};
static const char month_name[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};

/* First and last second this delegate handles: 0000-01-01T00:00:00Z and
 * 9999-12-31T23:59:59Z. */
#define MIN_SECONDS (-62167219200LL)
#define MAX_SECONDS 253402300799LL

/* Days since 1970-01-01 of a Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;                                   /* 0..399 */
  doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365 */
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* 0..146096 */
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  int64_t era, doe, yoe, doy, mp;
  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

/* 0 = Sunday; 1970-01-01 was a Thursday. */
static int weekday(int64_t days) {
  int64_t w = (days + 4) % 7;
  return (int)(w < 0 ? w + 7 : w);
}

static int month_days(int64_t y, int m) {
  static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) return 29;
  return len[m - 1];
}

static void put2(char *p, int v) {
  p[0] = (char)('0' + v / 10);
  p[1] = (char)('0' + v % 10);
}

static int format_date(const void *value, char *buf, size_t cap, size_t *len,
                       void *udata) {
  int64_t s = ((const hr_date_t *)value)->seconds, days, rem, y;
  int m, d;
  char out[29];
  hr__tw_t o;
  (void)udata;
  if (s < MIN_SECONDS || s > MAX_SECONDS) return HR_EINVAL;
  days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
  rem = s - days * 86400;
  civil_from_days(days, &y, &m, &d);
  memcpy(out, wday_short[weekday(days)], 3);
  memcpy(out + 3, ", ", 2);
  put2(out + 5, d);
  out[7] = ' ';
  memcpy(out + 8, month_name[m - 1], 3);
  out[11] = ' ';
  put2(out + 12, (int)(y / 100));
  put2(out + 14, (int)(y % 100));
  out[16] = ' ';
  put2(out + 17, (int)(rem / 3600));
  out[19] = ':';
  put2(out + 20, (int)(rem / 60 % 60));
  out[22] = ':';
  put2(out + 23, (int)(rem % 60));
  memcpy(out + 25, " GMT", 4);
  hr__tw_init(&o, buf, cap);
  hr__tw_bytes(&o, out, sizeof out);
  return hr__tw_finish(&o, len);
}

/* ---- parsing ------------------------------------------------------------ */

static int lit(hr__lex_t *lx, const char *s) {
  size_t n = strlen(s);
  if ((size_t)(lx->end - lx->p) < n || memcmp(lx->p, s, n) != 0) return 0;
  lx->p += n;
  return 1;
}

/* Reads exactly n digits (n <= 4). */
static int digits(hr__lex_t *lx, int n, int *out) {
  int v = 0, i;
  if (lx->end - lx->p < n) return 0;
  for (i = 0; i < n; i++) {
    char c = lx->p[i];
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  lx->p += n;
  *out = v;
  return 1;
}

static int month(hr__lex_t *lx, int *m) {
  int i;
  for (i = 0; i < 12; i++) {
    if (lit(lx, month_name[i])) {
      *m = i + 1;
      return 1;
    }
  }
  return 0;
}

/* time-of-day = hour ":" minute ":" second */
static int time_of_day(hr__lex_t *lx, int *h, int *mi, int *s) {
  return digits(lx, 2, h) && lit(lx, ":") && digits(lx, 2, mi) &&
         lit(lx, ":") && digits(lx, 2, s);
}

static int parse_date(hr_span_t text, void *value, const hr_mem_t *mem, void *udata) {
  hr__lex_t lx;
  int wd, y = 0, m = 0, d = 0, h = 0, mi = 0, s = 0, ok;
  int64_t days;
  (void)udata;
  (void)mem;
  hr__lex_init(&lx, text);
  for (wd = 0; wd < 7; wd++)
    if (lit(&lx, wday_short[wd])) break;
  if (wd == 7) return HR_EPARSE;
  if (lit(&lx, ", ")) {
    /* IMF-fixdate: day-name "," SP day SP month SP year SP time SP "GMT" */
    ok = digits(&lx, 2, &d) && lit(&lx, " ") && month(&lx, &m) &&
         lit(&lx, " ") && digits(&lx, 4, &y) && lit(&lx, " ") &&
         time_of_day(&lx, &h, &mi, &s) && lit(&lx, " GMT");
  } else if (lit(&lx, " ")) {
    /* asctime: day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time SP
     * year */
    ok = month(&lx, &m) && lit(&lx, " ") &&
         (lit(&lx, " ") ? digits(&lx, 1, &d) : digits(&lx, 2, &d)) &&
         lit(&lx, " ") && time_of_day(&lx, &h, &mi, &s) && lit(&lx, " ") &&
         digits(&lx, 4, &y);
  } else {
    /* RFC 850: day-name-l "," SP day "-" month "-" 2DIGIT SP time SP
     * "GMT" */
    ok = lit(&lx, wday_long[wd] + 3) && lit(&lx, ", ") && digits(&lx, 2, &d) &&
         lit(&lx, "-") && month(&lx, &m) && lit(&lx, "-") &&
         digits(&lx, 2, &y) && lit(&lx, " ") && time_of_day(&lx, &h, &mi, &s) &&
         lit(&lx, " GMT");
    y += y < 70 ? 2000 : 1900; /* the fixed window: see the top of the file */
  }
  if (!ok || lx.p != lx.end) return HR_EPARSE;
  if (d < 1 || d > month_days(y, m) || h > 23 || mi > 59 || s > 60)
    return HR_EPARSE;
  days = days_from_civil(y, m, d);
  if (weekday(days) != wd) return HR_EPARSE;
  ((hr_date_t *)value)->seconds = days * 86400 + h * 3600 + mi * 60 + s;
  return 0;
}

const hr_delegate_t hr__delegate_date = {format_date, parse_date, NULL};
