/* SPDX-License-Identifier: MIT */
/*
 * The built-in header delegates (one file each under src/delegate/), which
 * every router registers for the HR_TYPE_* value types at creation.  Each
 * follows the hr_delegate_t contract in include/hroute/delegate.h: format
 * into a caller's buffer (HR_ENOSPC with the needed length when short),
 * parse a span that is not NUL-terminated (HR_EPARSE on malformed input,
 * never reading outside it), no state.  A list-valued parser takes one
 * piece of memory per value from the caller's hr_mem_t, sized by counting
 * the field (hr__count_list), and only when
 * there is an item to store.
 */
#ifndef HR_DELEGATE_BUILTIN_H
#define HR_DELEGATE_BUILTIN_H

#include <stdlib.h>

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
extern const hr_delegate_t hr__delegate_forwarded;

/*
 * An upper bound on the items of a list, so that memory follows what the
 * field holds: the separators while they are at most one per 4 bytes,
 * else an exact count (empty elements, ",,,," or ";;", cost nothing).  *items counts the elements separated by `sep` that
 * hold more than whitespace; with `params` non-NULL, *params counts the
 * ";"-parameters within elements ("a/b;q=1" has one), and `sep` must not be
 * ';'.  Separators inside a quoted-string (HR__COUNT_QUOTES: backslash
 * escapes honoured; HR__COUNT_ETAGS: an opaque tag, no escapes) or inside
 * "<...>" (HR__COUNT_ANGLE) do not count.  HR__COUNT_FIRST counts the
 * element before the first separator too (off: only what follows a
 * separator, e.g. a media type's parameters with sep ';').
 */
/* A parser found more items than hr__count_list counted: a bug in the
 * count for that input.  Debug builds (the tests, the fuzz targets) stop
 * there, so the bug is found; release builds refuse the value. */
#ifdef NDEBUG
#define HR__ROOM_SHORT() HR_EPARSE
#else
#define HR__ROOM_SHORT() (abort(), HR_EPARSE)
#endif

#define HR__COUNT_FIRST 1u
#define HR__COUNT_QUOTES 2u
#define HR__COUNT_ETAGS 4u
#define HR__COUNT_ANGLE 8u
void hr__count_list(hr_span_t text, char sep, unsigned flags, size_t *items, size_t *params);

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
