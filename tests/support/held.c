/* SPDX-License-Identifier: MIT */
/* Responses held open by a handler and completed by the test (held.h). */
#include "held.h"

#include <string.h>

#include "rawclient.h"

held_t held_default;

void held_init(held_t *h) {
  memset(h, 0, sizeof *h);
  h->status = 200;
  ev_init(&h->ev_held);
  ev_init(&h->ev_aborted);
  ev_init(&h->ev_done);
}

void held_destroy(held_t *h) {
  ev_destroy(&h->ev_held);
  ev_destroy(&h->ev_aborted);
  ev_destroy(&h->ev_done);
}

static void on_abort(hr_response_t *res, void *udata) {
  held_t *h = udata;
  (void)res;
  h->aborted++;
  ev_signal(&h->ev_aborted);
}

void held_take(held_t *h, hr_response_t *res) {
  hr_response_on_abort(res, on_abort, h);
  h->res = res;
  ev_signal(&h->ev_held); /* publishes h->res to the waiting test thread */
}

void held_handler(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  held_take(&held_default, res);
}

static void complete_cb(hr_response_t *res, void *udata) {
  held_t *h = udata;
  const char *body = h->body;
  if (body == NULL) {
    /* The route this exchange was matched to: it must still be alive. */
    const hr_route_t *rt = hr_request_route(hr_response_request(res));
    body = rt != NULL ? hr_route_udata(rt) : "(no route)";
  }
  h->send_rc = hr_response_send(res, h->status, body, strlen(body));
  ev_signal(&h->ev_done);
}

int held_complete(held_t *h, unsigned long n, int status, const char *body) {
  unsigned long done = ev_count(&h->ev_done);
  if (!ev_wait(&h->ev_held, n, RC_TIMEOUT_MS)) return -1;
  h->status = status;
  h->body = body;
  /* hr_response_post hands h to the loop thread (its queue lock orders the
   * writes above before the callback). */
  if (hr_response_post(h->res, complete_cb, h) != 0) return -1;
  if (!ev_wait(&h->ev_done, done + 1, RC_TIMEOUT_MS)) return -1;
  return h->send_rc;
}

void held_release(held_t *h) {
  unsigned long n = ev_count(&h->ev_held);
  if (n > ev_count(&h->ev_done)) held_complete(h, n, 500, "released");
}
