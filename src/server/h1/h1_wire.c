/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1's wire (conn/wire.h): what a connection speaking HTTP/1.1 does
 * at its deadlines, at the peer's end, at a shutdown, at its close and
 * when its output has room.  One exchange at a time, c->ex; h1.c parses.
 */
#include "server/conn/wire.h"
#include "server/h1/h1.h"

static const hr_server_options_t *opts_of(const hr__conn_t *c) {
  return &c->w->server->opts;
}

/* Waiting for a request (idle, or its header section), for its body, or
 * for nothing while the handler has it (RFC 9112 §9.5). */
static void h1_deadline(const hr__conn_t *c, hr__tlist_t *list, uint64_t *due) {
  const hr_server_options_t *o = opts_of(c);
  const hr__exchange_t *ex = c->ex;
  if (ex == NULL) {
    /* From the wait's start: a wait already armed keeps its deadline. */
    *list = c->requests_served > 0 ? HR__TL_IDLE : HR__TL_HEADER;
    *due = c->timer.list == (uint8_t)*list
               ? c->timer.due
               : uv_now(c->w->loop) + (c->requests_served > 0 ? o->keepalive_timeout_ms
                                                              : o->header_timeout_ms);
  } else if (ex->phase == HR__PH_HEAD) {
    *list = HR__TL_HEADER;
    *due = ex->head_started + o->header_timeout_ms;
  } else if (hr__body_due(ex, due)) {
    /* (While the client waits for 100 Continue, which waits for the
     * handler to ask for the body, or the handler paused it, no body is
     * due.) */
    *list = HR__TL_BODY;
  } else {
    *list = HR__TL_NONE;
  }
}

static void h1_timeout(hr__conn_t *c, hr__tlist_t list) {
  if (list == HR__TL_HEADER && c->ex != NULL && c->rlen != c->msg_start)
    hr__h1_fail(c, 408, "header section not received in time");
  else if (list == HR__TL_BODY) {
    if (c->ex != NULL && hr__body_expired(c->ex, uv_now(c->w->loop)))
      hr__h1_fail(c, 408, "body not received in time");
    /* else: a new pace window began; the deadline is armed again */
  }
  else
    hr__conn_close(c);
}

static void h1_peer_eof(hr__conn_t *c) {
  const hr__exchange_t *ex = c->ex;
  if (ex == NULL || ex->phase == HR__PH_HEAD) {
    if (c->rbuf != NULL && c->msg_start != c->rlen)
      hr__h1_fail(c, 400, "connection closed in the middle of a request");
    else if (ex == NULL)
      hr__conn_drain(c);
  } else if (ex->phase == HR__PH_BODY) {
    hr__h1_client_left(c); /* a client abort, not a 400 (issue 24) */
  }
}

static void h1_shutdown(hr__conn_t *c) {
  if (c->ex == NULL && hr__out_queued(c) == 0 && !hr__out_writing(c)) {
    hr__conn_close(c); /* idle (pipelined bytes not yet started are dropped) */
    return;
  }
  if (c->ex == NULL) {
    /* Only output left: no further request, FIN once it is out. */
    hr__conn_drain(c);
    hr__conn_settle(c);
  }
  /* Busy: the current response says "Connection: close" if not yet sent,
   * and the connection ends after it (h1.c sees the worker ending). */
}

static void h1_close(hr__conn_t *c) {
  /* A reset in the middle of a body: a client abort. */
  if (c->peer_left && c->ex != NULL) hr__exchange_client_left(c->ex);
  hr__conn_drop_exchange(c, HR_ECLOSED);
}

static int h1_wants_kick(const hr__conn_t *c) {
  return c->ex != NULL && c->ex->res.want_drain && c->ex->res.drain_cb != NULL;
}

static int h1_drains(hr__conn_t *c) {
  hr__exchange_t *ex = c->ex;
  if (!h1_wants_kick(c)) return 0;
  ex->res.want_drain = 0;
  hr__exchange_hold(ex);
  ex->res.drain_cb(&ex->res, 0, ex->res.drain_udata);
  return hr__exchange_unhold(ex) || c->state == HR__C_CLOSED;
}

const hr__wire_t hr__h1_wire = {
    .name = "http/1.1",
    .recognise = NULL,
    .start = NULL,
    .step = hr__h1_step,
    .peer_eof = h1_peer_eof,
    .deadline = h1_deadline,
    .timeout = h1_timeout,
    .shutdown = h1_shutdown,
    .close = h1_close,
    .drains = h1_drains,
    .wants_kick = h1_wants_kick,
};
