/* SPDX-License-Identifier: MIT */
/* The HTTP/2 test client on nghttp2's client session (h2client.h): the
 * session's callbacks fill the records, its output goes to the loop's
 * queue, and request bodies come from uploads the test feeds. */
#include "h2client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A request body: bytes not yet handed to nghttp2, whether the test ended
 * it, and the trailers to send after it. */
struct h2c_upload_s {
  h2c_upload_t *next;
  h2c_t *client;
  int32_t id;
  h2_bytes_t data;
  int end;       /* the test gave the last byte */
  int deferred;  /* nghttp2 waits for h2c_send_body (resume_data) */
  h2_fields_t trailers;
};

static h2_stream_t *stream_of(h2c_t *c, int32_t id) {
  return h2_seen_stream_make(&c->io.seen, id);
}

static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd,
                          void *ud) {
  h2c_t *c = ud;
  (void)s;
  h2_seen_frame(&c->io.seen, hd->type);
  return 0;
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f,
                            void *ud) {
  h2c_t *c = ud;
  (void)s;
  h2_block_begin(&c->block, stream_of(c, f->hd.stream_id));
  return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f,
                     const uint8_t *name, size_t nlen, const uint8_t *value,
                     size_t vlen, uint8_t flags, void *ud) {
  h2c_t *c = ud;
  (void)s;
  (void)flags;
  if (c->block.st != NULL && c->block.st->id == f->hd.stream_id)
    h2_block_field(&c->block, name, nlen, value, vlen);
  return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id,
                   const uint8_t *p, size_t n, void *ud) {
  (void)s;
  (void)flags;
  h2_stream_append(stream_of(ud, id), p, n);
  return 0;
}

static void on_settings(h2c_t *c, const nghttp2_settings *f) {
  size_t i;
  if (f->hd.flags & NGHTTP2_FLAG_ACK) {
    c->io.seen.settings_acks++;
    return;
  }
  c->io.seen.settings++;
  for (i = 0; i < f->niv; i++)
    h2_seen_setting(&c->io.seen, (uint16_t)f->iv[i].settings_id, f->iv[i].value);
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
  h2c_t *c = ud;
  h2_stream_t *st;
  (void)s;
  switch (f->hd.type) {
    case NGHTTP2_DATA:
      stream_of(c, f->hd.stream_id)->data_frames++;
      if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) stream_of(c, f->hd.stream_id)->data_ended = 1;
      /* fall through */
    case NGHTTP2_HEADERS:
      if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) stream_of(c, f->hd.stream_id)->ended = 1;
      break;
    case NGHTTP2_RST_STREAM:
      st = stream_of(c, f->hd.stream_id);
      st->reset = 1;
      st->rst_error = f->rst_stream.error_code;
      c->io.seen.rst_streams++;
      break;
    case NGHTTP2_SETTINGS:
      on_settings(c, &f->settings);
      break;
    case NGHTTP2_PING:
      if (f->hd.flags & NGHTTP2_FLAG_ACK) c->io.seen.ping_acks++;
      break;
    case NGHTTP2_GOAWAY:
      h2_seen_goaway(&c->io.seen, f->goaway.last_stream_id, f->goaway.error_code,
                     f->goaway.opaque_data, f->goaway.opaque_data_len);
      break;
    default:
      break;
  }
  return 0;
}

static int on_invalid_frame(nghttp2_session *s, const nghttp2_frame *f,
                            int err, void *ud) {
  h2c_t *c = ud;
  (void)s;
  (void)f;
  c->invalid_frames++;
  c->last_invalid = err;
  return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t err,
                           void *ud) {
  h2_stream_t *st = stream_of(ud, id);
  (void)s;
  st->closed = 1;
  st->close_error = err;
  return 0;
}

static h2c_upload_t *upload_of(h2c_t *c, int32_t id) {
  h2c_upload_t *u;
  for (u = c->uploads; u != NULL; u = u->next)
    if (u->id == id) return u;
  return NULL;
}

/* Sends the trailers as a HEADERS frame with END_STREAM. */
static void submit_trailers(h2c_upload_t *u) {
  nghttp2_nv nv[32];
  size_t i, n = u->trailers.n < 32 ? u->trailers.n : 32;
  for (i = 0; i < n; i++) {
    nv[i].name = (uint8_t *)u->trailers.v[i].name;
    nv[i].namelen = strlen(u->trailers.v[i].name);
    nv[i].value = (uint8_t *)u->trailers.v[i].value;
    nv[i].valuelen = u->trailers.v[i].value_len;
    nv[i].flags = NGHTTP2_NV_FLAG_NONE;
  }
  nghttp2_submit_trailer(u->client->session, u->id, nv, n);
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf,
                         size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *ud) {
  h2c_upload_t *u = src->ptr;
  size_t n = h2_bytes_pending(&u->data);
  (void)s;
  (void)id;
  (void)ud;
  if (n > len) n = len;
  if (n > 0) memcpy(buf, u->data.p + u->data.off, n); /* data.p is NULL while empty */
  h2_bytes_consume(&u->data, n);
  if (h2_bytes_pending(&u->data) == 0 && u->end) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (u->trailers.n > 0) {
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      submit_trailers(u);
    }
  } else if (n == 0) {
    u->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
  }
  return (ssize_t)n;
}

/* Moves what the session has to send into the loop's queue. */
static int produce(void *arg) {
  h2c_t *c = arg;
  for (;;) {
    const uint8_t *p;
    ssize_t n = nghttp2_session_mem_send(c->session, &p);
    if (n < 0) {
      c->session_error = (int)n;
      return -1;
    }
    if (n == 0) return 0;
    h2_bytes_add(&c->io.out, p, (size_t)n);
  }
}

static int on_read(void *arg, const uint8_t *p, size_t n) {
  h2c_t *c = arg;
  ssize_t rv;
  c->io.seen.bytes_in += n;
  rv = nghttp2_session_mem_recv(c->session, p, n);
  if (rv < 0) {
    c->session_error = (int)rv;
    return -1;
  }
  return 0;
}

void h2c_options_init(h2c_options_t *o) {
  memset(o, 0, sizeof *o);
  h2s_options_init(&o->sock);
  o->initial_window = -1;
}

static int new_session(h2c_t *c, const h2c_options_t *o) {
  nghttp2_session_callbacks *cb;
  nghttp2_option *opt;
  nghttp2_settings_entry iv[2];
  size_t niv = 0;
  int rc;
  if (nghttp2_session_callbacks_new(&cb) != 0) return -1;
  nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, on_invalid_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return -1;
  }
  nghttp2_option_set_no_auto_window_update(opt, o->manual_window);
  rc = nghttp2_session_client_new2(&c->session, cb, c, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rc != 0) return -1;
  iv[niv++] = (nghttp2_settings_entry){NGHTTP2_SETTINGS_ENABLE_PUSH, 0};
  if (o->initial_window >= 0)
    iv[niv++] = (nghttp2_settings_entry){NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
                                         (uint32_t)o->initial_window};
  if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, niv) != 0) return -1;
  if (o->connection_window > 65535 &&
      nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0,
                                            o->connection_window) != 0)
    return -1;
  return 0;
}

h2c_t *h2c_connect(int port, const h2c_options_t *o) {
  h2c_t *c = calloc(1, sizeof *c);
  char alpn[16];
  if (c == NULL) return NULL;
  if (h2_loop_open(&c->io, port, &o->sock, on_read, produce, c) != 0 ||
      (c->io.sock.is_tls && strcmp(h2s_alpn(&c->io.sock, alpn, sizeof alpn), "h2") != 0) ||
      new_session(c, o) != 0) {
    h2c_close(c);
    return NULL;
  }
  snprintf(c->authority, sizeof c->authority, "127.0.0.1:%d", port);
  if (h2_loop_flush(&c->io) != 0) {
    h2c_close(c);
    return NULL;
  }
  return c;
}

/* Sets nv to a field (borrowed). */
static void nv_set(nghttp2_nv *nv, const char *name, const char *value) {
  nv->name = (uint8_t *)(uintptr_t)name;
  nv->namelen = strlen(name);
  nv->value = (uint8_t *)(uintptr_t)value;
  nv->valuelen = strlen(value);
  nv->flags = NGHTTP2_NV_FLAG_NONE;
}

int32_t h2c_submit(h2c_t *c, const h2c_request_t *r) {
  nghttp2_nv nv[68];
  nghttp2_data_provider dp;
  h2c_upload_t *u = NULL;
  size_t n = 0, i;
  int32_t id;
  if (r->nfields > 64) return NGHTTP2_ERR_INVALID_ARGUMENT;
  nv_set(&nv[n++], ":method", r->method != NULL ? r->method : "GET");
  nv_set(&nv[n++], ":scheme", r->scheme != NULL ? r->scheme
                              : c->io.sock.is_tls ? "https" : "http");
  nv_set(&nv[n++], ":path", r->path != NULL ? r->path : "/");
  if (r->authority == NULL || r->authority[0] != '\0')
    nv_set(&nv[n++], ":authority", r->authority != NULL ? r->authority : c->authority);
  for (i = 0; i < r->nfields; i++) nv_set(&nv[n++], r->fields[i].name, r->fields[i].value);
  if (r->body != NULL || r->open || r->ntrailers > 0) {
    u = calloc(1, sizeof *u);
    if (u == NULL) abort(); /* the test client does not run out of memory */
    u->client = c;
    h2_bytes_add(&u->data, r->body, r->body_len);
    u->end = !r->open;
    for (i = 0; i < r->ntrailers; i++)
      h2_fields_add(&u->trailers, r->trailers[i].name, strlen(r->trailers[i].name),
                    r->trailers[i].value, strlen(r->trailers[i].value));
    dp.source.ptr = u;
    dp.read_callback = read_body;
  }
  id = nghttp2_submit_request(c->session, NULL, nv, n, u != NULL ? &dp : NULL, NULL);
  if (u != NULL) {
    if (id < 0) {
      h2_bytes_free(&u->data);
      free(u);
      return id;
    }
    u->id = id;
    u->next = c->uploads;
    c->uploads = u;
  }
  if (id > 0) stream_of(c, id);
  return id;
}

int32_t h2c_get(h2c_t *c, const char *method, const char *path) {
  h2c_request_t r;
  memset(&r, 0, sizeof r);
  r.method = method;
  r.path = path;
  return h2c_submit(c, &r);
}

int h2c_add_trailer(h2c_t *c, int32_t id, const char *name, const char *value) {
  h2c_upload_t *u = upload_of(c, id);
  if (u == NULL || u->end) return -1;
  h2_fields_add(&u->trailers, name, strlen(name), value, strlen(value));
  return 0;
}

int h2c_send_body(h2c_t *c, int32_t id, const void *p, size_t n, int end) {
  h2c_upload_t *u = upload_of(c, id);
  if (u == NULL || u->end) return -1;
  h2_bytes_add(&u->data, p, n);
  u->end = end;
  if (u->deferred) {
    u->deferred = 0;
    nghttp2_session_resume_data(c->session, id);
  }
  return 0;
}

int h2c_open_window(h2c_t *c, int32_t id, int32_t n) {
  int rc;
  /* nghttp2 opens a stream when its HEADERS frame is serialised, and
   * ignores a window update for a stream it has not opened yet. */
  if (produce(c) != 0) return c->session_error;
  rc = nghttp2_submit_window_update(c->session, NGHTTP2_FLAG_NONE, 0, n);
  return rc != 0 ? rc : nghttp2_submit_window_update(c->session, NGHTTP2_FLAG_NONE, id, n);
}

int h2c_run(h2c_t *c, h2_loop_done_fn done, void *arg) {
  return h2_loop_run(&c->io, done, arg);
}

int h2c_wait(h2c_t *c, const int32_t *ids, size_t n) {
  h2_loop_streams_t w = {&c->io.seen, ids, n};
  return h2_loop_run(&c->io, h2_loop_streams_closed, &w);
}

h2_stream_t *h2c_wait1(h2c_t *c, int32_t id) {
  return h2c_wait(c, &id, 1) ? h2_seen_stream(&c->io.seen, id) : NULL;
}

int h2c_wait_goaway(h2c_t *c) {
  return h2_loop_run(&c->io, h2_loop_got_goaway, &c->io.seen);
}

int h2c_wait_closed(h2c_t *c) { return h2_loop_wait_closed(&c->io); }

void h2c_close(h2c_t *c) {
  h2c_upload_t *u;
  if (c == NULL) return;
  if (c->session != NULL && !c->io.seen.closed) {
    nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
    produce(c);
    /* Best effort: the GOAWAY goes if the socket takes it now. */
    h2s_write_some(&c->io.sock, c->io.out.p + c->io.out.off, h2_bytes_pending(&c->io.out));
  }
  while ((u = c->uploads) != NULL) {
    c->uploads = u->next;
    h2_bytes_free(&u->data);
    h2_fields_free(&u->trailers);
    free(u);
  }
  nghttp2_session_del(c->session);
  h2_loop_close(&c->io, 0);
  free(c);
}
