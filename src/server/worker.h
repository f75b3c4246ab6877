/* SPDX-License-Identifier: MIT */
/*
 * Worker lifecycle, shared by server.c (which creates and joins workers)
 * and conn.c (which reports connections that are gone).
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

/* Frees what the worker holds after its loop stopped. */
void hr__worker_cleanup(hr__worker_t *w);

#endif /* HR_SERVER_WORKER_H */
