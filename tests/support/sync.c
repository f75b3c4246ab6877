/* SPDX-License-Identifier: MIT */
/* Counting event, sleeps, clock and watchdog for the tests (see sync.h). */
#include "sync.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ev_init(ev_t *ev) {
  pthread_condattr_t ca;
  pthread_mutex_init(&ev->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&ev->cv, &ca);
  pthread_condattr_destroy(&ca);
  ev->count = 0;
}

void ev_destroy(ev_t *ev) {
  pthread_cond_destroy(&ev->cv);
  pthread_mutex_destroy(&ev->mu);
}

void ev_signal(ev_t *ev) {
  pthread_mutex_lock(&ev->mu);
  ev->count++;
  pthread_cond_broadcast(&ev->cv);
  pthread_mutex_unlock(&ev->mu);
}

unsigned long ev_count(ev_t *ev) {
  unsigned long n;
  pthread_mutex_lock(&ev->mu);
  n = ev->count;
  pthread_mutex_unlock(&ev->mu);
  return n;
}

int ev_wait(ev_t *ev, unsigned long n, unsigned ms) {
  struct timespec ts;
  int ok;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&ev->mu);
  while (ev->count < n) {
    if (pthread_cond_timedwait(&ev->cv, &ev->mu, &ts) == ETIMEDOUT) break;
  }
  ok = ev->count >= n;
  pthread_mutex_unlock(&ev->mu);
  return ok;
}

void sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

unsigned long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000ULL +
         (unsigned long long)ts.tv_nsec / 1000000ULL;
}

void watchdog(unsigned seconds) {
  signal(SIGALRM, SIG_DFL);
  alarm(seconds);
}

static const char *watchdog_what;

static void watchdog_fired(int sig) {
  static const char pre[] = "watchdog: ", post[] = " did not finish (a deadlock?)\n";
  (void)sig;
  /* Only async-signal-safe calls here. */
  if (write(2, pre, sizeof pre - 1) < 0 ||
      write(2, watchdog_what, strlen(watchdog_what)) < 0 ||
      write(2, post, sizeof post - 1) < 0) {
    /* nothing more to say */
  }
  _exit(1);
}

void watchdog_say(unsigned seconds, const char *what) {
  watchdog_what = what;
  signal(SIGALRM, watchdog_fired);
  alarm(seconds);
}

void spin_until(_Atomic int *flag, int value) {
  while (atomic_load_explicit(flag, memory_order_relaxed) != value) sched_yield();
}
