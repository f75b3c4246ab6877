/* SPDX-License-Identifier: MIT */
/*
 * WebSocket frames (RFC 6455 §5.2) for the tests' raw clients: a client's
 * frame built byte by byte (masked unless asked not to, reserved bits as
 * given), a server's frame read from an rc_t (never masked), and
 * permessage-deflate's two steps (RFC 7692 §7.2) done with zlib, so a test
 * can compress what it sends and inflate what it reads.
 */
#ifndef HR_TEST_WSFRAME_H
#define HR_TEST_WSFRAME_H

#include <stddef.h>

#include "rawclient.h"

/* Appends one client frame to `out` (room for len + 14 bytes): `rsv` is
 * the three reserved bits (4: RSV1); masked with a fixed key unless
 * `unmasked`.  Returns its length. */
size_t ws_frame(unsigned char *out, int fin, int rsv, int opcode, const void *data, size_t len,
                int unmasked);

/* Reads exactly n bytes from c (what its reader buffered first); fails
 * the test when the connection ends first. */
void ws_read_exact(rc_t *c, void *out, size_t n);

typedef struct ws_sframe_s {
  int fin, rsv, opcode;
  size_t len;
  unsigned char data[140000];
} ws_sframe_t;

/* Reads one server frame into f; fails the test when it is masked or
 * longer than f->data. */
void ws_read_frame(rc_t *c, ws_sframe_t *f);

/* permessage-deflate with zlib, for the client's side: compresses `len`
 * bytes as one message (raw deflate, window 15, a sync flush, its last
 * four bytes taken off), `keep` 1 to keep the compressor's window for the
 * next call (context takeover), 0 to start afresh.  Returns the length at
 * out (room `cap`), or 0 when it does not fit. */
size_t ws_deflate(const void *in, size_t len, unsigned char *out, size_t cap, int keep);
/* Inflates one message received compressed (the four bytes put back);
 * `keep` as above.  Returns its length at out, or (size_t)-1 on bad
 * data or when it does not fit. */
size_t ws_inflate(const void *in, size_t len, unsigned char *out, size_t cap, int keep);
/* The client's window for ws_deflate's next fresh compressor, 9..15 (15
 * until changed): what the server's client_max_window_bits allows. */
void ws_deflate_window(int bits);
/* Frees the kept compressor and decompressor. */
void ws_deflate_end(void);

#endif /* HR_TEST_WSFRAME_H */
