/* SPDX-License-Identifier: MIT */
/*
 * Request locals (router.h hr_router_local_key, http.h): values middleware
 * attaches to a request by key, in the request arena, destroyed when the
 * exchange ends.
 */
#include <string.h>

#include "router/route.h"
#include "server/exchange/exchange.h"

int hr_request_set_local(hr_request_t *req, hr_local_key_t key, void *value) {
  hr__exchange_t *ex;
  hr_router_t *r;
  if (req == NULL) return HR_EINVAL;
  ex = HR__EX_OF_REQ(req);
  r = ex->w->server->router;
  if (!hr__router_local_known(r, key)) return HR_EINVAL;
  if (req->locals == NULL) {
    if (value == NULL) return 0;
    req->locals = hr__arena_alloc(&ex->arena, HR_MAX_LOCALS * sizeof(void *));
    if (req->locals == NULL) return HR_ENOMEM;
    memset(req->locals, 0, HR_MAX_LOCALS * sizeof(void *));
  }
  if (req->locals[key] != NULL && req->locals[key] != value)
    hr__router_local_destroy(r, key, req->locals[key]);
  req->locals[key] = value;
  return 0;
}

void *hr_request_local(const hr_request_t *req, hr_local_key_t key) {
  if (req == NULL || req->locals == NULL || key >= HR_MAX_LOCALS) return NULL;
  return req->locals[key];
}

void hr__locals_release(hr__exchange_t *ex) {
  hr_request_t *req = &ex->req;
  hr_router_t *r = ex->w->server->router;
  unsigned i;
  if (req->locals == NULL) return;
  for (i = 0; i < HR_MAX_LOCALS; i++)
    if (req->locals[i] != NULL) {
      void *v = req->locals[i];
      req->locals[i] = NULL;
      hr__router_local_destroy(r, i, v);
    }
  req->locals = NULL; /* the arena goes back with the exchange */
}
