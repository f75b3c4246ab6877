/* SPDX-License-Identifier: MIT */
/*
 * multipart/form-data streaming parser (multipart.h).  A byte-driven state
 * machine: the delimiter "\r\n--boundary" is matched across pieces (a
 * boundary holds no CR, so a mismatch restarts the match at 0 or 1), the
 * data before it goes out in runs, the part's header section is collected
 * in the parser's buffer and read when complete.
 */
#include <string.h>

#include "hroute/error.h"
#include "hroute/multipart.h"

enum {
  S_PREAMBLE = 0, /* before the first delimiter */
  S_AFTER,        /* after a delimiter: "--", or padding then CRLF */
  S_AFTER_DASH,   /* one '-' seen */
  S_AFTER_CR,     /* CR seen */
  S_HEADERS,      /* collecting a part's header section */
  S_DATA,         /* a part's data */
  S_END           /* after the closing delimiter: the epilogue is ignored */
};

static int is_space(char c) { return c == ' ' || c == '\t'; }

static hr_span_t trim(hr_span_t s) {
  while (s.len && is_space(s.ptr[0])) s.ptr++, s.len--;
  while (s.len && is_space(s.ptr[s.len - 1])) s.len--;
  return s;
}

static int lower_eq(hr_span_t a, const char *b) {
  return hr_span_eq_nocase(a, hr_span_cstr(b));
}

/* RFC 2046 §5.1.1: 1 to 70 of DIGIT ALPHA ' ( ) + _ , - . / : = ? and
 * space, not ending with a space. */
static int bchars_ok(hr_span_t b) {
  size_t i;
  if (b.len == 0 || b.len > HR_MULTIPART_BOUNDARY_MAX || b.ptr[b.len - 1] == ' ') return 0;
  for (i = 0; i < b.len; i++) {
    char c = b.ptr[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          strchr("'()+_,-./:=? ", c) != NULL))
      return 0;
  }
  return 1;
}

int hr_multipart_boundary(hr_span_t ct, hr_span_t *boundary) {
  const char *p = ct.ptr, *end = ct.ptr + ct.len, *semi;
  hr_span_t type;
  semi = memchr(p, ';', ct.len);
  type.ptr = p;
  type.len = (size_t)((semi ? semi : end) - p);
  if (!lower_eq(trim(type), "multipart/form-data")) return HR_EINVAL;
  while (semi != NULL) {
    const char *q = semi + 1, *eq, *next = memchr(q, ';', (size_t)(end - q));
    hr_span_t key, val;
    const char *e = next ? next : end;
    eq = memchr(q, '=', (size_t)(e - q));
    if (eq != NULL) {
      key.ptr = q;
      key.len = (size_t)(eq - q);
      val.ptr = eq + 1;
      val.len = (size_t)(e - eq - 1);
      val = trim(val);
      if (lower_eq(trim(key), "boundary")) {
        size_t i;
        if (val.len >= 2 && val.ptr[0] == '"' && val.ptr[val.len - 1] == '"') {
          val.ptr++;
          val.len -= 2;
        }
        if (!bchars_ok(val)) return HR_EPARSE;
        (void)i;
        *boundary = val;
        return 0;
      }
    }
    semi = next;
  }
  return HR_EPARSE;
}

int hr_multipart_init(hr_multipart_t *mp, hr_span_t boundary, const hr_multipart_cbs_t *cbs,
                      void *udata, const hr_multipart_limits_t *limits) {
  if (mp == NULL || cbs == NULL || !bchars_ok(boundary)) return HR_EINVAL;
  memset(mp, 0, offsetof(hr_multipart_t, head_inline));
  mp->cbs = *cbs;
  mp->udata = udata;
  if (limits != NULL) mp->limits = *limits;
  if (mp->limits.max_parts == 0) mp->limits.max_parts = 100;
  if (mp->limits.max_header_bytes == 0) mp->limits.max_header_bytes = sizeof mp->head_inline;
  if (mp->limits.max_header_bytes > sizeof mp->head_inline) return HR_EINVAL;
  memcpy(mp->delim, "\r\n--", 4);
  memcpy(mp->delim + 4, boundary.ptr, boundary.len);
  mp->dlen = 4 + boundary.len;
  mp->head = mp->head_inline;
  mp->head_cap = mp->limits.max_header_bytes;
  mp->state = S_PREAMBLE;
  mp->matched = 2; /* the body may open with the delimiter, without CRLF */
  return 0;
}

/* Reads Content-Disposition's parameters (name, filename). */
static int disposition(hr_span_t v, hr_multipart_part_t *part) {
  const char *p = v.ptr, *end = v.ptr + v.len, *semi = memchr(p, ';', v.len);
  hr_span_t kind = {p, (size_t)((semi ? semi : end) - p)};
  if (!lower_eq(trim(kind), "form-data")) return HR_EPARSE;
  while (semi != NULL) {
    const char *q = semi + 1, *e, *eq;
    hr_span_t key, val;
    /* a quoted value may hold ';' */
    while (q < end && is_space(*q)) q++;
    eq = memchr(q, '=', (size_t)(end - q));
    if (eq == NULL) return HR_EPARSE;
    key.ptr = q;
    key.len = (size_t)(eq - q);
    {
      const char *qv = eq + 1;
      while (qv < end && is_space(*qv)) qv++;
      if (qv < end && *qv == '"') {
        /* A quoted-string: its quoted-pairs undone in place (the header
         * buffer is the parser's own). */
        char *w = (char *)qv + 1;
        const char *r = qv + 1;
        while (r < end && *r != '"') {
          if (*r == '\\' && r + 1 < end) r++;
          *w++ = *r++;
        }
        if (r >= end) return HR_EPARSE;
        val.ptr = qv + 1;
        val.len = (size_t)(w - (qv + 1));
        e = r + 1;
        goto have_value;
      }
    }
    {
      const char *n = memchr(eq + 1, ';', (size_t)(end - eq - 1));
      val.ptr = eq + 1;
      val.len = (size_t)((n ? n : end) - eq - 1);
      val = trim(val);
      e = n ? n : end;
    }
  have_value:
    key = trim(key);
    if (lower_eq(key, "name")) part->name = val;
    else if (lower_eq(key, "filename")) part->filename = val;
    while (e < end && *e != ';') {
      if (!is_space(*e)) return HR_EPARSE;
      e++;
    }
    semi = e < end ? e : NULL;
  }
  return part->name.ptr != NULL ? 0 : HR_EPARSE;
}

/* The collected header section (without its final CRLF CRLF). */
static int headers_done(hr_multipart_t *mp) {
  hr_multipart_part_t part;
  const char *p = mp->head, *end = mp->head + mp->head_len;
  int rc;
  memset(&part, 0, sizeof part);
  part.index = mp->nparts;
  while (p < end) {
    const char *eol = memchr(p, '\r', (size_t)(end - p)), *colon;
    hr_span_t name, value;
    if (eol == NULL) eol = end;
    colon = memchr(p, ':', (size_t)(eol - p));
    if (colon == NULL) return HR_EPARSE;
    name.ptr = p;
    name.len = (size_t)(colon - p);
    value.ptr = colon + 1;
    value.len = (size_t)(eol - colon - 1);
    value = trim(value);
    if (lower_eq(name, "Content-Disposition")) {
      if ((rc = disposition(value, &part)) != 0) return rc;
    } else if (lower_eq(name, "Content-Type")) {
      part.content_type = value;
    }
    p = end - eol > 2 ? eol + 2 : end; /* CRLF between lines */
  }
  if (part.name.ptr == NULL) return HR_EPARSE; /* RFC 7578 §4.2 */
  if (++mp->nparts > mp->limits.max_parts) return HR_ETOOLARGE;
  mp->part_bytes = 0;
  return mp->cbs.on_part != NULL ? mp->cbs.on_part(mp->udata, &part) : 0;
}

static int emit(hr_multipart_t *mp, const char *p, size_t n) {
  if (n == 0) return 0;
  mp->part_bytes += n;
  if (mp->limits.max_part_bytes && mp->part_bytes > mp->limits.max_part_bytes)
    return HR_ETOOLARGE;
  return mp->cbs.on_data != NULL ? mp->cbs.on_data(mp->udata, (hr_span_t){p, n}) : 0;
}

/* Data bytes from p[0..n): returns how many were consumed (up to and with
 * a complete delimiter), or sets mp->err.  p[run..i) are data not yet
 * emitted; bytes that may begin the delimiter are held (they are
 * delim[0..matched)) until they turn out to be data or the delimiter. */
static size_t data(hr_multipart_t *mp, const char *p, size_t n) {
  size_t i, run = 0;
  for (i = 0; i < n; i++) {
    char c = p[i];
    if (c == mp->delim[mp->matched]) {
      if (mp->matched == 0 && (mp->err = emit(mp, p + run, i - run)) != 0) return i;
      run = i + 1;
      if (++mp->matched == mp->dlen) {
        mp->matched = 0;
        mp->state = S_AFTER;
        if (mp->cbs.on_part_end != NULL) mp->err = mp->cbs.on_part_end(mp->udata);
        return i + 1;
      }
      continue;
    }
    if (mp->matched > 0) { /* what looked like a delimiter was data */
      if ((mp->err = emit(mp, mp->delim, mp->matched)) != 0) return i;
      mp->matched = 0;
      run = i;
      if (c == mp->delim[0]) {
        mp->matched = 1;
        run = i + 1;
      }
    }
  }
  mp->err = emit(mp, p + run, n - run);
  return n;
}

int hr_multipart_feed(hr_multipart_t *mp, hr_span_t in) {
  const char *p = in.ptr, *end = in.ptr + in.len;
  if (mp->err != 0) return mp->err;
  while (p < end && mp->err == 0) {
    char c = *p;
    switch (mp->state) {
      case S_PREAMBLE:
        if (c == mp->delim[mp->matched]) {
          if (++mp->matched == mp->dlen) {
            mp->matched = 0;
            mp->state = S_AFTER;
          }
        } else {
          mp->matched = c == mp->delim[0];
        }
        p++;
        break;
      case S_AFTER:
        if (c == '-') mp->state = S_AFTER_DASH;
        else if (c == '\r') mp->state = S_AFTER_CR;
        else if (!is_space(c)) mp->err = HR_EPARSE;
        p++;
        break;
      case S_AFTER_DASH:
        if (c != '-') mp->err = HR_EPARSE;
        else mp->state = S_END;
        p++;
        break;
      case S_AFTER_CR:
        if (c != '\n') mp->err = HR_EPARSE;
        mp->state = S_HEADERS;
        mp->head_len = 0;
        p++;
        break;
      case S_HEADERS:
        if (mp->head_len == mp->head_cap) {
          mp->err = HR_ETOOLARGE;
          break;
        }
        mp->head[mp->head_len++] = c;
        p++;
        if (mp->head_len >= 4 && memcmp(mp->head + mp->head_len - 4, "\r\n\r\n", 4) == 0) {
          mp->head_len -= 4;
          mp->err = headers_done(mp);
          mp->state = S_DATA;
          mp->matched = 0;
        } else if (mp->head_len == 2 && memcmp(mp->head, "\r\n", 2) == 0) {
          mp->err = HR_EPARSE; /* no headers: no name */
        }
        break;
      case S_DATA:
        p += data(mp, p, (size_t)(end - p));
        break;
      default: /* S_END */
        return 0;
    }
  }
  return mp->err;
}

int hr_multipart_finish(hr_multipart_t *mp) {
  if (mp->err != 0) return mp->err;
  return mp->state == S_END ? 0 : HR_EPARSE;
}
