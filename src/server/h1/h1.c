/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 messages on a connection (RFC 9112): one step of the request
 * that the read buffer holds -- the strictness pass and llhttp over the
 * header section, routing at its end, body delivery, dispatch -- then
 * persistence (§9.3) and the server's own answers: 404/405/redirects and
 * automatic OPTIONS on the keep-alive path, errors that end the connection
 * (§9.6: framing in doubt means the connection ends), 100 Continue.
 *
 * The header section is checked by hr__head_scan() before llhttp sees a
 * byte of it and is handed to llhttp in one call; llhttp pauses at each
 * message end, so the next pipelined request is only parsed once the
 * current one is answered.  Handlers therefore always run outside llhttp
 * callbacks, and responses leave in request order.
 */
#include <string.h>

#include "http/head.h"
#include "router/path.h"
#include "server/h1/h1.h"
#include "util/rcu.h"

/* Bytes kept free after a header section for the body to stream through. */
#define HR__BODY_ROOM 4096

/* An error answer that ends the connection, straight into the output;
 * *body_len gets the length of its body. */
static int queue_error(hr__conn_t *c, int status, uint64_t *body_len) {
  char body[HR__ERROR_BODY_MAX], field[256], id_line[HR__RID_LINE_MAX];
  const char *ctype;
  hr_answers_t none;
  const hr_answers_t *an = &none;
  size_t n;
  hr__head_t h;
  int fl;
  if (c->ex != NULL) {
    /* The answers of the table the request was routed by, or would have
     * been (one refused before it was complete: the current one, once). */
    hr__exchange_view(c->ex);
    an = &c->ex->answers;
  } else {
    /* No request (a PROXY header refused): the default table's. */
    hr__rcu_read_lock();
    none = hr__router_table(c->w->server->router)->def.answers;
    hr__rcu_read_unlock();
  }
  n = hr__error_body(an, status, body, &ctype);
  fl = snprintf(field, sizeof field, "Content-Type: %s\r\n", ctype);
  memset(&h, 0, sizeof(h));
  h.status = status;
  h.date.ptr = c->w->date;
  h.date.len = c->w->date_len;
  h.fields.ptr = field;
  h.fields.len = (size_t)fl;
  /* The request's id (generated when its header section was not read
   * whole); no request, no id. */
  if (c->ex != NULL) {
    h.extra.ptr = id_line;
    h.extra.len = hr__request_id_line(c->ex, h.fields, id_line);
  }
  h.length = (int64_t)n;
  h.close = 1;
  *body_len = n;
  return hr__out_head(c, &h, (hr_span_t){body, n});
}

int hr__h1_continue(hr__conn_t *c) {
  hr__head_t h;
  memset(&h, 0, sizeof(h));
  h.status = 100;
  h.length = -1;
  return hr__out_head(c, &h, (hr_span_t){NULL, 0});
}

void hr__h1_fail(hr__conn_t *c, int status, const char *reason) {
  hr__exchange_t *ex = c->ex;
  uint64_t body_len = 0;
  if (c->state == HR__C_CLOSED) return;
  if (c->h2c_ok && c->requests_served == 0 && (ex == NULL || ex->req.version == 0)) {
    /* A listener that takes h2c, and first bytes that are neither its
     * client preface nor an HTTP/1.x request line: the peer may speak
     * HTTP/2 with a preface we did not recognise, which is a connection
     * error there (RFC 9113 §3.4): close, answering neither protocol. */
    hr__stat_inc(&c->w->st_bad);
    hr__log(c->w, HR_LOG_INFO, "closing: neither an HTTP/2 preface nor HTTP/1.x: %s",
            reason != NULL ? reason : "");
    hr__conn_close(c);
    return;
  }
  hr__conn_drain(c);
  if (status < 500) hr__stat_inc(&c->w->st_bad); /* the client's fault: 4xx only */
  hr__log(c->w, HR_LOG_INFO, "answered %d and closing the connection: %s",
          status, reason != NULL ? reason : "");
  if (ex != NULL && ex->res.state == HR__RES_STREAMING) {
    hr__conn_close(c); /* a response under way cannot be replaced */
    return;
  }
  if (ex != NULL && ex->res.state == HR__RES_DONE) {
    hr__conn_drop_exchange(c, HR_ECLOSED); /* close after its answer */
    return;
  }
  if (ex != NULL) ex->t_done = uv_hrtime(); /* complete before a byte is written */
  if (queue_error(c, status, &body_len) != 0) {
    hr__conn_close(c);
    return;
  }
  /* A handler still running hears that the server answered in its place:
   * its response is complete on the wire, later calls answer HR_ECLOSED. */
  if (ex != NULL) {
    ex->sent_status = status;
    ex->sent_bytes = body_len;
  }
  hr__conn_drop_exchange(c, status == 413 ? HR_ETOOLARGE : HR_ECLOSED);
}

void hr__h1_client_left(hr__conn_t *c) {
  hr__exchange_t *ex = c->ex;
  hr__log(c->w, HR_LOG_INFO, "client closed the connection in the middle of a body");
  hr__exchange_client_left(ex);
  if (ex->res.state == HR__RES_STREAMING) {
    hr__conn_close(c); /* a response under way is cut short: a reset */
    return;
  }
  /* Earlier responses still queued go out, then FIN. */
  hr__conn_drain(c);
  hr__conn_drop_exchange(c, HR_ECLOSED);
}

/* Request-line and field checks that need the whole section.  Returns NULL
 * or the reason to answer `*status` and close. */
static const char *check_request(hr__exchange_t *ex, int *status) {
  hr_request_t *r = &ex->req;
  uint8_t major = llhttp_get_http_major(&ex->parser);
  uint8_t minor = llhttp_get_http_minor(&ex->parser);
  hr_span_t authority;
  *status = 400;
  if (major == 0) return "request line without an HTTP version";
  if (major != 1 || minor > 1) {
    *status = 505;
    return "unsupported HTTP version";
  }
  r->version = minor == 0 ? 10 : 11;
  r->is_head = hr_span_eq(r->method, HR_SPAN_LIT("HEAD"));
  r->chunked = (ex->parser.flags & F_CHUNKED) != 0;
  r->has_length = (ex->parser.flags & F_CONTENT_LENGTH) != 0;
  r->content_length = r->has_length ? ex->parser.content_length : 0;
  /* The router's split: one reading of the target for both.  A target it
   * cannot read is answered 400 by the router. */
  hr__target_split(r->target, &r->path, &r->query, &authority);
  r->authority = authority;
  if (r->host_count > 1 || (r->version == 11 && r->host_count == 0))
    return "missing, repeated or invalid Host field";
  if (r->expect_other) {
    *status = 417;
    return "unsupported Expect value";
  }
  r->keep_alive = (unsigned)(r->version == 11 ? !r->conn_close
                                              : (r->conn_keep_alive && !r->conn_close));
  /* RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 is faulty framing: serve
   * the message, then close. */
  if (r->version == 10 && r->has_te) r->keep_alive = 0;
  if (r->te_unsupported) {
    *status = 501;
    return "transfer coding other than chunked";
  }
  if (r->target_bad) return "invalid byte or fragment in the request target";
  if (hr__worker_ending(ex->w)) r->keep_alive = 0;
  return NULL;
}

/* The header section has been parsed: the request line and fields are
 * checked here, the rest is the exchange's (dispatch.c).  Returns 0 to go
 * on, -1 when the connection is failing or must stop. */
static int headers_complete(hr__conn_t *c, hr__exchange_t *ex) {
  int status;
  const char *why = check_request(ex, &status);
  if (why != NULL) {
    hr__h1_fail(c, status, why);
    return -1;
  }
  return hr__dispatch_head(ex);
}

/* Whether the message starting at `p` (n bytes, a complete header
 * section) is a GET or HEAD request, which seldom has a body. */
static int bodiless_method(const char *p, size_t n) {
  return (n > 4 && memcmp(p, "GET ", 4) == 0) || (n > 5 && memcmp(p, "HEAD ", 5) == 0);
}

/* Scans and parses a header section.  Returns 1 to continue with the body,
 * 0 when more bytes are needed, -1 to stop. */
static int step_head(hr__conn_t *c, hr__exchange_t *ex) {
  hr_server_t *s = c->w->server;
  long r;
  llhttp_errno_t e;
  size_t avail = c->rlen - c->msg_start;
  if (avail == 0 || ex->hscan.pos == avail) return 0;
  r = hr__head_scan(&ex->hscan, c->rbuf + c->msg_start, avail, &s->head_limits);
  if (r < 0) {
    hr__h1_fail(c, (int)-r, hr__head_scan_reason((int)-r));
    return -1;
  }
  if (r == 0) return 0;
  /* A request that may carry a body moves into a large buffer now, while
   * nothing points into the small one yet: its body then streams through
   * in large reads.  GET and HEAD (nearly every request) stay small. */
  if (!c->rbuf_large && !bodiless_method(c->rbuf + c->msg_start, avail) &&
      hr__conn_rbuf_grow(c) != 0) {
    hr__h1_fail(c, 503, "out of memory");
    return -1;
  }
  /* Keep room behind the section for the body to stream through. */
  if (c->msg_start > 0 &&
      hr__conn_rbuf_cap(c) - (c->msg_start + (size_t)r) < HR__BODY_ROOM) {
    memmove(c->rbuf, c->rbuf + c->msg_start, avail);
    c->rlen = (uint32_t)avail;
    c->msg_start = 0;
  }
  ex->rpos = c->msg_start;
  ex->hdr_end = c->msg_start + (size_t)r;
  e = hr__parse_head(ex);
  if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
    ex->msg_complete = 1;
    if (e == HPE_PAUSED)
      llhttp_resume(&ex->parser);
    else
      llhttp_resume_after_upgrade(&ex->parser);
  } else if (e != HPE_OK) {
    hr__h1_fail(c, ex->fail_status ? ex->fail_status : 400,
                llhttp_get_error_reason(&ex->parser));
    return -1;
  }
  ex->fields_whole = 1; /* parsed to its end: a request id may be adopted */
  ex->rpos = ex->hdr_end;
  ex->phase = HR__PH_BODY;
  hr__frame_scan_init(&ex->fscan);
  if (headers_complete(c, ex) != 0) return -1;
  if (ex->msg_complete) ex->phase = HR__PH_DONE;
  return 1;
}

/* How many of `n` body bytes llhttp may take in one go.  Chunked framing
 * may grow up to the header limit besides one byte per byte of data
 * (hr__framing_excess); a piece ends one byte past what is left of that,
 * so that an excess is found at the byte that makes it, before anything
 * after it is parsed: the answer (413, or what a fault before that byte
 * gets) is the same wherever reads end. */
static size_t body_piece(const hr__conn_t *c, const hr__exchange_t *ex, size_t n) {
  uint64_t framing = ex->body_bytes - ex->body_data,
           limit = c->w->server->opts.max_header_bytes + ex->body_data;
  uint64_t room = limit > framing ? limit - framing : 0;
  if (!ex->req.chunked || n <= room) return n;
  return (size_t)room + 1;
}

/* Feeds one piece of body bytes from ex->rpos.  Returns 1 when the message
 * completed, 0 when the piece was taken, -1 to stop. */
static int body_step_piece(hr__conn_t *c, hr__exchange_t *ex, size_t n) {
  const char *start = c->rbuf + ex->rpos, *stop;
  llhttp_errno_t e;
  ex->gap_start = start;
  e = llhttp_execute(&ex->parser, start, n);
  if (c->ex != ex || c->state == HR__C_CLOSED) return -1;
  if (e == HPE_PAUSED && ex->fail_status != 0) {
    /* Paused at the end of a trailer line over the limits (431) or of a
     * chunk size line over the body limit (413; parse.c): the framing
     * before it first, then that answer. */
    stop = llhttp_get_error_pos(&ex->parser);
    if (hr__frame_scan(&ex->fscan, ex->gap_start, (size_t)(stop - ex->gap_start)))
      hr__h1_fail(c, 400, "bare CR or LF, obs-fold or empty name in chunked framing");
    else
      hr__h1_fail(c, ex->fail_status, ex->fail_reason);
    return -1;
  }
  if (e == HPE_PAUSED && ex->body_held) {
    /* The handler paused its body inside its callback: the piece ends
     * after the bytes delivered (llhttp goes on from there). */
    stop = llhttp_get_error_pos(&ex->parser);
    llhttp_resume(&ex->parser);
  } else if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
    stop = llhttp_get_error_pos(&ex->parser);
    if (e == HPE_PAUSED)
      llhttp_resume(&ex->parser);
    else
      llhttp_resume_after_upgrade(&ex->parser);
    ex->msg_complete = 1;
  } else if (e == HPE_OK) {
    stop = start + n;
  } else {
    hr__h1_fail(c, ex->fail_status ? ex->fail_status : 400,
                ex->fail_reason ? ex->fail_reason : llhttp_get_error_reason(&ex->parser));
    return -1;
  }
  if (ex->req.chunked &&
      hr__frame_scan(&ex->fscan, ex->gap_start, (size_t)(stop - ex->gap_start))) {
    hr__h1_fail(c, 400, "bare CR or LF, obs-fold or empty name in chunked framing");
    return -1;
  }
  ex->body_bytes += (uint64_t)(stop - start);
  if (hr__framing_excess(ex, ex->body_bytes - ex->body_data)) {
    hr__h1_fail(c, 413, "chunked framing out of proportion to its data");
    return -1;
  }
  ex->rpos = (size_t)(stop - c->rbuf);
  return ex->msg_complete ? 1 : 0;
}

/* Feeds body bytes.  Returns 1 when the message completed, 0 when more
 * bytes are needed, -1 to stop. */
static int step_body(hr__conn_t *c, hr__exchange_t *ex) {
  int r = 0;
  if (ex->req.body_paused) return 0; /* the handler resumes it */
  if (ex->body_held) {
    /* Resumed: llhttp goes on where it stopped, even without a byte more
     * (the message may be complete already). */
    ex->body_held = 0;
    r = body_step_piece(c, ex, 0);
    if (r != 0 || ex->req.body_paused) return r;
  }
  if (ex->rpos == c->rlen) return 0;
  ex->last_activity = uv_now(c->w->loop);
  while (r == 0 && ex->rpos < c->rlen && !ex->req.body_paused)
    r = body_step_piece(c, ex, body_piece(c, ex, c->rlen - ex->rpos));
  return r;
}


/* The response is complete and so is the message: next request. */
static void finish_exchange(hr__conn_t *c, hr__exchange_t *ex) {
  int keep = ex->req.keep_alive && !ex->close_after && !hr__worker_ending(c->w);
  hr_stream_t *up = ex->upgrade;
  c->requests_served++;
  c->msg_start = (uint32_t)ex->rpos;
  c->ex = NULL;
  ex->upgrade = NULL;
  hr__exchange_release(ex);
  if (up != NULL) { /* 101: no HTTP from here on (stream.c) */
    hr__stream_attach(c, up);
    return;
  }
  if (!keep) hr__conn_drain(c);
}

/* Answered before a message that will not complete (a body held back for
 * 100 Continue, a close-delimited response): the connection ends after the
 * answer.  Returns 1 when that is the case. */
static int ended_early(hr__conn_t *c, hr__exchange_t *ex) {
  if (c->ex != ex || c->state != HR__C_OPEN || ex->res.state != HR__RES_DONE ||
      ex->handler_active || !ex->close_after || ex->msg_complete)
    return 0;
  hr__conn_drain(c);
  hr__conn_drop_exchange(c, HR_ECLOSED);
  return 1;
}

static int step(hr__conn_t *c, hr__exchange_t *ex) {
  hr_response_t *res = &ex->res;
  if (ended_early(c, ex)) return 0;
  if (ex->phase == HR__PH_HEAD && step_head(c, ex) <= 0) {
    ended_early(c, ex);
    return 0;
  }
  if (ex->phase == HR__PH_BODY) {
    if (step_body(c, ex) <= 0) {
      ended_early(c, ex);
      return 0;
    }
    ex->phase = HR__PH_DONE;
  }
  if (!ex->msg_complete) return 0;
  hr__dispatch_complete(ex);
  if (c->ex != ex || c->state != HR__C_OPEN || res->state != HR__RES_DONE ||
      ex->handler_active)
    return 0;
  finish_exchange(c, ex);
  return 1;
}

int hr__h1_step(hr__conn_t *c) {
  hr__exchange_t *ex = c->ex;
  int go_on;
  if (c->upgraded) { /* a byte stream now, never parsed */
    hr__stream_process(c);
    return 0;
  }
  if (ex == NULL) {
    if (c->rbuf == NULL || c->rlen == c->msg_start) return 0;
    /* Empty lines before a request line are ignored (RFC 9112 §2.2): a
     * client's stray CRLF after a request is no request of its own. */
    while (c->msg_start < c->rlen &&
           (c->rbuf[c->msg_start] == '\r' || c->rbuf[c->msg_start] == '\n'))
      c->msg_start++;
    if (c->rlen == c->msg_start) return 0;
    /* A peer that sends requests without reading the answers: write what
     * is queued, and stop answering while the queue stays above the mark
     * (the write's completion resumes us). */
    if (hr__out_queued(c) > c->w->server->opts.write_high_water_bytes) {
      int err = hr__out_flush(c);
      if (err != 0) {
        hr__conn_output_failed(c, err);
        return 0;
      }
      if (hr__out_queued(c) > c->w->server->opts.write_high_water_bytes)
        return 0;
    }
    ex = hr__exchange_new(c->w, c, &hr__h1_proto, c->msg_start);
    if (ex == NULL) {
      hr__h1_fail(c, 503, "out of memory");
      return 0;
    }
    c->ex = ex;
    /* The keep-alive wait is over; a later one counts from its own start. */
    hr__timer_clear(&c->timer);
  }
  /* Handlers and callbacks below may end the exchange: it stays valid
   * until the unhold. */
  hr__exchange_hold(ex);
  go_on = step(c, ex);
  hr__exchange_unhold(ex);
  return go_on;
}
