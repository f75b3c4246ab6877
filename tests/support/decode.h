/* SPDX-License-Identifier: MIT */
/*
 * Decoders for the tests of response compression: gzip (zlib), br
 * (libbrotlidec) and zstd, whole or as a stream fed piece by piece.  The
 * tests decode what the server coded and compare it with what the handler
 * wrote.
 */
#ifndef HR_TEST_DECODE_H
#define HR_TEST_DECODE_H

#include <stddef.h>

/* Decodes `len` bytes of coding `name` ("gzip", "br", "zstd") into a
 * malloc'd buffer (NUL after it); stores its length.  NULL when the bytes
 * are not a whole, valid stream of that coding (or the decoder is not
 * built: dec_available). */
char *dec_whole(const char *name, const void *in, size_t len, size_t *out_len);

/* Whether the decoder of `name` was built in. */
int dec_available(const char *name);

/* A streaming decoder, for checking that what was flushed so far decodes
 * to what was written so far. */
typedef struct dec_s dec_t;
dec_t *dec_new(const char *name);
/* Feeds `len` bytes; appends what they decode to, returns 0, or -1 on a
 * decoding error.  dec_out gives everything decoded so far. */
int dec_feed(dec_t *d, const void *in, size_t len);
const char *dec_out(const dec_t *d, size_t *len);
/* Whether the coded stream ended (its last block seen). */
int dec_ended(const dec_t *d);
void dec_free(dec_t *d);

#endif
