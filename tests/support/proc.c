/* SPDX-License-Identifier: MIT */
/* A program run by a test: see proc.h. */
#include "proc.h"

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

pid_t proc_running;

void proc_start(proc_t *p, char *const argv[]) {
  posix_spawn_file_actions_t fa;
  int fds[2];
  memset(p, 0, sizeof *p);
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
  assert_int_equal(posix_spawn_file_actions_adddup2(&fa, fds[1], 2), 0);
  assert_int_equal(posix_spawn_file_actions_addclose(&fa, fds[0]), 0);
  assert_int_equal(posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0), 0);
  assert_int_equal(posix_spawn(&p->pid, argv[0], &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  p->err_fd = fds[0];
  proc_running = p->pid;
}

int proc_read(proc_t *p, int ms) {
  struct pollfd pfd = {p->err_fd, POLLIN, 0};
  ssize_t n;
  if (p->eof) return -1;
  if (poll(&pfd, 1, ms) <= 0) return 0;
  n = read(p->err_fd, p->out + p->len, sizeof p->out - 1 - p->len);
  if (n <= 0) {
    p->eof = 1;
    return -1;
  }
  p->len += (size_t)n;
  p->out[p->len] = '\0';
  assert_true(p->len < sizeof p->out - 1);
  return 1;
}

const char *proc_wait_for(proc_t *p, const char *needle) {
  const char *at;
  while ((at = strstr(p->out, needle)) == NULL)
    if (proc_read(p, PROC_WAIT_MS) != 1)
      fail_msg("the program never wrote \"%s\"; it wrote:\n%s", needle, p->out);
  return at;
}

int proc_stop(proc_t *p) {
  int status;
  assert_int_equal(kill(p->pid, SIGTERM), 0);
  while (proc_read(p, PROC_WAIT_MS) == 1) {
  }
  if (!p->eof) fail_msg("the program did not close its stderr after SIGTERM");
  assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
  proc_running = 0;
  close(p->err_fd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void proc_kill(void) {
  if (proc_running <= 0) return;
  kill(proc_running, SIGKILL);
  waitpid(proc_running, NULL, 0);
  proc_running = 0;
}
