/* SPDX-License-Identifier: MIT */
/* WebSocket frames and permessage-deflate for the tests (wsframe.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif

#include <cmocka.h>

#include "wsframe.h"

size_t ws_frame(unsigned char *out, int fin, int rsv, int opcode, const void *data, size_t len,
                int unmasked) {
  static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
  size_t n = 0, i;
  out[n++] = (unsigned char)((fin ? 0x80 : 0) | (rsv & 7) << 4 | opcode);
  if (len < 126) {
    out[n++] = (unsigned char)((unmasked ? 0 : 0x80) | len);
  } else if (len < 65536) {
    out[n++] = (unsigned char)((unmasked ? 0 : 0x80) | 126);
    out[n++] = (unsigned char)(len >> 8);
    out[n++] = (unsigned char)len;
  } else {
    out[n++] = (unsigned char)((unmasked ? 0 : 0x80) | 127);
    for (i = 0; i < 8; i++) out[n++] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
  }
  if (!unmasked) {
    memcpy(out + n, mask, 4);
    n += 4;
  }
  for (i = 0; i < len; i++)
    out[n + i] = (unsigned char)(((const unsigned char *)data)[i] ^ (unmasked ? 0 : mask[i % 4]));
  return n + len;
}

void ws_read_exact(rc_t *c, void *out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r;
    if (c->off < c->len) {
      size_t k = c->len - c->off < n - got ? c->len - c->off : n - got;
      memcpy((char *)out + got, c->buf + c->off, k);
      c->off += k;
      got += k;
      continue;
    }
    r = recv(c->fd, (char *)out + got, n - got, 0);
    if (r <= 0) fail_msg("connection ended after %zu of %zu bytes", got, n);
    got += (size_t)r;
  }
}

void ws_read_frame(rc_t *c, ws_sframe_t *f) {
  unsigned char h[2], ext[8];
  size_t i;
  ws_read_exact(c, h, 2);
  f->fin = h[0] >> 7;
  f->rsv = (h[0] >> 4) & 7;
  f->opcode = h[0] & 0x0f;
  assert_int_equal(h[1] & 0x80, 0);
  f->len = h[1] & 0x7f;
  if (f->len == 126) {
    ws_read_exact(c, ext, 2);
    f->len = (size_t)ext[0] << 8 | ext[1];
  } else if (f->len == 127) {
    ws_read_exact(c, ext, 8);
    for (f->len = 0, i = 0; i < 8; i++) f->len = f->len << 8 | ext[i];
  }
  assert_true(f->len <= sizeof f->data);
  ws_read_exact(c, f->data, f->len);
}

#ifdef HR_HAVE_ZLIB

static z_stream def, inf;
static int def_ready, inf_ready, def_bits = 15;

void ws_deflate_window(int bits) { def_bits = bits; }

size_t ws_deflate(const void *in, size_t len, unsigned char *out, size_t cap, int keep) {
  size_t n;
  if (def_ready && !keep) {
    deflateEnd(&def);
    def_ready = 0;
  }
  if (!def_ready) {
    memset(&def, 0, sizeof def);
    if (deflateInit2(&def, 6, Z_DEFLATED, -def_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    def_ready = 1;
  }
  def.next_in = (Bytef *)(uintptr_t)in;
  def.avail_in = (uInt)len;
  def.next_out = out;
  def.avail_out = (uInt)cap;
  if (deflate(&def, Z_SYNC_FLUSH) != Z_OK || def.avail_in != 0 || def.avail_out == 0) return 0;
  n = cap - def.avail_out;
  return n >= 4 && memcmp(out + n - 4, "\0\0\xff\xff", 4) == 0 ? n - 4 : 0;
}

size_t ws_inflate(const void *in, size_t len, unsigned char *out, size_t cap, int keep) {
  static const unsigned char tail[4] = {0, 0, 0xff, 0xff};
  int rc;
  if (inf_ready && !keep) {
    inflateEnd(&inf);
    inf_ready = 0;
  }
  if (!inf_ready) {
    memset(&inf, 0, sizeof inf);
    if (inflateInit2(&inf, -15) != Z_OK) return (size_t)-1;
    inf_ready = 1;
  }
  inf.next_out = out;
  inf.avail_out = (uInt)cap;
  inf.next_in = (Bytef *)(uintptr_t)in;
  inf.avail_in = (uInt)len;
  rc = inflate(&inf, Z_SYNC_FLUSH);
  if ((rc != Z_OK && rc != Z_BUF_ERROR) || inf.avail_in != 0) return (size_t)-1;
  inf.next_in = (Bytef *)(uintptr_t)tail;
  inf.avail_in = 4;
  rc = inflate(&inf, Z_SYNC_FLUSH);
  if ((rc != Z_OK && rc != Z_BUF_ERROR) || inf.avail_in != 0 || inf.avail_out == 0)
    return (size_t)-1;
  return cap - inf.avail_out;
}

void ws_deflate_end(void) {
  if (def_ready) deflateEnd(&def);
  if (inf_ready) inflateEnd(&inf);
  def_ready = inf_ready = 0;
}

#else /* no zlib: nothing compressed (the server declines every offer) */

size_t ws_deflate(const void *in, size_t len, unsigned char *out, size_t cap, int keep) {
  (void)in, (void)len, (void)out, (void)cap, (void)keep;
  return 0;
}
size_t ws_inflate(const void *in, size_t len, unsigned char *out, size_t cap, int keep) {
  (void)in, (void)len, (void)out, (void)cap, (void)keep;
  return (size_t)-1;
}
void ws_deflate_window(int bits) { (void)bits; }
void ws_deflate_end(void) {}

#endif
