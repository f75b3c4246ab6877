/* SPDX-License-Identifier: MIT */
/** @file
 * application/x-www-form-urlencoded: the encoding of HTML forms and of
 * query strings (WHATWG URL Standard §5, "application/x-www-form-urlencoded
 * parsing").  Pairs are separated by '&'; a pair is "key=value", or "key"
 * alone for an empty value; '+' stands for a space and "%XX" for the byte
 * it encodes.  These two calls work on any span; the request accessors in
 * http.h (hr_request_query_*, hr_request_form_*) use them on the query and
 * on a buffered body.
 */
#ifndef HROUTE_FORM_H
#define HROUTE_FORM_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One pair, as spans: raw (from hr_form_next) or decoded (from the request
 * accessors). */
typedef struct hr_form_pair_s {
  hr_span_t key;   /**< the part before the first '=' */
  hr_span_t value; /**< the part after it; empty when there is no '=' */
} hr_form_pair_t;

/**
 * Splits the next pair off the front of *rest, raw (not decoded): the key
 * up to the first '=' of the pair, the value after it (empty when there is
 * none).  Empty pairs ("a=1&&b=2", a leading or trailing '&') are skipped.
 * Returns 1 with *pair set and *rest advanced past it, or 0 when *rest
 * holds no more pairs.  The spans point into the input.  Any thread.
 */
HR_EXTERN int hr_form_next(hr_span_t *rest, hr_form_pair_t *pair);

/**
 * Decodes one raw key or value: '+' becomes a space, "%XX" (hex digits in
 * either case) the byte it encodes; other bytes are copied.  `out` needs
 * in.len bytes (the result is never longer); *outlen gets the length.
 * Returns 0, or HR_EPARSE for a '\%' not followed by two hex digits (out is
 * then undefined).  "%00" decodes to a NUL byte, which callers that use C
 * strings should refuse.  Any thread.
 */
HR_EXTERN int hr_form_decode(hr_span_t in, char *out, size_t *outlen);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_FORM_H */
