/* SPDX-License-Identifier: MIT */
/*
 * The connection's wire: what the HTTP version spoken on a connection does
 * with it, as a table of operations, one level above the transport's
 * (net/transport.h) and one below the exchange's protocol (exchange/
 * proto.h).  conn.c owns the connection (reading, the output queue,
 * deadlines, closing) and asks its wire for what differs by version;
 * HTTP/1.1 (h1/h1_wire.c) and HTTP/2 (h2/h2.c) are the two, and the server
 * sets them in its record when it is made (hr_server_s.wire), so conn/
 * never calls h1/ or h2/.  A connection speaks HTTP/1.1 until its wire is
 * chosen otherwise at its first bytes (conn.c, choose_protocol): it
 * speaks HTTP/2 while c->h2 is set.
 *
 * Every operation runs on the connection's loop thread.
 */
#ifndef HR_SERVER_CONN_WIRE_H
#define HR_SERVER_CONN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "server/net/timer.h"

typedef struct hr__conn_s hr__conn_t;

/* Indexes of hr_server_s.wire. */
enum { HR__WIRE_H1 = 0, HR__WIRE_H2 = 1, HR__WIRE_COUNT };

typedef struct hr__wire_s {
  const char *name; /* ALPN's protocol id: "http/1.1", "h2" */
  /* Whether the first bytes `p[0..n)` of a connection open this version
   * without negotiation (h2c with prior knowledge, RFC 9113 §3.3): 1 yes,
   * 0 a prefix of its opening so far, -1 no.  NULL: never by bytes. */
  int (*recognise)(const char *p, size_t n);
  /* Makes `c` speak this version: 0, or HR_ENOMEM (the caller closes).
   * NULL: nothing to make. */
  int (*start)(hr__conn_t *c);
  /* Parses and dispatches what the read buffer holds.  Returns 1 to step
   * again, 0 when more bytes (or a response) are needed first. */
  int (*step)(hr__conn_t *c);
  /* The peer sent its last byte and the step is over: a header section
   * cut short is answered (h1: 400 and close), a body cut short is a
   * client abort (no answer), an idle connection drains. */
  void (*peer_eof)(hr__conn_t *c);
  /* The deadline the open connection waits for, when nothing is being
   * written: *list (HR__TL_NONE: none) and *due (loop time, ms). */
  void (*deadline)(const hr__conn_t *c, hr__tlist_t *list, uint64_t *due);
  /* That deadline passed (and was not put off): answer, close, or both. */
  void (*timeout)(hr__conn_t *c, hr__tlist_t list);
  /* The server shuts down: close if idle, else end after what is under way. */
  void (*shutdown)(hr__conn_t *c);
  /* The connection closed: every exchange on it is dropped (a running
   * handler hears of it through its abort callback); with c->peer_left,
   * those whose body was still arriving as client aborts. */
  void (*close)(hr__conn_t *c);
  /* The output fell below half the high-water mark: writers waiting for
   * room hear of it.  Returns 1 when the connection closed meanwhile. */
  int (*drains)(hr__conn_t *c);
  /* Whether the connection has work for its next loop turn once its
   * output has room (a writer waiting, frames to send). */
  int (*wants_kick)(const hr__conn_t *c);
} hr__wire_t;

#endif /* HR_SERVER_CONN_WIRE_H */
