/* SPDX-License-Identifier: MIT */
/*
 * Whether the calling thread is a given one: the check every loop-thread
 * call makes (hr_stream_*, hr_response_*, several per WebSocket message).
 * uv_thread_t is pthread_t on the systems hroute runs on, so this is one
 * pthread_self() and a compare, where uv_thread_self() and
 * uv_thread_equal() are two calls into libuv that each call libc.
 */
#ifndef HR_UTIL_THREAD_H
#define HR_UTIL_THREAD_H

#include <pthread.h>
#include <uv.h>

_Static_assert(sizeof(uv_thread_t) == sizeof(pthread_t), "uv_thread_t is pthread_t");

/* 1 when the calling thread is `t` (as uv_thread_self() recorded it). */
static inline int hr__thread_is(const uv_thread_t *t) {
  return pthread_equal(pthread_self(), *(const pthread_t *)t) != 0;
}

#endif
