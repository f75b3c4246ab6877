/* SPDX-License-Identifier: MIT */
/*
 * The field-value lexer and bounded writer shared by the built-in header
 * delegates (see lex.h): RFC 9110 §5.6 tokens, OWS, quoted-strings,
 * parameters and lists on the way in; tokens, quoted-strings and parameters
 * on the way out, counting the exact length even when the buffer is short.
 */
#include "delegate/lex.h"

#include <string.h>

/* ---- character classes -------------------------------------------------- */

int hr__is_qdtext(unsigned char c) {
  return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5B) ||
         (c >= 0x5D && c <= 0x7E) || c >= 0x80;
}

int hr__is_qpchar(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7F);
}

/* ---- reading ------------------------------------------------------------ */

void hr__lex_init(hr__lex_t *lx, hr_span_t text) {
  /* An empty span may come with a NULL pointer, on which even "+ 0" is
   * undefined: give the cursor somewhere harmless to point. */
  static const char nothing[1] = "";
  lx->p = text.len > 0 ? text.ptr : nothing;
  lx->end = lx->p + text.len;
}

int hr__lex_peek(const hr__lex_t *lx) {
  return lx->p < lx->end ? (unsigned char)*lx->p : -1;
}

int hr__lex_eat(hr__lex_t *lx, char c) {
  if (lx->p < lx->end && *lx->p == c) {
    lx->p++;
    return 1;
  }
  return 0;
}

void hr__lex_ows(hr__lex_t *lx) {
  while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t')) lx->p++;
}

int hr__lex_token(hr__lex_t *lx, hr_span_t *out) {
  const char *start = lx->p;
  while (lx->p < lx->end && hr__is_tchar((unsigned char)*lx->p)) lx->p++;
  if (lx->p == start) return HR_EPARSE;
  out->ptr = start;
  out->len = (size_t)(lx->p - start);
  return 0;
}

int hr__lex_quoted(hr__lex_t *lx, hr_span_t *out) {
  const char *p = lx->p, *start;
  if (p == lx->end || *p != '"') return HR_EPARSE;
  start = ++p;
  while (p < lx->end) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') {
      out->ptr = start;
      out->len = (size_t)(p - start);
      lx->p = p + 1;
      return 0;
    }
    if (c == '\\') {
      if (p + 1 == lx->end || !hr__is_qpchar((unsigned char)p[1]))
        return HR_EPARSE;
      p += 2;
    } else if (hr__is_qdtext(c)) {
      p++;
    } else {
      return HR_EPARSE;
    }
  }
  return HR_EPARSE; /* no closing DQUOTE */
}

int hr__lex_param(hr__lex_t *lx, hr_mparam_t *out, unsigned flags) {
  for (;;) {
    const char *save = lx->p;
    int c;
    hr__lex_ows(lx);
    if (!hr__lex_eat(lx, ';')) {
      lx->p = save;
      return 0;
    }
    hr__lex_ows(lx);
    c = hr__lex_peek(lx);
    if (c < 0 || !hr__is_tchar((unsigned char)c)) {
      if (flags & HR__PARAM_EMPTY) continue;
      return HR_EPARSE;
    }
    hr__lex_token(lx, &out->name);
    if (flags & HR__PARAM_BWS) hr__lex_ows(lx);
    if (!hr__lex_eat(lx, '=')) {
      if (!(flags & HR__PARAM_NOVALUE)) return HR_EPARSE;
      out->value.ptr = lx->p;
      out->value.len = 0;
      out->quoted = 0;
      return 1;
    }
    if (flags & HR__PARAM_BWS) hr__lex_ows(lx);
    if (hr__lex_peek(lx) == '"') {
      if (hr__lex_quoted(lx, &out->value) != 0) return HR_EPARSE;
      out->quoted = 1;
    } else {
      if (hr__lex_token(lx, &out->value) != 0) return HR_EPARSE;
      out->quoted = 0;
    }
    return 1;
  }
}

int hr__lex_list_next(hr__lex_t *lx) {
  for (;;) {
    hr__lex_ows(lx);
    if (!hr__lex_eat(lx, ',')) break;
  }
  return lx->p < lx->end;
}

int hr__lex_list_after(hr__lex_t *lx) {
  hr__lex_ows(lx);
  if (lx->p == lx->end || hr__lex_eat(lx, ',')) return 0;
  return HR_EPARSE;
}

int hr__lex_digits(hr__lex_t *lx, uint64_t max, uint64_t *out, int *clamped) {
  const char *start = lx->p;
  uint64_t v = 0;
  int over = 0;
  while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9') {
    unsigned d = (unsigned)(*lx->p - '0');
    if (!over && v > (max - d) / 10) over = 1;
    if (!over) v = v * 10 + d;
    lx->p++;
  }
  if (lx->p == start) return HR_EPARSE;
  if (over) {
    if (clamped == NULL) return HR_EPARSE;
    *clamped = 1;
    v = max;
  }
  *out = v;
  return 0;
}

/* ---- writing ------------------------------------------------------------ */

void hr__tw_init(hr__tw_t *o, char *buf, size_t cap) {
  o->buf = buf;
  o->cap = cap;
  o->len = 0;
}

void hr__tw_bytes(hr__tw_t *o, const char *p, size_t n) {
  if (n == 0) return;
  if (o->len < o->cap) {
    size_t room = o->cap - o->len;
    memcpy(o->buf + o->len, p, n < room ? n : room);
  }
  o->len += n;
}

void hr__tw_span(hr__tw_t *o, hr_span_t s) {
  if (s.len > 0) hr__tw_bytes(o, s.ptr, s.len);
}

void hr__tw_cstr(hr__tw_t *o, const char *s) {
  hr__tw_bytes(o, s, strlen(s));
}

void hr__tw_char(hr__tw_t *o, char c) { hr__tw_bytes(o, &c, 1); }

void hr__tw_u64(hr__tw_t *o, uint64_t v) {
  char digits[20];
  size_t i = sizeof digits;
  do {
    digits[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  hr__tw_bytes(o, digits + i, sizeof digits - i);
}

int hr__tw_token(hr__tw_t *o, hr_span_t s) {
  if (!hr__is_token(s)) return HR_EINVAL;
  hr__tw_span(o, s);
  return 0;
}

int hr__tw_quoted(hr__tw_t *o, hr_span_t s, int escaped) {
  size_t i, run = 0;
  for (i = 0; i < s.len; i++) { /* check everything before writing */
    unsigned char c = (unsigned char)s.ptr[i];
    if (escaped && c == '\\') {
      if (i + 1 == s.len || !hr__is_qpchar((unsigned char)s.ptr[i + 1]))
        return HR_EINVAL;
      i++;
    } else if (!hr__is_qdtext(c) && !(!escaped && (c == '"' || c == '\\'))) {
      return HR_EINVAL;
    }
  }
  hr__tw_char(o, '"');
  if (escaped) {
    hr__tw_span(o, s);
  } else if (s.len > 0) {
    /* Copy runs of qdtext; put a backslash before each DQUOTE and
     * backslash. */
    for (i = 0; i < s.len; i++) {
      if (s.ptr[i] == '"' || s.ptr[i] == '\\') {
        hr__tw_bytes(o, s.ptr + i - run, run);
        hr__tw_char(o, '\\');
        run = 0;
      }
      run++;
    }
    hr__tw_bytes(o, s.ptr + s.len - run, run);
  }
  hr__tw_char(o, '"');
  return 0;
}

int hr__tw_param(hr__tw_t *o, const hr_mparam_t *p, unsigned flags) {
  if (hr__tw_token(o, p->name) != 0) return HR_EINVAL;
  if (p->value.len == 0 && !p->quoted && (flags & HR__PARAM_NOVALUE)) return 0;
  hr__tw_char(o, '=');
  if (!p->quoted && hr__is_token(p->value)) {
    hr__tw_span(o, p->value);
    return 0;
  }
  return hr__tw_quoted(o, p->value, p->quoted);
}

int hr__tw_finish(const hr__tw_t *o, size_t *len) {
  *len = o->len;
  return o->len > o->cap ? HR_ENOSPC : 0;
}
