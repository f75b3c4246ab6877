/* SPDX-License-Identifier: MIT */
/*
 * The built-in header delegates (one file each under src/delegate/), which
 * every router registers for the HR_TYPE_* value types at creation.  Each
 * follows the hr_delegate_t contract in include/hroute/delegate.h: format
 * into a caller's buffer (HR_ENOSPC with the needed length when short),
 * parse a span that is not NUL-terminated (HR_EPARSE on malformed input,
 * never reading outside it), no allocation, no state.
 */
#ifndef HR_DELEGATE_BUILTIN_H
#define HR_DELEGATE_BUILTIN_H

#include "hroute/delegate.h"
#include "hroute/error.h"

extern const hr_delegate_t hr__delegate_int64;
extern const hr_delegate_t hr__delegate_uint64;
extern const hr_delegate_t hr__delegate_date;
extern const hr_delegate_t hr__delegate_media_type;
extern const hr_delegate_t hr__delegate_media_ranges;
extern const hr_delegate_t hr__delegate_etag;
extern const hr_delegate_t hr__delegate_etag_list;
extern const hr_delegate_t hr__delegate_cache_control;
extern const hr_delegate_t hr__delegate_set_cookie;
extern const hr_delegate_t hr__delegate_cookies;
extern const hr_delegate_t hr__delegate_link;

/* Compares two entity tags (RFC 9110 §8.8.3.2): the strong comparison when
 * `weak` is 0 (both strong, same opaque tag), else the weak one (same
 * opaque tag).  Returns 1 on a match. */
int hr__etag_match(const hr_etag_t *a, const hr_etag_t *b, int weak);

#endif /* HR_DELEGATE_BUILTIN_H */
