/* SPDX-License-Identifier: MIT */
/*
 * Request accessors: request line parts, field lines (case-insensitive
 * lookup, RFC 9110 §5.1), trailer fields (§6.5), route parameters, body
 * and peer address.
 */
#include <string.h>

#include "http/trailer.h"
#include "server/exchange/exchange.h"

hr_span_t hr_request_method(const hr_request_t *req) { return req->method; }
hr_span_t hr_request_target(const hr_request_t *req) { return req->target; }
hr_span_t hr_request_path(const hr_request_t *req) { return req->path; }
hr_span_t hr_request_query(const hr_request_t *req) { return req->query; }
int hr_request_version(const hr_request_t *req) { return req->version; }
size_t hr_request_field_count(const hr_request_t *req) { return req->nfields; }
const hr_route_t *hr_request_route(const hr_request_t *req) { return req->route; }
uv_loop_t *hr_request_loop(const hr_request_t *req) {
  return HR__EX_OF_REQ(req)->w->loop;
}
size_t hr_request_param_count(const hr_request_t *req) { return req->nparams; }

int hr_request_field_at(const hr_request_t *req, size_t index, hr_span_t *name,
                        hr_span_t *value) {
  if (index >= req->nfields) return HR_EINVAL;
  if (name != NULL) *name = req->fields[index].name;
  if (value != NULL) *value = req->fields[index].value;
  return 0;
}

int hr_request_field(const hr_request_t *req, hr_span_t name, size_t *cursor,
                     hr_span_t *value) {
  size_t i = cursor != NULL ? *cursor : 0;
  for (; i < req->nfields; i++) {
    if (hr_span_eq_nocase(req->fields[i].name, name)) {
      if (value != NULL) *value = req->fields[i].value;
      if (cursor != NULL) *cursor = i + 1;
      return 0;
    }
  }
  if (cursor != NULL) *cursor = req->nfields;
  return HR_ENOTFOUND;
}

/* ---- trailer fields (RFC 9110 §6.5) --------------------------------------- */

int hr__request_add_trailer(hr__exchange_t *ex, hr_span_t name, hr_span_t value) {
  hr_request_t *r = &ex->req;
  if (hr__trailer_forbidden(name)) return 0; /* dropped, RFC 9110 §6.5.1 */
  if (r->ntrailers == r->trailers_cap) {
    size_t cap = r->trailers_cap ? r->trailers_cap * 2 : 4;
    hr_field_t *f = hr__arena_grow(&ex->arena, r->trailers, r->trailers_cap * sizeof(*f),
                                   cap * sizeof(*f));
    if (f == NULL) return HR_ENOMEM;
    r->trailers = f;
    r->trailers_cap = cap;
  }
  r->trailers[r->ntrailers].name = name;
  r->trailers[r->ntrailers].value = value;
  r->ntrailers++;
  return 0;
}

/* Trailers are read once the message is complete: before, a section still
 * arriving is not shown in part. */
static size_t trailers_seen(const hr_request_t *req) {
  return HR__EX_OF_REQ(req)->msg_complete ? req->ntrailers : 0;
}

size_t hr_request_trailer_count(const hr_request_t *req) { return trailers_seen(req); }

int hr_request_trailer_at(const hr_request_t *req, size_t index, hr_span_t *name,
                          hr_span_t *value) {
  if (index >= trailers_seen(req)) return HR_EINVAL;
  if (name != NULL) *name = req->trailers[index].name;
  if (value != NULL) *value = req->trailers[index].value;
  return 0;
}

int hr_request_trailer(const hr_request_t *req, hr_span_t name, size_t *cursor,
                       hr_span_t *value) {
  size_t i = cursor != NULL ? *cursor : 0, n = trailers_seen(req);
  for (; i < n; i++) {
    if (hr_span_eq_nocase(req->trailers[i].name, name)) {
      if (value != NULL) *value = req->trailers[i].value;
      if (cursor != NULL) *cursor = i + 1;
      return 0;
    }
  }
  if (cursor != NULL) *cursor = n;
  return HR_ENOTFOUND;
}

hr_span_t hr_request_param(const hr_request_t *req, size_t index) {
  hr_span_t none = {NULL, 0};
  return index < req->nparams ? req->params[index].value : none;
}

hr_span_t hr_request_param_name(const hr_request_t *req, size_t index) {
  hr_span_t none = {NULL, 0};
  return index < req->nparams ? req->params[index].name : none;
}

int hr_request_param_by_name(const hr_request_t *req, hr_span_t name,
                             hr_span_t *value) {
  size_t i;
  for (i = 0; i < req->nparams; i++)
    if (hr_span_eq(req->params[i].name, name)) {
      if (value != NULL) *value = req->params[i].value;
      return 0;
    }
  return HR_ENOTFOUND;
}

hr_span_t hr_request_body(const hr_request_t *req) {
  hr_span_t b = {req->body, req->body_len};
  return b;
}

int hr_request_read_body(hr_request_t *req, hr_body_cb cb, void *udata) {
  hr__exchange_t *ex = HR__EX_OF_REQ(req);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (req->route == NULL || req->route->body_mode != HR_BODY_STREAM ||
      req->body_cb != NULL || cb == NULL || req->body_done)
    return HR_ESTATE;
  if (ex->conn == NULL) return HR_ECLOSED;
  if (req->continue_pending && ex->res.state == HR__RES_NEW) {
    /* The client waits for this before sending the body (RFC 9110 §10.1.1). */
    if (ex->proto->send_continue(ex) != 0) return HR_ENOMEM;
    req->continue_pending = 0;
    /* The body's timeouts count from now. */
    hr__body_restart(ex);
    ex->proto->kick(ex);
  }
  req->body_cb = cb;
  req->body_udata = udata;
  return 0;
}

/* Whether `req` is a streaming body still arriving that the handler reads
 * (hr_request_body_pause and _resume apply): 0, or the call's error. */
static int body_flowing(hr_request_t *req) {
  hr__exchange_t *ex = HR__EX_OF_REQ(req);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (req->route == NULL || req->route->body_mode != HR_BODY_STREAM || req->body_cb == NULL)
    return HR_ESTATE;
  if (ex->conn == NULL) return HR_ECLOSED;
  return 0;
}

int hr_request_body_pause(hr_request_t *req) {
  int err = body_flowing(req);
  if (err != 0) return err;
  req->body_paused = 1;
  return 0;
}

int hr_request_body_resume(hr_request_t *req) {
  hr__exchange_t *ex = HR__EX_OF_REQ(req);
  int err = body_flowing(req);
  if (err != 0) return err;
  if (!req->body_paused) return 0;
  req->body_paused = 0;
  if (req->body_done) return 0;
  /* The client could not send while paused: its pace counts from now. */
  hr__body_restart(ex);
  ex->proto->resume_body(ex);
  return 0;
}

int hr_request_peer(const hr_request_t *req, struct sockaddr *addr, int *len) {
  const hr__exchange_t *ex = HR__EX_OF_REQ(req);
  if (addr == NULL || len == NULL) return HR_EINVAL;
  if (ex->conn == NULL) return UV_ENOTCONN;
  return ex->proto->peer(ex, addr, len);
}

void *hr_request_alloc(hr_request_t *req, size_t size) {
  return hr__arena_alloc(&HR__EX_OF_REQ(req)->arena, size);
}

int hr_request_tls(const hr_request_t *req, hr_tls_info_t *info) {
  const hr__exchange_t *ex = HR__EX_OF_REQ(req);
  if (info == NULL) return HR_EINVAL;
  hr__transport_t *t;
  if (ex->conn == NULL) return HR_ENOTFOUND;
  t = ex->proto->transport(ex);
  return t->ops->tls_info(t, info);
}

static void *arena_alloc(void *ctx, size_t n) {
  return hr__arena_alloc((hr__arena_t *)ctx, n);
}

int hr_request_tls_client(hr_request_t *req, int format, hr_span_t *subject,
                          hr_span_t *cert) {
  hr__exchange_t *ex = HR__EX_OF_REQ(req);
  if (format != HR_TLS_PEM && format != HR_TLS_DER) return HR_EINVAL;
  hr__transport_t *t;
  if (ex->conn == NULL) return HR_ENOTFOUND;
  t = ex->proto->transport(ex);
  return t->ops->tls_client(t, format == HR_TLS_DER, arena_alloc, &ex->arena, subject, cert);
}

int hr_request_outcome(const hr_request_t *req, hr_outcome_t *out) {
  const hr__exchange_t *ex;
  if (req == NULL || out == NULL) return HR_EINVAL;
  ex = HR__EX_OF_REQ(req);
  if (!ex->ended) return HR_ESTATE;
  *out = ex->outcome;
  return 0;
}

hr_span_t hr_request_allow(const hr_request_t *req) {
  hr_span_t none = {NULL, 0};
  const hr__exchange_t *ex;
  if (req == NULL) return none;
  ex = HR__EX_OF_REQ(req);
  return ex->internal_answer ? ex->internal_allow : none;
}
