/* SPDX-License-Identifier: MIT */
/*
 * What happens to a request between the end of its header section and its
 * handler, whatever protocol carried it (h1.c, h2.c): routing in one route
 * table, the body limit, head middleware, 100 Continue, the body's buffer
 * or stream, the handler's dispatch at the end of the message, and the
 * server's own answers (404, 405 with Allow, redirects, the automatic
 * OPTIONS answer, 501, the router's 400) with the host's error bodies.
 * The route and the head middleware decide before the body limit does.
 * It reaches the wire only through the exchange's protocol table
 * (proto.h).
 */
#include <stdio.h>
#include <string.h>

#include "router/path.h"
#include "server/exchange/exchange.h"
#include "util/rcu.h"

/* The host's error_body hook's body for `status` (see hr__error_body),
 * or 0 when there is no hook or it gives none (or an unusable one). */
size_t hr__error_body_hook(const hr_answers_t *an, int status, char *buf,
                           const char **ctype) {
  size_t n = 0, i;
  hr__rcu_read_lock();
  if (status >= 400 && an->error_body != NULL) { /* not for redirects */
    const char *ct = NULL;
    n = an->error_body(an->error_body_udata, status, buf, HR__ERROR_BODY_MAX, &ct);
    if (n > HR__ERROR_BODY_MAX || ct == NULL) n = 0;
    /* A field value (visible bytes, spaces inside), at most 200 bytes, or
     * the default text. */
    for (i = 0; n > 0 && ct[i] != '\0'; i++)
      if ((unsigned char)ct[i] < 0x20 || ct[i] == 0x7f || i >= 200) n = 0;
    if (n > 0 && (ct[0] == '\0' || ct[0] == ' ')) n = 0; /* ct may be NULL with n 0 */
    if (n > 0) *ctype = ct;
  }
  hr__rcu_read_unlock();
  return n;
}

/* The body of a server answer with `status`: the host's error_body hook
 * (hr_answers_t `an`) when it gives one, else the reason phrase as text.
 * `buf` holds HR__ERROR_BODY_MAX bytes; *ctype gets the Content-Type
 * value.  Returns the length.  The hook runs inside a read-side section. */
size_t hr__error_body(const hr_answers_t *an, int status, char *buf,
                         const char **ctype) {
  const char *reason = hr_status_reason(status);
  size_t n = hr__error_body_hook(an, status, buf, ctype);
  if (n == 0) {
    n = strlen(reason);
    memcpy(buf, reason, n);
    buf[n++] = '\n';
    *ctype = "text/plain";
  }
  return n;
}


/* The before-middleware of the router's own answers: the router-level
 * ones without a prefix, for every host or the request's (the host's
 * fallback invoker in the request's table), as a route's before-chain
 * runs.  Returns 1 when one answered (or the connection went away
 * meanwhile), else 0. */
static int run_fallback_before(hr__exchange_t *ex) {
  const hr_route_t *f;
  size_t i;
  int answered = 0;
  hr__exchange_view(ex);
  f = ex->fallback;
  ex->handler_active = 1; /* a middleware may answer later */
  for (i = 0; f != NULL && i < f->nbefore && !answered; i++) {
    const hr__mw_t *mw = &f->before[i];
    answered = mw->before(&ex->req, &ex->res, mw->udata) == HR_ANSWERED || hr__ex_gone(ex);
  }
  if (!answered) ex->handler_active = 0;
  return answered;
}

/* Answers with the server's own response (404, 405, redirects, the
 * automatic OPTIONS answer, 501) on the keep-alive path, after the
 * before-middleware that apply to it; the request body, if any, is read
 * and discarded.  Middleware, handler and body all come from the table
 * the request was matched in, whatever a middleware publishes meanwhile. */
void hr__dispatch_answer(hr__exchange_t *ex) {
  hr_response_t *res = &ex->res;
  int status = ex->internal_status;
  char body[HR__ERROR_BODY_MAX];
  const char *ctype = NULL;
  const hr_answers_t *an;
  hr_handler_cb custom = NULL;
  void *custom_udata = NULL;
  size_t n = 0;
  int rc = 0;
  ex->discard_body = 1;
  ex->handler_active = 0;
  ex->internal_answer = 1;
  if (ex->internal_allow.len)
    rc = hr_response_add_field(res, HR_SPAN_LIT("Allow"), ex->internal_allow);
  if (rc == 0 && ex->internal_location.len)
    rc = hr_response_add_field(res, HR_SPAN_LIT("Location"), ex->internal_location);
  if (rc != 0) {
    ex->proto->fail(ex, 503, "out of memory");
    return;
  }
  if (status >= 400 && status < 500) hr__stat_inc(&ex->w->st_bad); /* not 501 */
  /* A malformed or unsafe path (400) passes no middleware (router.h). */
  if (status != 400 && run_fallback_before(ex)) return;
  /* The host's own handlers for 404 and 405 (hr_answers_t), run like a
   * route's handler, inside a read-side section as handlers are. */
  an = &ex->answers;
  if (status == 404 && an->not_found != NULL) {
    custom = an->not_found;
    custom_udata = an->not_found_udata;
  } else if (status == 405 && an->method_not_allowed != NULL) {
    custom = an->method_not_allowed;
    custom_udata = an->method_not_allowed_udata;
  }
  if (custom != NULL) {
    ex->handler_active = 1;
    hr__rcu_read_lock();
    custom(&ex->req, res, custom_udata);
    hr__rcu_read_unlock();
    return;
  }
  if (status != 200) /* OPTIONS: the Allow field is the answer */
    n = hr__error_body(an, status, body, &ctype);
  if (ctype != NULL &&
      hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), hr_span_cstr(ctype)) != 0) {
    ex->proto->fail(ex, 503, "out of memory");
    return;
  }
  hr_response_send(res, status, body, n);
}

void hr__dispatch_answer_status(hr__exchange_t *ex, int status) {
  ex->internal_status = status;
  ex->internal_allow.len = 0;
  ex->internal_location.len = 0;
  hr__dispatch_answer(ex);
}

/* ---- the header section -------------------------------------------------- */

/* Matches the request in the table current now, which the exchange keeps
 * for every answer the router gives it (hr__exchange_view_from); the
 * decoding buffer comes from the arena only when the target needs one.
 * Returns 0 or HR_ENOMEM.  Inside the step's read-side section. */
static int route_request(hr__exchange_t *ex, hr_match_t *m) {
  hr_request_t *r = &ex->req;
  hr_router_t *router = ex->w->server->router;
  const hr__table_t *t = hr__router_table(router); /* the one load */
  int rc;
  hr__exchange_view_from(ex, t);
  rc = hr__router_match_in(router, t, r->method, r->host, r->target, NULL, 0, m);
  if (rc == HR_ENOSPC) {
    /* m->need suffices for this same table. */
    size_t n = m->need;
    char *buf = hr__arena_alloc(&ex->arena, n);
    if (buf == NULL) return HR_ENOMEM;
    rc = hr__router_match_in(router, t, r->method, r->host, r->target, buf, n, m);
  }
  return rc == HR_ENOSPC ? HR_ENOMEM : rc;
}

/* No route answers: the server will (404, 405, redirect, OPTIONS, 501, and
 * 400 for a malformed or unsafe path, which a well-framed request gets on
 * the keep-alive path as it would a 404).  Returns 0 to go on, -1 to
 * stop. */
static int no_route(hr__exchange_t *ex, const hr_match_t *m,
                    int body_expected) {
  hr_request_t *r = &ex->req;
  if (m->status == 400)
    hr__log(ex->w, HR_LOG_INFO, "answered 400: malformed or unsafe path");
  ex->discard_body = 1;
  ex->internal_status = m->status;
  ex->internal_allow = m->allow;
  if (m->allow.len) {
    /* m->allow may point into the route table, which a replacement frees
     * once this read-side section ends, and the answer may wait for the
     * body, read in a later one: the exchange keeps its own copy. */
    char *a = hr__arena_alloc(&ex->arena, m->allow.len);
    if (a == NULL) {
      ex->proto->fail(ex, 503, "out of memory");
      return -1;
    }
    memcpy(a, m->allow.ptr, m->allow.len);
    ex->internal_allow.ptr = a;
  }
  ex->internal_location = m->location; /* in the arena (route_request) */
  if (r->expect_continue && body_expected) {
    /* Answer now without reading the body, then close (RFC 9110 §10.1.1). */
    ex->close_after = 1;
    ex->dispatched = 1;
    hr__dispatch_answer(ex);
    return -1;
  }
  if (r->has_length && r->content_length > ex->body_limit) {
    /* The answer comes before the body limit (a 405, not a 413): now,
     * the body unread; the protocol then drops what of it comes, or ends
     * the connection (h1: more than 256 KiB to skip) or the stream. */
    ex->dispatched = 1;
    hr__dispatch_answer(ex);
    return hr__ex_gone(ex) ? -1 : 0;
  }
  /* Otherwise the answer waits for the end of the message, so a body that
   * breaks the framing rules still gets its 400. */
  return 0;
}

/* Makes room for `cap` bytes of buffered body (cap >= what it holds): in
 * the arena up to HR__BODY_ARENA_MAX, else in a block of its own from the
 * server's allocator (req.body_heap), grown by realloc, so that a large
 * body is neither copied into a second block nor kept twice.  Returns 0
 * or -1 (out of memory). */
#define HR__BODY_ARENA_MAX 16384
static int body_reserve(hr__exchange_t *ex, size_t cap) {
  hr_request_t *r = &ex->req;
  char *b;
  if (cap <= r->body_cap) return 0;
  if (cap <= HR__BODY_ARENA_MAX && !r->body_heap) {
    b = hr__arena_grow(&ex->arena, r->body, r->body_cap, cap);
  } else if (r->body_heap) {
    b = hr__mem_realloc(&ex->w->mem, r->body, cap);
  } else {
    b = hr__mem_alloc(&ex->w->mem, cap);
    if (b != NULL && r->body_len > 0) memcpy(b, r->body, r->body_len);
    if (b != NULL) r->body_heap = 1;
  }
  if (b == NULL) return -1;
  r->body = b;
  r->body_cap = cap;
  return 0;
}

/* The header section has been parsed and checked by its protocol.
 * Returns 0 to go on, -1 when the exchange is failing or must stop. */
int hr__dispatch_head(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  hr_match_t m;
  /* Before the header section's end only a message without a body is
   * complete (h1: llhttp pauses there; h2: END_STREAM on HEADERS). */
  int body_expected = !ex->msg_complete;
  ex->body_limit = ex->w->server->opts.max_body_bytes;
  hr__body_restart(ex); /* the body is due from here */
  if (route_request(ex, &m) != 0) {
    ex->proto->fail(ex, 503, "out of memory");
    return -1;
  }
  if (m.status != 200 || m.route == NULL) return no_route(ex, &m, body_expected);
  r->route = m.route;
  hr__invoke_hold_ctx(ex);
  r->nparams = m.nparams;
  memcpy(r->params, m.params, m.nparams * sizeof(hr_param_t));
  if (m.route->max_body_bytes) ex->body_limit = m.route->max_body_bytes;
  if (r->route->nhead_mw > 0) {
    /* Head middleware: before 100 Continue, before the body and before its
     * limit (a 401 for an upload too large, not a 413).  While it runs the
     * client may still hold the body back, so an answer now closes the
     * connection after it (h1_proto.c, h1_head); a body it leaves behind
     * is dropped as after any early answer (hr_body_cb). */
    int held = r->expect_continue && body_expected && r->version >= 11;
    r->continue_pending = (unsigned)held;
    ex->discard_body = 1; /* if it answers, whatever body comes is dropped */
    if (hr__invoke_head(ex)) {
      ex->dispatched = 1; /* the handler does not run */
      if (hr__ex_gone(ex)) return -1;
      /* It answers later, and the body announced is over the limit: the
       * body waits (h1: unread; h2: its window shut) until the answer,
       * which ends it, so that no 413 takes the answer's place. */
      if (ex->res.state != HR__RES_DONE && r->has_length && r->content_length > ex->body_limit)
        r->body_paused = 1;
      return 0;
    }
    ex->discard_body = 0;
    r->continue_pending = 0;
  }
  if (r->has_length && r->content_length > ex->body_limit) {
    ex->proto->fail(ex, 413, "body larger than the limit");
    return -1;
  }
  if (r->expect_continue && body_expected && r->version >= 11) {
    /* A streaming handler decides: 100 Continue goes out when it asks for
     * the body (hr_request_read_body); a buffered route takes it now. */
    if (r->route->body_mode == HR_BODY_STREAM)
      r->continue_pending = 1;
    else if (ex->proto->send_continue(ex) != 0) {
      ex->proto->fail(ex, 503, "out of memory");
      return -1;
    }
  }
  if (r->route->body_mode == HR_BODY_BUFFER && r->has_length &&
      r->content_length > 0 && body_reserve(ex, (size_t)r->content_length) != 0) {
    /* The declared length (within the limit, checked above), once: a
     * body that arrives is never copied as it grows.  Pages of it that
     * no byte reached yet cost nothing (a large block is mapped). */
    ex->proto->fail(ex, 503, "out of memory");
    return -1;
  }
  if (r->route->body_mode == HR_BODY_STREAM) {
    ex->dispatched = 1;
    hr__invoke(ex);
    if (hr__ex_gone(ex)) return -1;
  }
  return 0;
}


/* The message is complete: run the handler (buffered routes) or end the
 * body stream. */
void hr__dispatch_complete(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  if (!ex->dispatched) {
    ex->dispatched = 1;
    if (r->route != NULL)
      hr__invoke(ex);
    else
      hr__dispatch_answer(ex);
    return;
  }
  if (r->route != NULL && r->body_cb != NULL && !r->body_done) {
    hr_span_t none = {NULL, 0};
    r->body_done = 1;
    r->body_cb(r, none, 1, r->body_udata);
  }
}

int hr__dispatch_body(hr__exchange_t *ex, const char *at, size_t len) {
  hr_request_t *r = &ex->req;
  ex->body_data += len;
  /* Answered before the body ended: the rest is dropped, bounded by the
   * protocol (h1_done: a Content-Length body up to 256 KiB, else the
   * connection ends; HTTP/2 resets the stream), not by the limit. */
  if (ex->body_cut) return 0;
  if (ex->body_data > ex->body_limit) return 413;
  if (ex->discard_body) return 0;
  if (r->route != NULL && r->route->body_mode == HR_BODY_STREAM) {
    if (r->body_cb != NULL && !r->body_done) {
      hr_span_t chunk = {at, len};
      r->body_cb(r, chunk, 0, r->body_udata);
      if (hr__ex_gone(ex)) return -1;
    }
    return 0;
  }
  if (r->body_cap - r->body_len < len) {
    /* A body of unknown length (chunked; HTTP/2 without content-length)
     * doubles, within the limit. */
    uint64_t cap = r->body_cap ? (uint64_t)r->body_cap * 2 : 1024;
    while (cap < r->body_len + len) cap *= 2;
    if (cap > ex->body_limit) cap = ex->body_limit;
    if (body_reserve(ex, (size_t)cap) != 0) return 503;
  }
  memcpy(r->body + r->body_len, at, len);
  r->body_len += len;
  return 0;
}

/* ---- the body's pace ------------------------------------------------------ */

static int body_is_due(const hr__exchange_t *ex) {
  const hr_request_t *r = &ex->req;
  return ex->phase == HR__PH_BODY && !ex->msg_complete && !r->continue_pending &&
         !r->body_paused;
}

void hr__body_restart(hr__exchange_t *ex) {
  uint64_t now = uv_now(ex->w->loop);
  ex->last_activity = ex->rate_start = now;
  ex->rate_base = ex->body_data;
  if (ex->body_started == 0) ex->body_started = now;
}

int hr__body_due(const hr__exchange_t *ex, uint64_t *due) {
  const hr_server_options_t *o = &ex->w->server->opts;
  uint64_t d;
  if (!body_is_due(ex)) return 0;
  d = ex->last_activity + o->body_timeout_ms;
  if (o->body_min_rate_bytes > 0 && ex->rate_start + o->body_rate_window_ms < d)
    d = ex->rate_start + o->body_rate_window_ms;
  if (o->body_deadline_ms > 0 && ex->body_started + o->body_deadline_ms < d)
    d = ex->body_started + o->body_deadline_ms;
  *due = d;
  return 1;
}

int hr__body_expired(hr__exchange_t *ex, uint64_t now) {
  const hr_server_options_t *o = &ex->w->server->opts;
  if (!body_is_due(ex)) return 0;
  if (now >= ex->last_activity + o->body_timeout_ms) return 1;
  if (o->body_deadline_ms > 0 && now >= ex->body_started + o->body_deadline_ms) return 1;
  if (o->body_min_rate_bytes > 0 && now >= ex->rate_start + o->body_rate_window_ms) {
    /* Bytes per second over the window, against the pace. */
    uint64_t got = ex->body_data - ex->rate_base, span = now - ex->rate_start;
    if (got * 1000 < o->body_min_rate_bytes * span) return 1;
    ex->rate_start = now;
    ex->rate_base = ex->body_data;
  }
  return 0;
}
