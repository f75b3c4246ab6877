/* SPDX-License-Identifier: MIT */
/*
 * Strictness scanners for the header section and chunked framing (see
 * strict.h for the rules and why they exist).
 */
#include "http/strict.h"

void hr__head_scan_init(hr__head_scan_t *s) {
  s->pos = 0;
  s->line_len = 0;
  s->fields = 0;
  s->cr = 0;
  s->in_request_line = 1;
  s->in_name = 0;
}

long hr__head_scan(hr__head_scan_t *s, const char *msg, size_t n,
                   const hr__head_limits_t *lim) {
  /* The state lives in locals while scanning (stored back on exit), and the
   * bytes of a line are skipped in a tight loop up to the next CR or LF:
   * only line starts, field names and line ends need a closer look. */
  size_t i = s->pos, line_len = s->line_len, fields = s->fields;
  unsigned cr = s->cr, in_req = s->in_request_line, in_name = s->in_name;
  size_t end = n < lim->max_header ? n : lim->max_header;
  long rc = 0;
  while (i < end) {
    unsigned char c = (unsigned char)msg[i];
    if (cr) {
      if (c != '\n') {
        rc = -400; /* bare CR */
        goto out;
      }
      cr = 0;
      i++;
      if (in_req) {
        /* Empty lines before the request line are ignored (RFC 9112 §2.2). */
        if (line_len != 0) in_req = 0;
      } else if (line_len == 0) {
        rc = (long)i; /* the empty line: end of the section */
        goto out;
      } else if (++fields > lim->max_fields) {
        rc = -431;
        goto out;
      }
      line_len = 0;
      in_name = 0;
      continue;
    }
    if (c == '\r') {
      cr = 1;
      i++;
      continue;
    }
    if (c == '\n') {
      rc = -400; /* bare LF */
      goto out;
    }
    if (line_len == 0 && !in_req) {
      if (c == ' ' || c == '\t' || c == ':') {
        rc = -400; /* obs-fold, or an empty field name */
        goto out;
      }
      in_name = 1;
    }
    if (in_name) {
      if (c == ':') {
        in_name = 0;
      } else if (c == ' ' || c == '\t') {
        rc = -400; /* whitespace before the colon (RFC 9112 §5.1) */
        goto out;
      }
      line_len++;
      i++;
      continue;
    }
    {
      const char *p = msg + i, *e = msg + end;
      while (p < e && *p != '\r' && *p != '\n') p++;
      line_len += (size_t)(p - (msg + i));
      i = (size_t)(p - msg);
    }
    if (in_req && line_len > lim->max_request_line) {
      rc = -414;
      goto out;
    }
  }
  /* Out of bytes: either more are needed, or the limit is reached. */
  if (n > end) rc = in_req ? -414 : -431;
out:
  s->pos = i;
  s->line_len = line_len;
  s->fields = fields;
  s->cr = (uint8_t)cr;
  s->in_request_line = (uint8_t)in_req;
  s->in_name = (uint8_t)in_name;
  return rc;
}

void hr__frame_scan_init(hr__frame_scan_t *s) {
  s->cr = 0;
  s->line_start = 1;
  s->need_crlf = 0;
}

void hr__frame_scan_after_data(hr__frame_scan_t *s) {
  s->cr = 0;
  s->line_start = 0;
  s->need_crlf = 2; /* chunk-data is followed by exactly CRLF */
}

int hr__frame_scan(hr__frame_scan_t *s, const char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (s->need_crlf == 2) {
      if (c != '\r') return -400;
      s->need_crlf = 1;
      s->cr = 1;
      continue;
    }
    if (s->need_crlf == 1) s->need_crlf = 0; /* the LF, checked below */
    if (s->cr) {
      if (c != '\n') return -400;
      s->cr = 0;
      s->line_start = 1;
      continue;
    }
    if (c == '\r') {
      s->cr = 1;
    } else if (c == '\n') {
      return -400;
    } else {
      if (s->line_start && (c == ' ' || c == '\t' || c == ':')) return -400;
      s->line_start = 0;
    }
  }
  return 0;
}

const char *hr__head_scan_reason(int status) {
  switch (status) {
    case 414: return "request line longer than the limit";
    case 431: return "header section longer than the limit, or too many fields";
    default:
      return "bare CR or LF, obs-fold, empty field name or whitespace before "
             "a colon in the header section";
  }
}
