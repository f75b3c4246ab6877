/* SPDX-License-Identifier: MIT */
/* Records of what an HTTP/2 test client saw (h2seen.h).  The test client
 * does not run out of memory: an allocation failure aborts the test
 * process, as the HTTP/1.1 client's does. */
#include "h2seen.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n != 0 ? n : 1);
  if (q == NULL) abort();
  return q;
}

static char *xdup(const void *p, size_t n) {
  char *s = xrealloc(NULL, n + 1);
  if (n > 0) memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

h2_stream_t *h2_seen_stream(const h2_conn_seen_t *s, int32_t id) {
  size_t i;
  for (i = s->nstreams; i-- > 0;)
    if (s->streams[i]->id == id) return s->streams[i];
  return NULL;
}

h2_stream_t *h2_seen_stream_make(h2_conn_seen_t *s, int32_t id) {
  h2_stream_t *st = h2_seen_stream(s, id);
  if (st != NULL) return st;
  if (s->nstreams == s->capstreams) {
    s->capstreams = s->capstreams ? 2 * s->capstreams : 16;
    s->streams = xrealloc(s->streams, s->capstreams * sizeof *s->streams);
  }
  st = xrealloc(NULL, sizeof *st);
  memset(st, 0, sizeof *st);
  st->id = id;
  st->status = -1;
  st->body = xdup("", 0);
  s->streams[s->nstreams++] = st;
  return st;
}

void h2_fields_add(h2_fields_t *f, const void *name, size_t nlen,
                   const void *value, size_t vlen) {
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 8;
    f->v = xrealloc(f->v, f->cap * sizeof *f->v);
  }
  f->v[f->n].name = xdup(name, nlen);
  f->v[f->n].value = xdup(value, vlen);
  f->v[f->n].value_len = vlen;
  f->n++;
}

const char *h2_fields_get(const h2_fields_t *f, const char *name) {
  size_t i;
  for (i = 0; i < f->n; i++)
    if (strcasecmp(f->v[i].name, name) == 0) return f->v[i].value;
  return NULL;
}

size_t h2_fields_count(const h2_fields_t *f, const char *name) {
  size_t i, n = 0;
  for (i = 0; i < f->n; i++) n += strcasecmp(f->v[i].name, name) == 0;
  return n;
}

void h2_stream_append(h2_stream_t *st, const void *p, size_t n) {
  st->body = xrealloc(st->body, st->body_len + n + 1);
  if (n > 0) memcpy(st->body + st->body_len, p, n);
  st->body_len += n;
  st->body[st->body_len] = '\0';
}

void h2_block_begin(h2_block_t *b, h2_stream_t *st) {
  b->st = st;
  b->kind = st->status >= 200 ? 2 : 0;
}

void h2_block_field(h2_block_t *b, const void *name, size_t nlen,
                    const void *value, size_t vlen) {
  if (nlen == 7 && memcmp(name, ":status", 7) == 0 && b->kind != 2) {
    char num[8] = "";
    int code;
    memcpy(num, value, vlen < sizeof num - 1 ? vlen : sizeof num - 1);
    code = atoi(num);
    if (code >= 100 && code < 200) {
      b->kind = 1;
      b->st->interim++;
    } else {
      b->kind = 0;
      b->st->status = code;
    }
    return;
  }
  if (nlen > 0 && *(const char *)name == ':') return;
  if (b->kind == 0)
    h2_fields_add(&b->st->fields, name, nlen, value, vlen);
  else if (b->kind == 2)
    h2_fields_add(&b->st->trailers, name, nlen, value, vlen);
}

void h2_seen_frame(h2_conn_seen_t *s, uint8_t type) {
  s->frames[type < H2_FRAME_TYPES ? type : H2_FRAME_TYPES - 1]++;
  s->frames_total++;
}

void h2_seen_goaway(h2_conn_seen_t *s, int32_t last_id, uint32_t error,
                    const void *debug, size_t debug_len) {
  s->goaway = 1;
  s->goaway_last_id = last_id;
  s->goaway_error = error;
  if (debug_len >= sizeof s->goaway_debug) debug_len = sizeof s->goaway_debug - 1;
  if (debug_len > 0) memcpy(s->goaway_debug, debug, debug_len);
  s->goaway_debug[debug_len] = '\0';
}

void h2_seen_setting(h2_conn_seen_t *s, uint16_t id, uint32_t value) {
  if (id == 0 || id > 6) return;
  s->settings_value[id] = value;
  s->settings_present |= 1u << id;
}

size_t h2_seen_resets(const h2_conn_seen_t *s) {
  size_t i, n = 0;
  for (i = 0; i < s->nstreams; i++) n += s->streams[i]->reset != 0;
  return n;
}

void h2_fields_free(h2_fields_t *f) {
  size_t i;
  for (i = 0; i < f->n; i++) {
    free(f->v[i].name);
    free(f->v[i].value);
  }
  free(f->v);
  memset(f, 0, sizeof *f);
}

void h2_seen_free(h2_conn_seen_t *s) {
  size_t i;
  for (i = 0; i < s->nstreams; i++) {
    h2_fields_free(&s->streams[i]->fields);
    h2_fields_free(&s->streams[i]->trailers);
    free(s->streams[i]->body);
    free(s->streams[i]);
  }
  free(s->streams);
  memset(s, 0, sizeof *s);
}
