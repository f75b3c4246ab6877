/* SPDX-License-Identifier: MIT */
/*
 * permessage-deflate (RFC 7692) on zlib's raw deflate: the answer to the
 * client's offers (§7.1), compressing a message (§7.2.1: deflate with a
 * sync flush, the trailing 00 00 ff ff taken off) and inflating one
 * (§7.2.2: the four bytes put back, then inflate).
 *
 * Without context takeover (the default) one compressor and one
 * decompressor per loop (hr_stream_loop_local) serve every connection of
 * the loop, reset for each message; with it a connection makes its own at
 * its first compressed message, kept to its end.  Either way the output
 * goes to the loop's two buffers: what was compressed is copied into the
 * output queue at once, what was inflated lives for the message callback.
 * zlib allocates through the server's allocator.
 */
#include <limits.h>
#include <string.h>

#include "util/text.h"
#include "websocket/ws.h"

#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif

/* The four bytes a sync flush ends with (§7.2.1), put back to inflate. */
static const uint8_t SYNC_TAIL[4] = {0x00, 0x00, 0xff, 0xff};

/* ---- the answer to the client's offers --------------------------------------- */

/* The next element of a list (or parameter of an element) up to `sep`
 * outside quoted strings, trimmed.  Returns 0 when *rest is exhausted. */
static int next_part(hr_span_t *rest, char sep, hr_span_t *part) {
  const char *s = rest->ptr, *end = rest->ptr + rest->len, *e = s, *t;
  int quoted = 0;
  if (rest->len == 0 || s == NULL) return 0;
  for (; e < end; e++) {
    if (quoted && *e == '\\' && e + 1 < end) {
      e++;
    } else if (*e == '"') {
      quoted = !quoted;
    } else if (!quoted && *e == sep) {
      break;
    }
  }
  t = e;
  while (s < t && (*s == ' ' || *s == '\t')) s++;
  while (t > s && (t[-1] == ' ' || t[-1] == '\t')) t--;
  *part = (hr_span_t){s, (size_t)(t - s)};
  rest->ptr = e == end ? end : e + 1;
  rest->len = (size_t)(end - rest->ptr);
  return 1;
}

/* A window-bits value (§7.1.2.1: 8..15, digits without a leading zero),
 * maybe a quoted string (§7.1: its unquoted text must be that); 0 when it
 * is not one. */
static unsigned window_bits_of(hr_span_t v) {
  char d[3];
  size_t n = 0, i;
  if (v.len >= 2 && v.ptr[0] == '"' && v.ptr[v.len - 1] == '"') {
    for (i = 1; i + 1 < v.len; i++) {
      char c = v.ptr[i];
      if (c == '\\' && i + 2 < v.len) c = v.ptr[++i];
      if (n == sizeof d) return 0;
      d[n++] = c;
    }
  } else {
    if (v.len == 0 || v.len > sizeof d) return 0; /* "name=" and nothing */
    memcpy(d, v.ptr, v.len);
    n = v.len;
  }
  if (n == 1 && (d[0] == '8' || d[0] == '9')) return (unsigned)(d[0] - '0');
  if (n == 2 && d[0] == '1' && d[1] >= '0' && d[1] <= '5') return 10u + (unsigned)(d[1] - '0');
  return 0;
}

/* What one permessage-deflate offer asks (§7.1.1, §7.1.2). */
typedef struct offer_s {
  unsigned snct : 1, cnct : 1, smwb_set : 1, cmwb_set : 1;
  unsigned smwb, cmwb; /* cmwb 0: offered without a value */
} offer_t;

/* Parses the parameters of an offer; 0 when it must be declined (§7.1:
 * an unknown or repeated parameter, a value where none belongs or a bad
 * one). */
static int parse_offer(hr_span_t params, offer_t *o) {
  hr_span_t p;
  memset(o, 0, sizeof(*o));
  while (next_part(&params, ';', &p)) {
    hr_span_t name = p, value = {NULL, 0};
    const char *eq = memchr(p.ptr, '=', p.len);
    int has_value = eq != NULL;
    if (has_value) {
      hr_span_t rest = {eq + 1, (size_t)(p.ptr + p.len - eq - 1)};
      name.len = (size_t)(eq - p.ptr);
      while (name.len > 0 && (name.ptr[name.len - 1] == ' ' || name.ptr[name.len - 1] == '\t'))
        name.len--;
      next_part(&rest, '\0', &value);
    }
    if (hr_span_eq_nocase(name, HR_SPAN_LIT("server_no_context_takeover"))) {
      if (has_value || o->snct) return 0;
      o->snct = 1;
    } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("client_no_context_takeover"))) {
      if (has_value || o->cnct) return 0;
      o->cnct = 1;
    } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("server_max_window_bits"))) {
      if (!has_value || o->smwb_set || (o->smwb = window_bits_of(value)) == 0) return 0;
      o->smwb_set = 1;
    } else if (hr_span_eq_nocase(name, HR_SPAN_LIT("client_max_window_bits"))) {
      if (o->cmwb_set || (has_value && (o->cmwb = window_bits_of(value)) == 0)) return 0;
      o->cmwb_set = 1;
    } else {
      return 0;
    }
  }
  return 1;
}

/* Fills `agreed` and the answer from an offer the settings can meet;
 * returns 0 when they cannot (the server's window would be under 9). */
static int agree(const offer_t *o, const hr_websocket_deflate_t *d, hr__ws_pmd_t *agreed,
                 char *answer, size_t cap) {
  unsigned sbits = d->server_window_bits, cbits = 15;
  int n;
  if (o->smwb_set && o->smwb < sbits) sbits = o->smwb;
  if (sbits < 9) return 0; /* zlib's raw deflate has no 256-byte window */
  if (o->cmwb_set) {
    cbits = d->client_window_bits;
    if (o->cmwb != 0 && o->cmwb < cbits) cbits = o->cmwb;
  }
  memset(agreed, 0, sizeof(*agreed));
  agreed->server_bits = (uint8_t)sbits;
  agreed->client_bits = (uint8_t)cbits;
  agreed->server_takeover = !o->snct && d->context_takeover;
  agreed->client_takeover = !o->cnct && d->context_takeover;
  agreed->level = d->level;
  agreed->mem_level = d->mem_level;
  agreed->min_length = d->min_length;
  n = snprintf(answer, cap, "permessage-deflate%s%s",
               agreed->server_takeover ? "" : "; server_no_context_takeover",
               agreed->client_takeover ? "" : "; client_no_context_takeover");
  /* §7.1.2.1: an offer of server_max_window_bits is accepted by naming
   * it, with the same value or less (15 included). */
  if ((sbits < 15 || o->smwb_set) && n > 0 && (size_t)n < cap)
    n += snprintf(answer + n, cap - (size_t)n, "; server_max_window_bits=%u", sbits);
  if (o->cmwb_set && cbits < 15 && n > 0 && (size_t)n < cap)
    n += snprintf(answer + n, cap - (size_t)n, "; client_max_window_bits=%u", cbits);
  return n > 0 && (size_t)n < cap;
}

int hr__ws_pmd_negotiate(const hr_request_t *req, const hr_websocket_deflate_t *d,
                         hr__ws_pmd_t *agreed, char *answer, size_t cap) {
  size_t cursor = 0;
  hr_span_t line, elem;
#ifndef HR_HAVE_ZLIB
  return 0;
#endif
  if (!d->enabled) return 0;
  while (hr_request_field(req, HR_SPAN_LIT("Sec-WebSocket-Extensions"), &cursor, &line) == 0)
    while (next_part(&line, ',', &elem)) {
      hr_span_t name;
      offer_t o;
      if (!next_part(&elem, ';', &name) ||
          !hr_span_eq_nocase(name, HR_SPAN_LIT("permessage-deflate")))
        continue;
      if (parse_offer(elem, &o) && agree(&o, d, agreed, answer, cap)) return 1;
    }
  return 0;
}

int hr__ws_pmd_options_ok(const hr_websocket_deflate_t *d) {
  if (!d->enabled) return 1;
  return d->server_window_bits >= 9 && d->server_window_bits <= 15 &&
         d->client_window_bits >= 8 && d->client_window_bits <= 15 && d->level >= 1 &&
         d->level <= 9 && d->mem_level >= 1 && d->mem_level <= 9 && d->context_takeover <= 1;
}

#ifdef HR_HAVE_ZLIB

/* ---- zlib's state: the loop's, or a connection's ------------------------------ */

/* Shared compressors a loop keeps, one per set of settings (window, level,
 * memLevel) its connections agreed on: clients that ask for different
 * windows do not make one compressor be rebuilt at every send. */
#define SHARED_DEFS 4

typedef struct pmd_def_s {
  z_stream z;
  uint8_t ready, bits, level, mem;
  uint64_t used; /* a counter: the least recently used goes first */
} pmd_def_t;

typedef struct pmd_loop_s {
  const hr_allocator_t *a;
  pmd_def_t defs[SHARED_DEFS];
  uint64_t uses;
  z_stream inf;
  uint8_t inf_ready;
  uint8_t *dbuf;                        /* compressed output */
  size_t dcap;
  uint8_t *ibuf; /* an inflated message, during its callback */
  size_t icap;
} pmd_loop_t;

/* The connection's own state, with context takeover. */
struct hr__ws_zown_s {
  z_stream def, inf;
  uint8_t def_ready, inf_ready;
};

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  const hr_allocator_t *a = opaque;
  if (size != 0 && items > SIZE_MAX / size) return NULL;
  return a->malloc(a->ctx, (size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
  const hr_allocator_t *a = opaque;
  a->free(a->ctx, p);
}

static void z_setup(z_stream *z, const hr_allocator_t *a) {
  memset(z, 0, sizeof(*z));
  z->zalloc = z_alloc;
  z->zfree = z_free;
  z->opaque = (voidpf)a;
}

static int loop_key; /* hr_stream_loop_local's key: its address */

static void *loop_make(void *arg) {
  const hr_allocator_t *a = arg;
  pmd_loop_t *l = a->malloc(a->ctx, sizeof(*l));
  if (l == NULL) return NULL;
  memset(l, 0, sizeof(*l));
  l->a = a;
  return l;
}

static void loop_release(void *obj) {
  pmd_loop_t *l = obj;
  const hr_allocator_t *a = l->a;
  size_t i;
  for (i = 0; i < SHARED_DEFS; i++)
    if (l->defs[i].ready) deflateEnd(&l->defs[i].z);
  if (l->inf_ready) inflateEnd(&l->inf);
  a->free(a->ctx, l->dbuf);
  a->free(a->ctx, l->ibuf);
  a->free(a->ctx, l);
}

static pmd_loop_t *loop_of(hr_websocket_t *ws) {
  return hr_stream_loop_local(ws->s, &loop_key, loop_make, (void *)ws->a, loop_release);
}

/* Buffers past this are not kept for the next message. */
#define KEEP_BYTES (256u * 1024u)

static int grow(const hr_allocator_t *a, uint8_t **buf, size_t *cap, size_t need) {
  size_t c = *cap ? *cap : 4096;
  uint8_t *n;
  while (c < need) {
    if (c > SIZE_MAX / 2) return -1;
    c *= 2;
  }
  if (c == *cap) return 0;
  if ((n = a->realloc(a->ctx, *buf, c)) == NULL) return -1;
  *buf = n;
  *cap = c;
  return 0;
}

static void trim(const hr_allocator_t *a, uint8_t **buf, size_t *cap) {
  if (*cap <= KEEP_BYTES) return;
  a->free(a->ctx, *buf);
  *buf = NULL;
  *cap = 0;
}

/* The connection's own zlib state (context takeover), made at first use. */
static struct hr__ws_zown_s *own_of(hr_websocket_t *ws) {
  hr__ws_pmd_t *p = ws->pmd;
  if (p->own == NULL && (p->own = ws->a->malloc(ws->a->ctx, sizeof(*p->own))) != NULL)
    memset(p->own, 0, sizeof(*p->own));
  return p->own;
}

/* The compressor for this message: the connection's (made at first use)
 * or the loop's, reset and made with this connection's settings. */
static z_stream *compressor(hr_websocket_t *ws, pmd_loop_t *l) {
  hr__ws_pmd_t *p = ws->pmd;
  if (p->server_takeover) {
    struct hr__ws_zown_s *o = own_of(ws);
    if (o == NULL) return NULL;
    if (!o->def_ready) {
      z_setup(&o->def, ws->a);
      if (deflateInit2(&o->def, p->level, Z_DEFLATED, -(int)p->server_bits, p->mem_level,
                       Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
      o->def_ready = 1;
    }
    return &o->def;
  }
  {
    pmd_def_t *d = NULL, *old = &l->defs[0];
    size_t i;
    for (i = 0; i < SHARED_DEFS && d == NULL; i++) {
      pmd_def_t *c = &l->defs[i];
      if (c->ready && c->bits == p->server_bits && c->level == p->level && c->mem == p->mem_level)
        d = c;
      else if (!c->ready || (old->ready && c->used < old->used))
        old = c;
    }
    if (d != NULL) {
      deflateReset(&d->z);
    } else { /* a new set of settings: an unused slot, or the oldest */
      d = old;
      if (d->ready) deflateEnd(&d->z);
      d->ready = 0;
      z_setup(&d->z, l->a);
      if (deflateInit2(&d->z, p->level, Z_DEFLATED, -(int)p->server_bits, p->mem_level,
                       Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
      d->ready = 1;
      d->bits = p->server_bits;
      d->level = p->level;
      d->mem = p->mem_level;
    }
    d->used = ++l->uses;
    return &d->z;
  }
}

/* Deflates `len` bytes with a sync flush into the loop's dbuf, its last
 * four bytes taken off (*n left).  Returns 0 or HR_ENOMEM. */
static int compress_into(hr_websocket_t *ws, pmd_loop_t *l, const void *in, size_t len,
                         size_t *out_n) {
  z_stream *z = compressor(ws, l);
  const uint8_t *src = in;
  size_t left = len, n = 0;
  int rc;
  if (z == NULL || grow(l->a, &l->dbuf, &l->dcap, len / 2 + 64) != 0) return HR_ENOMEM;
  for (;;) {
    uInt take = left > (1u << 30) ? 1u << 30 : (uInt)left;
    z->next_in = (Bytef *)(uintptr_t)src;
    z->avail_in = take;
    z->next_out = l->dbuf + n;
    z->avail_out = (uInt)((l->dcap - n) > (1u << 30) ? 1u << 30 : l->dcap - n);
    rc = deflate(z, take == left ? Z_SYNC_FLUSH : Z_NO_FLUSH);
    n = (size_t)(z->next_out - l->dbuf);
    src += take - z->avail_in;
    left -= take - z->avail_in;
    if (rc != Z_OK && rc != Z_BUF_ERROR) return HR_ENOMEM;
    /* Done when everything went in and the flush had room to finish. */
    if (left == 0 && z->avail_in == 0 && z->avail_out > 0) break;
    if (z->avail_out == 0 && grow(l->a, &l->dbuf, &l->dcap, l->dcap + 1) != 0) return HR_ENOMEM;
  }
  /* A sync flush ends with an empty stored block: its LEN/NLEN go. */
  if (n < 4 || memcmp(l->dbuf + n - 4, SYNC_TAIL, 4) != 0) return HR_ENOMEM;
  *out_n = n - 4;
  return 0;
}

int hr__ws_pmd_compress(hr_websocket_t *ws, const void *in, size_t len, const uint8_t **out,
                        size_t *out_len) {
  pmd_loop_t *l;
  size_t n = 0;
  int rc;
  /* An empty message goes as it is (with takeover, a second sync flush
   * with nothing new writes nothing at all). */
  if (len == 0 || len < ws->pmd->min_length) return 1;
  if ((l = loop_of(ws)) == NULL) return HR_ENOMEM;
  rc = compress_into(ws, l, in, len, &n);
  /* Without takeover nothing remembers this message: send it as it is
   * when compressing did not pay. */
  if (rc == 0 && !ws->pmd->server_takeover && n >= len) rc = 1;
  if (rc != 0) {
    trim(l->a, &l->dbuf, &l->dcap); /* hr__ws_pmd_sent will not */
    return rc;
  }
  *out = l->dbuf;
  *out_len = n;
  return 0;
}

void hr__ws_pmd_sent(hr_websocket_t *ws) {
  pmd_loop_t *l = loop_of(ws);
  if (l != NULL) trim(l->a, &l->dbuf, &l->dcap);
}

/* The decompressor for this message. */
static z_stream *decompressor(hr_websocket_t *ws, pmd_loop_t *l) {
  hr__ws_pmd_t *p = ws->pmd;
  if (p->client_takeover) {
    struct hr__ws_zown_s *o = own_of(ws);
    if (o == NULL) return NULL;
    if (!o->inf_ready) {
      z_setup(&o->inf, ws->a);
      if (inflateInit2(&o->inf, -(int)p->client_bits) != Z_OK) return NULL;
      o->inf_ready = 1;
    }
    return &o->inf;
  }
  if (!l->inf_ready) {
    z_setup(&l->inf, l->a);
    if (inflateInit2(&l->inf, -15) != Z_OK) return NULL; /* any window a client may use */
    l->inf_ready = 1;
  } else {
    inflateReset(&l->inf);
  }
  return &l->inf;
}

/* After a deflate stream that ended (a block with BFINAL, §7.2.3.4) the
 * next message may still refer back into the window: start a new stream
 * that remembers it. */
static int restart_keeping_window(z_stream *z) {
  Bytef dict[32768];
  uInt n = sizeof dict;
  if (inflateGetDictionary(z, dict, &n) != Z_OK || inflateReset(z) != Z_OK) return -1;
  return n == 0 || inflateSetDictionary(z, dict, n) == Z_OK ? 0 : -1;
}

/* Grows the loop's ibuf for at least `need` bytes, never past `max` (the
 * limit and one byte: enough to see a message is over it). */
static int grow_ibuf(pmd_loop_t *l, size_t need, uint64_t max) {
  size_t c = l->icap ? l->icap : 4096;
  uint8_t *n;
  while (c < need && c <= SIZE_MAX / 2) c *= 2;
  if ((uint64_t)c > max) c = (size_t)max;
  if (c < need) return -1;
  if (c <= l->icap) return 0;
  if ((n = l->a->realloc(l->a->ctx, l->ibuf, c)) == NULL) return -1;
  l->ibuf = n;
  l->icap = c;
  return 0;
}

/* Inflates into the loop's ibuf: 0 and *out_n, or a close code. */
static int inflate_into(hr_websocket_t *ws, pmd_loop_t *l, const uint8_t *in, size_t len,
                        size_t *out_n) {
  z_stream *z = decompressor(ws, l);
  uint64_t limit = ws->max_message, max = limit < SIZE_MAX ? limit + 1 : SIZE_MAX;
  size_t n = 0, stage = 0, first;
  if (z == NULL) return HR__WS_INTERNAL;
  first = len < (size_t)limit / 4 ? len * 4 + 64 : (size_t)max;
  if (grow_ibuf(l, first, max) != 0) return HR__WS_INTERNAL;
  /* Stage 0: the message, in pieces zlib can count; stage 1: the tail. */
  z->next_in = (Bytef *)(uintptr_t)in;
  z->avail_in = 0;
  for (;;) {
    size_t room;
    int rc;
    if (z->avail_in == 0) {
      if (stage == 0 && len > 0) {
        uInt take = len > (1u << 30) ? 1u << 30 : (uInt)len;
        z->next_in = (Bytef *)(uintptr_t)in;
        z->avail_in = take;
        in += take;
        len -= take;
      } else if (stage == 0) {
        stage = 1;
        z->next_in = (Bytef *)(uintptr_t)SYNC_TAIL;
        z->avail_in = sizeof SYNC_TAIL;
      }
    }
    room = l->icap - n;
    if ((uint64_t)n > limit) return HR__WS_TOO_BIG;
    if (room == 0) {
      if (grow_ibuf(l, l->icap + 1, max) != 0) return HR__WS_INTERNAL;
      room = l->icap - n;
    }
    z->next_out = l->ibuf + n;
    z->avail_out = (uInt)(room > (1u << 30) ? 1u << 30 : room);
    rc = inflate(z, Z_SYNC_FLUSH);
    n = (size_t)(z->next_out - l->ibuf);
    if ((uint64_t)n > limit) return HR__WS_TOO_BIG;
    if (rc == Z_STREAM_END) {
      /* A final block (§7.2.3.4) ends the message; what follows it is
       * ignored (the RFC's own example ends with the first octet of an
       * empty stored block). */
      if (ws->pmd->client_takeover && restart_keeping_window(z) != 0) return HR__WS_INTERNAL;
      break;
    }
    if (rc == Z_MEM_ERROR) return HR__WS_INTERNAL;
    if (rc != Z_OK && rc != Z_BUF_ERROR) return HR__WS_BAD_DATA;
    /* Done: the tail went in and zlib had room to spare.  The message
     * must have ended where a block did (its sync flush, §7.2.1): zlib
     * then waits for a block's header (data_type has 128). */
    if (stage == 1 && z->avail_in == 0 && z->avail_out > 0) {
      if ((z->data_type & 128) == 0) return HR__WS_BAD_DATA;
      break;
    }
  }
  *out_n = n;
  return 0;
}

int hr__ws_pmd_inflate(hr_websocket_t *ws, const uint8_t *in, size_t len, const uint8_t **out,
                       size_t *out_len) {
  pmd_loop_t *l = loop_of(ws);
  size_t n = 0;
  int rc;
  if (l == NULL) return HR__WS_INTERNAL;
  if ((rc = inflate_into(ws, l, in, len, &n)) != 0) {
    trim(l->a, &l->ibuf, &l->icap); /* no delivery follows to do it */
    return rc;
  }
  *out = l->ibuf;
  *out_len = n;
  return 0;
}

void hr__ws_pmd_delivered(hr_websocket_t *ws) {
  pmd_loop_t *l = ws->s != NULL ? loop_of(ws) : NULL;
  if (l != NULL) trim(l->a, &l->ibuf, &l->icap);
}

void hr__ws_pmd_end(hr_websocket_t *ws) {
  hr__ws_pmd_t *p = ws->pmd;
  if (p == NULL || p->own == NULL) return;
  if (p->own->def_ready) deflateEnd(&p->own->def);
  if (p->own->inf_ready) inflateEnd(&p->own->inf);
  ws->a->free(ws->a->ctx, p->own);
  p->own = NULL;
}

void hr__ws_pmd_free(hr_websocket_t *ws) {
  if (ws->pmd == NULL) return;
  hr__ws_pmd_end(ws);
  ws->a->free(ws->a->ctx, ws->pmd);
  ws->pmd = NULL;
}

#else /* no zlib: never negotiated, so never called */

int hr__ws_pmd_compress(hr_websocket_t *ws, const void *in, size_t len, const uint8_t **out,
                        size_t *out_len) {
  (void)ws, (void)in, (void)len, (void)out, (void)out_len;
  return 1;
}
void hr__ws_pmd_sent(hr_websocket_t *ws) { (void)ws; }
int hr__ws_pmd_inflate(hr_websocket_t *ws, const uint8_t *in, size_t len, const uint8_t **out,
                       size_t *out_len) {
  (void)ws, (void)in, (void)len, (void)out, (void)out_len;
  return HR__WS_PROTOCOL;
}
void hr__ws_pmd_delivered(hr_websocket_t *ws) { (void)ws; }
void hr__ws_pmd_end(hr_websocket_t *ws) { (void)ws; }
void hr__ws_pmd_free(hr_websocket_t *ws) {
  if (ws->pmd != NULL) ws->a->free(ws->a->ctx, ws->pmd);
  ws->pmd = NULL;
}

#endif /* HR_HAVE_ZLIB */
