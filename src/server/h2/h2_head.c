/* SPDX-License-Identifier: MIT */
/*
 * A request stream's header section over HTTP/2 (RFC 9113 §8.2, §8.3):
 * nghttp2's header callbacks collect the decoded list into the exchange's
 * request -- pseudo-header fields into method, target and host (§8.3.1),
 * the others as fields, cookie crumbs joined (§8.2.3), the list bounded by
 * max_header_bytes and max_header_fields as §6.5.2 counts it (431) --
 * then the section is checked and routed (dispatch.c).  A trailing
 * HEADERS frame goes to the request's trailers.  The session is h2.c's.
 */
#include <string.h>

#include "router/path.h"
#include "server/h2/h2.h"
#include "util/text.h"

static int add_field(hr__exchange_t *ex, hr_span_t name, hr_span_t value) {
  hr_request_t *r = &ex->req;
  if (r->nfields == r->fields_cap) {
    size_t cap = r->fields_cap ? r->fields_cap * 2 : 16;
    hr_field_t *f = hr__arena_grow(&ex->arena, r->fields, r->fields_cap * sizeof(*f),
                                   cap * sizeof(*f));
    if (f == NULL) return HR_ENOMEM;
    r->fields = f;
    r->fields_cap = cap;
  }
  r->fields[r->nfields].name = name;
  r->fields[r->nfields].value = value;
  r->nfields++;
  return 0;
}

static hr_span_t copy_span(hr__exchange_t *ex, const uint8_t *p, size_t n) {
  hr_span_t s = {NULL, 0};
  char *d = hr__arena_alloc(&ex->arena, n ? n : 1);
  if (d == NULL) return s;
  memcpy(d, p, n);
  s.ptr = d;
  s.len = n;
  return s;
}

/* A pseudo-header field (RFC 9113 §8.3.1); nghttp2 has checked that each
 * comes once, before the regular fields, and that none is unknown. */
static int pseudo(hr__exchange_t *ex, hr_span_t name, hr_span_t value) {
  hr_request_t *r = &ex->req;
  if (hr_span_eq(name, HR_SPAN_LIT(":method")))
    r->method = value;
  else if (hr_span_eq(name, HR_SPAN_LIT(":path")))
    r->target = value;
  else if (hr_span_eq(name, HR_SPAN_LIT(":authority"))) {
    r->host = value;
    r->host_count = 1;
  }
  return 0;
}

/* What hroute reads of a regular field (as parse.c does for HTTP/1.1). */
static void known_field(hr__h2s_t *st, hr_request_t *r, hr_span_t name, hr_span_t value) {
  if (hr_span_eq(name, HR_SPAN_LIT("expect"))) {
    if (hr_span_eq_nocase(value, HR_SPAN_LIT("100-continue")))
      r->expect_continue = 1;
    else
      r->expect_other = 1;
  } else if (hr_span_eq(name, HR_SPAN_LIT("content-length"))) {
    /* nghttp2 has checked it is digits and agrees with the DATA frames. */
    uint64_t v = 0;
    size_t i;
    for (i = 0; i < value.len && v < (UINT64_MAX - 9) / 10; i++)
      v = v * 10 + (uint64_t)(value.ptr[i] - '0');
    r->has_length = 1;
    r->content_length = v;
  } else if (hr_span_eq(name, HR_SPAN_LIT("cookie"))) {
    if (st->cookie_seen) st->cookie = 1;
    st->cookie_seen = 1;
  } else if (hr_span_eq(name, HR_SPAN_LIT("host"))) {
    if (r->host_count == 0) r->host = value; /* :authority wins (§8.3.1) */
    st->host_field = value;
  }
}

/* A field of the request's trailer section (RFC 9113 §8.1: a HEADERS
 * frame with END_STREAM after the body; nghttp2 has refused pseudo-header
 * and connection-specific fields in it).  Bounded as the head is, per
 * section (§6.5.2): past max_header_bytes or max_header_fields the rest is
 * dropped and the stream answered 431 at the frame's end (on_frame_recv);
 * the forbidden fields are dropped (hr__request_add_trailer). */
static int on_trailer(hr__h2s_t *st, const uint8_t *name, size_t namelen, const uint8_t *value,
                      size_t valuelen) {
  hr__exchange_t *ex = st->ex;
  const hr_server_options_t *o = &ex->w->server->opts;
  hr_span_t n, v;
  if (st->fail_status) return 0;
  if (st->list_bytes > o->max_header_bytes || ++st->trailer_lines > o->max_header_fields) {
    st->fail_status = 431;
    return 0;
  }
  n = copy_span(ex, name, namelen);
  v = copy_span(ex, value, valuelen);
  if (n.ptr == NULL || v.ptr == NULL || hr__request_add_trailer(ex, n, v) != 0)
    st->fail_status = 503;
  return 0;
}

int hr__h2_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
  hr__h2_t *h2 = ud;
  const hr_server_options_t *o = &h2->c->w->server->opts;
  hr__h2s_t *st = hr__h2_stream_of(h2, frame->hd.stream_id);
  hr__exchange_t *ex;
  hr_span_t n, v;
  (void)ng;
  (void)flags;
  if (st == NULL || st->ex == NULL) return 0;
  ex = st->ex;
  st->list_bytes += namelen + valuelen + 32;
  if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return on_trailer(st, name, namelen, value, valuelen);
  if (st->fail_status) return 0;
  if (st->list_bytes > o->max_header_bytes || ex->req.nfields >= o->max_header_fields) {
    st->fail_status = 431; /* the rest is decoded by nghttp2 and dropped */
    return 0;
  }
  n = copy_span(ex, name, namelen);
  v = copy_span(ex, value, valuelen);
  if (n.ptr == NULL || v.ptr == NULL) {
    st->fail_status = 503;
    return 0;
  }
  if (namelen > 0 && name[0] == ':') return pseudo(ex, n, v);
  if (add_field(ex, n, v) != 0) {
    st->fail_status = 503;
    return 0;
  }
  known_field(st, &ex->req, n, v);
  return 0;
}

int hr__h2_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *ud) {
  hr__h2_t *h2 = ud;
  hr__conn_t *c = h2->c;
  hr__h2s_t *st;
  hr__exchange_t *ex;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_HEADERS &&
      (st = hr__h2_stream_of(h2, frame->hd.stream_id)) != NULL) {
    st->list_bytes = 0; /* a trailer section: bounded on its own (§6.5.2) */
    return 0;
  }
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  st = hr__slab_alloc(&c->w->slab, sizeof(*st));
  ex = st != NULL ? hr__exchange_new(c->w, c, &hr__h2_proto, 0) : NULL;
  if (ex == NULL) {
    hr__slab_free(&c->w->slab, st);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM INTERNAL_ERROR */
  }
  memset(st, 0, sizeof(*st));
  st->h2 = h2;
  st->ex = ex;
  st->id = frame->hd.stream_id;
  ex->h2s = st;
  ex->phase = HR__PH_HEAD;
  st->next = h2->streams;
  if (h2->streams != NULL) h2->streams->prev = st;
  h2->streams = st;
  h2->nstreams++;
  nghttp2_session_set_stream_user_data(ng, st->id, st);
  return 0;
}

/* The cookie field may come in crumbs (RFC 9113 §8.2.3): joined with "; "
 * into the first, the others removed, so a handler sees one field. */
static int join_cookies(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  size_t i, out = 0, len = 0, at = 0;
  int joined = 0;
  char *p;
  for (i = 0; i < r->nfields; i++)
    if (hr_span_eq(r->fields[i].name, HR_SPAN_LIT("cookie"))) len += r->fields[i].value.len + 2;
  p = hr__arena_alloc(&ex->arena, len);
  if (p == NULL) return HR_ENOMEM;
  len = 0;
  for (i = 0; i < r->nfields; i++) {
    if (!hr_span_eq(r->fields[i].name, HR_SPAN_LIT("cookie"))) {
      r->fields[out++] = r->fields[i];
      continue;
    }
    if (!joined) {
      joined = 1;
      at = out;
      r->fields[out++] = r->fields[i];
    } else {
      p[len++] = ';';
      p[len++] = ' ';
    }
    memcpy(p + len, r->fields[i].value.ptr, r->fields[i].value.len);
    len += r->fields[i].value.len;
  }
  r->fields[at].value.ptr = p;
  r->fields[at].value.len = len;
  r->nfields = out;
  return 0;
}

/* Checks of the request head nghttp2 does not make.  NULL, or the reason
 * to answer *status (400). */
static const char *check_head(hr__h2s_t *st, hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  hr_span_t authority;
  size_t i;
  if (r->method.len == 0 || r->target.len == 0) return "CONNECT is not supported";
  for (i = 0; i < r->target.len; i++) {
    unsigned char ch = (unsigned char)r->target.ptr[i];
    if (ch <= 0x20 || ch == 0x7f || ch == '#') return "invalid byte or fragment in :path";
  }
  if (hr__target_split(r->target, &r->path, &r->query, &authority) != 0 ||
      authority.len != 0)
    return "invalid :path";
  if (r->host.len && !hr__authority_ok(r->host)) return "invalid :authority";
  if (st->host_field.ptr != NULL && r->host_count == 1 &&
      !hr_span_eq_nocase(st->host_field, r->host))
    return ":authority and Host differ";
  if (r->expect_other) return "unsupported Expect value";
  return NULL;
}

/* The request's header section is complete: checked, then routed and, for
 * a streaming route, handed to its handler. */
void hr__h2_head_done(hr__h2s_t *st) {
  hr__exchange_t *ex = st->ex;
  hr_request_t *r = &ex->req;
  const char *why;
  hr__exchange_hold(ex);
  r->version = 20;
  r->keep_alive = 1;
  r->is_head = hr_span_eq(r->method, HR_SPAN_LIT("HEAD"));
  if (st->fail_status) {
    hr__h2_fail(ex, st->fail_status, st->fail_status == 431 ? "header list too large"
                                                             : "out of memory");
    goto out;
  }
  ex->fields_whole = 1; /* every field decoded and kept: an id may be adopted */
  if (st->cookie && join_cookies(ex) != 0) {
    hr__h2_fail(ex, 503, "out of memory");
    goto out;
  }
  if ((why = check_head(st, ex)) != NULL) {
    hr__h2_fail(ex, r->expect_other ? 417 : 400, why);
    goto out;
  }
  /* A handler reads the host as it would over HTTP/1.1: :authority stands
   * in for the Host field a client left out (RFC 9113 §8.3.1). */
  if (st->host_field.ptr == NULL && r->host_count == 1 &&
      add_field(ex, HR_SPAN_LIT("host"), r->host) != 0) {
    hr__h2_fail(ex, 503, "out of memory");
    goto out;
  }
  ex->phase = HR__PH_BODY;
  if (hr__dispatch_head(ex) != 0 || hr__ex_gone(ex)) goto out;
  if (ex->msg_complete) {
    ex->phase = HR__PH_DONE;
    hr__h2_ready_push(st->h2, st);
  }
out:
  hr__exchange_unhold(ex);
}
