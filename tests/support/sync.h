/* SPDX-License-Identifier: MIT */
/*
 * Test synchronisation: a counting event (mutex + condition variable) that a
 * handler signals on the server's thread and a test waits for on its own
 * thread, with a bounded wait so a bug fails instead of hanging; a bounded
 * polling helper; and the per-test watchdog.
 */
#ifndef HR_TEST_SYNC_H
#define HR_TEST_SYNC_H

#include <pthread.h>
#include <stdatomic.h>

typedef struct ev_s {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned long count;
} ev_t;

void ev_init(ev_t *ev);
void ev_destroy(ev_t *ev);
/* Adds one to the count and wakes waiters.  Any thread. */
void ev_signal(ev_t *ev);
unsigned long ev_count(ev_t *ev);
/* Waits until the count is at least `n`, for at most `ms` milliseconds.
 * Returns 1 when reached, 0 on timeout. */
int ev_wait(ev_t *ev, unsigned long n, unsigned ms);

/* Sleeps `ms` milliseconds.  Only to make a *slow client*, never to win a
 * race. */
void sleep_ms(unsigned ms);

/* Monotonic milliseconds. */
unsigned long long now_ms(void);

/* Arms the watchdog, a thread of its own: the test process dies after
 * `seconds` (each call re-arms it; 0 disarms it), so a hung test fails
 * instead of blocking ctest.  A thread, not SIGALRM: a deadlock inside
 * liburcu's synchronize_rcu blocks every signal in the threads waiting
 * there. */
void watchdog(unsigned seconds);
/* The same, saying first on stderr that `what` (a string that outlives the
 * watchdog) did not finish: for a test whose failure is a hang, such as a
 * deadlock. */
void watchdog_say(unsigned seconds, const char *what);

/* Spins (yielding) until *flag holds `value`, with relaxed loads: a wait
 * that orders two threads in time without adding a happens-before edge
 * between them, so ThreadSanitizer still judges the code under test.  A
 * watchdog bounds it. */
void spin_until(_Atomic int *flag, int value);

#endif
