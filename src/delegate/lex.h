/* SPDX-License-Identifier: MIT */
/*
 * Lexing and writing of the field-value syntax the built-in header delegates
 * share (RFC 9110 §5.6): tokens, optional whitespace, quoted-strings,
 * parameters and comma-separated lists on the reading side, and a bounded
 * writer that keeps counting past the end of the caller's buffer (so a
 * format function learns the exact length it needs in the same pass) on the
 * writing side.  Nothing here allocates or keeps state between calls; a
 * lexer never reads outside the span it was given.
 */
#ifndef HR_DELEGATE_LEX_H
#define HR_DELEGATE_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "hroute/delegate.h"
#include "hroute/error.h"
#include "util/text.h"

/* ---- character classes (RFC 9110 §5.6.2, §5.6.4; RFC 5234 B.1) ---------- */

/* tchar and tokens: hr__is_tchar() and hr__is_token() in util/text.h. */

/* qdtext: HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text. */
int hr__is_qdtext(unsigned char c);

/* What may follow a backslash in a quoted-pair: HTAB / SP / VCHAR /
 * obs-text. */
int hr__is_qpchar(unsigned char c);

/* ---- reading ------------------------------------------------------------ */

/* A cursor over [p, end). */
typedef struct hr__lex_s {
  const char *p;
  const char *end;
} hr__lex_t;

void hr__lex_init(hr__lex_t *lx, hr_span_t text);

/* The next byte, or -1 at the end. */
int hr__lex_peek(const hr__lex_t *lx);

/* Consumes `c` when it is next: returns 1, else 0. */
int hr__lex_eat(hr__lex_t *lx, char c);

/* Skips OWS (SP / HTAB). */
void hr__lex_ows(hr__lex_t *lx);

/* Reads 1*tchar into *out.  Returns 0 or HR_EPARSE (no tchar next). */
int hr__lex_token(hr__lex_t *lx, hr_span_t *out);

/* Reads a quoted-string; *out gets its contents without the quotes, escapes
 * kept.  Returns 0 or HR_EPARSE (no DQUOTE next, a byte that is neither
 * qdtext nor a valid quoted-pair, no closing DQUOTE). */
int hr__lex_quoted(hr__lex_t *lx, hr_span_t *out);

/* Flags for hr__lex_param. */
#define HR__PARAM_BWS 1u     /* whitespace allowed around "=" (RFC 8288) */
#define HR__PARAM_NOVALUE 2u /* "name" alone allowed: empty unquoted value */
#define HR__PARAM_EMPTY 4u   /* empty parameters (";;") allowed */

/*
 * Reads the next `OWS ";" OWS parameter` (RFC 9110 §5.6.6), where parameter
 * is token "=" ( token / quoted-string ).  Returns 1 with *out filled, 0 when
 * no ";" follows (the cursor is then where it was, before any OWS), or
 * HR_EPARSE.  With HR__PARAM_EMPTY, empty parameters are skipped.
 */
int hr__lex_param(hr__lex_t *lx, hr_mparam_t *out, unsigned flags);

/*
 * List elements (RFC 9110 §5.6.1.2: a recipient accepts empty elements and
 * OWS around commas):
 *   while (hr__lex_list_next(&lx)) { read one element;
 *     if (hr__lex_list_after(&lx) != 0) return HR_EPARSE; }
 * hr__lex_list_next skips OWS and empty elements and returns 1 when an
 * element starts at the cursor, 0 at the end.  hr__lex_list_after skips OWS
 * and then needs the end or a comma (consumed): returns 0 or HR_EPARSE.
 */
int hr__lex_list_next(hr__lex_t *lx);
int hr__lex_list_after(hr__lex_t *lx);

/* Reads 1*DIGIT as an unsigned number; a value above `max` makes *out
 * `max` and sets *clamped (it may be NULL, and then that is HR_EPARSE).
 * Returns 0 or HR_EPARSE. */
int hr__lex_digits(hr__lex_t *lx, uint64_t max, uint64_t *out, int *clamped);

/* ---- writing ------------------------------------------------------------ */

/* A text writer: writes into buf[0..cap) while there is room and counts
 * every byte. */
typedef struct hr__tw_s {
  char *buf;
  size_t cap;
  size_t len; /* bytes written or that would have been */
} hr__tw_t;

void hr__tw_init(hr__tw_t *o, char *buf, size_t cap);
void hr__tw_bytes(hr__tw_t *o, const char *p, size_t n);
void hr__tw_span(hr__tw_t *o, hr_span_t s);
void hr__tw_cstr(hr__tw_t *o, const char *s);
void hr__tw_char(hr__tw_t *o, char c);
void hr__tw_u64(hr__tw_t *o, uint64_t v);

/* Writes a token: returns 0 or HR_EINVAL when `s` is not one. */
int hr__tw_token(hr__tw_t *o, hr_span_t s);

/* Writes `s` as a quoted-string.  With `escaped` set, `s` already holds
 * quoted-string contents (qdtext and quoted-pairs: a parsed value) and is
 * checked and copied; otherwise DQUOTE and backslash are escaped.  Returns 0
 * or HR_EINVAL (a byte no quoted-string can carry, a malformed escape). */
int hr__tw_quoted(hr__tw_t *o, hr_span_t s, int escaped);

/* Writes name "=" value: the value as a token when it is one and not marked
 * quoted, else as a quoted-string.  With HR__PARAM_NOVALUE an empty unquoted
 * value writes the name alone.  Returns 0 or HR_EINVAL. */
int hr__tw_param(hr__tw_t *o, const hr_mparam_t *p, unsigned flags);

/* Ends a format call: 0 with *len the bytes written, or HR_ENOSPC with *len
 * the bytes needed. */
int hr__tw_finish(const hr__tw_t *o, size_t *len);

/* ---- shared by the ETag delegates and the conditional-request code ------- */


#endif /* HR_DELEGATE_LEX_H */
