/* SPDX-License-Identifier: MIT */
/**
 * @file
 * JSON request and response bodies on jansson (https://jansson.readthedocs.io,
 * Debian libjansson-dev 2.14): a request body read as a json_t with limits,
 * a malformed one answered 400 with where it went wrong; a json_t sent as
 * `application/json`; JSON error bodies, also for the router's own
 * answers through hr_answers_t.error_body.  hroute parses no JSON itself.
 *
 * Built when CMake finds jansson (pkg-config `jansson`); the library then
 * depends on it, and a program that includes this header links jansson
 * too (hroute.pc and the CMake package say so).  Not in <hroute.h>:
 * include <hroute/json.h> where it is used.
 *
 * @code
 *   static void create(hr_request_t *req, hr_response_t *res, void *udata) {
 *     json_t *in = hr_json_body(req, res, 0);       // NULL: answered 400/415
 *     const char *name;
 *     if (in == NULL) return;
 *     if (json_unpack(in, "{s:s}", "name", &name) != 0) {
 *       hr_json_error(res, 422, "a string \"name\" is needed");
 *     } else {
 *       json_t *out = json_pack("{s:s, s:i}", "name", name, "id", 7);
 *       if (out == NULL || hr_json_send(res, 201, out, 0) != 0)
 *         hr_json_error(res, 500, NULL);       // every path answers
 *       json_decref(out);
 *     }
 *     json_decref(in);
 *   }
 * @endcode
 */
#ifndef HROUTE_JSON_H
#define HROUTE_JSON_H

#include <jansson.h>

#include "common.h"
#include "error.h"
#include "http.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Nesting of arrays and objects hr_json_read() accepts when asked for 0. */
#define HR_JSON_DEFAULT_DEPTH 32

/** Why a body was refused, filled by hr_json_read(). */
typedef struct hr_json_error_s {
  int status;        /**< the status to answer: 400 malformed or too deep, 415
                          not JSON (Content-Type) */
  int line;          /**< where it went wrong, 1-based, or 0 when not about a place */
  int column;        /**< the column on that line, 1-based (characters); 0 at
                          the end of the body or when not about a place */
  size_t position;   /**< bytes from the start of the body */
  char text[160];    /**< what is wrong, in English, NUL-terminated */
} hr_json_error_t;

/**
 * Parses the body of a buffered route's request (HR_BODY_BUFFER; its size
 * is already within the route's body limit, or the server answered 413) as
 * one JSON value: the Content-Type must be application/json or a type
 * ending in "+json" (RFC 6839), parameters allowed (charset: utf-8); the
 * text UTF-8 (RFC 8259 §8.1); a duplicate key in an object, a NUL in a
 * string or a nesting of arrays and objects deeper than `max_depth` (0:
 * HR_JSON_DEFAULT_DEPTH) is refused.  Returns 0 and stores a new reference
 * in *out (json_decref it), or HR_EINVAL (NULL arguments; err->status 415
 * for a Content-Type that is not JSON, none included), HR_EPARSE (malformed
 * or over the limits: err->status 400, with line, column and text), or
 * HR_ENOMEM.  `err` may be NULL.  Loop thread of the request.
 */
HR_EXTERN int hr_json_read(const hr_request_t *req, size_t max_depth, json_t **out,
                           hr_json_error_t *err);

/**
 * Answers a body hr_json_read() refused, as hr_json_body() does:
 * err->status (400 or 415) with {"status":N,"error":"...","line":L,
 * "column":C} (line and column when the error has a place).  For a
 * handler that takes JSON or something else (it reads first, and answers
 * this unless the status is 415 and the other type is there).  Returns as
 * hr_response_send(), or HR_EINVAL (NULL arguments, a status outside
 * 400..599: nothing sent), HR_ENOMEM (nothing sent).  Loop thread.
 */
HR_EXTERN int hr_json_reject(hr_response_t *res, const hr_json_error_t *err);

/**
 * hr_json_read() for a handler: returns the value (a new reference), or
 * NULL after answering the request itself: 400 or 415 with a JSON body
 * {"status":400,"error":"...","line":L,"column":C} (line and column when
 * the error has a place), 503 when out of memory.  Loop thread.
 */
HR_EXTERN json_t *hr_json_body(hr_request_t *req, hr_response_t *res, size_t max_depth);

/**
 * Sends `value` (not consumed) as the complete response: Content-Type
 * application/json, the body json_dumpb()'s compact text (JSON_COMPACT,
 * plus `flags`, jansson's encoding flags such as JSON_SORT_KEYS), which
 * must be an object or an array unless flags has JSON_ENCODE_ANY.  Returns
 * what hr_response_send() returns, or HR_EINVAL (NULL arguments, a value
 * jansson will not encode: nothing sent), HR_ENOMEM (nothing sent).  Loop
 * thread.
 */
HR_EXTERN int hr_json_send(hr_response_t *res, int status, const json_t *value, size_t flags);

/**
 * Answers `status` (400..599) with {"status":N,"error":"<message>"}, the
 * message JSON-escaped (NULL: the reason phrase).  Returns as
 * hr_response_send().  Loop thread.
 */
HR_EXTERN int hr_json_error(hr_response_t *res, int status, const char *message);

/**
 * An hr_answers_t.error_body hook: writes {"status":N,"error":"<reason
 * phrase>"} and sets the content type to application/json, so that the
 * router's and the server's own 4xx and 5xx answers are JSON too
 * (`udata` unused).  Returns the length, or 0 (the default text) when it
 * does not fit in `cap`.  Any thread.
 */
HR_EXTERN size_t hr_json_error_body(void *udata, int status, char *buf, size_t cap,
                                    const char **content_type);

#ifdef __cplusplus
}
#endif

#endif /* HROUTE_JSON_H */
