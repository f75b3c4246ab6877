/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 as the exchange's protocol (proto.h): the status line and
 * fields (RFC 9112 §4, §5), Content-Length or the chunked coding (§6.1,
 * §7.1) or a close-delimited body (§6.3), 100 Continue, and the
 * connection going on to the next pipelined request when a response is
 * complete.  Everything goes into the connection's output queue (out.c).
 */
#include <string.h>

#include "http/head.h"
#include "server/h1/h1.h"
#include "server/exchange/proto.h"

/* How much of a body still announced an early answer may leave behind for
 * the connection to read and drop (Go's net/http: 256 KiB); more, or a
 * chunked body, ends the connection after the response. */
#define HR__DISCARD_MAX (256 * 1024)

/* Whether the body still to come after an answer is more than the
 * connection will read and drop. */
static int too_much_left(const hr__exchange_t *ex) {
  const hr_request_t *r = &ex->req;
  return !ex->msg_complete &&
         (!r->has_length || r->content_length - ex->body_data > HR__DISCARD_MAX);
}

/* Renders the status line and fields into the output queue.  `length` < 0
 * with chunked == 0 means close-delimited. */
static int h1_head(hr__exchange_t *ex, int status, int64_t length, int chunked) {
  hr__conn_t *c = ex->conn;
  hr_request_t *req = &ex->req;
  hr_response_t *res = &ex->res;
  const hr_route_t *rt = req->route;
  char id_line[HR__RID_LINE_MAX];
  hr__head_t h;
  /* Answered without asking for a body the client holds back until it sees
   * 100 Continue: it will not come, so the connection cannot go on. */
  if (req->continue_pending && !ex->msg_complete) ex->close_after = 1;
  if (length < 0 && !chunked) ex->close_after = 1;
  /* An answer before a body nobody wants (head middleware, the router's
   * own): the connection ends after it when too much of it is left, and
   * the head says so (RFC 9112 §9.6). */
  if (ex->discard_body && ex->phase == HR__PH_BODY && too_much_left(ex)) ex->close_after = 1;
  memset(&h, 0, sizeof(h));
  h.status = status;
  /* No content fields without content (RFC 9110 §15.3.5, §15.4.5). */
  if (rt != NULL && !ex->internal_answer)
    h.route_fields = status == 204 || status == 304 ? rt->head_bodiless : rt->head;
  h.date.ptr = c->w->date;
  h.date.len = c->w->date_len;
  h.fields.ptr = res->fields;
  h.fields.len = res->fields_len;
  h.extra.ptr = id_line;
  h.extra.len = hr__request_id_line(ex, h.fields, id_line);
  h.length = length;
  h.chunked = (unsigned)(chunked != 0);
  h.close = (unsigned)(!req->keep_alive || ex->close_after || hr__worker_ending(c->w));
  h.keep_alive = (unsigned)(!h.close && req->version == 10);
  return hr__out_head(c, &h, (hr_span_t){NULL, 0});
}

/* The chunk-size line of a chunk of `len` bytes (RFC 9112 §7.1). */
static size_t chunk_line(char *line, size_t len) {
  static const char hex[] = "0123456789abcdef";
  char tmp[20], *e = line;
  size_t n = 0;
  do {
    tmp[n++] = hex[len & 15];
    len >>= 4;
  } while (len);
  while (n) *e++ = tmp[--n];
  *e++ = '\r';
  *e++ = '\n';
  return (size_t)(e - line);
}

/* Queues the size line of a chunk of `len` bytes, after the CRLF a file
 * chunk still owes.  0 or HR_ENOMEM. */
static int open_chunk(hr_response_t *res, hr__conn_t *c, size_t len) {
  char line[26];
  size_t n = 0;
  int err;
  if (res->crlf_owed) line[n++] = '\r', line[n++] = '\n';
  n += chunk_line(line + n, len);
  err = hr__out_append(c, line, n);
  if (err == 0) res->crlf_owed = 0;
  return err;
}

static int h1_data(hr__exchange_t *ex, const void *p, size_t n) {
  hr_response_t *res = &ex->res;
  int err = 0;
  if (n == 0) return 0;
  if (res->chunked) err = open_chunk(res, ex->conn, n);
  if (err == 0) err = hr__out_append(ex->conn, p, n);
  if (err == 0 && res->chunked) err = hr__out_append(ex->conn, "\r\n", 2);
  return err;
}

static int h1_borrow(hr__exchange_t *ex, const void *p, size_t n, hr_release_cb release,
                     void *udata) {
  /* Whole responses only: never chunked. */
  return hr__out_borrow(ex->conn, &ex->res, p, n, release, udata);
}

static int h1_file(hr__exchange_t *ex, int fd, uint64_t offset, uint64_t n,
                   hr_file_release_cb release, void *udata) {
  hr_response_t *res = &ex->res;
  int chunk = res->chunked && n > 0, err = 0;
  if (chunk) err = open_chunk(res, ex->conn, (size_t)n);
  /* The chunk's CRLF goes with the next chunk line or the last chunk: once
   * the file is queued nothing may fail that would leave it released and
   * reported not. */
  if (err == 0) err = hr__out_file(ex->conn, res, fd, offset, n, release, udata);
  if (err == 0 && chunk) res->crlf_owed = 1;
  return err;
}

/* The last chunk, with the trailer section the handler gave (RFC 9112
 * §7.1.2): "0" CRLF, the trailer field lines, CRLF. */
static int h1_end(hr__exchange_t *ex) {
  hr_response_t *res = &ex->res;
  int err;
  if (!res->chunked) return 0;
  if (res->trailers_len == 0)
    return res->crlf_owed ? hr__out_append(ex->conn, "\r\n0\r\n\r\n", 7)
                          : hr__out_append(ex->conn, "0\r\n\r\n", 5);
  err = res->crlf_owed ? hr__out_append(ex->conn, "\r\n0\r\n", 5)
                       : hr__out_append(ex->conn, "0\r\n", 3);
  if (err == 0) err = hr__out_append(ex->conn, res->trailers, res->trailers_len);
  if (err == 0) err = hr__out_append(ex->conn, "\r\n", 2);
  return err;
}

static int h1_continue(hr__exchange_t *ex) { return hr__h1_continue(ex->conn); }

static void h1_fail(hr__exchange_t *ex, int status, const char *reason) {
  hr__h1_fail(ex->conn, status, reason);
}

static void h1_done(hr__exchange_t *ex) {
  if (ex->body_cut && too_much_left(ex)) ex->close_after = 1;
  hr__conn_response_done(ex->conn);
}

static void h1_lost(hr__exchange_t *ex) { hr__conn_framing_lost(ex->conn); }

static void h1_cut(hr__exchange_t *ex) { hr__conn_close(ex->conn); }

static size_t h1_queued(const hr__exchange_t *ex) { return hr__out_queued_memory(ex->conn); }

static void h1_kick(hr__exchange_t *ex) { hr__conn_kick(ex->conn); }

/* A 101 answer whose connection was never handed over (lost first): its
 * stream goes with the exchange. */
static void h1_release(hr__exchange_t *ex) {
  if (ex->upgrade == NULL) return;
  hr__stream_discard(ex->upgrade);
  ex->upgrade = NULL;
}

const hr__proto_t hr__h1_proto = {
    .name = "http/1.1",
    .head = h1_head,
    .data = h1_data,
    .borrow = h1_borrow,
    .file = h1_file,
    .end = h1_end,
    .send_continue = h1_continue,
    .answer_status = hr__dispatch_answer_status,
    .fail = h1_fail,
    .done = h1_done,
    .lost = h1_lost,
    .cut = h1_cut,
    .queued = h1_queued,
    .kick = h1_kick,
    .resume_body = h1_kick,
    .peer = hr__conn_ex_peer,
    .transport = hr__conn_ex_transport,
    .stepping = hr__conn_ex_stepping,
    .release = h1_release,
};
