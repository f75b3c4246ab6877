/* SPDX-License-Identifier: MIT */
/** @file
 * Static files: a directory served as nginx and Go's http.FileServer serve
 * one, mounted on a router under a path prefix.
 *
 * A request's path below the prefix names a file below the root directory.
 * It cannot leave the root: the router has refused dot segments and
 * escaped dot segments, and the static handler refuses a name whose
 * decoded form holds ".." or "." as a component, an empty component
 * ("a//b"), a NUL byte, or (unless `dotfiles` is set) a component that
 * starts with "." other than ".well-known" (400 for the first three, 404
 * for hidden files).  The name is then opened relative to the root with
 * openat2(2)'s RESOLVE_BENEATH, so a symbolic link may not lead out of the
 * root either (`symlinks` chooses: none at all, within the root (the
 * default), or anywhere); on a kernel without openat2 every component is
 * opened in turn without following links, and symbolic links are refused.
 *
 * What a response carries (RFC 9110):
 *   - Content-Type from the extension: a built-in table (text types with
 *     charset=utf-8), then the system's /etc/mime.types when it exists,
 *     else `default_type`;
 *   - ETag (strong: "<version>-<size>" in hex, the version mixing the
 *     inode and the mtime in nanoseconds, so that a file replaced within a
 *     second gets a new tag, where nginx's "<mtime>-<size>" repeats) and
 *     Last-Modified, and the four preconditions of §13 in their order
 *     (hr_response_not_modified: 304 or 412);
 *   - Range (§14.2): one range answers 206 with Content-Range; several,
 *     206 multipart/byteranges (§14.6); none satisfiable, 416 with a
 *     Content-Range of "bytes *" "/" and the size; If-Range (§13.1.5) with an entity tag
 *     (strong comparison) or the exact Last-Modified date; a Range with
 *     more than 16 ranges, overlapping ones, or more bytes than the file
 *     is answered 200 with the whole file (§14.2 allows ignoring it; it is
 *     how a server avoids being made to send a file many times over);
 *     Accept-Ranges: bytes on every file response;
 *   - HEAD like GET without the body; other methods are the router's
 *     (405, as the mount registers GET and HEAD);
 *   - Cache-Control as configured;
 *   - refusals (403, 404, 416, and 400 for a name refused here) through
 *     hr_response_error: the body and Content-Type of the router's
 *     error_body hook (hr_answers_t) when it has one, else the reason
 *     phrase as text/plain;
 *   - a directory: its index file (index.html), or without one 403 (or
 *     its listing when the `listing` option is on); a directory named without its trailing slash
 *     answers 301 to the name with it (its relative links would break
 *     otherwise);
 *   - precompressed siblings (`precompressed`): for "a.css", "a.css.br" or
 *     "a.css.gz" when Accept-Encoding allows br or gzip (q > 0), sent with
 *     Content-Encoding, the original's Content-Type and an ETag of its own;
 *     every response of such a file says Vary: Accept-Encoding.
 * Files go out with hr_response_send_file (sendfile on plain TCP), or
 * compressed on the fly (the `compress` option).  Names
 * are opened through each loop's open-file cache; a name it does not hold
 * is opened (open, fstat) on libuv's thread pool, so a cold disk never
 * holds the loop.
 *
 * Threads: hr_static_new and hr_static_free on any thread; the handler
 * runs on the loops of the server.  Free a hr_static_t only after the
 * server that served it was freed (or its routes were removed and a
 * second passed).
 */
#ifndef HROUTE_STATIC_H
#define HROUTE_STATIC_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "router.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A static file handler: a root directory and its settings, made by
 * hr_static_new and freed by hr_static_free; opaque. */
typedef struct hr_static_s hr_static_t;

/** Which symbolic links below the root may be followed. */
typedef enum hr_static_symlinks_e {
  HR_STATIC_SYMLINKS_INSIDE = 0, /**< those that stay within the root (default) */
  HR_STATIC_SYMLINKS_NONE = 1,   /**< none: a link anywhere in the path is 404 */
  HR_STATIC_SYMLINKS_ANY = 2     /**< all, wherever they lead */
} hr_static_symlinks_t;

/** Settings; hr_static_options_init() fills the defaults shown. */
typedef struct hr_static_options_s {
  /** The file a directory is answered with; NULL: none (403).  "index.html". */
  const char *index;
  /** Which symbolic links may be followed.  HR_STATIC_SYMLINKS_INSIDE. */
  hr_static_symlinks_t symlinks;
  /** Non-zero: serve names with a component starting with '.' (".git",
   * ".env"); ".well-known" is served either way.  0. */
  int dotfiles;
  /** Non-zero: look for ".br" and ".gz" siblings (see above).  0. */
  int precompressed;
  /** Non-zero: a directory without an index answers an HTML listing of its
   * entries (sorted; directories with a trailing '/'; hidden ones unless
   * dotfiles; names percent-encoded in links and escaped in text), read on
   * the thread pool, as nginx's autoindex.  0: 403. */
  int listing;
  /** The Cache-Control value of every file response, or NULL for none;
   * copied (at most 200 bytes, no control characters).  NULL. */
  const char *cache_control;
  /** A mime.types file read at hr_static_new (NULL: none).
   * "/etc/mime.types", which may be missing. */
  const char *mime_types;
  /** The Content-Type of an extension nobody knows (at most 200 bytes, no
   * control characters).  "application/octet-stream". */
  const char *default_type;
  /** Each loop's open-file cache: at most this many names (files, the
   * directories and misses met on the way), each trusted for
   * cache_valid_ms after its open, then opened again (a file replaced on
   * disk is served within that time), as nginx's open_file_cache and
   * open_file_cache_valid.  0 entries: open per request; at most 2^20.
   * A loop keeps no more than a quarter of RLIMIT_NOFILE (as it is when
   * the loop starts) of them, so that connections keep descriptors; an
   * expired entry is closed at the loop's next request (a deleted file's
   * space comes back then).  An entry of a file of 4096 bytes or less
   * also keeps its bytes, read with the open, and a whole-file response
   * goes out from them with its head in one write: up to 4 KiB of memory
   * per entry.  1000, 1000 ms. */
  size_t cache_entries;
  /** How long an entry of the open-file cache is trusted after its open,
   * in milliseconds (see cache_entries).  1000. */
  uint32_t cache_valid_ms;
  /** Non-zero: a whole-file response (200, no Range) of a file without a
   * precompressed sibling is compressed on the fly when the response's
   * compression settings apply (the route's, its host table's or the
   * server's compress options: the file's type, its size, the client's
   * Accept-Encoding; see hr_response_coding), with Content-Encoding, Vary:
   * Accept-Encoding and a weak ETag, as any compressed response.  The file
   * is read and compressed on libuv's thread pool, then kept in the loop's
   * cache of compressed files (compress_cache_bytes); a file that does
   * not shrink goes as it is, and is noted so as not to be compressed
   * again.  A loop compresses one file at a time: requests for the same
   * file meanwhile wait for that compression, requests for others get
   * their file as it is (so what clients can make the loop spend, and
   * what a stop waits for, is one compression).  A 304 carries the Vary
   * and weak ETag the compressed 200 would (RFC 9110 §15.4.5).  Files of
   * 4096 bytes or less, served from the open-file cache's memory, are
   * compressed by the response itself.  1 (nothing happens unless some
   * compression settings apply). */
  int compress;
  /** The largest file compressed on the fly, in bytes; larger ones go as
   * they are.  8 MiB. */
  uint64_t compress_max_bytes;
  /** Each loop's cache of files compressed on the fly, in bytes of
   * compressed data (least recently used out first); a file is keyed by
   * its name, its identity in the open-file cache (inode, modification and
   * change times) and size, and the coding and level, so a changed file
   * is never answered with the old bytes, even one rewritten in place
   * with its modification time set back.  0: no cache (every response compresses
   * anew).  8 MiB. */
  size_t compress_cache_bytes;
} hr_static_options_t;

/** Fills `opts` with the defaults shown in hr_static_options_t.  Any
 * thread. */
HR_EXTERN void hr_static_options_init(hr_static_options_t *opts);

/**
 * Opens `root` (a directory; its descriptor is kept until hr_static_free)
 * and reads the mime.types file.  `opts` may be NULL (the defaults); it is
 * copied.  Returns 0 and stores the handler in *out, HR_EINVAL (NULL
 * argument, root is not a directory that can be opened: the error
 * detail says which and why, "static root \"/srv/www\": no such file or
 * directory", see hr_error_detail; a default_type or cache_control that
 * cannot be a field value; cache_entries above 2^20), HR_ENOMEM.  Any
 * thread.
 */
HR_EXTERN int hr_static_new(hr_static_t **out, const char *root,
                            const hr_static_options_t *opts);

/** Closes the root and frees everything.  NULL is allowed.  See the thread
 * rule above. */
HR_EXTERN void hr_static_free(hr_static_t *st);

/**
 * Registers the routes that serve `st` under `prefix` ("" or NULL: the
 * whole site; else "/assets", without a trailing slash) on `host` (NULL:
 * the default host table): GET and HEAD of prefix "/" and prefix
 * "/{*path}", and of the bare prefix (answered 301 to prefix "/").
 * Returns 0, or what hr_router_add / hr_group_add return (HR_EPATTERN for
 * a bad prefix, HR_EEXIST when one of those routes exists).  Any thread.
 */
HR_EXTERN int hr_static_mount(hr_router_t *router, const char *host, const char *prefix,
                              hr_static_t *st);

/** The Content-Type `st` gives a file named `name` (by its extension, case
 * aside).  Valid while st lives.  Any thread. */
HR_EXTERN const char *hr_static_type(const hr_static_t *st, hr_span_t name);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_STATIC_H */
