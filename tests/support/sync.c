/* SPDX-License-Identifier: MIT */
/* Counting event, sleeps, clock and watchdog for the tests (see sync.h). */
#include "sync.h"

#include <errno.h>
#include <sched.h>
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

/* The watchdog is a thread, not SIGALRM: a deadlock inside liburcu's
 * synchronize_rcu blocks every signal in the threads that wait there. */
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv;
static int wd_started;
static unsigned long long wd_deadline; /* monotonic ms; 0: disarmed */
static const char *wd_what;

static void *watchdog_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wd_mu);
  for (;;) {
    unsigned long long now = now_ms();
    if (wd_deadline != 0 && now >= wd_deadline) {
      static const char pre[] = "watchdog: ", post[] = " did not finish (a deadlock?)\n";
      const char *what = wd_what != NULL ? wd_what : "the test";
      if (write(2, pre, sizeof pre - 1) < 0 || write(2, what, strlen(what)) < 0 ||
          write(2, post, sizeof post - 1) < 0) {
        /* nothing more to say */
      }
      _exit(1);
    }
    if (wd_deadline == 0) {
      pthread_cond_wait(&wd_cv, &wd_mu);
    } else {
      struct timespec ts;
      unsigned long long left = wd_deadline - now;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      ts.tv_sec += (time_t)(left / 1000);
      ts.tv_nsec += (long)(left % 1000) * 1000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&wd_cv, &wd_mu, &ts);
    }
  }
  return NULL;
}

void watchdog_say(unsigned seconds, const char *what) {
  pthread_mutex_lock(&wd_mu);
  if (!wd_started) {
    pthread_condattr_t ca;
    pthread_t t;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wd_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&t, NULL, watchdog_main, NULL) == 0) {
      pthread_detach(t);
      wd_started = 1;
    }
  }
  wd_what = what;
  wd_deadline = seconds == 0 ? 0 : now_ms() + 1000ull * seconds;
  pthread_cond_signal(&wd_cv);
  pthread_mutex_unlock(&wd_mu);
}

void watchdog(unsigned seconds) { watchdog_say(seconds, "the test"); }

void spin_until(_Atomic int *flag, int value) {
  while (atomic_load_explicit(flag, memory_order_relaxed) != value) sched_yield();
}
