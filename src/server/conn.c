/* SPDX-License-Identifier: MIT */
/*
 * A connection: reading, the strictness pass, llhttp, routing at the end of
 * the header section, body delivery, dispatch, persistence (RFC 9112 §9.3),
 * timeouts and closing.
 *
 * Input lives in one read buffer per connection, taken from the loop's pool
 * while bytes are pending and given back when the connection is idle.  A
 * request's header section stays where it was read until its response
 * completes, so request spans point straight into the buffer.  The header
 * section is checked by hr__head_scan() before llhttp sees a byte of it and
 * is handed to llhttp in one call; llhttp pauses at each message end, so the
 * next pipelined request is only parsed once the current one is answered.
 * Handlers therefore always run outside llhttp callbacks, and responses leave
 * in request order.
 */
#include <string.h>

#include "router/path.h"
#include "server/internal.h"
#include "util/rcu.h"

/* Bytes kept free after a header section for the body to stream through. */
#define HR__BODY_ROOM 4096
/* How long a closing connection drains the peer's bytes after our FIN. */
#define HR__LINGER_MS 2000

static void conn_process(hr__conn_t *c);
static void conn_fail(hr__conn_t *c, int status, const char *reason);
static void update_timer(hr__conn_t *c);
static void update_reading(hr__conn_t *c);
static void conn_start(hr__conn_t *c, unsigned handles);

/* ---- exchange ------------------------------------------------------------ */

static void exchange_reset(hr__conn_t *c) {
  hr__arena_reset(&c->arena);
  memset(&c->req, 0, sizeof(c->req));
  c->req.conn = c;
  hr__res_reset(&c->res, c);
  c->dispatched = 0;
  c->msg_complete = 0;
  c->discard_body = 0;
  c->body_bytes = 0;
  c->body_data = 0;
  c->fail_status = 0;
  c->internal_status = 0;
  c->internal_allow.ptr = NULL;
  c->internal_allow.len = 0;
  c->internal_location = c->internal_allow;
  c->internal_answer = 0;
  c->t_done = 0;
  hr__head_scan_init(&c->hscan);
}

/* Answers with the server's own response (404, 405, redirects, the
 * automatic OPTIONS answer) on the keep-alive path; the request body, if
 * any, is read and discarded. */
static void answer_internal(hr__conn_t *c) {
  hr_response_t *res = &c->res;
  int status = c->internal_status;
  const char *reason = hr_status_reason(status);
  char body[64];
  size_t n = strlen(reason);
  int rc = 0;
  c->discard_body = 1;
  c->handler_active = 0;
  c->internal_answer = 1;
  if (status == 200) { /* OPTIONS: the Allow field is the answer */
    n = 0;
  } else {
    memcpy(body, reason, n);
    body[n++] = '\n';
    rc = hr_response_add_field(res, HR_SPAN_LIT("Content-Type"),
                               HR_SPAN_LIT("text/plain"));
  }
  if (rc == 0 && c->internal_allow.len)
    rc = hr_response_add_field(res, HR_SPAN_LIT("Allow"), c->internal_allow);
  if (rc == 0 && c->internal_location.len)
    rc = hr_response_add_field(res, HR_SPAN_LIT("Location"), c->internal_location);
  if (rc != 0) {
    conn_fail(c, 503, "out of memory");
    return;
  }
  if (status >= 400) hr__stat_inc(&c->w->st_bad);
  hr_response_send(res, status, body, n);
}

void hr__answer_status(hr__conn_t *c, int status) {
  c->internal_status = status;
  c->internal_allow.len = 0;
  c->internal_location.len = 0;
  answer_internal(c);
}

/* Matches the request; the decoding buffer comes from the arena only when
 * the target needs one.  Returns 0 or HR_ENOMEM. */
static int route_request(hr__conn_t *c, hr_match_t *m) {
  hr_request_t *r = &c->req;
  hr_router_t *router = c->w->server->router;
  int rc = hr_router_match(router, r->method, r->host, r->target, NULL, 0, m);
  if (rc == HR_ENOSPC) {
    size_t n = 2 * r->target.len + 16;
    char *buf = hr__arena_alloc(&c->arena, n);
    if (buf == NULL) return HR_ENOMEM;
    rc = hr_router_match(router, r->method, r->host, r->target, buf, n, m);
  }
  return rc;
}

/* The header section has been parsed.  Returns 0 to go on, -1 when the
 * connection is failing or must stop. */
static int headers_complete(hr__conn_t *c) {
  hr_request_t *r = &c->req;
  hr__worker_t *w = c->w;
  hr_server_t *s = w->server;
  hr_match_t m;
  uint8_t major = llhttp_get_http_major(&c->parser);
  uint8_t minor = llhttp_get_http_minor(&c->parser);
  int body_expected;

  if (major == 0) { /* "GET /" without a version is not HTTP/1.x syntax */
    conn_fail(c, 400, "request line without an HTTP version");
    return -1;
  }
  if (major != 1 || minor > 1) {
    conn_fail(c, 505, "unsupported HTTP version");
    return -1;
  }
  r->version = minor == 0 ? 10 : 11;
  r->is_head = hr_span_eq(r->method, HR_SPAN_LIT("HEAD"));
  r->chunked = (c->parser.flags & F_CHUNKED) != 0;
  r->has_length = (c->parser.flags & F_CONTENT_LENGTH) != 0;
  r->content_length = r->has_length ? c->parser.content_length : 0;
  {
    /* The router's split: one reading of the target for both.  A target it
     * cannot read is answered 400 by the router. */
    hr_span_t authority;
    hr__target_split(r->target, &r->path, &r->query, &authority);
  }
  if (r->host_count > 1 || (r->version == 11 && r->host_count == 0)) {
    conn_fail(c, 400, "missing, repeated or invalid Host field");
    return -1;
  }
  if (r->expect_other) {
    conn_fail(c, 417, "unsupported Expect value");
    return -1;
  }
  r->keep_alive = (unsigned)(r->version == 11 ? !r->conn_close
                                              : (r->conn_keep_alive && !r->conn_close));
  /* RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing: serve
   * the message, then close. */
  if (r->version == 10 && r->has_te) r->keep_alive = 0;
  if (r->te_unsupported) {
    conn_fail(c, 501, "transfer coding other than chunked");
    return -1;
  }
  if (r->target_bad) {
    conn_fail(c, 400, "invalid byte or fragment in the request target");
    return -1;
  }
  if (w->stopping) r->keep_alive = 0;
  body_expected = r->chunked || (r->has_length && r->content_length > 0);
  c->body_limit = s->opts.max_body_bytes;

  if (route_request(c, &m) != 0) {
    conn_fail(c, 503, "out of memory");
    return -1;
  }
  if (m.status == 200 && m.route != NULL) {
    r->route = m.route;
    r->nparams = m.nparams;
    memcpy(r->params, m.params, m.nparams * sizeof(hr_param_t));
    if (m.route->max_body_bytes) c->body_limit = m.route->max_body_bytes;
  } else {
    if (m.status == 400) {
      conn_fail(c, 400, "malformed or unsafe path"); /* malformed or unsafe path */
      return -1;
    }
    if (r->has_length && r->content_length > c->body_limit) {
      conn_fail(c, 413, "body larger than the limit");
      return -1;
    }
    c->discard_body = 1;
    c->internal_status = m.status;
    c->internal_allow = m.allow;
    c->internal_location = m.location;
    if (r->expect_continue && body_expected) {
      /* Answer now without reading the body, then close (RFC 9110 §10.1.1). */
      c->closing = 1;
      c->dispatched = 1;
      answer_internal(c);
      return -1;
    }
    /* Otherwise the answer waits for the end of the message, so a body
     * that breaks the framing rules still gets its 400. */
    return 0;
  }
  if (r->has_length && r->content_length > c->body_limit) {
    conn_fail(c, 413, "body larger than the limit");
    return -1;
  }
  if (r->expect_continue && body_expected && r->version == 11) {
    /* A streaming handler decides: 100 Continue goes out when it asks for
     * the body (hr_request_read_body); a buffered route takes it now. */
    if (r->route->body_mode == HR_BODY_STREAM)
      r->continue_pending = 1;
    else if (hr__out_append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) != 0) {
      conn_fail(c, 503, "out of memory");
      return -1;
    }
  }
  if (r->route->body_mode == HR_BODY_BUFFER && r->has_length &&
      r->content_length > 0) {
    /* Start small and grow as bytes arrive: a peer announcing a large body
     * it never sends must not make the server hold that much memory. */
    size_t first = r->content_length < 16384 ? (size_t)r->content_length : 16384;
    r->body = hr__arena_alloc(&c->arena, first);
    if (r->body == NULL) {
      conn_fail(c, 503, "out of memory");
      return -1;
    }
    r->body_cap = first;
  }
  if (r->route->body_mode == HR_BODY_STREAM) {
    c->dispatched = 1;
    hr__invoke(c);
    if (c->closed) return -1;
  }
  return 0;
}

/* The message is complete: run the handler (buffered routes) or end the
 * body stream. */
static void message_complete(hr__conn_t *c) {
  hr_request_t *r = &c->req;
  if (!c->dispatched) {
    c->dispatched = 1;
    if (r->route != NULL) {
      hr__invoke(c);
    } else {
      answer_internal(c);
    }
    return;
  }
  if (r->route != NULL && r->body_cb != NULL && !r->body_done) {
    hr_span_t none = {NULL, 0};
    r->body_done = 1;
    r->body_cb(r, none, 1, r->body_udata);
  }
}

/* The response is complete and so is the message: next request. */
static void finish_exchange(hr__conn_t *c) {
  int keep = c->req.keep_alive && !c->closing && !c->w->stopping;
  c->requests_served++;
  hr__stat_inc(&c->w->st_requests);
  hr__exchange_end(c);
  exchange_reset(c);
  c->phase = HR__PH_HEAD;
  c->msg_start = c->rpos;
  c->head_started = uv_now(c->w->loop);
  if (!keep) c->closing = 1;
}

void hr__conn_response_done(hr__conn_t *c) {
  c->handler_active = 0;
  c->t_done = uv_hrtime();
  if (!c->in_process) hr__conn_kick(c);
}

/* ---- failing and closing -------------------------------------------------- */

/* Tells a handler that is still running that its exchange is lost. */
static void abort_handler(hr__conn_t *c, int body_status) {
  hr_request_t *r = &c->req;
  hr_response_t *res = &c->res;
  if (!c->handler_active || res->state == HR__RES_DONE || c->aborted) return;
  c->aborted = 1;
  if (r->body_cb != NULL && !r->body_done) {
    hr_span_t none = {NULL, 0};
    r->body_done = 1;
    r->body_cb(r, none, body_status, r->body_udata);
  }
  if (res->want_drain && res->drain_cb != NULL) {
    res->want_drain = 0;
    res->drain_cb(res, HR_ECLOSED, res->drain_udata);
  }
  if (res->abort_cb != NULL && res->state != HR__RES_DONE)
    res->abort_cb(res, res->abort_udata);
}

/* Answers `status` and closes: for requests that cannot be trusted or
 * served (RFC 9112 §9.6: framing in doubt means the connection ends). */
static void conn_fail(hr__conn_t *c, int status, const char *reason) {
  if (c->closed) return;
  c->closing = 1;
  hr__stat_inc(&c->w->st_bad);
  hr__log(c->w, HR_LOG_INFO, "answered %d and closing the connection: %s",
          status, reason != NULL ? reason : "");
  switch (c->res.state) {
    case HR__RES_DONE:
      return; /* the answer is already queued: close after it */
    case HR__RES_STREAMING:
      hr__conn_close(c); /* a response under way cannot be replaced */
      return;
    case HR__RES_NEW:
      break;
  }
  if (hr__out_error_response(c, status, (hr_span_t){NULL, 0}) != 0) {
    hr__conn_close(c);
    return;
  }
  /* A handler still running has lost its exchange: its calls now answer
   * HR_ECLOSED. */
  abort_handler(c, status == 413 ? HR_ETOOLARGE : HR_ECLOSED);
}

static void on_close(uv_handle_t *h) {
  hr__conn_t *c = h->data;
  c->handles_open--;
  hr__conn_maybe_free(c);
}

void hr__conn_close(hr__conn_t *c) {
  if (c->closed) return;
  c->closed = 1;
  c->closing = 1;
  if (c->reading && c->sink == NULL) uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
  abort_handler(c, HR_ECLOSED);
  hr__out_discard(c);
  if (c->counted) {
    atomic_fetch_sub_explicit(&c->w->server->active_conns, 1,
                              memory_order_relaxed);
    c->counted = 0;
  }
  if (c->sink == NULL) uv_close((uv_handle_t *)&c->tcp, on_close);
  uv_close((uv_handle_t *)&c->timer, on_close);
}

static void unlink_resume(hr__conn_t *c) {
  hr__conn_t **pp = &c->w->resume_head;
  while (*pp != NULL) {
    if (*pp == c) {
      *pp = c->resume_next;
      break;
    }
    pp = &(*pp)->resume_next;
  }
  c->on_resume = 0;
}

void hr__conn_maybe_free(hr__conn_t *c) {
  hr__worker_t *w = c->w;
  if (!c->closed || c->handles_open != 0 || c->handler_active || c->writing)
    return;
  if (c->on_resume) unlink_resume(c);
  hr__exchange_end(c);
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    w->conns = c->next;
  if (c->next != NULL) c->next->prev = c->prev;
  hr__arena_reset(&c->arena);
  if (c->rbuf != NULL) hr__pool_put(&w->rpool, c->rbuf);
  hr__out_discard(c);
  hr__out_discard(c);
  hr__mem_free(&w->mem, c->pending.segs);
  hr__mem_free(&w->mem, c->inflight.segs);
  hr__mem_free(&w->mem, c);
  hr__worker_conn_gone(w);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  hr__conn_t *c = req->data;
  if (status < 0 && !c->closed) hr__conn_close(c);
  if (c->closed) hr__conn_maybe_free(c);
}

/* Once a closing connection has written everything: close, or send FIN and
 * drain the peer's bytes for a while so our last response is not lost to a
 * reset (lingering close). */
static void maybe_finish_close(hr__conn_t *c) {
  if (!c->closing || c->closed) return;
  if (c->handler_active && !c->aborted) return; /* response still to come */
  if (c->writing || hr__out_queued(c) > 0) return;
  if (c->peer_eof || c->sink != NULL) {
    hr__conn_close(c);
    return;
  }
  if (!c->shutting) {
    c->shutting = 1;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
      c->shutting = 0;
      hr__conn_close(c);
      return;
    }
    c->deadline = uv_now(c->w->loop) + HR__LINGER_MS;
  }
}

/* ---- reading ------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  hr__conn_t *c = h->data;
  size_t cap = c->w->server->rbuf_size;
  (void)suggested;
  if (c->closing) {
    /* Lingering: the bytes are discarded, and the read buffer may still hold
     * spans of an aborted handler's request, so read into the loop's
     * scratch buffer instead. */
    *buf = uv_buf_init(c->w->drain_buf, sizeof(c->w->drain_buf));
    return;
  }
  if (c->rbuf == NULL) {
    c->rbuf = hr__pool_get(&c->w->rpool);
    c->rlen = c->rpos = c->msg_start = 0;
  }
  if (c->rbuf == NULL) {
    *buf = uv_buf_init(NULL, 0); /* read_cb gets UV_ENOBUFS */
    return;
  }
  *buf = uv_buf_init(c->rbuf + c->rlen, (unsigned)(cap - c->rlen));
}

/* Gives the read buffer back when nothing in it is needed any more. */
static void release_rbuf(hr__conn_t *c) {
  if (c->rbuf == NULL || c->phase != HR__PH_HEAD || c->handler_active) return;
  if (c->msg_start != c->rlen && !c->closing) return;
  hr__pool_put(&c->w->rpool, c->rbuf);
  c->rbuf = NULL;
  c->rlen = c->rpos = c->msg_start = 0;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  hr__conn_t *c = stream->data;
  (void)buf;
  if (c->closed) return;
  if (nread > 0) {
    c->last_activity = uv_now(c->w->loop);
    if (c->closing) return; /* lingering: discard */
    c->rlen += (size_t)nread;
    conn_process(c);
    return;
  }
  if (nread == 0) { /* EAGAIN */
    release_rbuf(c);
    return;
  }
  if (nread == UV_EOF) {
    c->peer_eof = 1;
    if (c->reading) uv_read_stop(stream);
    c->reading = 0;
    if (c->closing && c->shutting) {
      if (!c->writing) hr__conn_close(c);
      return;
    }
    if (c->handler_active && c->phase == HR__PH_DONE) {
      /* The peer left while its request is being answered: like nginx and
       * Node.js, treat the end of its input as an abort. */
      hr__conn_close(c);
      hr__conn_maybe_free(c);
      return;
    }
    conn_process(c);
    return;
  }
  hr__conn_close(c); /* ECONNRESET, ENOBUFS, ... */
  hr__conn_maybe_free(c);
}

static void update_reading(hr__conn_t *c) {
  int want;
  if (c->closed) return;
  if (c->peer_eof)
    want = 0;
  else if (c->closing)
    want = c->shutting != 0; /* drain only once our FIN is out */
  else if (c->phase == HR__PH_DONE)
    /* Waiting for the response: pipelined bytes wait in the buffer, and
     * reading goes on while there is room so that a peer that goes away is
     * noticed (its handler hears of it through the abort callback). */
    want = c->rbuf != NULL && c->rlen < c->w->server->rbuf_size &&
           hr__out_queued(c) <= c->w->server->opts.write_high_water_bytes;
  else
    want = hr__out_queued(c) <= c->w->server->opts.write_high_water_bytes;
  if (c->sink != NULL) {
    c->reading = (unsigned)want; /* the feeder asks hr__vconn_feed */
    return;
  }
  if (want && !c->reading) {
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
      c->reading = 1;
  } else if (!want && c->reading) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
  }
}

/* ---- the processing loop ------------------------------------------------- */

/* Scans and parses a header section.  Returns 1 to continue with the body,
 * 0 when more bytes are needed, -1 to stop. */
static int step_head(hr__conn_t *c) {
  hr_server_t *s = c->w->server;
  long r;
  llhttp_errno_t e;
  size_t avail = c->rlen - c->msg_start;
  if (avail == 0 || c->hscan.pos == avail) return 0;
  if (c->hscan.pos == 0) c->head_started = uv_now(c->w->loop);
  r = hr__head_scan(&c->hscan, c->rbuf + c->msg_start, avail, &s->head_limits);
  if (r < 0) {
    conn_fail(c, (int)-r, hr__head_scan_reason((int)-r));
    return -1;
  }
  if (r == 0) return 0;
  /* Keep room behind the section for the body to stream through. */
  if (c->msg_start > 0 &&
      s->rbuf_size - (c->msg_start + (size_t)r) < HR__BODY_ROOM) {
    memmove(c->rbuf, c->rbuf + c->msg_start, avail);
    c->rlen = avail;
    c->msg_start = 0;
  }
  c->rpos = c->msg_start;
  c->hdr_end = c->msg_start + (size_t)r;
  e = hr__parse_head(c);
  if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
    c->msg_complete = 1;
    if (e == HPE_PAUSED)
      llhttp_resume(&c->parser);
    else
      llhttp_resume_after_upgrade(&c->parser);
  } else if (e != HPE_OK) {
    conn_fail(c, c->fail_status ? c->fail_status : 400, llhttp_get_error_reason(&c->parser));
    return -1;
  }
  c->rpos = c->hdr_end;
  c->phase = HR__PH_BODY;
  hr__frame_scan_init(&c->fscan);
  if (headers_complete(c) != 0) return -1;
  if (c->msg_complete) c->phase = HR__PH_DONE;
  return 1;
}

/* Feeds body bytes.  Returns 1 when the message completed, 0 when more
 * bytes are needed, -1 to stop. */
static int step_body(hr__conn_t *c) {
  const char *start = c->rbuf + c->rpos, *stop;
  size_t n = c->rlen - c->rpos;
  llhttp_errno_t e;
  if (n == 0) return 0;
  c->gap_start = start;
  c->last_activity = uv_now(c->w->loop);
  e = llhttp_execute(&c->parser, start, n);
  if (c->closed) return -1;
  if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
    stop = llhttp_get_error_pos(&c->parser);
    if (e == HPE_PAUSED)
      llhttp_resume(&c->parser);
    else
      llhttp_resume_after_upgrade(&c->parser);
    c->msg_complete = 1;
  } else if (e == HPE_OK) {
    stop = start + n;
  } else {
    conn_fail(c, c->fail_status ? c->fail_status : 400, llhttp_get_error_reason(&c->parser));
    return -1;
  }
  if (c->req.chunked &&
      hr__frame_scan(&c->fscan, c->gap_start, (size_t)(stop - c->gap_start))) {
    conn_fail(c, 400, "bare CR or LF, obs-fold or empty name in chunked framing");
    return -1;
  }
  c->body_bytes += (uint64_t)(stop - start);
  if (c->body_bytes - c->body_data > c->w->server->opts.max_header_bytes +
                                         c->body_data) {
    conn_fail(c, 413, "chunked framing out of proportion to its data"); /* framing far beyond the data it carries */
    return -1;
  }
  c->rpos = (size_t)(stop - c->rbuf);
  return c->msg_complete ? 1 : 0;
}

static void compact(hr__conn_t *c) {
  if (c->rbuf == NULL || c->closing) return;
  if (c->phase == HR__PH_HEAD) {
    size_t avail = c->rlen - c->msg_start;
    if (c->msg_start == 0) return;
    if (avail) memmove(c->rbuf, c->rbuf + c->msg_start, avail);
    c->rlen = avail;
    c->rpos = c->msg_start = 0;
  } else if (c->phase == HR__PH_BODY && c->rpos > c->hdr_end) {
    /* Body bytes already consumed are dropped; the header section stays. */
    size_t rest = c->rlen - c->rpos;
    if (rest) memmove(c->rbuf + c->hdr_end, c->rbuf + c->rpos, rest);
    c->rlen = c->hdr_end + rest;
    c->rpos = c->hdr_end;
  }
}

static void conn_process(hr__conn_t *c) {
  if (c->in_process || c->closed) return;
  c->in_process = 1;
  /* Route tables and invokers read from here on stay valid until the
   * unlock; an exchange that outlives it keeps its invoker by reference. */
  hr__rcu_read_lock();
  while (!c->closed && !c->closing) {
    if (c->phase == HR__PH_HEAD) {
      int r;
      /* A peer that sends requests without reading the answers: write
       * what is queued, and stop answering while the queue stays above the
       * mark (on_write resumes us). */
      if (hr__out_queued(c) > c->w->server->opts.write_high_water_bytes) {
        hr__out_flush(c);
        if (c->closed ||
            hr__out_queued(c) > c->w->server->opts.write_high_water_bytes)
          break;
      }
      r = step_head(c);
      if (r <= 0) break;
    }
    if (c->phase == HR__PH_BODY) {
      int r = step_body(c);
      if (r < 0) break;
      if (r == 0) break;
      c->phase = HR__PH_DONE;
    }
    if (c->phase == HR__PH_DONE) {
      if (!c->msg_complete) break;
      message_complete(c);
      if (c->closed || c->res.state != HR__RES_DONE) break;
      finish_exchange(c);
    }
  }
  if (c->req.route != NULL && !c->route_ref) {
    hr__invoker_ref((hr_route_t *)c->req.route);
    c->route_ref = 1;
  }
  hr__rcu_read_unlock();
  c->in_process = 0;
  if (c->closed) {
    hr__conn_maybe_free(c);
    return;
  }
  /* The peer sent its last byte: a request cut short cannot complete. */
  if (c->peer_eof && !c->closing && c->phase == HR__PH_HEAD &&
      !c->handler_active) {
    if (c->rbuf != NULL && c->msg_start != c->rlen)
      conn_fail(c, 400, "connection closed in the middle of a request");
    else
      c->closing = 1;
  } else if (c->peer_eof && !c->closing && c->phase == HR__PH_BODY) {
    conn_fail(c, 400, "connection closed in the middle of a body");
  }
  hr__out_flush(c);
  if (c->closed) {
    hr__conn_maybe_free(c);
    return;
  }
  compact(c);
  maybe_finish_close(c);
  if (c->closed) {
    hr__conn_maybe_free(c);
    return;
  }
  update_reading(c);
  release_rbuf(c);
  update_timer(c);
  /* Everything went out at once: a writer waiting for room hears of it on
   * the next loop turn (never inside its own call). */
  if (c->res.want_drain && c->res.drain_cb != NULL && !c->writing &&
      hr__out_queued(c) <= c->w->server->opts.write_high_water_bytes / 2)
    hr__conn_kick(c);
}

void hr__conn_resume(hr__conn_t *c) {
  hr_response_t *res = &c->res;
  if (c->closed) {
    hr__conn_maybe_free(c);
    return;
  }
  if (res->want_drain && res->drain_cb != NULL && !c->writing &&
      hr__out_queued(c) <= c->w->server->opts.write_high_water_bytes / 2) {
    res->want_drain = 0;
    res->drain_cb(res, 0, res->drain_udata);
    if (c->closed) {
      hr__conn_maybe_free(c);
      return;
    }
  }
  conn_process(c);
}

void hr__conn_kick(hr__conn_t *c) {
  hr__worker_t *w = c->w;
  if (c->on_resume || c->in_process || c->closed) return;
  c->on_resume = 1;
  c->resume_next = w->resume_head;
  w->resume_head = c;
  hr__worker_schedule(w);
}

/* ---- timers -------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void arm(hr__conn_t *c, hr__timer_kind_t kind, uint64_t deadline) {
  uint64_t now = uv_now(c->w->loop);
  c->timer_kind = kind;
  c->deadline = deadline;
  if (kind == HR__T_NONE) return;
  if (!uv_is_active((uv_handle_t *)&c->timer) || deadline < c->armed_due) {
    c->armed_due = deadline;
    uv_timer_start(&c->timer, on_timer, deadline > now ? deadline - now : 0, 0);
  }
}

static void update_timer(hr__conn_t *c) {
  const hr_server_options_t *o = &c->w->server->opts;
  if (c->closed) return;
  if (c->closing && c->shutting)
    arm(c, HR__T_LINGER, c->deadline && c->timer_kind == HR__T_LINGER
                             ? c->deadline
                             : uv_now(c->w->loop) + HR__LINGER_MS);
  else if (c->writing)
    arm(c, HR__T_WRITE, c->write_since + o->write_timeout_ms);
  else if (c->phase == HR__PH_HEAD) {
    int bytes = c->rbuf != NULL && c->rlen != c->msg_start;
    if (!bytes && c->requests_served > 0)
      arm(c, HR__T_IDLE, c->head_started + o->keepalive_timeout_ms);
    else
      arm(c, HR__T_HEADER, c->head_started + o->header_timeout_ms);
  } else if (c->phase == HR__PH_BODY)
    arm(c, HR__T_BODY, c->last_activity + o->body_timeout_ms);
  else
    arm(c, HR__T_NONE, 0);
}

static void on_timer(uv_timer_t *t) {
  hr__conn_t *c = t->data;
  uint64_t now = uv_now(c->w->loop);
  if (c->closed || c->timer_kind == HR__T_NONE) return;
  if (now < c->deadline) {
    c->armed_due = c->deadline;
    uv_timer_start(&c->timer, on_timer, c->deadline - now, 0);
    return;
  }
  switch (c->timer_kind) {
    case HR__T_HEADER:
      if (c->rbuf != NULL && c->rlen != c->msg_start && !c->closing) {
        conn_fail(c, 408, "header section not received in time");
        break;
      }
      hr__conn_close(c);
      break;
    case HR__T_BODY:
      if (!c->closing) {
        conn_fail(c, 408, "body not received in time");
        break;
      }
      hr__conn_close(c);
      break;
    default:
      hr__conn_close(c);
      break;
  }
  if (c->closed) {
    hr__conn_maybe_free(c);
    return;
  }
  hr__out_flush(c);
  maybe_finish_close(c);
  if (!c->closed) {
    update_reading(c);
    update_timer(c);
  }
}

/* ---- accepting ----------------------------------------------------------- */

static void on_reject_close(uv_handle_t *h) {
  hr__conn_t *c = h->data;
  hr__worker_t *w = c->w;
  hr__mem_free(&w->mem, c);
}

static void on_spare_close(uv_handle_t *h) {
  hr__worker_t *w = h->data;
  uv_stream_t *waiting = w->spare_waiting;
  w->spare_busy = 0;
  w->spare_waiting = NULL;
  hr__worker_handle_closed(w);
  /* A connection that arrived while the spare handle was busy is still
   * pending in that listener: take it now. */
  if (waiting != NULL && !w->stopping) hr__conn_accept(w, waiting);
}

/* Out of memory for a new connection: accept it into the worker's spare
 * handle and close it, so the client sees a closed connection at once and
 * the listener keeps accepting (libuv stops polling a listener until its
 * pending connection is accepted). */
static void reject_without_memory(hr__worker_t *w, uv_stream_t *listener) {
  if (w->spare_busy) {
    w->spare_waiting = listener;
    return;
  }
  uv_tcp_init(w->loop, &w->spare);
  w->spare.data = w;
  w->spare_busy = 1;
  w->handles_open++;
  uv_accept(listener, (uv_stream_t *)&w->spare);
  uv_close((uv_handle_t *)&w->spare, on_spare_close);
}

void hr__conn_accept(hr__worker_t *w, uv_stream_t *listener) {
  hr_server_t *s = w->server;
  hr__conn_t *c = hr__mem_alloc(&w->mem, sizeof(*c));
  unsigned n;
  if (c == NULL) {
    reject_without_memory(w, listener);
    return;
  }
  memset(c, 0, sizeof(*c));
  c->w = w;
  uv_tcp_init(w->loop, &c->tcp);
  c->tcp.data = c;
  if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
    uv_close((uv_handle_t *)&c->tcp, on_reject_close);
    return;
  }
  n = atomic_fetch_add_explicit(&s->active_conns, 1, memory_order_relaxed);
  if (s->opts.max_connections && n >= s->opts.max_connections) {
    atomic_fetch_sub_explicit(&s->active_conns, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->st_rejected, 1, memory_order_relaxed);
    uv_close((uv_handle_t *)&c->tcp, on_reject_close);
    return;
  }
  c->counted = 1;
  uv_tcp_nodelay(&c->tcp, 1);
  conn_start(c, 2);
}

/* Everything a new connection needs besides its socket. */
static void conn_start(hr__conn_t *c, unsigned handles) {
  hr__worker_t *w = c->w;
  uv_timer_init(w->loop, &c->timer);
  c->timer.data = c;
  c->handles_open = handles;
  c->write_req.data = c;
  c->shutdown_req.data = c;
  llhttp_init(&c->parser, HTTP_REQUEST, &hr__parser_settings);
  c->parser.data = c;
  hr__arena_init(&c->arena, &w->bpool);
  exchange_reset(c);
  c->next = w->conns;
  if (w->conns != NULL) w->conns->prev = c;
  w->conns = c;
  w->nconns++;
  hr__stat_inc(&w->st_accepted);
  c->head_started = c->last_activity = uv_now(w->loop);
  update_reading(c);
  update_timer(c);
}

/* ---- connections without a socket ----------------------------------------- */

hr__conn_t *hr__vconn_new(hr__worker_t *w, hr__sink_cb sink, void *ctx) {
  hr__conn_t *c = hr__mem_alloc(&w->mem, sizeof(*c));
  if (c == NULL) return NULL;
  memset(c, 0, sizeof(*c));
  c->w = w;
  c->sink = sink;
  c->sink_ctx = ctx;
  conn_start(c, 1);
  return c;
}

size_t hr__vconn_feed(hr__conn_t *c, const char *p, size_t n) {
  size_t done = 0, cap = c->w->server->rbuf_size;
  while (done < n && !c->closed && c->reading && !c->closing) {
    size_t room;
    if (c->rbuf == NULL) {
      c->rbuf = hr__pool_get(&c->w->rpool);
      c->rlen = c->rpos = c->msg_start = 0;
      if (c->rbuf == NULL) break;
    }
    room = cap - c->rlen;
    if (room == 0) break;
    if (room > n - done) room = n - done;
    memcpy(c->rbuf + c->rlen, p + done, room);
    c->rlen += room;
    done += room;
    c->last_activity = uv_now(c->w->loop);
    conn_process(c);
  }
  return done;
}

void hr__vconn_eof(hr__conn_t *c) {
  if (c->closed) return;
  c->peer_eof = 1;
  c->reading = 0;
  if (c->handler_active && c->phase == HR__PH_DONE) {
    hr__conn_close(c);
    return;
  }
  conn_process(c);
}

int hr__conn_is_idle(const hr__conn_t *c) {
  return c->phase == HR__PH_HEAD && !c->handler_active && !c->writing &&
         hr__out_queued(c) == 0 && (c->rbuf == NULL || c->rlen == c->msg_start);
}

void hr__conn_drain_close(hr__conn_t *c) {
  if (c->closed) return;
  if (hr__conn_is_idle(c)) {
    hr__conn_close(c);
    return;
  }
  /* Busy: the current response says "Connection: close" if not yet sent,
   * and the connection closes after it (finish_exchange sees stopping). */
}
