/* SPDX-License-Identifier: MIT */
/*
 * The worker's lifecycle, shared by server.c (which creates and joins
 * workers) and drain.c: above every layer, it may call them all.
 */
#ifndef HR_SERVER_WORKER_H
#define HR_SERVER_WORKER_H

#include <unistd.h>

#include "server/internal.h"

/* Initialises `w` on `loop` (the loop's thread): handles, pools, and the
 * listeners from w->fds.  Returns 0 or a libuv error; on error the handles
 * opened so far must still be closed by hr__worker_shutdown. */
int hr__worker_init(hr__worker_t *w, hr_server_t *s, uv_loop_t *loop);

/* Begins the graceful shutdown of this worker (loop thread). */
void hr__worker_shutdown(hr__worker_t *w, uint64_t deadline_ms);

/* Called on the loop thread once every handle of the worker is closed. */
void hr__worker_finished(hr__worker_t *w);

/* A worker thread's loop has ended (on that thread, after it): the last
 * one of a drain calls the drain's callback (drain.c). */
void hr__server_worker_ended(hr_server_t *s);

/* Closes the worker's own handles once it is stopping and no connection
 * or detached exchange is left (hr_server_s.worker_quiet; loop thread). */
void hr__worker_quiet(hr__worker_t *w);

/* Begins draining (loop thread): every connection ends after its next
 * response; after `grace_ms` the worker shuts down with `deadline_ms`
 * (hr__worker_shutdown, which closes what is idle then).  A no-op when
 * already draining or stopping. */
void hr__worker_drain(hr__worker_t *w, uint64_t grace_ms, uint64_t deadline_ms);
void hr__worker_handle_closed(hr__worker_t *w);

/* Frees what the worker holds after its loop stopped. */
void hr__worker_cleanup(hr__worker_t *w);

#endif /* HR_SERVER_WORKER_H */
