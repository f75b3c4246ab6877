/* SPDX-License-Identifier: MIT */
/*
 * The top of the server: what its lifecycle (server.c, worker.c, drain.c,
 * activation.c) and the in-process tests, benchmarks and fuzzers reach.
 * It includes every layer; nothing below includes it.  The layers, from
 * the bottom (docs/architecture.md draws them; scripts/check_layers.py
 * keeps them so):
 *
 *   net/       transports (TCP, TLS, the sink), TLS contexts, timers, PROXY
 *   core/      the worker and server records and their services
 *   exchange/  one request and its response; the protocol table
 *   conn/      a transport carrying exchanges; its output queue; 101 streams
 *   h1/ h2/    the two HTTP versions: the wire and the protocol table each
 *   modules/   the access log and metrics, as exchange observers
 */
#ifndef HR_SERVER_INTERNAL_H
#define HR_SERVER_INTERNAL_H

#include "server/conn/conn.h"
#include "server/h1/h1.h"
#include "server/h2/h2.h"
#include "server/modules/modules.h"

/* server.c: a server with one worker on `loop` and no listener, for
 * hr__vconn_new.  Close it with hr_server_close. */
int hr__server_attach_virtual(hr_server_t *s, uv_loop_t *loop);
hr__worker_t *hr__server_worker(hr_server_t *s, size_t index);
/* server.c: what hr_server_listen_ex does once `host` is resolved: adds
 * the `n` addresses ss[0..n) (IPv4 or IPv6, n >= 1) as one listen call
 * (one public index, one port: with `port` 0 the first picks it and the
 * others bind the same).  Returns as hr_server_listen_ex does. */
int hr__server_listen_addrs(hr_server_t *s, const struct sockaddr_storage *ss, size_t n,
                            int port, const hr_listen_options_t *o);

#endif /* HR_SERVER_INTERNAL_H */
