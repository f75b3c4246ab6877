/* SPDX-License-Identifier: MIT */
/*
 * A program run by a test (the examples): started with its stderr on a
 * pipe the test reads, its stdout on /dev/null; waited for by what it
 * writes, within a bound; stopped with SIGTERM and reaped.  Failures are
 * cmocka failures.  proc_running holds the pid of the program between
 * start and stop, so that a teardown can kill it after a failed test.
 */
#ifndef HR_TEST_PROC_H
#define HR_TEST_PROC_H

#include <stddef.h>
#include <sys/types.h>

#define PROC_WAIT_MS 10000

typedef struct proc_s {
  pid_t pid;
  int err_fd;      /* the read end of its stderr */
  char out[65536]; /* everything it wrote to stderr, NUL-terminated */
  size_t len;
  int eof;
} proc_t;

/* The program between proc_start and proc_stop, or 0. */
extern pid_t proc_running;

/* Starts argv[0] with `argv`. */
void proc_start(proc_t *p, char *const argv[]);
/* Reads what stderr has within `ms`.  Returns 1 when bytes came, 0 on
 * timeout, -1 at EOF. */
int proc_read(proc_t *p, int ms);
/* Waits (PROC_WAIT_MS between bytes at most) until stderr holds `needle`;
 * returns where it starts. */
const char *proc_wait_for(proc_t *p, const char *needle);
/* Sends SIGTERM, reads stderr to its end and reaps the process: returns
 * its exit status (or 128 + a signal). */
int proc_stop(proc_t *p);
/* Kills and reaps proc_running, if any (for teardowns). */
void proc_kill(void);

#endif /* HR_TEST_PROC_H */
