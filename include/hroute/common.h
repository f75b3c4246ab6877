/* SPDX-License-Identifier: MIT */
/** @file
 * Shared value types of the public API: the export macro, the {ptr, len} byte
 * span every accessor returns, the allocator hook every instance takes, and the
 * library version.  Nothing here allocates or has state.
 */
#ifndef HROUTE_COMMON_H
#define HROUTE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a declaration as part of the library's interface: the library is
 * built with hidden visibility, and only what carries this is exported
 * (default visibility with GCC and clang; nothing with other compilers). */
#if defined(__GNUC__) || defined(__clang__)
#define HR_EXTERN __attribute__((visibility("default")))
#else
#define HR_EXTERN
#endif

/** Major version of these headers.  While it is 0, a minor release may
 * break the API and the ABI (the shared library's soname carries
 * MAJOR.MINOR). */
#define HR_VERSION_MAJOR 0
/** Minor version of these headers. */
#define HR_VERSION_MINOR 1
/** Patch version of these headers: releases that differ only in it are
 * compatible both ways. */
#define HR_VERSION_PATCH 0

/** Returns the library version as "MAJOR.MINOR.PATCH" (static storage). Any
 * thread. */
HR_EXTERN const char *hr_version_string(void);

/**
 * A borrowed byte span, not NUL-terminated.  Whoever hands one out states how
 * long `ptr` stays valid; request spans live until the response completes.
 * An empty span has len 0 (ptr may be NULL).
 */
typedef struct hr_span_s {
  const char *ptr; /**< the first byte; may be NULL when len is 0 */
  size_t len;      /**< length in bytes */
} hr_span_t;

/** A span over a string literal, without its terminating NUL (an
 * expression; HR_SPAN_INIT is the same as a brace initializer, usable in
 * static initializers). */
#ifdef __cplusplus
#define HR_SPAN_LIT(s) (hr_span_t{(s), sizeof(s) - 1}) /* C++ has no compound literals */
#else
#define HR_SPAN_LIT(s) ((hr_span_t){(s), sizeof(s) - 1})
#endif
/** A brace initializer for a span over string literal `s`, without its
 * terminating NUL: `static const hr_span_t x = HR_SPAN_INIT("abc");`. */
#define HR_SPAN_INIT(s) {(s), sizeof(s) - 1}

/** Returns a span over a NUL-terminated string (NULL gives an empty span). */
HR_EXTERN hr_span_t hr_span_cstr(const char *s);

/** Returns 1 when both spans hold the same bytes, else 0. */
HR_EXTERN int hr_span_eq(hr_span_t a, hr_span_t b);

/** Returns 1 when both spans are equal ignoring ASCII case, else 0. */
HR_EXTERN int hr_span_eq_nocase(hr_span_t a, hr_span_t b);

/**
 * Allocator hook.  Every allocation an instance (router, server) makes goes
 * through the hook given in its options, with `ctx` passed back unchanged,
 * and so do those of the libraries it calls that take an allocator
 * (nghttp2, zlib, Brotli's and zstd's encoders).  The others use libc's:
 * libuv's own, OpenSSL's, wslay's frame context (4 KiB while a WebSocket
 * frame is being read or written), libdeflate's compressors (one per gzip
 * level in use per loop, made once) and Brotli's whole-body encoder (for
 * the length of one call).
 * `malloc` and `realloc` return NULL on failure; hroute turns that into
 * HR_ENOMEM and never aborts.  `free(ctx, NULL)` must be a no-op.  The hook
 * may be called from every thread the instance runs on, concurrently: it must
 * be thread-safe when the server runs more than one worker thread.
 * A NULL hook pointer in an options struct means libc malloc/realloc/free.
 */
typedef struct hr_allocator_s {
  /** Returns `size` bytes (never 0), aligned as malloc(3) aligns, or NULL. */
  void *(*malloc)(void *ctx, size_t size);
  /** Resizes the block at `ptr` (NULL: a new block) to `size` bytes (never
   * 0), keeping its contents, as realloc(3); returns NULL and leaves the
   * block as it was when it cannot. */
  void *(*realloc)(void *ctx, void *ptr, size_t size);
  /** Releases a block that malloc or realloc returned. */
  void (*free)(void *ctx, void *ptr);
  /** Passed unchanged as the first argument of the three calls. */
  void *ctx;
} hr_allocator_t;

/** Returns the libc allocator (static storage). */
HR_EXTERN const hr_allocator_t *hr_allocator_default(void);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_COMMON_H */
