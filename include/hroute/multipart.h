/* SPDX-License-Identifier: MIT */
/** @file
 * multipart/form-data (RFC 7578, on RFC 2046 §5.1's multipart syntax) as a
 * streaming parser: fed the body in pieces as they arrive (for example
 * from hr_request_read_body), it reports each part's headers (name,
 * filename, Content-Type), then its data in pieces, then its end -- never
 * holding the body, only one part's header section (at most
 * max_header_bytes) and a boundary's length of data.
 */
#ifndef HROUTE_MULTIPART_H
#define HROUTE_MULTIPART_H

#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest boundary RFC 2046 §5.1.1 allows. */
#define HR_MULTIPART_BOUNDARY_MAX 70

/** A part's header section, as far as form-data uses it.  Spans point into
 * the parser's header buffer: valid during on_part only. */
typedef struct hr_multipart_part_s {
  hr_span_t name;         /**< Content-Disposition's name (required) */
  hr_span_t filename;     /**< its filename, empty when none */
  hr_span_t content_type; /**< the part's Content-Type, empty when none
                             (text/plain then, RFC 7578 §4.4) */
  size_t index;           /**< 0 for the first part */
} hr_multipart_part_t;

/** What the parser calls.  A non-zero return from any of them stops the
 * parse: hr_multipart_feed returns it. */
typedef struct hr_multipart_cbs_s {
  /** A part's header section was read; `part` describes it.  May be NULL. */
  int (*on_part)(void *udata, const hr_multipart_part_t *part);
  int (*on_data)(void *udata, hr_span_t data); /**< valid during the call */
  /** The part's data ended (its closing delimiter was seen).  May be NULL. */
  int (*on_part_end)(void *udata);
} hr_multipart_cbs_t;

/** Limits; 0 means the default in brackets. */
typedef struct hr_multipart_limits_s {
  size_t max_parts;        /**< [100] more parts: HR_ETOOLARGE */
  size_t max_header_bytes; /**< [8192] a longer part header section (with its
                              final empty line): HR_ETOOLARGE */
  uint64_t max_part_bytes; /**< [no limit] more data in one part: HR_ETOOLARGE */
} hr_multipart_limits_t;

/** The parser's state: caller-owned, about 8.3 KB with the default header
 * buffer; initialise with hr_multipart_init. */
typedef struct hr_multipart_s {
  hr_multipart_cbs_t cbs;       /**< the callbacks, copied */
  void *udata;                  /**< passed to every callback */
  hr_multipart_limits_t limits; /**< the limits, defaults filled in */
  char delim[HR_MULTIPART_BOUNDARY_MAX + 4]; /**< "\r\n--" boundary */
  size_t dlen;                  /**< bytes of delim: 4 plus the boundary's */
  int state;                    /**< where in the body the parser is */
  int err;                      /**< the first error, 0 until one */
  size_t matched;   /**< bytes of delim matched at the end of what was fed */
  size_t nparts;                /**< parts whose header section was read */
  uint64_t part_bytes;          /**< data bytes of the current part so far */
  char *head;       /**< the header section being collected */
  /** Bytes collected in `head`, and its capacity (limits.max_header_bytes) @{ */
  size_t head_len, head_cap;
  /** @} */
  char head_inline[8192];       /**< where `head` points: the inline buffer */
} hr_multipart_t;

/**
 * Reads the boundary parameter of a Content-Type value: "multipart/form-data;
 * boundary=..." (case-insensitive type and parameter name, the value quoted
 * or not).  Returns 0 with *boundary pointing into `content_type`, or
 * HR_EINVAL when it is not multipart/form-data, HR_EPARSE for a missing or
 * invalid boundary (RFC 2046 §5.1.1: 1 to 70 of DIGIT ALPHA ' ( ) + _ , -
 * . / : = ? and space, not ending with a space).
 */
HR_EXTERN int hr_multipart_boundary(hr_span_t content_type, hr_span_t *boundary);

/**
 * Prepares `mp` for a body with `boundary` (copied).  `limits` may be NULL.
 * max_header_bytes above the inline buffer (8192) is HR_EINVAL in this
 * version.  Returns 0, HR_EINVAL.  Any thread; one parser per body.
 */
HR_EXTERN int hr_multipart_init(hr_multipart_t *mp, hr_span_t boundary,
                                const hr_multipart_cbs_t *cbs, void *udata,
                                const hr_multipart_limits_t *limits);

/**
 * Feeds the next piece of the body (any size, split anywhere).  Returns 0,
 * HR_EPARSE (not multipart/form-data syntax: a part without a name, a
 * header line that is not one, bytes after the boundary that are not
 * CRLF or "--"), HR_ETOOLARGE (a limit), or what a callback returned.
 * After an error every later call returns it again.
 */
HR_EXTERN int hr_multipart_feed(hr_multipart_t *mp, hr_span_t data);

/** The body ended: returns 0 when the closing boundary was seen (also with
 * no part before it, as an empty form sends it; RFC 2046 asks for one, Go
 * and browsers do not), else HR_EPARSE (truncated), or the earlier error.
 * Quoted name and filename values come with their quoted-pairs undone. */
HR_EXTERN int hr_multipart_finish(hr_multipart_t *mp);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_MULTIPART_H */
