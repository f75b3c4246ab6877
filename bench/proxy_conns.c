/* SPDX-License-Identifier: MIT */
/*
 * proxy_conns: the client of bench/proxy.sh (the PROXY protocol header's
 * cost per connection).  For SECONDS it opens connections to
 * 127.0.0.1:PORT one after another; on each it sends, in one write,
 * "GET /hello/x" with "Connection: close", behind a PROXY v1 header with
 * --header (as HAProxy's send-proxy does), reads the response to the
 * server's close, checks it is a 200, and counts.  Prints
 * "conns_per_s N" and "conns N" (how many); exit status 1 on any error.
 *
 *   proxy_conns PORT SECONDS [--header]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  static const char get[] = "GET /hello/x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
  char req[256], buf[4096];
  struct sockaddr_in a;
  double secs, end, start;
  unsigned long n = 0;
  int header, len;
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: proxy_conns PORT SECONDS [--header]\n");
    return 2;
  }
  secs = atof(argv[2]);
  header = argc == 4 && strcmp(argv[3], "--header") == 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)atoi(argv[1]));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  len = header ? snprintf(req, sizeof req, "PROXY TCP4 192.0.2.1 198.51.100.2 %u 8080\r\n%s",
                          40000u, get)
               : snprintf(req, sizeof req, "%s", get);
  start = now_s();
  end = start + secs;
  while (now_s() < end) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    size_t got = 0;
    ssize_t r;
    if (fd < 0) return perror("socket"), 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) return perror("connect"), 1;
    if (send(fd, req, (size_t)len, MSG_NOSIGNAL) != len) return perror("send"), 1;
    while ((r = recv(fd, buf + (got < 32 ? got : 32), sizeof buf - 32, 0)) > 0) got += (size_t)r;
    if (r < 0) return perror("recv"), 1;
    if (got < 12 || memcmp(buf, "HTTP/1.1 200", 12) != 0) {
      fprintf(stderr, "proxy_conns: not a 200\n");
      return 1;
    }
    close(fd);
    n++;
  }
  printf("conns_per_s %.0f\nconns %lu\n", (double)n / (now_s() - start), (unsigned long)n);
  return 0;
}
