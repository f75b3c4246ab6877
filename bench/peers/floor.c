/* SPDX-License-Identifier: MIT */
/*
 * floor: the "physical floor" peer of bench/run.sh --compare floor.  A
 * single-threaded epoll server on 127.0.0.1:PORT that never parses a
 * request: per read it counts the request terminators (CRLF CRLF, the match
 * state carried across reads, so one split over two reads counts once) and
 * answers with that many copies of one response rendered at start-up, in one
 * write.  The response has the size of examples/hello.c's for the same body
 * (status line, Content-Type, a Date fixed at start-up, Content-Length,
 * BODY).  Output the socket does not take is buffered and sent when it is
 * writable; the server stops reading a connection while more than 1 MiB
 * waits.  EOF or an error closes the connection.  Level-triggered; with
 * WORKERS > 1, that many processes with SO_REUSEPORT listeners (the workers
 * end with the first process).
 *
 *   floor PORT [BODY [WORKERS]]        (BODY defaults to "Hello, John")
 */
#define _GNU_SOURCE

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH_MAX 1024             /* copies in the pre-rendered buffer */
#define READ_BYTES 65536
#define PENDING_MAX (1u << 20)     /* stop reading above this much output */

typedef struct conn_s {
  int fd;
  unsigned matched;  /* bytes of "\r\n\r\n" matched at the end of the last read */
  char *out;         /* output the socket has not taken yet */
  size_t out_len, out_cap;
} conn_t;

static char *responses;   /* BATCH_MAX copies of the response */
static size_t response_len;
static int epfd;

static void conn_close(conn_t *c) {
  close(c->fd); /* also removes it from the epoll set */
  free(c->out);
  free(c);
}

/* Watches `c` for input and/or output; returns 0, or -1 (connection closed). */
static int conn_watch(conn_t *c) {
  struct epoll_event ev = {0, {.ptr = c}};

  if (c->out_len <= PENDING_MAX)
    ev.events |= EPOLLIN;
  if (c->out_len > 0)
    ev.events |= EPOLLOUT;
  if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
    conn_close(c);
    return -1;
  }
  return 0;
}

static int conn_append(conn_t *c, const char *p, size_t n) {
  if (c->out_len + n > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    char *out;
    while (cap < c->out_len + n)
      cap *= 2;
    if ((out = realloc(c->out, cap)) == NULL)
      return -1;
    c->out = out;
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, p, n);
  c->out_len += n;
  return 0;
}

/* Sends `n` responses: appended behind queued output, else written at once
 * (one write per BATCH_MAX) and the rest queued.  Returns 0, or -1 on an
 * error (the caller closes). */
static int conn_respond(conn_t *c, size_t n) {
  int queued = c->out_len > 0;

  while (n > 0) {
    size_t k = n < BATCH_MAX ? n : BATCH_MAX, len = k * response_len;
    ssize_t w = 0;
    if (!queued) {
      w = send(c->fd, responses, len, MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        return -1;
      if (w < 0)
        w = 0;
      queued = (size_t)w < len;
    }
    if ((size_t)w < len && conn_append(c, responses + w, len - (size_t)w) != 0)
      return -1;
    n -= k;
  }
  return 0;
}

static void on_readable(conn_t *c) {
  static char buf[READ_BYTES];
  static const char terminator[4] = {'\r', '\n', '\r', '\n'};
  size_t requests = 0, queued_before = c->out_len;
  unsigned m = c->matched;
  ssize_t n = read(c->fd, buf, sizeof(buf));

  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    conn_close(c);
    return;
  }
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] == terminator[m]) {
      if (++m == 4) {
        requests++;
        m = 0;
      }
    } else {
      m = buf[i] == '\r';
    }
  }
  c->matched = m;
  if (requests > 0 && conn_respond(c, requests) != 0) {
    conn_close(c);
    return;
  }
  if ((queued_before > 0) != (c->out_len > 0) || c->out_len > PENDING_MAX)
    (void)conn_watch(c);
}

/* Returns 0, or -1 when the connection was closed. */
static int on_writable(conn_t *c) {
  ssize_t w = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL);
  size_t before = c->out_len;

  if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  if (w < 0) {
    conn_close(c);
    return -1;
  }
  memmove(c->out, c->out + w, c->out_len - (size_t)w);
  c->out_len -= (size_t)w;
  if (c->out_len == 0 || (before > PENDING_MAX && c->out_len <= PENDING_MAX))
    return conn_watch(c);
  return 0;
}

static void on_listener(int lfd) {
  int fd;

  while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
    conn_t *c = calloc(1, sizeof(*c));
    struct epoll_event ev = {EPOLLIN, {.ptr = c}};
    if (c == NULL) {
      close(fd);
      continue;
    }
    c->fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
      conn_close(c);
  }
}

/* Renders the response into BATCH_MAX copies; returns 0 or -1. */
static int render(const char *body) {
  char date[64], one[1024];
  time_t now = time(NULL);
  int len;

  strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime(&now));
  len = snprintf(one, sizeof(one),
                 "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: %s\r\n"
                 "Content-Length: %zu\r\n\r\n%s",
                 date, strlen(body), body);
  if (len < 0 || (size_t)len >= sizeof(one) || (responses = malloc((size_t)len * BATCH_MAX)) == NULL)
    return -1;
  response_len = (size_t)len;
  for (size_t i = 0; i < BATCH_MAX; i++)
    memcpy(responses + i * response_len, one, response_len);
  return 0;
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 0;
  int workers = argc > 3 ? atoi(argv[3]) : 1;
  struct sockaddr_in addr;
  struct epoll_event ev = {EPOLLIN, {.ptr = NULL}}, events[256];
  int lfd, on = 1;

  if (argc < 2 || argc > 4 || port <= 0 || port > 65535 || workers < 1 || workers > 256) {
    fprintf(stderr, "usage: floor PORT [BODY [WORKERS]]\n");
    return 2;
  }
  if (render(argc > 2 ? argv[2] : "Hello, John") != 0) {
    fprintf(stderr, "floor: BODY too long\n");
    return 2;
  }
  for (int i = 1; i < workers; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("floor: fork");
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM); /* end with the first process */
      break;
    }
  }

  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);
  if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
      setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
      bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(lfd, 4096) != 0 ||
      (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev) != 0) {
    perror("floor: listen");
    return 1;
  }
  fprintf(stderr, "floor: listening on 127.0.0.1:%d, %zu-byte response\n", port, response_len);

  for (;;) {
    int n = epoll_wait(epfd, events, 256, -1);
    if (n < 0 && errno != EINTR) {
      perror("floor: epoll_wait");
      return 1;
    }
    for (int i = 0; i < n; i++) {
      conn_t *c = events[i].data.ptr;
      uint32_t e = events[i].events;
      if (c == NULL)
        on_listener(lfd);
      else if ((!(e & EPOLLOUT) || on_writable(c) == 0) && (e & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        on_readable(c);
    }
  }
}
