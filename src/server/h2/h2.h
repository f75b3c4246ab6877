/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 (RFC 9113) on a connection: the session (h2.c, nghttp2 for the
 * framing and HPACK, RFC 7541), its streams, each carrying one exchange
 * (h2_proto.c, the exchange's protocol table), and the limits hroute
 * keeps itself.  A connection speaks HTTP/2 from its first byte, chosen by
 * ALPN ("h2", RFC 9113 §3.2) on TLS or by the client connection preface
 * (prior knowledge, §3.3) on a plain listener that allows it.
 *
 * Streams live in their exchange's arena: a stream is as long-lived as its
 * exchange on the connection, and nothing of it stays once the stream has
 * closed.  The session keeps the open ones in a list, and those whose
 * request is complete but not yet handed to its handler in a second
 * (`ready`): handlers of complete requests run after the whole read has
 * been processed, so that a stream reset in the same read (Rapid Reset,
 * CVE-2023-44487) never reaches its handler.
 */
#ifndef HR_SERVER_H2_H
#define HR_SERVER_H2_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdint.h>

#include "server/conn/conn.h"
#include "server/conn/wire.h"

/* A piece of a response body waiting for its DATA frames: bytes (copied
 * into `own`, or borrowed until `release`), or `len` bytes of file `fd`
 * from `foff`.  `off` bytes of it are sent. */
typedef enum { HR__H2P_MEM = 0, HR__H2P_BORROW, HR__H2P_FILE } hr__h2pkind_t;
typedef struct hr__h2piece_s {
  struct hr__h2piece_s *next;
  hr__h2pkind_t kind;
  unsigned heap : 1;   /* allocated from the loop's allocator, not the arena */
  const char *p;
  uint64_t len, off;
  int fd;
  uint64_t foff;
  hr_release_cb release;
  hr_file_release_cb file_release;
  void *udata;
} hr__h2piece_t;

typedef struct hr__h2_s hr__h2_t;

/* The client's frame boundaries as hroute watches them (h2_scan.c). */
typedef struct hr__h2scan_s {
  uint32_t skip;   /* bytes of the client preface still to pass */
  uint32_t left;   /* payload bytes of the current frame still to pass */
  uint8_t hdr[9];  /* a frame header read in pieces */
  uint8_t have;    /* bytes of it so far */
  int32_t max_id;  /* the highest stream a HEADERS frame named */
} hr__h2scan_t;

void hr__h2scan_init(hr__h2scan_t *s);
/* Passes what it can of p[0..n).  Returns how many bytes it passed: all
 * of them, or up to the end of the header of a HEADERS frame naming a
 * stream lower than one named before (its identifier in *id, else 0),
 * which the caller checks once nghttp2 has read every byte before that
 * header; the next call goes on after it. */
size_t hr__h2scan(hr__h2scan_t *s, const uint8_t *p, size_t n, int32_t *id);

/* One stream (RFC 9113 §5.1) and its exchange. */
typedef struct hr__h2s_s {
  hr__h2_t *h2;
  hr__exchange_t *ex;          /* NULL once the stream is done with it */
  int32_t id;
  struct hr__h2s_s *prev, *next; /* the session's open streams */
  struct hr__h2s_s *ready_next;  /* the session's ready list */
  hr__h2piece_t *head, *tail;  /* the response body not yet framed */
  struct hr__fread_s *fjob;    /* the head file piece, read on the thread pool */
  char *fbuf;                  /* what such a read brought, fbuf[fpos..fready) */
  size_t fpos, fready;
  uint64_t queued;             /* bytes of memory pieces in it */
  size_t list_bytes;           /* decoded header list: name + value + 32 each */
  size_t trailer_lines;        /* fields of the request's trailer section */
  /* The response's trailer section (hr_response_add_trailer), for
   * nghttp2_submit_trailer once the body's last DATA is framed: arena
   * memory of the exchange's. */
  nghttp2_nv *trailers;
  size_t ntrailers;
  int fail_status;             /* the request is refused with this (431) */
  unsigned ready : 1;          /* on the ready list */
  unsigned submitted : 1;      /* the response head went to nghttp2 */
  unsigned has_data : 1;       /* with a body (a data provider) */
  unsigned body_end : 1;       /* no piece follows the ones queued */
  unsigned deferred : 1;       /* the data provider waits for a piece */
  unsigned reset : 1;          /* reset by the server */
  unsigned cookie_seen : 1;    /* a cookie field came */
  unsigned cookie : 1;         /* more than one came: joined (§8.2.3) */
  hr_span_t host_field;        /* a Host field beside :authority */
  /* Body bytes that came while the handler paused its body, not yet
   * delivered nor consumed (its window stays shut by as much): at most
   * the stream's window. */
  struct hr__h2held_s *held;
} hr__h2s_t;

/* A paused stream's body bytes, data[0..len) (h2.c). */
typedef struct hr__h2held_s {
  size_t len, cap;
  char data[];
} hr__h2held_t;

/* How long an HTTP/2 connection without streams waits before it gives
 * back the pages of nghttp2's outbound frame buffer (16 KiB, which 1.52
 * keeps for the session's life). */
#define HR__H2_NAP_MS 1000

struct hr__h2_s {
  nghttp2_session *ng;
  hr__conn_t *c;
  /* nghttp2's outbound frame buffer: allocated page-aligned (fb, within
   * the block fb_raw) so that its pages can be given back while the
   * connection idles (fb_napping) without touching anything else. */
  char *fb, *fb_raw;
  size_t fb_len;
  hr__h2scan_t scan;
  hr__h2s_t *streams;          /* open streams with an exchange */
  hr__h2s_t *ready, *ready_tail;
  uint32_t nstreams;
  uint64_t idle_since;         /* loop time the last stream closed */
  uint64_t last_progress;      /* loop time DATA went out or a window opened */
  /* The reset budget (hr_server_options_t.h2_reset_burst/rate): tokens,
   * in thousandths, refilled from `refilled` (loop time). */
  uint64_t tokens_milli, refilled;
  unsigned notice_sent : 1;    /* GOAWAY(2^31-1, NO_ERROR): draining */
  unsigned goaway_sent : 1;    /* the final GOAWAY */
  unsigned in_recv : 1;        /* inside nghttp2_session_mem_recv */
  unsigned creating : 1;       /* inside nghttp2_session_server_new3 */
  unsigned fb_napping : 1;     /* fb's pages are given back */
  unsigned dead : 1;           /* closed inside it: freed when it returns */
  unsigned calm : 1;           /* ended with ENHANCE_YOUR_CALM */
  unsigned peer_goaway : 1;    /* the client sent GOAWAY */
};

/* h2.c: the session on a connection (conn.c calls these). */

/* Whether `p` (n bytes) is the client connection preface (RFC 9113 §3.4):
 * 1 when it starts with the whole preface, 0 when it is a prefix of it
 * (wait for more), -1 when it is not. */
int hr__h2_preface(const char *p, size_t n);
/* Makes `c` speak HTTP/2: the session, and the server's SETTINGS queued.
 * Returns 0 or HR_ENOMEM (the connection then closes). */
int hr__h2_start(hr__conn_t *c);
/* Hands what the read buffer holds to the session, runs the handlers of
 * the requests it completed, and queues what the session has to send.
 * Inside the connection's read-side section. */
void hr__h2_step(hr__conn_t *c);
/* Whether streams are open or frames wait to be sent. */
int hr__h2_busy(const hr__conn_t *c);
/* Whether the connection has work for its next turn: frames the session
 * could send now (it stopped taking them at the output queue's
 * high-water mark), or a writer waiting for room that now has it. */
int hr__h2_wants_kick(const hr__conn_t *c);
/* The deadline the connection waits for: *list (HR__TL_NONE: none) and
 * *due (loop time). */
void hr__h2_deadline(const hr__conn_t *c, hr__tlist_t *list, uint64_t *due);
/* That deadline passed: idle -> GOAWAY and close; a request body that
 * stopped -> 408 on its stream; a response the client's windows held
 * back, or output that made no progress -> close. */
void hr__h2_timeout(hr__conn_t *c, hr__tlist_t list);
/* The server drains (GOAWAY with 2^31-1, RFC 9113 §6.8) or shuts down
 * (GOAWAY with the last stream processed; the connection ends when the
 * streams in flight have). */
void hr__h2_notice(hr__conn_t *c);
void hr__h2_shutdown(hr__conn_t *c);
/* Calls the drain callbacks of streams whose output fell below half the
 * high-water mark.  Returns 1 when the connection closed meanwhile. */
int hr__h2_drains(hr__conn_t *c);
/* The connection closes: every stream's exchange is dropped (a running
 * handler hears of it through its abort callback), the session freed. */
void hr__h2_close(hr__conn_t *c);

/* h2_proto.c: pieces of a stream's response body. */

/* The response body's next bytes for a DATA frame (nghttp2's data source
 * read callback). */
ssize_t hr__h2_read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *src, void *user);
/* Releases every piece still queued, and what a file read holds (the
 * stream closed). */
void hr__h2_pieces_free(hr__h2s_t *st);
/* The server answers `status` on the exchange's stream in place of its
 * handler (proto->fail); the exchange is done with the stream from then
 * on. */
void hr__h2_fail(hr__exchange_t *ex, int status, const char *reason);

/* The stream of `id`, or NULL (h2.c keeps it as nghttp2's stream data). */
static inline hr__h2s_t *hr__h2_stream_of(hr__h2_t *h2, int32_t id) {
  return nghttp2_session_get_stream_user_data(h2->ng, id);
}
/* Queues a stream whose request is complete for its handler, which runs
 * after the whole read was processed (h2.c). */
void hr__h2_ready_push(hr__h2_t *h2, hr__h2s_t *st);
/* nghttp2's header callbacks and the end of a request's header section
 * (h2_head.c). */
int hr__h2_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *ud);
int hr__h2_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud);
void hr__h2_head_done(hr__h2s_t *st);
/* The handler resumed its paused body (hr__proto_t.resume_body). */
void hr__h2_resume_body(hr__exchange_t *ex);
/* The stream's exchange: nothing more of its response goes out (reset
 * with `code`, RFC 9113 §5.4.2). */
void hr__h2_reset(hr__h2s_t *st, uint32_t code);

/* HTTP/2's wire (conn/wire.h): hr_server_s.wire[HR__WIRE_H2]. */
extern const hr__wire_t hr__h2_wire;

#endif /* HR_SERVER_H2_H */
