/* SPDX-License-Identifier: MIT */
/*
 * The response API: fields, whole responses (copied or borrowed bodies),
 * streaming with fixed length or the chunked coding (RFC 9112 §7.1), drain
 * and abort callbacks, and completion from other threads.
 */
#include <stdio.h>
#include <string.h>

#include "util/text.h"
#include "server/internal.h"

void hr__res_reset(hr_response_t *res, hr__conn_t *c) {
  memset(res, 0, sizeof(*res));
  res->conn = c;
}



int hr_response_add_field(hr_response_t *res, hr_span_t name, hr_span_t value) {
  hr__conn_t *c = res->conn;
  size_t i, need;
  char *p;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (name.len == 0 || hr__reserved_field(name)) return HR_EINVAL;
  for (i = 0; i < name.len; i++)
    if (!hr__is_tchar((unsigned char)name.ptr[i])) return HR_EINVAL;
  for (i = 0; i < value.len; i++)
    if (value.ptr[i] == '\r' || value.ptr[i] == '\n' || value.ptr[i] == '\0')
      return HR_EINVAL;
  need = name.len + value.len + 4;
  if (res->fields_cap - res->fields_len < need) {
    size_t cap = res->fields_cap ? res->fields_cap * 2 : 256;
    while (cap < res->fields_len + need) cap *= 2;
    p = hr__arena_grow(&c->arena, res->fields, res->fields_len, cap);
    if (p == NULL) return HR_ENOMEM;
    res->fields = p;
    res->fields_cap = cap;
  }
  p = res->fields + res->fields_len;
  memcpy(p, name.ptr, name.len);
  p += name.len;
  *p++ = ':';
  *p++ = ' ';
  memcpy(p, value.ptr, value.len);
  p += value.len;
  *p++ = '\r';
  *p++ = '\n';
  res->fields_len += need;
  return 0;
}

static int status_has_no_body(int status) {
  return (status >= 100 && status < 200) || status == 204 || status == 304;
}

static char *put_uint(char *p, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n) *p++ = tmp[--n];
  return p;
}

/* Renders the status line and fields into the output queue.  `length` < 0
 * with chunked == 0 means close-delimited. */
int hr__res_render_head(hr_response_t *res, int status, int64_t length,
                        int chunked) {
  hr__conn_t *c = res->conn;
  hr_request_t *req = &c->req;
  const hr_route_t *rt = req->route;
  hr_span_t route_head =
      rt != NULL && !c->internal_answer ? rt->head : (hr_span_t){NULL, 0};
  const char *reason = hr_status_reason(status);
  size_t rlen = strlen(reason);
  size_t need = 16 + rlen + route_head.len + c->w->date_len + res->fields_len +
                64 + 30;
  char *p0, *p;
  /* Answered without asking for a body the client holds back until it sees
   * 100 Continue: it will not come, so the connection cannot go on. */
  if (req->continue_pending && !c->msg_complete) c->closing = 1;
  p0 = hr__out_reserve(c, need);
  if (p0 == NULL) return HR_ENOMEM;
  p = p0;
  memcpy(p, "HTTP/1.1 ", 9);
  p += 9;
  p = put_uint(p, (uint64_t)status);
  *p++ = ' ';
  memcpy(p, reason, rlen);
  p += rlen;
  *p++ = '\r';
  *p++ = '\n';
  if (route_head.len) {
    memcpy(p, route_head.ptr, route_head.len);
    p += route_head.len;
  }
  memcpy(p, c->w->date, c->w->date_len);
  p += c->w->date_len;
  if (res->fields_len) {
    memcpy(p, res->fields, res->fields_len);
    p += res->fields_len;
  }
  if (chunked) {
    memcpy(p, "Transfer-Encoding: chunked\r\n", 28);
    p += 28;
  } else if (length >= 0 && status != 204 && !(status >= 100 && status < 200) &&
             !(status == 304 && length == 0)) {
    memcpy(p, "Content-Length: ", 16);
    p += 16;
    p = put_uint(p, (uint64_t)length);
    *p++ = '\r';
    *p++ = '\n';
  }
  if (!req->keep_alive || c->closing || c->w->stopping ||
      (length < 0 && !chunked)) {
    memcpy(p, "Connection: close\r\n", 19);
    p += 19;
  } else if (req->version == 10) {
    memcpy(p, "Connection: keep-alive\r\n", 24);
    p += 24;
  }
  *p++ = '\r';
  *p++ = '\n';
  return hr__out_commit(c, (size_t)(p - p0));
}

static int check_send(hr_response_t *res, int status, size_t len) {
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (status < 200 || status > 599) return HR_EINVAL;
  if (len > 0 && (status == 204 || status == 304)) return HR_EINVAL;
  return 0;
}

/* Completion shared by every finishing call. */
static int finish(hr_response_t *res) {
  hr__conn_t *c = res->conn;
  res->state = HR__RES_DONE;
  hr__conn_response_done(c);
  return 0;
}

/* A response completed after its connection was lost. */
static int finish_closed(hr_response_t *res) {
  hr__conn_t *c = res->conn;
  res->state = HR__RES_DONE;
  c->handler_active = 0;
  hr__conn_maybe_free(c);
  return HR_ECLOSED;
}

/* The response cannot be framed any more (out of memory with part of it
 * queued, or a short fixed-length body): complete it and close the
 * connection.  The response is marked complete first so that closing does not
 * report an abort to the handler that is calling us. */
static int fail_framing(hr_response_t *res, int err) {
  hr__conn_t *c = res->conn;
  res->state = HR__RES_DONE;
  c->handler_active = 0;
  c->closing = 1;
  hr__conn_close(c);
  hr__conn_maybe_free(c);
  return err;
}

int hr_response_send(hr_response_t *res, int status, const void *body,
                     size_t len) {
  hr__conn_t *c = res->conn;
  int err = check_send(res, status, len);
  if (err != 0) return err;
  if (c->aborted) return finish_closed(res);
  res->status = status;
  err = hr__res_render_head(res, status, (int64_t)len, 0);
  if (err == 0 && len > 0 && !c->req.is_head) err = hr__out_append(c, body, len);
  /* Framing is broken once part of a head is queued. */
  if (err != 0) return fail_framing(res, HR_ENOMEM);
  return finish(res);
}

int hr_response_send_borrowed(hr_response_t *res, int status, const void *body,
                              size_t len, hr_release_cb release, void *udata) {
  hr__conn_t *c = res->conn;
  int err = check_send(res, status, len);
  if (err != 0) return err;
  if (c->aborted) return finish_closed(res);
  res->status = status;
  err = hr__res_render_head(res, status, (int64_t)len, 0);
  if (err == 0) {
    if (len > 0 && !c->req.is_head)
      err = hr__out_borrow(c, body, len, release, udata);
    else if (release != NULL)
      /* Nothing to write: hand it back through the queue so it is still
       * released later, never inside this call. */
      err = hr__out_borrow(c, body, 0, release, udata);
  }
  if (err != 0) return fail_framing(res, HR_ENOMEM);
  return finish(res);
}

int hr_response_start(hr_response_t *res, int status, int64_t content_length) {
  hr__conn_t *c = res->conn;
  int chunked = 0, err;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (status < 200 || status > 599) return HR_EINVAL;
  if (content_length < HR_LENGTH_UNKNOWN) return HR_EINVAL;
  if (c->aborted) {
    res->state = HR__RES_STREAMING;
    return HR_ECLOSED;
  }
  res->status = status;
  res->no_body = c->req.is_head || status_has_no_body(status);
  if (status_has_no_body(status)) {
    if (content_length > 0) return HR_EINVAL;
    content_length = 0;
  }
  if (content_length == HR_LENGTH_UNKNOWN) {
    if (c->req.version >= 11)
      chunked = 1;
    else
      c->closing = 1; /* close-delimited (RFC 9112 §6.3) */
  }
  res->content_length = content_length;
  /* A HEAD response announces the coding but carries no chunks. */
  res->chunked = (unsigned)(chunked && !res->no_body);
  err = hr__res_render_head(res, status, content_length, chunked);
  if (err != 0) return fail_framing(res, err);
  res->state = HR__RES_STREAMING;
  hr__conn_kick(c);
  return 0;
}

int hr_response_write(hr_response_t *res, const void *data, size_t len) {
  hr__conn_t *c = res->conn;
  size_t queued;
  int err = 0;
  if (res->state != HR__RES_STREAMING) return HR_ESTATE;
  if (c->aborted) return HR_ECLOSED;
  if (res->content_length >= 0 &&
      (uint64_t)res->content_length - res->written < len)
    return HR_EINVAL;
  if (len == 0) return 0;
  if (res->no_body) {
    res->written += len;
    return 0;
  }
  /* Above the mark: refuse, so that queued output stays within the mark
   * plus one write. */
  queued = hr__out_queued(c);
  if (queued > c->w->server->opts.write_high_water_bytes) {
    res->want_drain = 1;
    return HR_EAGAIN;
  }
  if (res->chunked) {
    char line[24], *e = line;
    static const char hex[] = "0123456789abcdef";
    char tmp[20];
    size_t n = 0, v = len;
    do {
      tmp[n++] = hex[v & 15];
      v >>= 4;
    } while (v);
    while (n) *e++ = tmp[--n];
    *e++ = '\r';
    *e++ = '\n';
    err = hr__out_append(c, line, (size_t)(e - line));
  }
  if (err == 0) err = hr__out_append(c, data, len);
  if (err == 0 && res->chunked) err = hr__out_append(c, "\r\n", 2);
  if (err != 0) {
    /* Part of a chunk may be queued: the framing is lost.  The handler still
     * ends the response, which then answers HR_ECLOSED. */
    c->closing = 1;
    hr__conn_close(c);
    return HR_ENOMEM;
  }
  res->written += len;
  hr__conn_kick(c);
  return 0;
}

int hr_response_on_drain(hr_response_t *res, hr_drain_cb cb, void *udata) {
  if (res->state == HR__RES_DONE) return HR_ESTATE;
  res->drain_cb = cb;
  res->drain_udata = udata;
  return 0;
}

int hr_response_on_abort(hr_response_t *res, hr_abort_cb cb, void *udata) {
  if (res->state == HR__RES_DONE) return HR_ESTATE;
  res->abort_cb = cb;
  res->abort_udata = udata;
  return 0;
}

int hr_response_end(hr_response_t *res) {
  hr__conn_t *c = res->conn;
  if (res->state != HR__RES_STREAMING) return HR_ESTATE;
  if (c->aborted) return finish_closed(res);
  if (res->content_length >= 0 && !res->no_body &&
      res->written != (uint64_t)res->content_length) {
    /* The declared length was not met: the message cannot be framed. */
    return fail_framing(res, HR_EINVAL);
  }
  if (res->chunked && hr__out_append(c, "0\r\n\r\n", 5) != 0)
    return fail_framing(res, HR_ENOMEM);
  return finish(res);
}

hr_request_t *hr_response_request(hr_response_t *res) {
  return &res->conn->req;
}

int hr_response_post(hr_response_t *res, hr_post_cb cb, void *udata) {
  hr__worker_t *w = res->conn->w;
  const hr_allocator_t *a = w->mem.a;
  hr__post_t *p;
  if (cb == NULL) return HR_EINVAL;
  /* Not through w->mem: its counter has a single writer, the worker. */
  p = a->malloc(a->ctx, sizeof(*p));
  if (p == NULL) return HR_ENOMEM;
  p->res = res;
  p->cb = cb;
  p->udata = udata;
  uv_mutex_lock(&w->post_lock);
  p->next = w->posts;
  w->posts = p;
  uv_mutex_unlock(&w->post_lock);
  /* uv_async_send is thread-safe; the mutex orders the list for the worker. */
  uv_async_send(&w->async);
  return 0;
}
