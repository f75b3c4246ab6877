/* SPDX-License-Identifier: MIT */
/** @file
 * Typed header values: value types, header delegates that format and parse
 * them, and the lookup that finds a type's delegate.
 *
 * A value type has a small id (never reused within a router), a name, at
 * most one parent and an ordered list of interfaces.  Looking up the
 * delegate of a type checks, in this fixed order: the type itself, its
 * interfaces depth-first in declared order (each interface's own interfaces
 * before the next one, then the interface's parent chain), then its parent,
 * which is looked up the same way, and so on up.  The first delegate found
 * answers; a type with none may carry a to-text function used as a
 * fallback for formatting; otherwise the answer is HR_ENODELEGATE.
 *
 * Every lookup, including the many that find nothing, is answered from a
 * per-type cache without locks and without allocating.  The cache is bounded
 * by construction (one entry per registered type) and stays correct when
 * delegates are registered later, on the type or anywhere it can reach: a
 * registry generation, bumped before and after each registration is
 * published, tags each entry, and a stale entry is walked again (during a
 * registration, lookups walk).  No reader reverts to an older answer once
 * it has seen a newer one (tests/model/cache.pml checks this with spin).
 *
 * The registry belongs to a router: two routers never see each other's
 * types, and freeing a router frees everything it cached.
 *
 * Threads: registration from any thread, serialised; lookups, formatting
 * and parsing from any thread, concurrently with registration.
 */
#ifndef HROUTE_DELEGATE_H
#define HROUTE_DELEGATE_H

#include <stdint.h>
#include <time.h>

#include "common.h"
#include "router.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A value type id: 1.. for registered types; 0 means "none". */
typedef uint32_t hr_type_id_t;

/** Most types one router can register (built-in types included). */
#define HR_MAX_TYPES 4096
/** Most interfaces one type may declare. */
#define HR_MAX_INTERFACES 8

/**
 * Memory a parser takes for the items of a list-valued type (the ranges of
 * an Accept field, the pairs of a Cookie field, a media type's
 * parameters): alloc(ctx, size) returns `size` bytes aligned to at least 8
 * (enough for every built-in type), or NULL when there is none.  The
 * memory must outlive the parsed value; the parser never frees it.  In a
 * handler, hr_request_typed() passes the request's arena; elsewhere, an
 * hr_mem_buffer_t serves a caller-sized buffer.
 */
typedef struct hr_mem_s {
  /** Returns `size` bytes aligned to at least 8, or NULL. */
  void *(*alloc)(void *ctx, size_t size);
  /** Passed to alloc unchanged. */
  void *ctx;
} hr_mem_t;

/**
 * A header delegate for one value type.
 *   format  writes `value` as a field value into buf[0..cap): returns 0 with
 *           *len the bytes written, or HR_ENOSPC with *len the bytes needed
 *           (nothing useful in buf then).  Other errors: HR_EINVAL (a value
 *           that cannot be written, e.g. a cookie name that is not a token).
 *   parse   reads the field value `text` (not NUL-terminated) into `value`:
 *           returns 0, HR_EPARSE for malformed input (it never reads
 *           outside `text`), or HR_ENOMEM when `mem` (which may be NULL:
 *           no memory at all) could not give the room a list needs.
 *           Pointers it stores into `value` point into `text` or into
 *           memory from `mem`, unless the type says otherwise.
 * Either may be NULL (format-only or parse-only delegates).  `udata` is
 * passed back unchanged.  Both may run on any thread, concurrently.
 */
typedef struct hr_delegate_s {
  /** Writes a value as a field value (see above); NULL: parse only. */
  int (*format)(const void *value, char *buf, size_t cap, size_t *len,
                void *udata);
  /** Reads a field value into a value (see above); NULL: format only. */
  int (*parse)(hr_span_t text, void *value, const hr_mem_t *mem, void *udata);
  /** Passed to format and parse unchanged. */
  void *udata;
} hr_delegate_t;

/** Fallback formatting for a type without a delegate; same contract as
 * hr_delegate_t.format. */
typedef int (*hr_to_text_cb)(const void *value, char *buf, size_t cap,
                             size_t *len);

/**
 * Registers a value type.  `name` is copied; `value_size` is the size in
 * bytes of the C object a value of this type is (0 when values are never
 * stored by hroute: such a type cannot type a path parameter); `parent` is
 * 0 or a registered type; `interfaces` lists up to HR_MAX_INTERFACES
 * registered types (may be NULL with ninterfaces 0); `to_text` may be NULL.
 * Stores the new id in *out.  Returns 0, HR_EINVAL (unknown parent or
 * interface, too many interfaces, empty name), HR_ETOOLARGE (HR_MAX_TYPES
 * reached), HR_ENOMEM.
 */
HR_EXTERN int hr_type_register(hr_router_t *router, const char *name,
                               size_t value_size, hr_type_id_t parent,
                               const hr_type_id_t *interfaces,
                               size_t ninterfaces, hr_to_text_cb to_text,
                               hr_type_id_t *out);

/** The name of a type (valid while the router lives), or an empty span for
 * an unknown id. */
HR_EXTERN hr_span_t hr_type_name(hr_router_t *router, hr_type_id_t type);

/**
 * Registers `delegate` (copied) for `type`, replacing none: a type has at
 * most one delegate (HR_EEXIST otherwise).  Takes effect for every type that
 * can reach `type`, for every later lookup.  Returns 0, HR_EINVAL (unknown
 * type, no callback), HR_EEXIST, HR_ENOMEM.
 */
HR_EXTERN int hr_delegate_register(hr_router_t *router, hr_type_id_t type,
                                   const hr_delegate_t *delegate);

/** What a lookup found. */
typedef struct hr_lookup_s {
  const hr_delegate_t *delegate; /**< the delegate, or NULL */
  hr_type_id_t from;             /**< the type it is registered on */
  hr_to_text_cb to_text;         /**< with delegate NULL: the fallback */
} hr_lookup_t;

/**
 * Finds the delegate for `type` (see the lookup order above), without locks
 * or allocation.  Returns 0 with out->delegate set; HR_ENODELEGATE when no
 * delegate is reachable (out->to_text is the type's fallback or NULL); or
 * HR_EINVAL for an unknown id (never cached).  The delegate stays valid
 * while the router lives.
 */
HR_EXTERN int hr_delegate_lookup(hr_router_t *router, hr_type_id_t type,
                                 hr_lookup_t *out);

/** Formats `value` of `type` into buf[0..cap) through its delegate (or the
 * fallback).  Returns as hr_delegate_t.format, or HR_ENODELEGATE /
 * HR_EINVAL as hr_delegate_lookup. */
HR_EXTERN int hr_value_format(hr_router_t *router, hr_type_id_t type,
                              const void *value, char *buf, size_t cap,
                              size_t *len);

/** Parses `text` into `value` of `type` through its delegate, taking any
 * memory its lists need from `mem` (NULL: none; enough for types without
 * lists).  Returns 0, HR_EPARSE, HR_ENOMEM (as hr_delegate_t.parse),
 * HR_ENODELEGATE (no delegate, or one without parse), HR_EINVAL. */
HR_EXTERN int hr_value_parse(hr_router_t *router, hr_type_id_t type,
                             hr_span_t text, void *value, const hr_mem_t *mem);

/**
 * A bump allocator over caller storage, for parsing outside a request.
 * After hr_mem_buffer_init(&b, buf, cap), b.mem hands out 8-byte-aligned
 * pieces of buf[0..cap) (a buf that is not 8-byte aligned loses its first
 * bytes up to the next such address; NULL with cap 0 is allowed).
 * b.need counts every byte asked for, including requests that did not fit:
 * when a parse returns HR_ENOMEM, a buffer of b.need bytes is what that
 * parse asked for (the built-in types ask once per value, so it is enough;
 * hr_mem_buffer_init again before retrying).  Nothing is freed: reuse the
 * buffer once the values are no longer used.  Not thread-safe.
 */
typedef struct hr_mem_buffer_s {
  hr_mem_t mem; /**< what to pass to a parser; its ctx is the buffer itself */
  char *buf;    /**< the storage from its first 8-byte-aligned byte, or NULL */
  size_t cap;   /**< bytes of buf */
  size_t used; /**< bytes handed out, padding included */
  size_t need; /**< bytes asked for, padding included */
} hr_mem_buffer_t;

/** Sets `b` up over buf[0..cap) with nothing handed out (used and need 0);
 * `buf` stays the caller's and must outlive the values parsed with b.mem.
 * Also resets a buffer for reuse.  Any thread, for a `b` of its own. */
HR_EXTERN void hr_mem_buffer_init(hr_mem_buffer_t *b, void *buf, size_t cap);

/** Lookup counters, summed over threads. */
typedef struct hr_delegate_stats_s {
  uint64_t walks;  /**< lookups that walked the type graph */
  uint64_t hits;   /**< answered from the cache with a delegate */
  uint64_t misses; /**< answered from the cache with "no delegate" */
} hr_delegate_stats_t;

/** Fills *out.  Any thread. */
HR_EXTERN void hr_delegate_stats(hr_router_t *router, hr_delegate_stats_t *out);

/* ---- built-in types (registered in every router, in this order) --------- */

/** The ids of the built-in value types, each with the C type its values
 * are; every router registers them first, so they are the same in all. */
enum {
  HR_TYPE_INT64 = 1,      /**< int64_t (RFC 9110 §5.6 decimal) */
  HR_TYPE_UINT64,         /**< uint64_t */
  HR_TYPE_DATE,           /**< hr_date_t: HTTP-date (RFC 9110 §5.6.7) */
  HR_TYPE_MEDIA_TYPE,     /**< hr_media_type_t (RFC 9110 §8.3.1) */
  HR_TYPE_MEDIA_RANGES,   /**< hr_media_ranges_t: Accept (RFC 9110 §12.5.1) */
  HR_TYPE_ETAG,           /**< hr_etag_t (RFC 9110 §8.8.3) */
  HR_TYPE_ETAG_LIST,      /**< hr_etag_list_t: If-Match / If-None-Match */
  HR_TYPE_CACHE_CONTROL,  /**< hr_cache_control_t (RFC 9111 §5.2) */
  HR_TYPE_SET_COOKIE,     /**< hr_set_cookie_t (RFC 6265 §4.1) */
  HR_TYPE_COOKIES,        /**< hr_cookies_t: Cookie (RFC 6265 §4.2) */
  HR_TYPE_LINK,           /**< hr_links_t: Link (RFC 8288 §3) */
  HR_TYPE_FORWARDED,      /**< hr_forwarded_t: Forwarded (RFC 7239 §4) */
  HR__TYPE_BUILTIN_END    /**< not a type: the first id hr_type_register gives */
};

/** Seconds since the Unix epoch, UTC.  Written as IMF-fixdate; read from
 * IMF-fixdate and the obsolete RFC 850 and asctime forms. */
typedef struct hr_date_s {
  int64_t seconds; /**< since 1970-01-01T00:00:00Z, leap seconds not counted */
} hr_date_t;

/* List-valued types keep their items in arrays the parser takes from an
 * hr_mem_t, sized to the field: there is no fixed cap on items (a Cookie
 * field with 100 cookies parses), only the server's field-size limit.  The
 * built-in parsers take one piece of memory per value, sized by counting
 * the field's separators.  To format a value, point the arrays at your own
 * storage.  What each parser ignores by design (accept-ext parameters after
 * q, a field-name list on no-cache/private, unknown cookie attributes) is
 * stated in its source file. */

/** A name=value parameter.  Names are as written (compare them with
 * hr_span_eq_nocase); a quoted value is given without its quotes, with any
 * backslash escapes still in it, and `quoted` set.  Formatting quotes a
 * value when it is not a token (or when `quoted` is set). */
typedef struct hr_mparam_s {
  hr_span_t name;  /**< the parameter name, as written */
  hr_span_t value; /**< its value, without quotes; empty for a bare name */
  int quoted;      /**< 1: the value was (or is to be written as) a quoted-string */
} hr_mparam_t;

/** type/subtype;param=value... */
typedef struct hr_media_type_s {
  hr_span_t type;    /**< "text" ("*" in a range) */
  hr_span_t subtype; /**< "html" ("*" in a range) */
  size_t nparams;    /**< parameters in params */
  hr_mparam_t *params; /**< nparams items */
} hr_media_type_t;

/** One media range with its weight: q in thousandths (0..1000). */
typedef struct hr_media_range_s {
  hr_media_type_t media; /**< parameters exclude q */
  int q;                 /**< the weight, 0..1000; 1000 when q is not given */
} hr_media_range_t;

/** An Accept field value (RFC 9110 §12.5.1): its media ranges in field
 * order; none for an empty field. */
typedef struct hr_media_ranges_s {
  size_t n;                 /**< ranges in ranges */
  hr_media_range_t *ranges; /**< n items */
} hr_media_ranges_t;

/**
 * Picks the best of `offers` (n media types the handler can produce, in its
 * order of preference) for the Accept value in `ranges` (RFC 9110 §12.5.1:
 * the most specific matching range gives an offer its weight; q=0 excludes
 * it; ties go to the earlier offer).  A range's parameters match the
 * offer's of the same name (value compared case-insensitively); one the
 * offer lacks does not exclude it ("application/json; charset=utf-8"
 * accepts application/json), but ranks below a range without it.  Returns the index of the offer, or -1
 * when none is acceptable.  An empty `ranges` (no Accept field) accepts the
 * first offer.
 */
HR_EXTERN int hr_media_negotiate(const hr_media_ranges_t *ranges,
                                 const hr_media_type_t *offers, size_t n);

/** An entity tag: the opaque value without quotes. */
typedef struct hr_etag_s {
  hr_span_t tag; /**< the opaque-tag's characters, between the quotes */
  int weak; /**< W/ */
} hr_etag_t;

/** If-Match / If-None-Match: "*" or a list of tags. */
typedef struct hr_etag_list_s {
  int any; /**< "*" */
  size_t n;        /**< tags in tags (0 with any) */
  hr_etag_t *tags; /**< n items */
} hr_etag_list_t;

/** Cache-Control directives; -1 means absent for the numeric ones (seconds;
 * values above 2^31 read as 2^31, RFC 9111 §1.2.2), and a bare max-stale
 * (any staleness) reads as INT64_MAX and is written back bare. */
typedef struct hr_cache_control_s {
  /** max-age, s-maxage, max-stale and min-fresh, in seconds; -1: absent @{ */
  int64_t max_age, s_maxage, max_stale, min_fresh;
  /** @} */
  /** The directives without a value, by name (is_public: "public",
   * is_private: "private"): 1 when present @{ */
  unsigned no_cache : 1, no_store : 1, no_transform : 1, only_if_cached : 1,
      must_revalidate : 1, proxy_revalidate : 1, must_understand : 1,
      is_public : 1, is_private : 1, immutable : 1;
  /** @} */
  /** Directives not listed above, as written (name, value). */
  size_t n_ext;
  hr_mparam_t *ext; /**< n_ext items */
} hr_cache_control_t;

/** A Set-Cookie's SameSite attribute (from RFC 6265bis; RFC 6265 has none). */
typedef enum hr_same_site_e {
  HR_SAME_SITE_NONE_SET = 0, HR_SAME_SITE_STRICT, HR_SAME_SITE_LAX,
  HR_SAME_SITE_NONE
} hr_same_site_t;
/** @var HR_SAME_SITE_NONE_SET
 * No SameSite attribute (or one with a value not listed here, when
 * parsing). */
/** @var HR_SAME_SITE_STRICT
 * SameSite=Strict. */
/** @var HR_SAME_SITE_LAX
 * SameSite=Lax. */
/** @var HR_SAME_SITE_NONE
 * SameSite=None (browsers want Secure with it). */

/** Set-Cookie (RFC 6265 §4.1).  expires < 0 and max_age < 0: absent. */
typedef struct hr_set_cookie_s {
  /** The cookie's name (a token) and value @{ */
  hr_span_t name, value;
  /** @} */
  int64_t expires; /**< seconds since the epoch */
  int64_t max_age; /**< seconds */
  /** The Domain attribute (a leading '.' dropped) and the Path attribute
   * (one that does not start with '/' dropped); empty when absent @{ */
  hr_span_t domain, path;
  /** @} */
  /** The Secure and HttpOnly attributes: 1 when present @{ */
  unsigned secure : 1, http_only : 1;
  /** @} */
  hr_same_site_t same_site; /**< the SameSite attribute */
} hr_set_cookie_t;

/** One name=value pair of a Cookie field: the value without the one pair
 * of DQUOTEs that may wrap it (sid="a b" reads as a b). */
typedef struct hr_cookie_s {
  /** The cookie's name and value @{ */
  hr_span_t name, value;
  /** @} */
} hr_cookie_t;

/** Cookie: name=value pairs (RFC 6265 §4.2), in field order; a name may
 * appear more than once (look it up with hr_cookies_get).  A pair that
 * cannot be read (no "=", a name that is not a token such as "cart[1]", a
 * control byte in the value) is left out and counted, as RFC 6265 §5.2
 * drops such a cookie, so that the others stay readable; a field without
 * one readable pair is HR_EPARSE. */
typedef struct hr_cookies_s {
  size_t n;           /**< pairs in pairs */
  hr_cookie_t *pairs; /**< n items */
  size_t dropped;     /**< pairs left out (parsing only; ignored by format) */
} hr_cookies_t;

/** The value of the first cookie named `name` (exact, case-sensitive
 * comparison: RFC 6265 §5.4), or an empty span with ptr NULL when there is
 * none.  Any thread. */
HR_EXTERN hr_span_t hr_cookies_get(const hr_cookies_t *cookies, hr_span_t name);

/** Link: `<target>; rel="..."`; other params (RFC 8288 §3). */
typedef struct hr_link_s {
  hr_span_t target; /**< URI-Reference, without the angle brackets */
  size_t nparams;   /**< rel, title, type, ... as hr_mparam_t */
  hr_mparam_t *params; /**< nparams items */
} hr_link_t;

/** A Link field value (RFC 8288 §3): its links in field order. */
typedef struct hr_links_s {
  size_t n;         /**< links in links */
  hr_link_t *links; /**< n items */
} hr_links_t;

/** One element of Forwarded (RFC 7239 §4): what one proxy said about the
 * hop it received.  Values as written, without quotes (escapes kept);
 * empty when the parameter is absent.  A node (§6) is an IPv4 address, a
 * bracketed IPv6 address, "unknown" or an obfuscated "_name", each with
 * an optional ":port". */
typedef struct hr_forwarded_elem_s {
  hr_span_t node_for; /**< for= */
  hr_span_t node_by;  /**< by= */
  hr_span_t host;     /**< host= */
  hr_span_t proto;    /**< proto= */
  /** Bit 0 for, 1 by, 2 host, 3 proto: the value was a quoted-string, and
   * its escapes are kept as written (writing copies it as such); clear:
   * plain text (writing escapes what needs it). */
  unsigned quoted;
} hr_forwarded_elem_t;

/** Forwarded: the elements in order, the farthest hop (the client's) first.
 * Extension parameters are skipped; one that occurs twice in an element is
 * HR_EPARSE (§4). */
typedef struct hr_forwarded_s {
  size_t n;                   /**< elements in elems */
  hr_forwarded_elem_t *elems; /**< n items */
} hr_forwarded_t;

/* ---- using typed values in requests and responses ------------------------ */

/**
 * Appends a field line whose value the delegate of `type` writes straight
 * into the response's field buffer (no allocation in steady state).  Must be
 * called before the response starts.  Returns 0, HR_EINVAL (bad name,
 * reserved name, a value the delegate refuses), HR_ENODELEGATE, HR_ESTATE,
 * HR_ENOMEM, HR_ECLOSED (the connection is gone or the response was
 * abandoned), HR_ETHREAD (not the loop thread: nothing was done).  Loop
 * thread.
 */
HR_EXTERN int hr_response_add_typed(hr_response_t *res, hr_span_t name,
                                    hr_type_id_t type, const void *value);

/** An hr_mem_t over the request's arena (hr_request_alloc): what
 * hr_request_typed() parses with, for hr_value_parse() on other text in a
 * handler.  The memory lives as long as the request.  Loop thread. */
HR_EXTERN hr_mem_t hr_request_mem(hr_request_t *req);

/**
 * Reads field `name` of the request as a value of `type` (the first line
 * with that name; list-valued types read every line with that name,
 * combined as RFC 9110 §5.3 allows).  Spans and item arrays in `value`
 * point into the request and its arena and live as long as it.  Returns 0,
 * HR_ENOTFOUND (no such field), HR_EPARSE (malformed: the handler decides;
 * typically 400), HR_ENOMEM, HR_ENODELEGATE, HR_EINVAL.  Loop thread.
 */
HR_EXTERN int hr_request_typed(const hr_request_t *req, hr_span_t name,
                               hr_type_id_t type, void *value);

/**
 * Conditional requests on an existing resource, in the order of RFC 9110
 * §13.2.2, for the resource's current `etag` (may be NULL) and
 * `last_modified` (seconds; < 0: unknown):
 *   1. If-Match: unless it is "*" or one of its tags matches `etag` (strong
 *      comparison, §13.1.1), 412 Precondition Failed;
 *   2. without If-Match, If-Unmodified-Since: when the resource changed
 *      after that date (§13.1.4), 412;
 *   3. If-None-Match: when it is "*" or matches `etag` (weak comparison,
 *      §13.1.2), 304 Not Modified for GET and HEAD, 412 for other methods;
 *   4. without If-None-Match, for GET and HEAD, If-Modified-Since: when the
 *      resource did not change after that date (§13.1.3), 304.
 * A 304 carries ETag and Last-Modified (§15.4.5).  On a response the
 * server may compress, the 200 says "Vary: Accept-Encoding" and a weak
 * ETag, and §15.4.5 wants the 304 to say the same: ask
 * hr_response_coding() first (the 200's status, length and type), add
 * that Vary when it answers 1 and pass the tag with `weak` set when it
 * names a coding (the static module does).  When one of these
 * answers is sent, returns 1 (the response is complete); otherwise returns
 * 0 and the handler goes on (and sends the full response, or performs the
 * change).  Malformed conditional fields are ignored, as §13.1 requires,
 * except a malformed If-Match, which fails closed with 412 rather than let
 * the change through.  Returns a negative error code when the answer could not be sent.  Loop
 * thread.
 */
HR_EXTERN int hr_response_not_modified(hr_request_t *req, hr_response_t *res,
                                       const hr_etag_t *etag,
                                       int64_t last_modified);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_DELEGATE_H */
