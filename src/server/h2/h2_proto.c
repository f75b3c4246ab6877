/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 as the exchange's protocol (proto.h): an exchange is a stream
 * (RFC 9113 §8.1).  The response head becomes a HEADERS frame (field names
 * in lower case, §8.2; no connection-specific fields, §8.2.2; `:status`
 * first, §8.3.2), its body DATA frames cut by nghttp2 to the peer's
 * windows and frame size, and 100 Continue an informational HEADERS frame
 * (§8.1).  The body waits on the stream as a list of pieces -- bytes
 * copied, bytes borrowed until written, or a file range -- that nghttp2
 * pulls through hr__h2_read_body as the flow-control windows allow, so a
 * response larger than the peer's window waits for WINDOW_UPDATE and holds
 * no more than what the handler queued below the high-water mark.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "server/conn/fread.h"
#include "http/head.h"
#include "server/h2/h2.h"
#include "util/text.h"

/* ---- pieces -------------------------------------------------------------- */

static void piece_release(hr__h2s_t *st, hr__h2piece_t *pc) {
  hr__worker_t *w = st->h2->c->w;
  /* Borrowed and file bodies are handed back with the response they were
   * given with, as the HTTP/1.1 output queue does (out.c). */
  hr_response_t *res = st->ex != NULL ? &st->ex->res : NULL;
  if (pc->kind == HR__H2P_BORROW && pc->release != NULL)
    pc->release(res, pc->p, pc->udata);
  else if (pc->kind == HR__H2P_FILE) {
    if (pc->file_release != NULL)
      pc->file_release(res, pc->fd, pc->udata);
    else
      close(pc->fd);
  }
  hr__slab_free(&w->slab, pc);
}

static void pop(hr__h2s_t *st) {
  hr__h2piece_t *pc = st->head;
  st->head = pc->next;
  if (st->head == NULL) st->tail = NULL;
  if (pc->kind == HR__H2P_MEM) st->queued -= pc->len - pc->off;
  piece_release(st, pc);
}

/* ---- file pieces read on the thread pool --------------------------------- */

/* The file piece at the head of a stream's body, read on libuv's thread
 * pool (conn/fread.h), is back. */
static void piece_back(void *owner, char *buf, size_t cap, ssize_t n) {
  hr__h2s_t *st = owner;
  (void)cap;
  st->fjob = NULL;
  if (n <= 0) { /* it shrank, or failed: the body cannot be framed */
    hr__mem_free(&st->h2->c->w->mem, buf);
    hr__h2_reset(st, NGHTTP2_INTERNAL_ERROR);
    return;
  }
  st->fbuf = buf;
  st->fpos = 0;
  st->fready = (size_t)n;
  if (st->deferred) {
    st->deferred = 0;
    nghttp2_session_resume_data(st->h2->ng, st->id);
  }
  hr__conn_kick(st->h2->c);
}

/* Starts reading the next piece of file piece `pc`.  Returns 0, or -1
 * (the caller reads on the loop). */
static int fjob_start(hr__h2s_t *st, hr__h2piece_t *pc) {
  hr__conn_t *c = st->h2->c;
  uint64_t left = pc->len - pc->off;
  size_t len = left < HR__FILE_POOL_PIECE ? (size_t)left : HR__FILE_POOL_PIECE;
  char *buf = hr__mem_alloc(&c->w->mem, len);
  if (buf == NULL) return -1;
  st->fjob = hr__fread_start(c, pc->fd, pc->foff + pc->off, buf, len, len, piece_back, st);
  if (st->fjob == NULL) {
    hr__mem_free(&c->w->mem, buf);
    return -1;
  }
  return 0;
}

/* Up to `want` bytes of file piece `pc` into `buf`: from what a job read,
 * on the loop for a short rest (as out.c's HR__POOL_SENDFILE), or not yet
 * (a job is started or running: 0).  Returns the bytes, or -1 when the
 * file ended early or failed. */
static ssize_t file_bytes(hr__h2s_t *st, hr__h2piece_t *pc, uint8_t *buf, size_t want) {
  uint64_t left = pc->len - pc->off;
  ssize_t r;
  if (st->fready > st->fpos) {
    size_t k = st->fready - st->fpos < want ? st->fready - st->fpos : want;
    memcpy(buf, st->fbuf + st->fpos, k);
    st->fpos += k;
    if (st->fpos == st->fready) {
      hr__mem_free(&st->h2->c->w->mem, st->fbuf);
      st->fbuf = NULL;
      st->fpos = st->fready = 0;
    }
    return (ssize_t)k;
  }
  if (st->fjob != NULL) return 0;
  if (left >= HR__POOL_SENDFILE && fjob_start(st, pc) == 0) return 0;
  do
    r = pread(pc->fd, buf, want, (off_t)(pc->foff + pc->off));
  while (r < 0 && errno == EINTR);
  return r > 0 ? r : -1;
}

void hr__h2_pieces_free(hr__h2s_t *st) {
  if (st->fjob != NULL) { /* it frees its buffer when it is back */
    hr__fread_forget(st->fjob);
    st->fjob = NULL;
  }
  hr__mem_free(&st->h2->c->w->mem, st->fbuf);
  st->fbuf = NULL;
  st->fpos = st->fready = 0;
  while (st->head != NULL) pop(st);
}

/* A new piece at the end of the stream's body; `extra` bytes of room
 * after it (for copied bytes).  NULL when out of memory. */
static hr__h2piece_t *push(hr__h2s_t *st, hr__h2pkind_t kind, size_t extra) {
  hr__h2piece_t *pc = sizeof(*pc) + extra < extra ? NULL
                      : hr__slab_alloc(&st->h2->c->w->slab, sizeof(*pc) + extra);
  if (pc == NULL) return NULL;
  memset(pc, 0, sizeof(*pc));
  pc->kind = kind;
  pc->fd = -1;
  if (st->tail != NULL)
    st->tail->next = pc;
  else
    st->head = pc;
  st->tail = pc;
  return pc;
}

/* New body or its end: a data provider that found nothing waits no
 * longer, and the connection sends on its next turn. */
static void wake(hr__h2s_t *st) {
  if (st->deferred && !st->reset) {
    st->deferred = 0;
    nghttp2_session_resume_data(st->h2->ng, st->id);
  }
  hr__conn_kick(st->h2->c);
}

ssize_t hr__h2_read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *user) {
  hr__h2s_t *st = src->ptr;
  size_t n = 0;
  (void)ng;
  (void)id;
  (void)user;
  while (n < length && st->head != NULL) {
    hr__h2piece_t *pc = st->head;
    uint64_t left = pc->len - pc->off;
    size_t take = left < length - n ? (size_t)left : length - n;
    if (take > 0 && pc->kind == HR__H2P_FILE) {
      ssize_t r = file_bytes(st, pc, buf + n, take);
      /* A file that ended before its length, or failed: the stream cannot
       * be framed as announced (RST_STREAM INTERNAL_ERROR). */
      if (r < 0) {
        st->reset = 1; /* the server's own reset, not the client's fault */
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      if (r == 0) break; /* read on the thread pool: piece_back resumes */
      take = (size_t)r;
    } else if (take > 0) {
      memcpy(buf + n, pc->p + pc->off, take);
      if (pc->kind == HR__H2P_MEM) st->queued -= take;
    }
    pc->off += take;
    n += take;
    if (pc->off == pc->len) {
      st->head = pc->next;
      if (st->head == NULL) st->tail = NULL;
      piece_release(st, pc);
    }
  }
  if (st->head == NULL && st->body_end) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (st->ntrailers > 0 && st->ex != NULL) {
      /* A trailer section ends the stream instead of this DATA frame: a
       * HEADERS frame with END_STREAM, which nghttp2 sends after it (it
       * allows the call here; an empty last DATA frame it leaves out). */
      if (nghttp2_submit_trailer(ng, id, st->trailers, st->ntrailers) != 0) {
        st->reset = 1;
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      st->ntrailers = 0;
    }
  } else if (n == 0) {
    st->deferred = 1;
    return NGHTTP2_ERR_DEFERRED;
  }
  /* A writer waiting for room hears of it on the connection's next turn
   * (hr__h2_drains). */
  if (st->ex != NULL && st->ex->res.want_drain) hr__conn_kick(st->h2->c);
  return (ssize_t)n;
}

void hr__h2_reset(hr__h2s_t *st, uint32_t code) {
  if (st->reset) return;
  st->reset = 1;
  nghttp2_submit_rst_stream(st->h2->ng, NGHTTP2_FLAG_NONE, st->id, code);
  hr__conn_kick(st->h2->c);
}

/* ---- the head ------------------------------------------------------------ */

/* Whether `name` (lower case) is connection-specific (RFC 9113 §8.2.2). */
static int conn_specific(const char *name, size_t len) {
  static const char *const names[] = {"connection", "keep-alive", "proxy-connection",
                                      "transfer-encoding", "upgrade"};
  size_t i;
  for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) return 1;
  return 0;
}

/* Whether the "N: V\r\n" lines of `lines` name `name` (any case). */
static int lines_name(hr_span_t lines, const char *name, size_t len) {
  const char *p = lines.ptr, *end;
  if (lines.len == 0) return 0;
  end = lines.ptr + lines.len;
  while (p < end) {
    const char *colon = memchr(p, ':', (size_t)(end - p));
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (colon == NULL || eol == NULL) break;
    if ((size_t)(colon - p) == len && strncasecmp(p, name, len) == 0) return 1;
    p = eol + 1;
  }
  return 0;
}

typedef struct nvset_s {
  nghttp2_nv *nv;
  size_t n, cap;
  hr__arena_t *arena;
} nvset_t;

static int nv_add(nvset_t *s, const char *name, size_t nlen, const char *value,
                  size_t vlen) {
  if (s->n == s->cap) return HR_ENOMEM;
  s->nv[s->n].name = (uint8_t *)(uintptr_t)name;
  s->nv[s->n].namelen = nlen;
  s->nv[s->n].value = (uint8_t *)(uintptr_t)value;
  s->nv[s->n].valuelen = vlen;
  s->nv[s->n].flags = NGHTTP2_NV_FLAG_NONE;
  s->n++;
  return 0;
}

/* Adds the "N: V\r\n" lines of `lines` with their names in lower case,
 * leaving out connection-specific ones and, when `unless` is given, those
 * whose name it has too (a handler's field replaces the route's). */
static int nv_lines(nvset_t *s, hr_span_t lines, const hr_span_t *unless) {
  const char *p = lines.ptr, *end;
  if (lines.len == 0) return 0;
  end = lines.ptr + lines.len;
  while (p < end) {
    const char *colon = memchr(p, ':', (size_t)(end - p));
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *v, *ve;
    char *name;
    size_t nlen, i;
    if (colon == NULL || eol == NULL || colon > eol) break;
    nlen = (size_t)(colon - p);
    v = colon + 1;
    while (v < eol && (*v == ' ' || *v == '\t')) v++;
    ve = eol;
    if (ve > v && ve[-1] == '\r') ve--;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    name = hr__arena_alloc(s->arena, nlen ? nlen : 1);
    if (name == NULL) return HR_ENOMEM;
    for (i = 0; i < nlen; i++) name[i] = (char)tolower((unsigned char)p[i]);
    if (!conn_specific(name, nlen) &&
        (unless == NULL || hr__field_adds((hr_span_t){p, nlen}) || !lines_name(*unless, p, nlen)) &&
        nv_add(s, name, nlen, v, (size_t)(ve - v)) != 0)
      return HR_ENOMEM;
    p = eol + 1;
  }
  return 0;
}


static size_t count_lines(hr_span_t s) {
  size_t n = 0, i;
  for (i = 0; i < s.len; i++) n += s.ptr[i] == '\n';
  return n;
}

/* The head's fields: :status, the route's pre-rendered fields, the
 * handler's, the request id's echo, Content-Length and Date (as
 * hr__head_render has them). */
static int build_head(hr__exchange_t *ex, nvset_t *s, int status, int64_t length,
                      char *status_text, char *length_text) {
  const hr_route_t *rt = ex->req.route;
  hr_span_t route = {NULL, 0}, fields = {ex->res.fields, ex->res.fields_len};
  hr__worker_t *w = ex->w;
  hr_span_t id = hr__request_id_echo(ex, fields);
  int err;
  /* No content fields without content (RFC 9110 §15.3.5, §15.4.5). */
  if (rt != NULL && !ex->internal_answer)
    route = status == 204 || status == 304 ? rt->head_bodiless : rt->head;
  s->cap = 4 + count_lines(route) + count_lines(fields);
  s->nv = hr__arena_alloc(&ex->arena, s->cap * sizeof(nghttp2_nv));
  if (s->nv == NULL) return HR_ENOMEM;
  status_text[0] = (char)('0' + status / 100 % 10);
  status_text[1] = (char)('0' + status / 10 % 10);
  status_text[2] = (char)('0' + status % 10);
  nv_add(s, ":status", 7, status_text, 3);
  if ((err = nv_lines(s, route, &fields)) != 0 || (err = nv_lines(s, fields, NULL)) != 0)
    return err;
  if (id.len && (err = nv_add(s, w->server->rid_lname, w->server->rid_name_len, id.ptr,
                              id.len)) != 0)
    return err;
  if (length >= 0 && status >= 200 && status != 204 && !(status == 304 && length == 0)) {
    size_t n = hr__put_u64(length_text, (uint64_t)length);
    if ((err = nv_add(s, "content-length", 14, length_text, n)) != 0) return err;
  }
  /* "Date: <IMF-fixdate>\r\n" */
  if (w->date_len > 8 && (err = nv_add(s, "date", 4, w->date + 6, w->date_len - 8)) != 0)
    return err;
  return 0;
}

static int h2_head(hr__exchange_t *ex, int status, int64_t length, int chunked) {
  hr__h2s_t *st = ex->h2s;
  nghttp2_data_provider prd;
  char status_text[4], length_text[24];
  nvset_t s;
  int no_body = ex->req.is_head || status < 200 || status == 204 || status == 304 ||
                length == 0, rv;
  /* A streamed response without content (HEAD, 204, 304, length 0) still
   * ends with hr_response_end: END_STREAM waits for it, on an empty DATA
   * frame (RFC 9113 §8.1), since a stream closed with its head would take
   * the exchange for a lost one (an abort, HR_ECLOSED for the end). */
  int wait_end = no_body && ex->streamed && !ex->internal_answer;
  (void)chunked; /* HTTP/2 frames every body itself (RFC 9113 §8.1) */
  if (st->reset) return 0; /* the stream is gone: nothing goes out */
  memset(&s, 0, sizeof(s));
  s.arena = &ex->arena;
  if (build_head(ex, &s, status, length, status_text, length_text) != 0) return HR_ENOMEM;
  prd.source.ptr = st;
  prd.read_callback = hr__h2_read_body;
  st->has_data = (unsigned)(!no_body || wait_end);
  /* nghttp2 copies the fields (no NO_COPY flags): nothing here has to
   * outlive the call. */
  rv = nghttp2_submit_response(st->h2->ng, st->id, s.nv, s.n, st->has_data ? &prd : NULL);
  if (rv != 0) return HR_ENOMEM;
  st->submitted = 1;
  return 0;
}

/* ---- the body ------------------------------------------------------------ */

static int h2_data(hr__exchange_t *ex, const void *p, size_t n) {
  hr__h2s_t *st = ex->h2s;
  hr__h2piece_t *pc;
  if (n == 0 || st->reset || !st->has_data) return 0;
  pc = push(st, HR__H2P_MEM, n);
  if (pc == NULL) return HR_ENOMEM;
  memcpy(pc + 1, p, n);
  pc->p = (const char *)(pc + 1);
  pc->len = n;
  st->queued += n;
  wake(st);
  return 0;
}

/* A piece the handler still owns (borrowed bytes, a file range), handed
 * back through its release callback once framed or at the stream's end;
 * not framed (length 0) when the stream is gone or bodiless.  NULL when
 * out of memory. */
static hr__h2piece_t *push_held(hr__h2s_t *st, hr__h2pkind_t kind, uint64_t n, void *udata) {
  hr__h2piece_t *pc = push(st, kind, 0);
  if (pc == NULL) return NULL;
  pc->len = st->reset || !st->has_data ? 0 : n;
  pc->udata = udata;
  return pc;
}

static int h2_borrow(hr__exchange_t *ex, const void *p, size_t n, hr_release_cb release,
                     void *udata) {
  hr__h2s_t *st = ex->h2s;
  hr__h2piece_t *pc = push_held(st, HR__H2P_BORROW, n, udata);
  if (pc == NULL) return HR_ENOMEM;
  pc->p = p;
  pc->release = release;
  wake(st);
  return 0;
}

static int h2_file(hr__exchange_t *ex, int fd, uint64_t offset, uint64_t n,
                   hr_file_release_cb release, void *udata) {
  hr__h2s_t *st = ex->h2s;
  hr__h2piece_t *pc = push_held(st, HR__H2P_FILE, n, udata);
  if (pc == NULL) return HR_ENOMEM;
  pc->fd = fd;
  pc->foff = offset;
  pc->file_release = release;
  wake(st);
  return 0;
}

/* The body's end; the trailer section (RFC 9113 §8.1), when the handler
 * gave one, goes with the last DATA frame (hr__h2_read_body), its fields
 * ready for nghttp2 from here (lower-case names, §8.2). */
static int h2_end(hr__exchange_t *ex) {
  hr__h2s_t *st = ex->h2s;
  hr_span_t lines = {ex->res.trailers, ex->res.trailers_len};
  if (lines.len > 0 && !st->reset && st->has_data) {
    nvset_t s;
    memset(&s, 0, sizeof(s));
    s.arena = &ex->arena;
    s.cap = count_lines(lines);
    s.nv = hr__arena_alloc(&ex->arena, s.cap * sizeof(nghttp2_nv));
    if (s.nv == NULL || nv_lines(&s, lines, NULL) != 0) return HR_ENOMEM;
    st->trailers = s.nv;
    st->ntrailers = s.n;
  }
  st->body_end = 1;
  wake(st);
  return 0;
}

static int h2_continue(hr__exchange_t *ex) {
  hr__h2s_t *st = ex->h2s;
  static const nghttp2_nv nv = {(uint8_t *)":status", (uint8_t *)"100", 7, 3,
                                NGHTTP2_NV_FLAG_NONE};
  if (st->reset) return 0;
  if (nghttp2_submit_headers(st->h2->ng, NGHTTP2_FLAG_NONE, st->id, NULL, &nv, 1, NULL) != 0)
    return HR_ENOMEM;
  return 0;
}

/* ---- the exchange's end -------------------------------------------------- */

static void h2_done(hr__exchange_t *ex) {
  hr__h2s_t *st = ex->h2s;
  ex->handler_active = 0;
  ex->t_done = uv_hrtime();
  st->body_end = 1; /* a whole response has no end call of its own */
  wake(st);
}

/* The response cannot be framed: the stream is reset and the exchange is
 * complete as far as its handler goes. */
static void h2_lost(hr__exchange_t *ex) {
  ex->res.state = HR__RES_DONE;
  ex->handler_active = 0;
  ex->t_done = uv_hrtime();
  hr__h2_reset(ex->h2s, NGHTTP2_INTERNAL_ERROR);
}

static void h2_cut(hr__exchange_t *ex) { hr__h2_reset(ex->h2s, NGHTTP2_INTERNAL_ERROR); }

static size_t h2_queued(const hr__exchange_t *ex) { return (size_t)ex->h2s->queued; }

static void h2_kick(hr__exchange_t *ex) { hr__conn_kick(ex->conn); }

const hr__proto_t hr__h2_proto = {
    .name = "h2",
    .head = h2_head,
    .data = h2_data,
    .borrow = h2_borrow,
    .file = h2_file,
    .end = h2_end,
    .send_continue = h2_continue,
    .answer_status = hr__dispatch_answer_status,
    .fail = hr__h2_fail,
    .done = h2_done,
    .lost = h2_lost,
    .cut = h2_cut,
    .queued = h2_queued,
    .kick = h2_kick,
    .resume_body = hr__h2_resume_body,
    .peer = hr__conn_ex_peer,
    .transport = hr__conn_ex_transport,
    .stepping = hr__conn_ex_stepping,
    .release = NULL,
};
