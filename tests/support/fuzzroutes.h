/* SPDX-License-Identifier: MIT */
/*
 * The routes the request-parsing fuzz targets (tests/fuzz/request.c,
 * differential.c) serve, so that they exercise the same server paths:
 *   GET,HEAD /t/:x         200 with the parameter as body
 *   POST,PUT /echo         200 with the request body (buffered)
 *   *        /files/{rest}  200 with the rest of the path (a catch-all)
 *   GET      /n/:id        an int64 parameter (400 when it does not convert)
 *   POST     /stream       a streamed body, read and dropped; a chunked
 *                          response "abc"
 */
#ifndef HR_TEST_FUZZROUTES_H
#define HR_TEST_FUZZROUTES_H

#include <hroute.h>

/* Registers them on `router`; aborts when one cannot be added. */
void fz_add_request_routes(hr_router_t *router);

#endif
