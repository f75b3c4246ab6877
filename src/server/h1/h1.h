/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 (RFC 9112) on a connection: the wire (h1.c) that parses
 * messages out of the read buffer into exchanges, one at a time, and the
 * exchange's protocol table (h1_proto.c) that frames their responses.
 */
#ifndef HR_SERVER_H1_H1_H
#define HR_SERVER_H1_H1_H

#include <llhttp.h>

#include "server/conn/conn.h"
#include "server/conn/wire.h"

/* h1.c: HTTP/1.1 messages on a connection */
/* Parses and dispatches what the read buffer holds.  Returns 1 to go on
 * with the next request, 0 when more bytes (or a response) are needed. */
int hr__h1_step(hr__conn_t *c);
/* Answers `status` and ends the connection after it (RFC 9112 §9.6). */
void hr__h1_fail(hr__conn_t *c, int status, const char *reason);
/* The client ended its side (FIN) in the middle of a request's body: no
 * answer (nobody is left to read it); the request is a client abort
 * (HR_STATUS_CLIENT_CLOSED) unless it was answered, and the connection
 * ends after what is queued. */
void hr__h1_client_left(hr__conn_t *c);
/* 100 Continue (RFC 9110 §15.2.1) into the output queue. */
int hr__h1_continue(hr__conn_t *c);

/* parse.c */
extern const llhttp_settings_t hr__parser_settings;
llhttp_errno_t hr__parse_head(hr__exchange_t *ex);

/* h1_wire.c: HTTP/1.1's wire (conn/wire.h), hr_server_s.wire[HR__WIRE_H1]. */
extern const hr__wire_t hr__h1_wire;

#endif /* HR_SERVER_H1_H1_H */
