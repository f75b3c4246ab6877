/* SPDX-License-Identifier: MIT */
/** @file
 * hroute: an embeddable HTTP/1.1 routing library on libuv and llhttp.
 * The umbrella header; the API lives in the headers under include/hroute/:
 *   common.h  spans, allocator hook, version
 *   error.h   error codes, hr_strerror(), hr_err_name()
 *   router.h  routes, patterns, matching without a server
 *   http.h    the request and response a handler works with
 *   server.h  listeners, worker threads, limits, shutdown
 *   delegate.h  typed header values: types, delegates, the lookup cache
 *   tls.h     HTTPS listeners, certificates replaced while serving
 *   form.h    application/x-www-form-urlencoded pairs (queries, forms)
 *   multipart.h  multipart/form-data as a streaming parser (uploads)
 *   filesink.h  a streaming body or a part written to a file on the thread pool
 *   static.h  a directory served as files (ranges, validators, precompressed)
 *   upgrade.h  101 Switching Protocols: the connection as a byte stream
 *   websocket.h  WebSocket (RFC 6455) over an upgraded connection
 *   compress.h  response compression settings, hr_compress()
 *   cors.h    the CORS middleware
 *   sse.h     server-sent events over a streaming response
 *   testing.h  an in-process test client
 * json.h (the JSON module on jansson) is not included here: include
 * "hroute/json.h" where it is used.
 */
#ifndef HROUTE_H
#define HROUTE_H

#include "hroute/common.h"
#include "hroute/error.h"
#include "hroute/compress.h"
#include "hroute/router.h"
#include "hroute/http.h"
#include "hroute/server.h"
#include "hroute/delegate.h"
#include "hroute/tls.h"
#include "hroute/form.h"
#include "hroute/multipart.h"
#include "hroute/filesink.h"
#include "hroute/static.h"
#include "hroute/upgrade.h"
#include "hroute/websocket.h"
#include "hroute/cors.h"
#include "hroute/sse.h"
#include "hroute/testing.h"

#endif /* HROUTE_H */
