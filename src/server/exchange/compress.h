/* SPDX-License-Identifier: MIT */
/*
 * Response compression for response.c (compress.c): the choice, the
 * fields, whole bodies and streams.  Loop thread of the exchange.
 */
#ifndef HR_SERVER_EXCHANGE_COMPRESS_H
#define HR_SERVER_EXCHANGE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "hroute/common.h"

typedef struct hr__exchange_s hr__exchange_t;

/* The coding for a response of `status` with a body of `len` bytes (-1:
 * streamed), or 0 for none; *vary says whether the response could have
 * been compressed (then it varies with Accept-Encoding).  No side effect. */
int hr__compress_choose(hr__exchange_t *ex, int status, int64_t len, int *vary);
/* Whether the request's Accept-Encoding takes `coding` (q above 0, named
 * or by "*"; none when there is no such field). */
int hr__compress_accepted(hr__exchange_t *ex, int coding);
/* Whether the response has field `name` (the handler's or the route's
 * constant ones), and its value. */
int hr__compress_field(const hr__exchange_t *ex, hr_span_t name, hr_span_t *value);
/* Adds Vary (when `vary` and not there yet), and for a coding (> 0)
 * Content-Encoding and a weak ETag.  Returns 0 or HR_ENOMEM. */
int hr__compress_fields(hr__exchange_t *ex, int coding, int vary);
/* Compresses a whole body into the exchange's arena: returns `coding`
 * with *out, *out_len set, or 0 to send it as it is (it did not get
 * smaller, or out of memory). */
int hr__compress_whole(hr__exchange_t *ex, int coding, const void *body, size_t len,
                       const void **out, size_t *out_len);
/* A stream's encoder (ex->zs): returns `coding`, or 0 when out of memory
 * (the stream then goes as it is). */
int hr__compress_stream_open(hr__exchange_t *ex, int coding);
/* Codes `len` bytes (and, with `last`, the end) and hands them to the
 * protocol.  Returns 0, HR_ENOMEM, or the protocol's error. */
int hr__compress_stream_write(hr__exchange_t *ex, const void *data, size_t len, int last);
/* Frees the stream's encoder and buffer (exchange end). */
void hr__compress_release(hr__exchange_t *ex);

#endif /* HR_SERVER_EXCHANGE_COMPRESS_H */
