/* SPDX-License-Identifier: MIT */
/*
 * The TCP transport: a connected socket watched by one uv_poll_t, read and
 * written with plain system calls.  A uv_poll_t is 88 bytes smaller than a
 * uv_tcp_t, which matters for idle connections, and it leaves the number of
 * system calls to us: one read per readable event (the buffer is refilled
 * on the next event, the loop's epoll is level-triggered) and one sendmsg
 * per batch, with MSG_NOSIGNAL so a peer that went away never raises
 * SIGPIPE; file bodies go with sendfile(2), what the socket takes at each
 * writable event.  Writes that do not complete wait for a writable event.
 *
 * sendfile reads the file, and a file not in the page cache would block
 * the loop on the disk: a range of HR__POOL_SENDFILE bytes or more is
 * sent on libuv's thread pool instead (a job per writable event, with its
 * own descriptor of the file, so the output queue may close its own
 * meanwhile); a close waits for the job before it closes the socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <limits.h>
#include <string.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/sockios.h> /* SIOCINQ, SIOCOUTQ */
#endif

#include "server/net/transport.h"

typedef struct hr__tcp_job_s hr__tcp_job_t;

typedef struct hr__tcp_s {
  hr__transport_t base;
  uv_poll_t poll;
  hr__wreq_t *wreq; /* the write waiting for room, or NULL */
  const hr_allocator_t *a; /* for jobs; NULL: no thread-pool sendfile */
  hr__tcp_job_t *job; /* a sendfile on the thread pool, or NULL */
  int fd;
  unsigned char events; /* UV_READABLE | UV_WRITABLE being polled */
  unsigned char reading;
  unsigned char close_after_job; /* 1: close once the job is back; 2: abortively */
} hr__tcp_t;

/* A sendfile on the thread pool: what it sends, what it did. */
struct hr__tcp_job_s {
  uv_work_t work;
  hr__tcp_t *s;
  int sock, file;   /* the socket; a descriptor of the file of its own */
  off_t off;
  size_t len;
  size_t moved;     /* bytes the job sent */
  int err;          /* 0, or a negative errno (UV_EOF: the file ended) */
};

_Static_assert(sizeof(uv_buf_t) == sizeof(struct iovec),
               "uv_buf_t is an iovec on Unix");

size_t hr__tcp_size(void) { return sizeof(hr__tcp_t); }

static hr__tcp_t *tcp_of(hr__transport_t *t) { return (hr__tcp_t *)t; }

static void on_poll(uv_poll_t *h, int status, int events);

/* Polls for what is wanted now (not writable while a job sends). */
static int repoll(hr__tcp_t *s) {
  int want = (s->reading ? UV_READABLE : 0) |
             (s->wreq != NULL && s->job == NULL ? UV_WRITABLE : 0);
  int err = 0;
  if (want == s->events || uv_is_closing((uv_handle_t *)&s->poll)) return 0;
  if (want)
    err = uv_poll_start(&s->poll, want, on_poll);
  else
    err = uv_poll_stop(&s->poll);
  if (err == 0) s->events = (unsigned char)want;
  return err;
}

static ssize_t send_bufs(int fd, const uv_buf_t *bufs, unsigned n, int more) {
  struct msghdr mh;
  ssize_t r;
  memset(&mh, 0, sizeof(mh));
  mh.msg_iov = (struct iovec *)bufs;
  mh.msg_iovlen = n > IOV_MAX ? IOV_MAX : n;
  do
    r = sendmsg(fd, &mh, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
  while (r < 0 && errno == EINTR);
  if (r >= 0) return r;
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  return -errno;
}

static ssize_t tcp_try_write(hr__transport_t *t, const uv_buf_t *bufs,
                             unsigned n, unsigned flags) {
  hr__tcp_t *s = tcp_of(t);
  ssize_t total = 0;
  /* More than IOV_MAX buffers take several calls; stop at the first short
   * one. */
  while (n > 0) {
    unsigned k = n > IOV_MAX ? IOV_MAX : n, i;
    ssize_t want = 0, r;
    for (i = 0; i < k; i++) want += (ssize_t)bufs[i].len;
    /* Only the last call of a series may hold bytes back. */
    r = send_bufs(s->fd, bufs, k, (flags & HR__WRITE_MORE) && k == n);
    if (r < 0) return total > 0 ? total : r;
    total += r;
    if (r < want) break;
    bufs += k;
    n -= k;
  }
  return total;
}

/* sendfile(2) has no MSG_NOSIGNAL: a peer that went away raises SIGPIPE,
 * which must not end a process that embeds the server.  Worker threads
 * block it for good (hr__tcp_block_sigpipe); on a loop the host owns, it
 * is blocked around each call, and a SIGPIPE the call raised is taken
 * before the mask is restored. */
static __thread int sigpipe_blocked;

void hr__tcp_block_sigpipe(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) == 0) sigpipe_blocked = 1;
}

static ssize_t sendfile_nosignal(int sock, int fd, off_t *off, size_t n) {
  sigset_t set, old;
  ssize_t r;
  int err;
  if (sigpipe_blocked) return sendfile(sock, fd, off, n);
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  r = sendfile(sock, fd, off, n);
  err = errno;
  /* A peer that went away raises SIGPIPE even when the call still reports
   * the bytes it moved first: take any that is pending, whatever r is.
   * With SIGPIPE unblocked before, a pending one can only be this call's. */
  if (!sigismember(&old, SIGPIPE)) {
    const struct timespec none = {0, 0};
    while (sigtimedwait(&set, NULL, &none) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = err;
  return r;
}

static ssize_t tcp_try_sendfile(hr__transport_t *t, int fd, uint64_t *off, size_t len) {
  hr__tcp_t *s = tcp_of(t);
  size_t total = 0;
  /* sendfile(2) moves at most 0x7ffff000 bytes a call; loop while the
   * socket takes everything. */
  while (total < len) {
    off_t o = (off_t)*off;
    size_t want = len - total;
    ssize_t r;
    if (want > 0x40000000u) want = 0x40000000u;
    do
      r = sendfile_nosignal(s->fd, fd, &o, want);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return total > 0 ? (ssize_t)total : -errno;
    }
    if (r == 0) return total > 0 ? (ssize_t)total : UV_EOF; /* the file ended */
    *off += (uint64_t)r;
    total += (size_t)r;
    if ((size_t)r < want) break; /* the socket is full */
  }
  return (ssize_t)total;
}

static int tcp_write(hr__transport_t *t, hr__wreq_t *req) {
  hr__tcp_t *s = tcp_of(t);
  if (s->wreq != NULL) return UV_EBUSY;
  s->wreq = req;
  return repoll(s);
}

static void close_now(hr__tcp_t *s, int abort);

/* On a thread-pool thread: sendfile while the socket takes it (it is
 * non-blocking) and the range lasts. */
static void job_run(uv_work_t *w) {
  hr__tcp_job_t *j = w->data;
  while (j->moved < j->len) {
    size_t want = j->len - j->moved;
    ssize_t r;
    if (want > 0x40000000u) want = 0x40000000u;
    do
      r = sendfile_nosignal(j->sock, j->file, &j->off, want);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) j->err = -errno;
      return;
    }
    if (r == 0) {
      j->err = UV_EOF; /* the file ended */
      return;
    }
    j->moved += (size_t)r;
    if ((size_t)r < want) return; /* the socket is full */
  }
}

/* Back on the loop: account, then finish, fail, or wait for room. */
static void job_done(uv_work_t *w, int status) {
  hr__tcp_job_t *j = w->data;
  hr__tcp_t *s = j->s;
  hr__wreq_t *req = s->wreq;
  int err = j->err;
  size_t moved = j->moved;
  const hr_allocator_t *a = s->a;
  close(j->file);
  a->free(a->ctx, j);
  s->job = NULL;
  if (s->close_after_job) { /* closed meanwhile: the write is dropped */
    close_now(s, s->close_after_job == 2);
    return;
  }
  if (status < 0 && err == 0) err = status;
  req->foff += moved;
  req->flen -= moved;
  if (err == UV_EOF && moved > 0) err = 0; /* reported on the next call */
  if (err < 0 || req->flen == 0) {
    s->wreq = NULL;
    if (repoll(s) != 0 && err == 0) err = UV_EIO;
    s->base.ev->write_done(s->base.owner, err);
    return;
  }
  repoll(s); /* writable again: the next piece */
  if (moved > 0) s->base.ev->write_progress(s->base.owner);
}

/* Starts a job for the rest of the file range.  Returns 0, or -1 when it
 * cannot (then the caller sends on the loop). */
static int job_start(hr__tcp_t *s, hr__wreq_t *req) {
  hr__tcp_job_t *j = s->a->malloc(s->a->ctx, sizeof(*j));
  if (j == NULL) return -1;
  memset(j, 0, sizeof(*j));
  j->file = fcntl(req->fd, F_DUPFD_CLOEXEC, 0);
  if (j->file < 0) {
    s->a->free(s->a->ctx, j);
    return -1;
  }
  j->s = s;
  j->sock = s->fd;
  j->off = (off_t)req->foff;
  j->len = req->flen > SIZE_MAX ? SIZE_MAX : (size_t)req->flen;
  j->work.data = j;
  if (uv_queue_work(s->poll.loop, &j->work, job_run, job_done) != 0) {
    close(j->file);
    s->a->free(s->a->ctx, j);
    return -1;
  }
  s->job = j;
  repoll(s);
  return 0;
}

/* Writable: a file range, what the socket takes of it; a long one on the
 * thread pool. */
static void on_writable_file(hr__tcp_t *s) {
  hr__wreq_t *req = s->wreq;
  size_t want = req->flen > SIZE_MAX ? SIZE_MAX : (size_t)req->flen;
  uint64_t before = req->foff;
  ssize_t r;
  int err;
  if (s->a != NULL && want >= HR__POOL_SENDFILE && job_start(s, req) == 0) return;
  r = tcp_try_sendfile(&s->base, req->fd, &req->foff, want);
  if (r < 0) {
    s->wreq = NULL;
    repoll(s);
    s->base.ev->write_done(s->base.owner, (int)r);
    return;
  }
  req->flen -= req->foff - before;
  if (req->flen > 0) {
    if (r > 0) s->base.ev->write_progress(s->base.owner);
    return;
  }
  s->wreq = NULL;
  err = repoll(s);
  s->base.ev->write_done(s->base.owner, err);
}

/* Writable: write what fits; report the end of the write. */
static void on_writable(hr__tcp_t *s) {
  hr__wreq_t *req = s->wreq;
  ssize_t r;
  int err;
  if (req->fd >= 0) {
    on_writable_file(s);
    return;
  }
  r = tcp_try_write(&s->base, req->bufs, req->nbufs, req->flags);
  if (r < 0) {
    s->wreq = NULL;
    repoll(s);
    s->base.ev->write_done(s->base.owner, (int)r);
    return;
  }
  if (!hr__wreq_advance(req, (size_t)r)) {
    if (r > 0) s->base.ev->write_progress(s->base.owner);
    return;
  }
  s->wreq = NULL;
  err = repoll(s);
  s->base.ev->write_done(s->base.owner, err);
}

static void on_readable(hr__tcp_t *s) {
  uv_buf_t buf;
  ssize_t r;
  s->base.ev->alloc(s->base.owner, &buf);
  if (buf.len == 0) {
    s->base.ev->read(s->base.owner, UV_ENOBUFS);
    return;
  }
  do
    r = read(s->fd, buf.base, buf.len);
  while (r < 0 && errno == EINTR);
  if (r > 0)
    s->base.ev->read(s->base.owner, r);
  else if (r == 0)
    s->base.ev->read(s->base.owner, UV_EOF);
  else if (errno != EAGAIN && errno != EWOULDBLOCK)
    s->base.ev->read(s->base.owner, -errno);
  else
    s->base.ev->read(s->base.owner, 0); /* nothing after all */
}

static void on_poll(uv_poll_t *h, int status, int events) {
  hr__tcp_t *s = h->data;
  if (status < 0) {
    /* The socket failed: tell whoever waits. */
    if (s->wreq != NULL) {
      s->wreq = NULL;
      repoll(s);
      s->base.ev->write_done(s->base.owner, status);
    } else if (s->reading) {
      s->base.ev->read(s->base.owner, status);
    }
    return;
  }
  if ((events & UV_WRITABLE) && s->wreq != NULL) on_writable(s);
  /* An event above may have closed or stopped us. */
  if ((events & UV_READABLE) && s->reading &&
      !uv_is_closing((uv_handle_t *)&s->poll))
    on_readable(s);
}

static int tcp_read_start(hr__transport_t *t) {
  hr__tcp_t *s = tcp_of(t);
  s->reading = 1;
  return repoll(s);
}

static void tcp_read_stop(hr__transport_t *t) {
  hr__tcp_t *s = tcp_of(t);
  s->reading = 0;
  repoll(s);
}

static int tcp_shutdown(hr__transport_t *t) {
  hr__tcp_t *s = tcp_of(t);
  if (s->wreq != NULL || s->job != NULL) return UV_EBUSY;
  return shutdown(s->fd, SHUT_WR) == 0 ? 0 : -errno;
}

static void on_close(uv_handle_t *h) {
  hr__tcp_t *s = h->data;
  s->base.ev->closed(s->base.owner);
}

static void close_now(hr__tcp_t *s, int abort) {
  if (abort) {
    /* SO_LINGER with a zero timeout: close(2) sends RST and drops what
     * the kernel still holds for the peer. */
    struct linger l = {1, 0};
    setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }
  /* uv_close stops the poll and drops the descriptor from the loop's epoll
   * set before it returns, so the socket can be closed at once. */
  uv_close((uv_handle_t *)&s->poll, on_close);
  close(s->fd);
  s->fd = -1;
}

static void tcp_close(hr__transport_t *t, int abort) {
  hr__tcp_t *s = tcp_of(t);
  if (uv_is_closing((uv_handle_t *)&s->poll) || s->close_after_job) return;
  s->wreq = NULL;
  s->reading = 0;
  if (s->job != NULL) {
    /* A thread-pool thread still uses the socket: closed when it is back
     * (job_done), so the descriptor is not reused under it. */
    s->close_after_job = abort ? 2 : 1;
    uv_poll_stop(&s->poll);
    s->events = 0;
    return;
  }
  close_now(s, abort);
}

/* getpeername(2) or getsockname(2) into the caller's buffer. */
static int sock_addr(const hr__transport_t *t, struct sockaddr *addr, int *len,
                     int (*get)(int, struct sockaddr *, socklen_t *)) {
  const hr__tcp_t *s = (const hr__tcp_t *)t;
  socklen_t l = (socklen_t)*len;
  if (s->fd < 0) return UV_ENOTCONN;
  if (get(s->fd, addr, &l) != 0) return -errno;
  *len = (int)l;
  return 0;
}

static int tcp_peer(const hr__transport_t *t, struct sockaddr *addr, int *len) {
  return sock_addr(t, addr, len, getpeername);
}

static int tcp_local(const hr__transport_t *t, struct sockaddr *addr, int *len) {
  return sock_addr(t, addr, len, getsockname);
}

static int tcp_queues(const hr__transport_t *t, size_t *unread, size_t *unacked) {
#if defined(SIOCINQ) && defined(SIOCOUTQ)
  const hr__tcp_t *s = (const hr__tcp_t *)t;
  int in = 0, out = 0;
  if (s->fd < 0) return UV_ENOTCONN;
  if (ioctl(s->fd, SIOCINQ, &in) != 0 || ioctl(s->fd, SIOCOUTQ, &out) != 0) return -errno;
  *unread = in > 0 ? (size_t)in : 0;
  *unacked = out > 0 ? (size_t)out : 0;
  return 0;
#else
  (void)t;
  (void)unread;
  (void)unacked;
  return UV_ENOTSUP;
#endif
}

static const hr__transport_ops_t tcp_ops = {
    .read_start = tcp_read_start,
    .read_stop = tcp_read_stop,
    .try_write = tcp_try_write,
    .write = tcp_write,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
    .peer = tcp_peer,
    .local = tcp_local,
    .queues = tcp_queues,
    .tls_info = hr__no_tls_info,
    .tls_client = hr__no_tls_client,
    .try_sendfile = tcp_try_sendfile,
};

int hr__tcp_init(hr__transport_t *t, uv_loop_t *loop, const hr_allocator_t *a, int fd,
                 const hr__transport_events_t *ev, void *owner) {
  hr__tcp_t *s = tcp_of(t);
  int err;
  memset(s, 0, sizeof(*s));
  err = uv_poll_init_socket(loop, &s->poll, fd);
  if (err != 0) return err;
  s->poll.data = s;
  s->a = a;
  s->fd = fd;
  s->base.ops = &tcp_ops;
  s->base.ev = ev;
  s->base.owner = owner;
  return 0;
}
