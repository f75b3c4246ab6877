/* SPDX-License-Identifier: MIT */
/*
 * The built-in header delegates (one file each under src/delegate/), which
 * every router registers for the HR_TYPE_* value types at creation.  Each
 * follows the hr_delegate_t contract in include/hroute/delegate.h: format
 * into a caller's buffer (HR_ENOSPC with the needed length when short),
 * parse a span that is not NUL-terminated (HR_EPARSE on malformed input,
 * never reading outside it), no state.  A list-valued parser takes one
 * piece of memory per value from the caller's hr_mem_t, sized by counting
 * the separators in the field (an upper bound on its items), and only when
 * there is an item to store.
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

/* How many bytes of `text` equal `c`. */
size_t hr__count_byte(hr_span_t text, char c);

/* Takes one piece of `mem` for n1 items of s1 bytes followed (8-byte
 * aligned) by n2 items of s2 bytes (p2 may be NULL with n2 0).  *p1 and *p2
 * are NULL for zero items; nothing is asked for when both are zero.
 * Returns 0 or HR_ENOMEM (mem NULL, no memory, a size that overflows). */
int hr__mem_items(const hr_mem_t *mem, size_t n1, size_t s1, void **p1, size_t n2,
                  size_t s2, void **p2);

/* Compares two entity tags (RFC 9110 §8.8.3.2): the strong comparison when
 * `weak` is 0 (both strong, same opaque tag), else the weak one (same
 * opaque tag).  Returns 1 on a match. */
int hr__etag_match(const hr_etag_t *a, const hr_etag_t *b, int weak);

#endif /* HR_DELEGATE_BUILTIN_H */
