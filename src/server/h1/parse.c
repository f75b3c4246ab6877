/* SPDX-License-Identifier: MIT */
/*
 * The llhttp side of a connection: the parser callbacks that collect the
 * request line and field lines as spans into the read buffer (trimming
 * values, noting Host, Connection, Expect and Transfer-Encoding, refusing
 * what llhttp 8.1 lets through), the trailer section of a chunked body
 * (copied, bounded, kept for the handler), body delivery (buffered,
 * streamed or discarded, with the chunked framing checked between pieces),
 * and handing a checked header section to llhttp.
 */
#include <string.h>

#include "server/h1/h1.h"
#include "util/text.h"

/* ---- llhttp callbacks ---------------------------------------------------- */

static hr__exchange_t *ex_of(llhttp_t *p) { return p->data; }

/* Appends a data span, merging with `s` when contiguous (the header section
 * is parsed in one call, so a span normally arrives in one piece). */
static void span_extend(hr_span_t *s, const char *at, size_t len) {
  if (s->ptr == NULL || s->len == 0)
    s->ptr = at, s->len = len;
  else
    s->len = (size_t)(at + len - s->ptr);
}

static int on_url(llhttp_t *p, const char *at, size_t len) {
  hr__exchange_t *c = ex_of(p);
  size_t i;
  /* llhttp 8.1's lenient URL parser lets through bytes a URI cannot hold
   * (RFC 3986 §2) and fragments (RFC 9112 §3.2): refuse controls, space,
   * DEL and '#'.  Bytes from 0x80 (raw UTF-8) pass: the router matches them
   * as their percent-encoded form and refuses them in an authority.  The
   * path's stricter alphabet (pchar) is the router's check, made on the
   * path alone (an absolute-form authority may hold "[::1]"). */
  for (i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)at[i];
    if (ch <= 0x20 || ch == 0x7f || ch == '#') c->req.target_bad = 1;
  }
  span_extend(&c->req.target, at, len);
  return 0;
}

/* The version is known from here on, also when the header section that
 * follows is refused (the access log then names the whole request line);
 * check_request() checks it again with the section. */
static int on_version_complete(llhttp_t *p) {
  hr__exchange_t *c = ex_of(p);
  if (llhttp_get_http_major(p) == 1 && llhttp_get_http_minor(p) <= 1)
    c->req.version = llhttp_get_http_minor(p) == 0 ? 10 : 11;
  return 0;
}

static int new_field(hr__exchange_t *c) {
  hr_request_t *r = &c->req;
  if (r->nfields == r->fields_cap) {
    size_t cap = r->fields_cap ? r->fields_cap * 2 : 16;
    hr_field_t *f = hr__arena_grow(&c->arena, r->fields,
                                   r->fields_cap * sizeof(*f), cap * sizeof(*f));
    if (f == NULL) {
      c->fail_status = 503;
      llhttp_set_error_reason(&c->parser, "out of memory");
      return HPE_USER;
    }
    r->fields = f;
    r->fields_cap = cap;
  }
  memset(&r->fields[r->nfields++], 0, sizeof(hr_field_t));
  return 0;
}

/* ---- trailer fields (RFC 9112 §7.1.2) ------------------------------------- */

/* A trailer section arrives with the body's pieces, whose bytes the read
 * buffer does not keep (a streamed body moves through it): each name and
 * value is copied into the arena as it comes.  The section is bounded as a
 * header section is, by max_header_bytes (names and values, 4 bytes more
 * a line for ": " and CRLF) and max_header_fields; past either, 431.  What
 * goes over is not copied, and the limits are judged at the end of each
 * line, where the bytes alone decide it: a fault inside the line (which
 * llhttp finds first), or in the framing before it (which h1.c scans up
 * to where llhttp paused), is answered the same however reads split it. */
static int trailer_piece(hr__exchange_t *c, hr_span_t *s, const char *at, size_t len) {
  const hr_server_options_t *o = &c->w->server->opts;
  char *p;
  c->trailer_bytes += len;
  if (c->trailer_bytes > o->max_header_bytes || len == 0) return 0;
  p = hr__arena_grow(&c->arena, (char *)(uintptr_t)s->ptr, s->len, s->len + len);
  if (p == NULL) {
    c->fail_status = 503;
    llhttp_set_error_reason(&c->parser, "out of memory");
    return HPE_USER;
  }
  memcpy(p + s->len, at, len);
  s->ptr = p;
  s->len += len;
  return 0;
}

static int trailer_field(hr__exchange_t *c, const char *at, size_t len) {
  if (!c->trailer_open) {
    c->trailer_open = 1;
    memset(&c->trailer_cur, 0, sizeof(c->trailer_cur));
  }
  return trailer_piece(c, &c->trailer_cur.name, at, len);
}

/* The end of a trailer field line: over the limits, 431; else the field
 * is kept (hr__request_add_trailer drops the forbidden ones). */
static int trailer_line_end(hr__exchange_t *c) {
  const hr_server_options_t *o = &c->w->server->opts;
  hr_span_t v = c->trailer_cur.value;
  c->trailer_open = 0;
  c->trailer_lines++;
  c->trailer_bytes += 4;
  if (c->trailer_lines > o->max_header_fields || c->trailer_bytes > o->max_header_bytes) {
    /* llhttp pauses right after the line: h1.c judges the framing before
     * it, then answers 431. */
    c->fail_status = 431;
    c->fail_reason = "trailer section longer than the limit";
    return HPE_PAUSED;
  }
  while (v.len && (v.ptr[0] == ' ' || v.ptr[0] == '\t')) v.ptr++, v.len--;
  while (v.len && (v.ptr[v.len - 1] == ' ' || v.ptr[v.len - 1] == '\t')) v.len--;
  if (hr__request_add_trailer(c, c->trailer_cur.name, v) != 0) {
    c->fail_status = 503;
    c->fail_reason = "out of memory";
    return HPE_USER;
  }
  return 0;
}

/* ---- field lines ---------------------------------------------------------- */

static int on_header_field(llhttp_t *p, const char *at, size_t len) {
  hr__exchange_t *c = ex_of(p);
  hr_request_t *r = &c->req;
  if (c->phase != HR__PH_HEAD) return trailer_field(c, at, len);
  if (r->nfields == 0 || r->in_field_value) {
    int err = new_field(c);
    if (err) return err;
    r->in_field_value = 0;
  }
  span_extend(&r->fields[r->nfields - 1].name, at, len);
  return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len) {
  hr__exchange_t *c = ex_of(p);
  hr_request_t *r = &c->req;
  if (c->phase != HR__PH_HEAD) return trailer_piece(c, &c->trailer_cur.value, at, len);
  r->in_field_value = 1;
  span_extend(&r->fields[r->nfields - 1].value, at, len);
  return 0;
}

/* Whether a comma-separated list of tokens holds `token` (RFC 9110 §5.6.1). */
static int has_token(hr_span_t list, hr_span_t token) {
  hr_span_t item;
  while (hr__list_next(&list, &item))
    if (hr_span_eq_nocase(item, token)) return 1;
  return 0;
}


/* Whether every coding in a Transfer-Encoding value is "chunked" (the only
 * one hroute decodes; RFC 9112 §6.1 answers others with 501).  Empty list
 * elements are no coding (RFC 9110 §5.6.1: a recipient ignores them), as
 * llhttp reads them too.  llhttp itself rejects lists where chunked is not
 * last. */
static int only_chunked(hr_span_t v) {
  hr_span_t item;
  while (hr__list_next(&v, &item))
    if (item.len != 0 && !hr_span_eq_nocase(item, HR_SPAN_LIT("chunked"))) return 0;
  return 1;
}

static int on_header_value_complete(llhttp_t *p) {
  hr__exchange_t *c = ex_of(p);
  hr_request_t *r = &c->req;
  hr_field_t *f;
  if (c->phase != HR__PH_HEAD) return trailer_line_end(c);
  if (r->nfields == 0) return 0;
  f = &r->fields[r->nfields - 1];
  if (!r->in_field_value) { /* a field with an empty value */
    f->value.ptr = NULL;
    f->value.len = 0;
  }
  r->in_field_value = 1;
  while (f->value.len && (f->value.ptr[0] == ' ' || f->value.ptr[0] == '\t'))
    f->value.ptr++, f->value.len--;
  while (f->value.len && (f->value.ptr[f->value.len - 1] == ' ' ||
                          f->value.ptr[f->value.len - 1] == '\t'))
    f->value.len--;
  switch (f->name.len) {
    case 4:
      if (hr_span_eq_nocase(f->name, HR_SPAN_LIT("Host"))) {
        r->host_count++;
        r->host = f->value;
        /* Host = uri-host [ ":" port ]; empty when the target has no
         * authority (RFC 9110 §7.2). */
        if (f->value.len && !hr__authority_ok(f->value))
          r->host_count = 2; /* answered 400 */
      }
      break;
    case 6:
      if (hr_span_eq_nocase(f->name, HR_SPAN_LIT("Expect"))) {
        if (hr_span_eq_nocase(f->value, HR_SPAN_LIT("100-continue")))
          r->expect_continue = 1;
        else
          r->expect_other = 1;
      }
      break;
    case 17:
      if (hr_span_eq_nocase(f->name, HR_SPAN_LIT("Transfer-Encoding"))) {
        r->has_te = 1;
        if (!only_chunked(f->value)) r->te_unsupported = 1;
      }
      break;
    case 10:
      if (hr_span_eq_nocase(f->name, HR_SPAN_LIT("Connection"))) {
        if (has_token(f->value, HR_SPAN_LIT("close"))) r->conn_close = 1;
        if (has_token(f->value, HR_SPAN_LIT("keep-alive"))) r->conn_keep_alive = 1;
        if (has_token(f->value, HR_SPAN_LIT("upgrade"))) r->conn_upgrade = 1;
      }
      break;
    default:
      break;
  }
  return 0;
}

static int on_header_field_complete(llhttp_t *p) {
  hr__exchange_t *c = ex_of(p);
  /* A value may be empty, in which case on_header_value never runs: mark the
   * name as finished so the next name starts a new field. */
  if (c->phase == HR__PH_HEAD) c->req.in_field_value = 0;
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len) {
  hr__exchange_t *c = ex_of(p);
  hr_request_t *r = &c->req;
  if (r->chunked) {
    if (hr__frame_scan(&c->fscan, c->gap_start, (size_t)(at - c->gap_start))) {
      c->fail_status = 400;
      llhttp_set_error_reason(p, "bare CR or LF, obs-fold or empty name in chunked framing");
      return HPE_USER;
    }
    hr__frame_scan_after_data(&c->fscan);
    c->gap_start = at + len;
  }
  switch (hr__dispatch_body(c, at, len)) {
    case 0:
      /* Paused by the handler: llhttp stops after this piece (h1.c,
       * body_step_piece), and goes on from there at the resume. */
      if (r->body_paused) {
        c->body_held = 1;
        return HPE_PAUSED;
      }
      return 0;
    case 413:
      c->fail_status = 413;
      llhttp_set_error_reason(p, "body larger than the limit");
      return HPE_USER;
    case 503:
      c->fail_status = 503;
      llhttp_set_error_reason(p, "out of memory");
      return HPE_USER;
    default: /* the exchange is gone (its handler closed the connection) */
      return HPE_USER;
  }
}

/* A chunk's size line (RFC 9112 §7.1): a size that would take the body
 * past its limit is refused at the line, before any of its data, as a
 * Content-Length over the limit is at the header section. */
static int on_chunk_header(llhttp_t *p) {
  hr__exchange_t *c = ex_of(p);
  if (p->content_length > c->body_limit - (c->body_data < c->body_limit ? c->body_data
                                                                          : c->body_limit)) {
    /* llhttp pauses right after the size line: h1.c judges the framing
     * before it (llhttp 8.1 does not check the CRLF after chunk data), then
     * answers 413, so the answer does not depend on where reads end. */
    c->fail_status = 413;
    c->fail_reason = "chunk larger than the body limit";
    return HPE_PAUSED;
  }
  return 0;
}

static int on_message_complete(llhttp_t *p) {
  (void)p;
  /* Stop after each message: the next one is parsed only after this one is
   * answered, and only after hr__head_scan() has checked its bytes. */
  return HPE_PAUSED;
}

const llhttp_settings_t hr__parser_settings = {
    .on_url = on_url,
    .on_version_complete = on_version_complete,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value_complete = on_header_value_complete,
    .on_body = on_body,
    .on_chunk_header = on_chunk_header,
    .on_message_complete = on_message_complete,
};

/*
 * Hands the checked header section to llhttp.  llhttp 8 knows a fixed list
 * of methods, while any token is a method (RFC 9110 §9.1), so hroute reads
 * the method itself and gives llhttp "GET " in its place: request framing
 * does not depend on the method (RFC 9112 §6.3; CONNECT tunnels are not
 * supported), and every span llhttp reports still points into the buffer.
 */
llhttp_errno_t hr__parse_head(hr__exchange_t *c) {
  const char *rbuf = c->conn->rbuf;
  const char *p = rbuf + c->conn->msg_start, *end = rbuf + c->hdr_end, *m;
  llhttp_errno_t e;
  while (end - p >= 2 && p[0] == '\r' && p[1] == '\n') p += 2; /* RFC 9112 §2.2 */
  for (m = p; m < end && hr__is_tchar((unsigned char)*m); m++)
    ;
  if (m == p || m == end || *m != ' ') return HPE_INVALID_METHOD;
  c->req.method.ptr = p;
  c->req.method.len = (size_t)(m - p);
  /* Each message starts from a fresh parser: nothing of an earlier one (an
   * Upgrade request leaves llhttp in upgrade mode) carries over.  This is
   * the parser's only initialisation (hr__exchange_new leaves it). */
  llhttp_init(&c->parser, HTTP_REQUEST, &hr__parser_settings);
  c->parser.data = c;
  e = llhttp_execute(&c->parser, "GET ", 4);
  if (e != HPE_OK) return e;
  e = llhttp_execute(&c->parser, m + 1, (size_t)(end - m - 1));
  if (e != HPE_OK && e != HPE_PAUSED && e != HPE_PAUSED_UPGRADE) {
    /* A version read before an error inside the request line ("HTTP/1.10",
     * "HTTP/1.1 x") was not a version: the line was not whole. */
    const char *at = llhttp_get_error_pos(&c->parser);
    const char *eol = memchr(m, '\n', (size_t)(end - m));
    if (at == NULL || eol == NULL || at <= eol) c->req.version = 0;
  }
  return e;
}

