/* SPDX-License-Identifier: MIT */
/*
 * What an HTTP/2 test client saw from the server, as plain records a test
 * asserts on: per stream the response head (:status and field lines), the
 * body bytes, the trailers and a reset's error code; per connection the
 * GOAWAY, the SETTINGS, PING acknowledgements, a count of every frame type
 * and whether the connection closed.  Both clients fill the same records:
 * the nghttp2 session client (h2client.h) and the hand-built frame
 * connection (h2raw.h).  Strings are NUL-terminated copies the records own;
 * h2_seen_free releases everything.  One thread at a time (the test's).
 */
#ifndef HR_TEST_H2SEEN_H
#define HR_TEST_H2SEEN_H

#include <stddef.h>
#include <stdint.h>

/* HTTP/2 frame types (RFC 9113 §6) that are counted; h2_conn_seen_t.frames
 * is indexed by type, and types past H2_FRAME_TYPES-1 count in the last
 * slot. */
#define H2_FRAME_TYPES 11

/* One field line: name and value, NUL-terminated, owned by the record. */
typedef struct h2_field_s {
  char *name;
  char *value;
  size_t value_len; /* value may hold NUL bytes in theory: its length */
} h2_field_t;

/* A growable list of field lines. */
typedef struct h2_fields_s {
  h2_field_t *v;
  size_t n, cap;
} h2_fields_t;

/* One stream, as the server answered it. */
typedef struct h2_stream_s {
  int32_t id;
  int status;          /* the final :status; -1 while none was received */
  unsigned interim;    /* 1xx heads received before it (100 Continue...) */
  h2_fields_t fields;  /* the final head's field lines, pseudo-fields left
                          out, in the order received */
  h2_fields_t trailers;
  char *body;          /* body bytes, NUL-terminated for convenience */
  size_t body_len;
  size_t data_frames;  /* DATA frames received (empty ones included) */
  int ended;           /* the server sent END_STREAM */
  int data_ended;      /* ...on a DATA frame (not on the trailers' HEADERS) */
  int closed;          /* the stream is closed: ended and our side done, or
                          reset by either side */
  int reset;           /* the server sent RST_STREAM */
  uint32_t rst_error;  /* its error code (RFC 9113 §7), when reset */
  uint32_t close_error; /* error code the stream closed with (0: NO_ERROR) */
} h2_stream_t;

/* The connection-level events. */
typedef struct h2_conn_seen_s {
  h2_stream_t **streams; /* every stream a record was made for, in order */
  size_t nstreams, capstreams;
  unsigned long frames[H2_FRAME_TYPES]; /* frames received, by type */
  unsigned long frames_total;
  int goaway;                /* a GOAWAY was received (the last one counts) */
  int32_t goaway_last_id;    /* its last-stream-id */
  uint32_t goaway_error;     /* its error code */
  char goaway_debug[256];    /* its opaque debug data, NUL-terminated */
  unsigned long settings;    /* SETTINGS frames received without ACK */
  unsigned long settings_acks;
  unsigned long ping_acks;   /* PING frames with ACK received */
  unsigned long rst_streams; /* RST_STREAM frames received */
  /* The server's SETTINGS values as last announced, by identifier 1..6
   * (RFC 9113 §6.5.2; index 0 unused); settings_present has bit 1<<id set
   * for each one announced. */
  uint32_t settings_value[7];
  unsigned settings_present;
  int closed;                /* the connection ended: EOF or reset */
  int err;                   /* errno of a failed read or send, else 0 */
  size_t bytes_in;           /* bytes received (TLS: plaintext) */
  size_t bytes_out;          /* bytes sent */
} h2_conn_seen_t;

/* A header block being decoded onto a stream's record: the first field
 * lines with a 1xx :status are an interim head (counted, fields dropped),
 * one with a final :status the head, and a block after the final head the
 * trailers. */
typedef struct h2_block_s {
  h2_stream_t *st;
  int kind; /* 0 head, 1 interim head, 2 trailers */
} h2_block_t;

/* Starts decoding a block for `st`. */
void h2_block_begin(h2_block_t *b, h2_stream_t *st);
/* One decoded field line of the block (a pseudo-field included). */
void h2_block_field(h2_block_t *b, const void *name, size_t nlen,
                    const void *value, size_t vlen);

/* The record of stream `id`, or NULL when none was made. */
h2_stream_t *h2_seen_stream(const h2_conn_seen_t *s, int32_t id);
/* The same, making an empty record (status -1) when there is none.  The
 * pointer stays valid until h2_seen_free. */
h2_stream_t *h2_seen_stream_make(h2_conn_seen_t *s, int32_t id);
/* Appends a field line (copies of name[0..nlen), value[0..vlen)). */
void h2_fields_add(h2_fields_t *f, const void *name, size_t nlen,
                   const void *value, size_t vlen);
/* Frees the list's field lines; *f is left empty. */
void h2_fields_free(h2_fields_t *f);
/* The value of the first field named `name` (case-insensitive), or NULL. */
const char *h2_fields_get(const h2_fields_t *f, const char *name);
/* How many fields are named `name` (case-insensitive). */
size_t h2_fields_count(const h2_fields_t *f, const char *name);
/* Appends body bytes to a stream record. */
void h2_stream_append(h2_stream_t *st, const void *p, size_t n);
/* Records one received frame of `type` (counts only). */
void h2_seen_frame(h2_conn_seen_t *s, uint8_t type);
/* Records a GOAWAY: last-stream-id, error code, debug data. */
void h2_seen_goaway(h2_conn_seen_t *s, int32_t last_id, uint32_t error,
                    const void *debug, size_t debug_len);
/* Records one SETTINGS parameter the server announced. */
void h2_seen_setting(h2_conn_seen_t *s, uint16_t id, uint32_t value);
/* Streams whose record says `reset`. */
size_t h2_seen_resets(const h2_conn_seen_t *s);
/* Frees every record; *s is left empty and reusable. */
void h2_seen_free(h2_conn_seen_t *s);

#endif
