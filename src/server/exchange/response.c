/* SPDX-License-Identifier: MIT */
/*
 * The response API: fields, whole responses (copied or borrowed bodies),
 * streaming with fixed length or the chunked coding (RFC 9112 §7.1) and
 * its trailer fields (RFC 9110 §6.5), drain and abort callbacks, and
 * completion from other threads.
 */
#include <stdio.h>
#include <string.h>

#include "http/head.h"
#include "http/trailer.h"
#include "server/exchange/compress.h"
#include "server/exchange/exchange_api.h"
#include "server/exchange/exchange.h"
#include "util/text.h"

static char *field_room(hr_response_t *res, size_t need);

int hr_response_add_field(hr_response_t *res, hr_span_t name, hr_span_t value) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  size_t i, need;
  char *p;
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (ex->conn == NULL) return HR_ECLOSED;
  if (name.len == 0 || hr__reserved_field(name)) return HR_EINVAL;
  for (i = 0; i < name.len; i++)
    if (!hr__is_tchar((unsigned char)name.ptr[i])) return HR_EINVAL;
  for (i = 0; i < value.len; i++)
    if (value.ptr[i] == '\r' || value.ptr[i] == '\n' || value.ptr[i] == '\0')
      return HR_EINVAL;
  need = name.len + value.len + 4;
  p = field_room(res, need);
  if (p == NULL) return HR_ENOMEM;
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

static char *field_room(hr_response_t *res, size_t need) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  if (res->fields_cap - res->fields_len < need) {
    size_t cap = res->fields_cap ? res->fields_cap * 2 : 256;
    char *p;
    while (cap < res->fields_len + need) cap *= 2;
    p = hr__arena_grow(&ex->arena, res->fields, res->fields_len, cap);
    if (p == NULL) return NULL;
    res->fields = p;
    res->fields_cap = cap;
  }
  return res->fields + res->fields_len;
}

int hr__res_fields_open(const hr_response_t *res) {
  const hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  return ex->conn == NULL ? HR_ECLOSED : 0;
}

char *hr__res_field_room(hr_response_t *res, size_t need, size_t *cap) {
  char *p = field_room(res, need);
  if (p != NULL) *cap = res->fields_cap - res->fields_len;
  return p;
}

void hr__res_field_commit(hr_response_t *res, size_t n) { res->fields_len += n; }

hr__registry_t *hr__res_registry(const hr_response_t *res) {
  return &HR__EX_OF_RES(res)->w->server->router->registry;
}

hr__registry_t *hr__req_registry(const hr_request_t *req) {
  return &HR__EX_OF_REQ(req)->w->server->router->registry;
}

static int status_has_no_body(int status) {
  return (status >= 100 && status < 200) || status == 204 || status == 304;
}

static int check_send(hr_response_t *res, int status, size_t len) {
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (status < 200 || status > 599) return HR_EINVAL;
  if (len > 0 && (status == 204 || status == 304)) return HR_EINVAL;
  return 0;
}

/* Completion shared by every finishing call. */
static int finish(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  ex->res.state = HR__RES_DONE;
  if (!ex->msg_complete && ex->phase != HR__PH_HEAD) {
    /* An early answer ends the body (http.h, hr_body_cb): its callback
     * hears nothing more, and the protocol discards the rest or ends the
     * connection or stream. */
    ex->body_cut = 1;
    ex->discard_body = 1;
    r->body_done = 1;
    r->body_paused = 0;
  }
  ex->proto->done(ex);
  return 0;
}

/* A response completed after its connection was done with it: the
 * exchange goes. */
static int finish_closed(hr__exchange_t *ex) {
  ex->res.state = HR__RES_DONE;
  ex->handler_active = 0;
  hr__exchange_release(ex);
  return HR_ECLOSED;
}

/* The response cannot be framed any more (out of memory with part of it
 * queued, or a short fixed-length body): complete it and close. */
static int fail_framing(hr__exchange_t *ex, int err) {
  ex->proto->lost(ex);
  return err;
}

/* Compression of a whole body (compress.c): the coded bytes in *body and
 * *len, and the fields that say so.  Returns 0 or HR_ENOMEM (nothing
 * sent: the response is still the caller's). */
static int code_whole(hr__exchange_t *ex, int status, const void **body, size_t *len) {
  int vary, coding = hr__compress_choose(ex, status, (int64_t)*len, &vary);
  if (coding > 0) coding = hr__compress_whole(ex, coding, *body, *len, body, len);
  return vary ? hr__compress_fields(ex, coding, vary) : 0;
}

int hr_response_send(hr_response_t *res, int status, const void *body,
                     size_t len) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err == 0) err = check_send(res, status, len);
  if (err != 0) return err;
  if (ex->conn == NULL) return finish_closed(ex);
  if ((err = code_whole(ex, status, &body, &len)) != 0) return err;
  res->status = status;
  err = ex->proto->head(ex, status, (int64_t)len, 0);
  if (err == 0 && len > 0 && !ex->req.is_head) {
    err = ex->proto->data(ex, body, len);
    res->written = len; /* the body bytes sent (access log) */
  }
  /* Framing is broken once part of a head is queued. */
  if (err != 0) return fail_framing(ex, HR_ENOMEM);
  return finish(ex);
}

int hr_response_error(hr_response_t *res, int status, const char *text) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  char body[HR__ERROR_BODY_MAX];
  const char *ctype = NULL, *out = body;
  size_t n;
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (status < 400 || status > 599) return HR_EINVAL;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (ex->conn == NULL) return hr_response_send(res, status, NULL, 0); /* HR_ECLOSED */
  /* The server's own answers' body (h1.c, h2.c, dispatch.c), or the
   * caller's text, or theirs. */
  n = hr__error_body_hook(&ex->answers, status, body, &ctype);
  if (n == 0 && text != NULL) {
    out = text;
    n = strlen(text);
    ctype = "text/plain; charset=utf-8";
  } else if (n == 0) {
    static const hr_answers_t none; /* no hook: the default text alone */
    n = hr__error_body(&none, status, body, &ctype);
  }
  if ((err = hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), hr_span_cstr(ctype))) != 0)
    return err;
  return hr_response_send(res, status, out, n);
}

int hr_response_send_borrowed(hr_response_t *res, int status, const void *body,
                              size_t len, hr_release_cb release, void *udata) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  const void *coded = body;
  size_t coded_len = len;
  int err = hr__exchange_check_thread(ex);
  if (err == 0) err = check_send(res, status, len);
  if (err != 0) return err;
  if (ex->conn == NULL) return finish_closed(ex);
  if ((err = code_whole(ex, status, &coded, &coded_len)) != 0) return err;
  res->status = status;
  if (coded != body) {
    /* Compressed into the arena: that goes out, and the borrowed body is
     * handed back through the queue (later, never inside this call). */
    err = ex->proto->head(ex, status, (int64_t)coded_len, 0);
    if (err == 0 && !ex->req.is_head) err = ex->proto->data(ex, coded, coded_len);
    if (err == 0) err = ex->proto->borrow(ex, body, 0, release, udata);
    if (err != 0) return fail_framing(ex, HR_ENOMEM);
    if (!ex->req.is_head) res->written = coded_len;
    return finish(ex);
  }
  err = ex->proto->head(ex, status, (int64_t)len, 0);
  if (err == 0) {
    if (len > 0 && !ex->req.is_head) {
      err = ex->proto->borrow(ex, body, len, release, udata);
      res->written = len;
    }
    else if (release != NULL)
      /* Nothing to write: hand it back through the queue so it is still
       * released later, never inside this call. */
      err = ex->proto->borrow(ex, body, 0, release, udata);
  }
  if (err != 0) return fail_framing(ex, HR_ENOMEM);
  return finish(ex);
}

int hr_response_send_coded(hr_response_t *res, int status, hr_coding_t coding, const void *body,
                           size_t len, hr_release_cb release, void *udata) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  hr_span_t v;
  size_t mark;
  int err = hr__exchange_check_thread(ex);
  if (err == 0) err = check_send(res, status, len);
  if (err != 0) return err;
  /* A coded body is content: not empty (no valid stream is), not for a
   * status without content or a range, not coded twice, and only in a
   * coding the client takes. */
  if ((coding != HR_CODING_GZIP && coding != HR_CODING_BR && coding != HR_CODING_ZSTD) ||
      body == NULL || len == 0 || status == 206 ||
      hr__compress_field(ex, HR_SPAN_LIT("Content-Encoding"), &v) ||
      !hr__compress_accepted(ex, (int)coding))
    return HR_EINVAL;
  if (ex->conn == NULL) return finish_closed(ex);
  /* Content-Encoding there: hr_response_send_borrowed codes nothing.  The
   * fields go again when they cannot all be added (the ETag's W/ is the
   * last step, made only when the others are in). */
  mark = res->fields_len;
  if ((err = hr__compress_fields(ex, (int)coding, 1)) != 0) {
    res->fields_len = mark;
    return err;
  }
  return hr_response_send_borrowed(res, status, body, len, release, udata);
}

int hr_response_send_file(hr_response_t *res, int status, int fd, uint64_t offset,
                          uint64_t length, hr_file_release_cb release, void *udata) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (fd < 0 || length > (uint64_t)INT64_MAX || offset > (uint64_t)INT64_MAX - length)
    return HR_EINVAL;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (status < 200 || status > 599) return HR_EINVAL;
  if (length > 0 && (status == 204 || status == 304)) return HR_EINVAL;
  if (ex->conn == NULL) return finish_closed(ex);
  res->status = status;
  err = ex->proto->head(ex, status, (int64_t)length, 0);
  /* Nothing to send for HEAD: the file still goes through the queue, so it
   * is released later, never inside this call. */
  if (err == 0) err = ex->proto->file(ex, fd, offset, ex->req.is_head ? 0 : length, release, udata);
  if (err != 0) return fail_framing(ex, HR_ENOMEM);
  if (!ex->req.is_head) res->written = length;
  return finish(ex);
}

int hr_response_start(hr_response_t *res, int status, int64_t content_length) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  int chunked = 0, err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  if (status < 200 || status > 599) return HR_EINVAL;
  if (content_length < HR_LENGTH_UNKNOWN) return HR_EINVAL;
  if (ex->conn == NULL) {
    res->state = HR__RES_STREAMING;
    return HR_ECLOSED;
  }
  res->status = status;
  res->no_body = ex->req.is_head || status_has_no_body(status);
  if (status_has_no_body(status)) {
    if (content_length > 0) return HR_EINVAL;
    content_length = 0;
  }
  {
    /* Compressed as it goes: of unknown length then (the declared one
     * still bounds what the handler writes).  A HEAD says so too, with
     * no encoder behind it. */
    int vary, coding = hr__compress_choose(ex, status, content_length, &vary);
    if (coding > 0 && !res->no_body) coding = hr__compress_stream_open(ex, coding);
    ex->coded = coding > 0;
    if (vary && (err = hr__compress_fields(ex, coding, vary)) != 0) {
      hr__compress_release(ex);
      return err;
    }
    res->content_length = content_length;
    if (coding > 0) content_length = HR_LENGTH_UNKNOWN;
  }
  /* Unknown length: chunked for HTTP/1.1, else close-delimited (RFC 9112
   * §6.3). */
  if (content_length == HR_LENGTH_UNKNOWN && ex->req.version >= 11) chunked = 1;
  /* A HEAD response announces the coding but carries no chunks. */
  res->chunked = (unsigned)(chunked && !res->no_body);
  ex->streamed = 1;
  err = ex->proto->head(ex, status, content_length, chunked);
  if (err != 0) return fail_framing(ex, err);
  res->state = HR__RES_STREAMING;
  ex->proto->kick(ex);
  return 0;
}

int hr_response_write(hr_response_t *res, const void *data, size_t len) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_STREAMING) return HR_ESTATE;
  if (ex->conn == NULL) return HR_ECLOSED;
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
  if (ex->proto->queued(ex) > ex->w->server->opts.write_high_water_bytes) {
    res->want_drain = 1;
    return HR_EAGAIN;
  }
  if ((ex->zs != NULL ? hr__compress_stream_write(ex, data, len, 0)
                      : ex->proto->data(ex, data, len)) != 0) {
    /* Part of a piece may be queued: the framing is lost and the
     * connection closes.  The handler, which hears it here rather than
     * through its abort callback, still ends the response (HR_ECLOSED). */
    ex->aborted = 1;
    ex->proto->cut(ex);
    return HR_ENOMEM;
  }
  res->written += len;
  ex->proto->kick(ex);
  return 0;
}

int hr_response_write_file(hr_response_t *res, int fd, uint64_t offset, uint64_t length,
                           hr_file_release_cb release, void *udata) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_STREAMING) return HR_ESTATE;
  if (ex->conn == NULL) return HR_ECLOSED;
  if (fd < 0 || length > (uint64_t)INT64_MAX || offset > (uint64_t)INT64_MAX - length)
    return HR_EINVAL;
  /* A compressed stream codes what it is given; a file goes as it is (a
   * HEAD that would be compressed answers the same as its GET). */
  if (ex->coded) return HR_ESTATE;
  if (res->content_length >= 0 && (uint64_t)res->content_length - res->written < length)
    return HR_EINVAL;
  /* Even with nothing to send (HEAD, length 0) the file goes through the
   * queue, so it is released later, never inside this call. */
  if (ex->proto->file(ex, fd, offset, res->no_body ? 0 : length, release, udata) != 0) {
    ex->aborted = 1;
    ex->proto->cut(ex);
    return HR_ENOMEM;
  }
  res->written += length;
  ex->proto->kick(ex);
  return 0;
}

int hr_response_on_drain(hr_response_t *res, hr_drain_cb cb, void *udata) {
  int err = hr__exchange_check_thread(HR__EX_OF_RES(res));
  if (err != 0) return err;
  if (res->state == HR__RES_DONE) return HR_ESTATE;
  res->drain_cb = cb;
  res->drain_udata = udata;
  return 0;
}

int hr_response_on_abort(hr_response_t *res, hr_abort_cb cb, void *udata) {
  int err = hr__exchange_check_thread(HR__EX_OF_RES(res));
  if (err != 0) return err;
  if (res->state == HR__RES_DONE) return HR_ESTATE;
  res->abort_cb = cb;
  res->abort_udata = udata;
  return 0;
}

int hr_response_add_trailer(hr_response_t *res, hr_span_t name, hr_span_t value) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  size_t i, need;
  char *p;
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_STREAMING) return HR_ESTATE;
  if (ex->conn == NULL) return HR_ECLOSED;
  /* Only a body of unknown length sent in pieces ends with a trailer
   * section: h1's chunked coding (RFC 9112 §7.1.2), h2's DATA frames
   * (RFC 9113 §8.1); `chunked` says which responses are framed so.  A
   * length the handler declared rules them out whether or not compression
   * made the response chunked, so that the answer does not depend on the
   * client's Accept-Encoding. */
  if (!res->chunked || res->content_length >= 0) return HR_ESTATE;
  if (name.len == 0 || hr__reserved_field(name) || hr__trailer_forbidden(name))
    return HR_EINVAL;
  for (i = 0; i < name.len; i++)
    if (!hr__is_tchar((unsigned char)name.ptr[i])) return HR_EINVAL;
  for (i = 0; i < value.len; i++)
    if (value.ptr[i] == '\r' || value.ptr[i] == '\n' || value.ptr[i] == '\0')
      return HR_EINVAL;
  need = name.len + value.len + 4;
  if (res->trailers_cap - res->trailers_len < need) {
    size_t cap = res->trailers_cap ? res->trailers_cap * 2 : 128;
    while (cap < res->trailers_len + need) cap *= 2;
    p = hr__arena_grow(&ex->arena, res->trailers, res->trailers_len, cap);
    if (p == NULL) return HR_ENOMEM;
    res->trailers = p;
    res->trailers_cap = cap;
  }
  p = res->trailers + res->trailers_len;
  memcpy(p, name.ptr, name.len);
  p += name.len;
  *p++ = ':';
  *p++ = ' ';
  memcpy(p, value.ptr, value.len);
  p += value.len;
  *p++ = '\r';
  *p++ = '\n';
  res->trailers_len += need;
  return 0;
}

int hr_response_end(hr_response_t *res) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_STREAMING) return HR_ESTATE;
  if (ex->conn == NULL) return finish_closed(ex);
  if (res->content_length >= 0 && !res->no_body &&
      res->written != (uint64_t)res->content_length) {
    /* The declared length was not met: the message cannot be framed. */
    return fail_framing(ex, HR_EINVAL);
  }
  /* A compressed stream's last bytes, then the end. */
  if ((ex->zs != NULL && hr__compress_stream_write(ex, NULL, 0, 1) != 0) ||
      ex->proto->end(ex) != 0)
    return fail_framing(ex, HR_ENOMEM);
  return finish(ex);
}

hr_request_t *hr_response_request(hr_response_t *res) {
  return &HR__EX_OF_RES(res)->req;
}

static void run_post(void *target, hr__fn_t fn, hr__fn_t aux, void *udata) {
  (void)aux;
  ((hr_post_cb)fn)(target, udata);
}

int hr_response_post(hr_response_t *res, hr_post_cb cb, void *udata) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  if (cb == NULL) return HR_EINVAL;
  /* Pairs with the release store in hr__exchange_abandon(). */
  if (atomic_load_explicit(&ex->where, memory_order_acquire) == HR__EX_ABANDONED)
    return HR_ECLOSED;
  return hr__worker_post(ex->w, run_post, res, (hr__fn_t)cb, NULL, udata);
}
