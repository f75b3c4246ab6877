/* SPDX-License-Identifier: MIT */
/*
 * Trailer fields (RFC 9110 §6.5): which field names may not be sent or
 * taken in a trailer section, for both directions and both protocols.
 */
#ifndef HR_HTTP_TRAILER_H
#define HR_HTTP_TRAILER_H

#include "hroute/common.h"

/* Whether `name` (any case) names a field a trailer section must not
 * carry (RFC 9110 §6.5.1): one that frames the message or the connection,
 * routes it, modifies the request, authenticates, says how the content is
 * encoded or typed, or negotiates it -- all needed before the content, so
 * meaningless (or dangerous to merge) after it.  The list is in trailer.c
 * and in include/hroute/http.h (hr_request_trailer). */
int hr__trailer_forbidden(hr_span_t name);

#endif /* HR_HTTP_TRAILER_H */
