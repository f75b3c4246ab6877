/* SPDX-License-Identifier: MIT */
/*
 * ws_load: the WebSocket client of bench/ws.sh.
 *
 *   ws_load echo PORT PATH CONNS DEPTH SECONDS [SIZE]
 *     CONNS connections to ws://127.0.0.1:PORT/PATH, each keeping DEPTH
 *     binary messages of SIZE bytes (default 64) in flight: every echo
 *     received is checked (opcode, length, content) and answered with the
 *     next message.  After one second of warm-up it counts echoes for
 *     SECONDS and prints "msgs_per_s N".  Exit status 1 on any error.
 *   ws_load idle PORT PATH N
 *     opens N connections and completes each handshake (the 101 read
 *     whole, nothing after it), prints "ready K" and waits for a line on
 *     standard input (the caller reads the server's memory meanwhile),
 *     checks that every connection is still open and silent, prints
 *     "open K", and closes them all at the end of standard input.
 *
 * One thread, epoll, blocking-free sockets; frames are masked with a fixed
 * key (RFC 6455 §5.3 asks for unpredictable keys to protect proxies; a
 * benchmark on loopback has none).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const unsigned char MASK[4] = {0x12, 0x34, 0x56, 0x78};

typedef struct {
  int fd;
  unsigned char in[65536];
  size_t in_len;
  int upgraded;
} conn_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "ws_load: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void bad(const char *what) {
  fprintf(stderr, "ws_load: %s\n", what);
  exit(1);
}

static int connect_to(int port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0) die("socket");
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void send_all(int fd, const void *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("send");
    p = (const char *)p + w;
    n -= (size_t)w;
  }
}

static void handshake(conn_t *c, int port, const char *path) {
  char req[512];
  int n = snprintf(req, sizeof req,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\n"
                   "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n",
                   path, port);
  c->fd = connect_to(port);
  send_all(c->fd, req, (size_t)n);
}

/* Reads the 101 whole; bytes after it stay in c->in. */
static void read_101(conn_t *c) {
  for (;;) {
    unsigned char *end;
    ssize_t r = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    if (r <= 0) die("recv (handshake)");
    c->in_len += (size_t)r;
    end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (end != NULL) {
      size_t head = (size_t)(end - c->in) + 4;
      if (c->in_len < 12 || memcmp(c->in, "HTTP/1.1 101", 12) != 0) bad("no 101");
      memmove(c->in, c->in + head, c->in_len - head);
      c->in_len -= head;
      c->upgraded = 1;
      return;
    }
  }
}

/* A masked binary frame of `size` bytes of 'a'+seq%26. */
static size_t make_frame(unsigned char *out, size_t size, unsigned seq) {
  size_t n = 0, i;
  out[n++] = 0x82;
  if (size < 126) {
    out[n++] = (unsigned char)(0x80 | size);
  } else {
    out[n++] = 0x80 | 126;
    out[n++] = (unsigned char)(size >> 8);
    out[n++] = (unsigned char)size;
  }
  memcpy(out + n, MASK, 4);
  n += 4;
  for (i = 0; i < size; i++) out[n + i] = (unsigned char)(('a' + seq % 26) ^ MASK[i % 4]);
  return n + size;
}

static void raise_nofile(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

static int run_echo(int port, const char *path, int nconns, int depth, double secs, size_t size) {
  conn_t *cs = calloc((size_t)nconns, sizeof *cs);
  unsigned *seq = calloc((size_t)nconns, sizeof *seq);
  unsigned char frame[70000];
  int ep = epoll_create1(0), i;
  unsigned long long counted = 0;
  double t0, start = 0, end;
  size_t hl = size < 126 ? 2 : 4;
  if (cs == NULL || seq == NULL || ep < 0 || size > 65535) bad("setup");
  for (i = 0; i < nconns; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    int d;
    handshake(&cs[i], port, path);
    read_101(&cs[i]);
    for (d = 0; d < depth; d++) send_all(cs[i].fd, frame, make_frame(frame, size, seq[i]++));
    if (epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) != 0) die("epoll_ctl");
  }
  t0 = now_s();
  end = t0 + 1.0 + secs;
  for (;;) {
    struct epoll_event evs[64];
    int n = epoll_wait(ep, evs, 64, 1000), k;
    double t = now_s();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("epoll_wait");
    if (start == 0 && t >= t0 + 1.0) {
      start = t;
      counted = 0;
    }
    if (t >= end) break;
    for (k = 0; k < n; k++) {
      conn_t *c = &cs[evs[k].data.u32];
      unsigned idx = evs[k].data.u32;
      ssize_t r = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
      size_t off = 0, replies = 0;
      if (r <= 0) die("recv");
      c->in_len += (size_t)r;
      while (c->in_len - off >= hl + size) {
        const unsigned char *f = c->in + off;
        size_t len = f[1] & 0x7f;
        if (len == 126) len = (size_t)f[2] << 8 | f[3];
        if (f[0] != 0x82 || len != size) bad("unexpected frame");
        off += hl + size;
        replies++;
      }
      memmove(c->in, c->in + off, c->in_len - off);
      c->in_len -= off;
      counted += replies;
      /* One write for all the replies this read called for. */
      {
        static unsigned char batch[1 << 20];
        size_t bl = 0;
        while (replies-- > 0) bl += make_frame(batch + bl, size, seq[idx]++);
        if (bl > 0) send_all(c->fd, batch, bl);
      }
    }
  }
  printf("msgs_per_s %.0f\n", (double)counted / (now_s() - start));
  for (i = 0; i < nconns; i++) close(cs[i].fd);
  free(cs);
  free(seq);
  return 0;
}

static int run_idle(int port, const char *path, int n) {
  conn_t *cs = calloc((size_t)n, sizeof *cs);
  int i, open_n = 0;
  char line[64];
  if (cs == NULL) bad("calloc");
  for (i = 0; i < n; i++) {
    handshake(&cs[i], port, path);
    read_101(&cs[i]);
    if (cs[i].in_len != 0) bad("bytes after the 101");
  }
  printf("ready %d\n", n);
  fflush(stdout);
  if (fgets(line, sizeof line, stdin) == NULL) return 1;
  for (i = 0; i < n; i++) {
    char b;
    ssize_t r = recv(cs[i].fd, &b, 1, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) open_n++;
  }
  printf("open %d\n", open_n);
  fflush(stdout);
  while (fgets(line, sizeof line, stdin) != NULL) {
  }
  for (i = 0; i < n; i++) close(cs[i].fd);
  free(cs);
  return open_n == n ? 0 : 1;
}

int main(int argc, char **argv) {
  raise_nofile();
  if (argc >= 7 && strcmp(argv[1], "echo") == 0)
    return run_echo(atoi(argv[2]), argv[3], atoi(argv[4]), atoi(argv[5]), atof(argv[6]),
                    argc > 7 ? (size_t)atoi(argv[7]) : 64);
  if (argc == 5 && strcmp(argv[1], "idle") == 0)
    return run_idle(atoi(argv[2]), argv[3], atoi(argv[4]));
  fprintf(stderr,
          "usage: ws_load echo PORT PATH CONNS DEPTH SECONDS [SIZE]\n"
          "       ws_load idle PORT PATH N\n");
  return 2;
}
