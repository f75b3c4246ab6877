/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/2 side of the raw test client (rawclient.h): the HTTP/1.1
 * request text a test writes with rc_send goes out as HTTP/2 requests on an
 * nghttp2 client session (h2client.h, prior knowledge over plain TCP), so
 * a test written against HTTP/1.1 text runs unchanged over HTTP/2.  The
 * text is translated as it arrives, in pieces of any size: a request line
 * and its field lines become a HEADERS frame (the request target's path
 * and query as :path, an absolute-form target's scheme and authority as
 * :scheme and :authority, Host as :authority, field names in lower case,
 * the connection-specific fields of RFC 9113 §8.2.2 dropped: Connection,
 * Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, TE but
 * "trailers"), and a body delimited by Content-Length or by the chunked
 * coding becomes DATA frames as its bytes come, END_STREAM after its last
 * (chunk extensions are dropped; trailer fields go in a HEADERS frame with
 * END_STREAM after the DATA frames, names in lower case).  Pipelined requests
 * become concurrent streams; their responses are read in the order the
 * requests were written.  Text that is not a well-formed request (an
 * HTTP/1.1 framing test's business) cannot be translated: rc_send fails
 * with -EPROTO.  One thread at a time.
 */
#ifndef HR_TEST_RCH2_H
#define HR_TEST_RCH2_H

#include <stddef.h>
#include <stdint.h>

#include "h2client.h"

typedef struct rch2_s rch2_t;

/* Connects to 127.0.0.1:port over h2c.  Returns NULL when the connection
 * or the preface failed. */
rch2_t *rch2_connect(int port);
/* The session client (its socket's fd, its records). */
h2c_t *rch2_client(rch2_t *h);
/* Translates request text and sends what it makes (waiting while the
 * socket is full).  Returns 0, -EPROTO (text that is no request), or
 * -EPIPE (the connection ended, or the session refused the request). */
int rch2_send(rch2_t *h, const void *data, size_t len);
/* Waits for the response to the oldest request whose response has not
 * been taken: until its stream ended, was reset, or the connection ended
 * (RC_TIMEOUT_MS without progress at most).  Returns its record (the
 * status is -1 when no head came), or NULL when no request is waiting;
 * *done is 1 when the stream ended or was reset, 0 on a timeout or a
 * connection that ended first. */
h2_stream_t *rch2_next_response(rch2_t *h, int *done);
/* Runs until the connection ended.  Returns 1 then, 0 when it was still
 * open after RC_TIMEOUT_MS without progress. */
int rch2_wait_closed(rch2_t *h);
/* Sends GOAWAY and closes the connection; frees everything.  NULL: no-op. */
void rch2_close(rch2_t *h);

#endif
