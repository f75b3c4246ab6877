/* SPDX-License-Identifier: MIT */
/* The request-parsing fuzz targets' routes (fuzzroutes.h). */
#include <stdlib.h>

#include "fuzzroutes.h"

static void h_text(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t p = hr_request_param(req, 0);
  (void)udata;
  hr_response_send(res, 200, p.ptr, p.len);
}

static void h_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t b = hr_request_body(req);
  (void)udata;
  hr_response_send(res, 200, b.ptr, b.len);
}

static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  hr_response_start(res, 200, HR_LENGTH_UNKNOWN);
  hr_response_write(res, "abc", 3);
  hr_response_end(res);
  hr_request_read_body(req, NULL, NULL);
}

void fz_add_request_routes(hr_router_t *router) {
  hr_param_type_t types[1] = {HR_PARAM_INT64};
  hr_route_options_t ro;
  int err = 0;
  err |= hr_router_add(router, "GET,HEAD", "/t/:x", h_text, NULL, NULL);
  err |= hr_router_add(router, "POST,PUT", "/echo", h_echo, NULL, NULL);
  err |= hr_router_add(router, "*", "/files/*rest", h_text, NULL, NULL);
  hr_route_options_init(&ro);
  ro.param_types = types;
  ro.nparam_types = 1;
  err |= hr_router_add(router, "GET", "/n/:id", h_text, NULL, &ro);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  err |= hr_router_add(router, "POST", "/stream", h_stream, NULL, &ro);
  if (err != 0) abort();
}
