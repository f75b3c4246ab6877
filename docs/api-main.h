/* SPDX-License-Identifier: MIT */
/**
 * @mainpage hroute API reference
 *
 * hroute is an embeddable HTTP/1.1 routing library: a route table that
 * compiles each handler into a pre-resolved invoker, published atomically,
 * and a server that serves it from libuv loops with llhttp parsing the wire.
 * Everything is reached through one header, hroute.h; the pieces:
 *
 * | header | what it holds |
 * |---|---|
 * | hroute/common.h | spans, the allocator hook, the version |
 * | hroute/error.h | error codes (`HR_E*`), hr_strerror() |
 * | hroute/router.h | routes, groups and host tables, middleware, route statistics |
 * | hroute/server.h | the server: listeners (TCP, PROXY protocol, passed sockets, socket activation), options, threads, shutdown and drain, probes, Prometheus metrics |
 * | hroute/http.h | requests and responses: fields, parameters, bodies, the peer behind proxies |
 * | hroute/delegate.h | typed header values and their delegates |
 * | hroute/form.h, hroute/multipart.h | urlencoded forms, multipart/form-data |
 * | hroute/static.h | the static file handler |
 * | hroute/tls.h | TLS listeners, certificates, SNI, client certificates |
 * | hroute/upgrade.h | protocol upgrades: the connection as a byte stream |
 * | hroute/websocket.h | WebSocket (RFC 6455) |
 *
 * Threads, publication and reclamation are described in
 * docs/concurrency.md; the server's inner shape in docs/architecture.md;
 * how to run it behind a load balancer in the README's "Running in
 * production".  Every declaration states its units, return values and
 * error codes, ownership and lifetime, and the threads that may call it.
 */
