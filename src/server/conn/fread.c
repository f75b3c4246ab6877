/* SPDX-License-Identifier: MIT */
/*
 * File pieces read on libuv's thread pool (fread.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "server/conn/conn.h"
#include "server/conn/fread.h"

struct hr__fread_s {
  uv_work_t work;
  hr__conn_t *c;
  hr__fread_done_fn done; /* NULL once forgotten */
  void *owner;
  char *buf;
  size_t cap, len;
  int fd;
  off_t off;
  ssize_t n; /* bytes read, or a negative errno */
};

static void run(uv_work_t *w) {
  hr__fread_t *j = w->data;
  do
    j->n = pread(j->fd, j->buf, j->len, j->off);
  while (j->n < 0 && errno == EINTR);
  if (j->n < 0) j->n = -errno;
}

static void back(uv_work_t *w, int status) {
  hr__fread_t *j = w->data;
  hr__conn_t *c = j->c;
  close(j->fd);
  if (j->done == NULL) {
    hr__mem_free(&c->w->mem, j->buf);
  } else {
    if (status < 0 && j->n >= 0) j->n = status;
    j->done(j->owner, j->buf, j->cap, j->n);
  }
  hr__mem_free(&c->w->mem, j);
  hr__conn_unhold(c);
}

hr__fread_t *hr__fread_start(hr__conn_t *c, int fd, uint64_t off, char *buf, size_t cap,
                             size_t len, hr__fread_done_fn done, void *owner) {
  hr__fread_t *j = hr__mem_alloc(&c->w->mem, sizeof(*j));
  if (j == NULL) return NULL;
  memset(j, 0, sizeof(*j));
  j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (j->fd < 0) {
    hr__mem_free(&c->w->mem, j);
    return NULL;
  }
  j->c = c;
  j->done = done;
  j->owner = owner;
  j->buf = buf;
  j->cap = cap;
  j->len = len;
  j->off = (off_t)off;
  j->work.data = j;
  if (uv_queue_work(c->w->loop, &j->work, run, back) != 0) {
    close(j->fd);
    hr__mem_free(&c->w->mem, j);
    return NULL;
  }
  hr__conn_hold(c);
  return j;
}

void hr__fread_forget(hr__fread_t *j) { j->done = NULL; }
