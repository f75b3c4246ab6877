/* SPDX-License-Identifier: MIT */
/*
 * Path helpers for the router (see path.c).  Output buffers must hold at
 * least as many bytes as the input (decoding and cleaning never grow it,
 * except that cleaning may add the leading '/').
 */
#ifndef HR_ROUTER_PATH_H
#define HR_ROUTER_PATH_H

#include <stddef.h>

#include "hroute/common.h"

/* Splits a request target into path and query (query empty when none) and,
 * for absolute-form, the authority (host and port; else empty).  "*" gives
 * the path "*".  Returns 0, or -1 when the target is neither origin-form,
 * absolute-form nor "*". */
int hr__target_split(hr_span_t target, hr_span_t *path, hr_span_t *query,
                     hr_span_t *authority);

/* Decodes %XX escapes except %2F %3F %23 %25, which are copied as they
 * are.  Returns 0, or -1 for a malformed escape or %00. */
int hr__path_decode(hr_span_t in, char *out, size_t *outlen);

/* 1 when every '%' starts a valid escape other than %00, else 0. */
int hr__path_escapes_ok(hr_span_t in);

/* Decodes every %XX escape.  Returns 0, or -1 as above. */
int hr__param_decode(hr_span_t in, char *out, size_t *outlen);

/* 1 when the path starts with '/' and has no dot segment ("." "..", also
 * as %2e) and no empty segment except a trailing one; else 0. */
int hr__path_is_clean(hr_span_t path);

/* remove_dot_segments (RFC 3986 §5.2.4) plus collapsing empty segments,
 * on the encoded path; `out` needs path.len + 1 bytes.  Returns 0, or -1
 * when ".." would go above the root. */
int hr__path_clean(hr_span_t path, char *out, size_t *outlen);

/* Whether a segment of `path` holds a ".." between %2F escapes ("..%2Fx",
 * "x%2F..", also with %2E): a parameter value that decodes to climb out
 * of a directory, which the match refuses with 400.  A redirect to such a
 * path would only lead to that 400, so the router answers it at once. */
int hr__path_hides_dot_dot(hr_span_t path);

#endif /* HR_ROUTER_PATH_H */
