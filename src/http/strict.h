/* SPDX-License-Identifier: MIT */
/*
 * hroute's own strictness pass over the bytes llhttp will parse.
 *
 * llhttp 8.1.0 still accepts inputs that later releases reject as request
 * smuggling vectors: a bare CR as a line ending in the header section and in
 * chunk-size lines, obs-fold continuation lines, and empty field names.  These
 * scanners run over those bytes *before* llhttp sees them (the header
 * section) or over the framing bytes between body data (chunked coding), so a
 * request that breaks a rule is answered 400 before any handler runs,
 * whatever llhttp version is linked.  They also enforce the size and count
 * limits llhttp does not have.
 *
 * Rules (RFC 9112 §2.2, §5.2, §7.1): every line ends with CRLF (a bare CR or
 * a bare LF is an error); no field line starts with SP or HTAB (obs-fold) or
 * with ':' (empty field name); no whitespace between a field name and its
 * colon.
 */
#ifndef HR_HTTP_STRICT_H
#define HR_HTTP_STRICT_H

#include <stddef.h>
#include <stdint.h>

typedef struct hr__head_limits_s {
  size_t max_request_line; /* bytes, without CRLF */
  size_t max_header;       /* bytes, whole header section */
  size_t max_fields;       /* field lines */
} hr__head_limits_t;

/* Incremental scanner of one header section.  All offsets are relative to
 * the first byte of the message. */
typedef struct hr__head_scan_s {
  size_t pos;      /* bytes scanned so far */
  size_t line_len; /* bytes on the current line, CR excluded */
  size_t fields;   /* complete field lines */
  uint8_t cr;      /* last byte was CR */
  uint8_t in_request_line;
  uint8_t in_name; /* inside a field name: before its colon */
} hr__head_scan_t;

void hr__head_scan_init(hr__head_scan_t *s);

/*
 * Continues scanning `msg[s->pos .. n)`, where msg points at the message's
 * first byte and n bytes of it are available.  Returns the length of the
 * header section (through its empty line) once found; 0 when more bytes are
 * needed; or a negated status: -400 (line rule broken), -414 (request line
 * too long), -431 (section or field count over the limit).
 */
long hr__head_scan(hr__head_scan_t *s, const char *msg, size_t n,
                   const hr__head_limits_t *lim);

/* One line saying why hr__head_scan returned -status (static storage). */
const char *hr__head_scan_reason(int status);

/* Scanner for the framing bytes of a chunked body (chunk-size lines, the
 * CRLF after chunk data, trailer section). */
typedef struct hr__frame_scan_s {
  uint8_t cr;
  uint8_t line_start;
  uint8_t need_crlf; /* 2: CR expected next, 1: LF (after chunk data) */
} hr__frame_scan_t;

/* Starts at the first chunk-size line (line_start = 1). */
void hr__frame_scan_init(hr__frame_scan_t *s);

/* Marks that chunk data was just consumed: the next bytes end that data's
 * line (CRLF), so they are not at a line start. */
void hr__frame_scan_after_data(hr__frame_scan_t *s);

/* Scans n framing bytes.  Returns 0, or -400 when a rule is broken. */
int hr__frame_scan(hr__frame_scan_t *s, const char *p, size_t n);

#endif /* HR_HTTP_STRICT_H */
