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
  size_t i;
  for (i = s->pos; i < n; i++) {
    unsigned char c = (unsigned char)msg[i];
    if (i + 1 > lim->max_header) return s->in_request_line ? -414 : -431;
    if (s->cr) {
      if (c != '\n') return -400; /* bare CR */
      s->cr = 0;
      if (s->in_request_line) {
        /* Empty lines before the request line are ignored (RFC 9112 §2.2). */
        if (s->line_len != 0) s->in_request_line = 0;
      } else if (s->line_len == 0) {
        s->pos = i + 1;
        return (long)(i + 1); /* the empty line: end of the section */
      } else if (++s->fields > lim->max_fields) {
        return -431;
      }
      s->line_len = 0;
      s->in_name = 0;
      continue;
    }
    if (c == '\r') {
      s->cr = 1;
    } else if (c == '\n') {
      return -400; /* bare LF */
    } else {
      if (s->line_len == 0 && !s->in_request_line) {
        if (c == ' ' || c == '\t' || c == ':')
          return -400; /* obs-fold, or an empty field name */
        s->in_name = 1;
      }
      if (s->in_name) {
        if (c == ':')
          s->in_name = 0;
        else if (c == ' ' || c == '\t')
          return -400; /* whitespace before the colon (RFC 9112 §5.1) */
      }
      s->line_len++;
      if (s->in_request_line && s->line_len > lim->max_request_line)
        return -414;
    }
  }
  s->pos = n;
  return 0;
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
