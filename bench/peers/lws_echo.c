/* SPDX-License-Identifier: MIT */
/*
 * lws_echo: bench/ws.sh's libwebsockets peer (Debian libwebsockets-dev
 * 4.1).  It echoes every WebSocket message back with its opcode, no
 * extensions, on 127.0.0.1:PORT, any path, one thread, with libwebsockets'
 * default event loop, written as its documentation asks: a message is
 * gathered from its fragments in LWS_CALLBACK_RECEIVE, queued, and sent
 * by one lws_write per LWS_CALLBACK_SERVER_WRITEABLE, asking again while
 * the queue holds more.  Messages are bounded at 16 MiB; a longer one
 * closes the connection (1009).
 *
 *   lws_echo PORT
 */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX (16u * 1024 * 1024)

/* A queued message, with LWS_PRE bytes of room before it for lws' header. */
typedef struct msg_s {
  struct msg_s *next;
  size_t len;
  int binary;
  unsigned char buf[]; /* LWS_PRE + len */
} msg_t;

typedef struct {
  msg_t *head, *tail;  /* to send, in order */
  unsigned char *part; /* the message being received */
  size_t part_len, part_cap;
} pss_t;

static void drop_all(pss_t *p) {
  while (p->head != NULL) {
    msg_t *m = p->head;
    p->head = m->next;
    free(m);
  }
  p->tail = NULL;
  free(p->part);
  p->part = NULL;
  p->part_len = p->part_cap = 0;
}

/* Appends a received piece; returns -1 when the message is too long or
 * memory runs out. */
static int gather(pss_t *p, const void *in, size_t len) {
  if (p->part_len + len > MSG_MAX) return -1;
  if (p->part_len + len > p->part_cap) {
    size_t cap = p->part_cap ? p->part_cap : 256;
    unsigned char *b;
    while (cap < p->part_len + len) cap *= 2;
    if ((b = realloc(p->part, cap)) == NULL) return -1;
    p->part = b;
    p->part_cap = cap;
  }
  memcpy(p->part + p->part_len, in, len);
  p->part_len += len;
  return 0;
}

static int enqueue(pss_t *p, int binary) {
  msg_t *m = malloc(sizeof(*m) + LWS_PRE + p->part_len);
  if (m == NULL) return -1;
  m->next = NULL;
  m->len = p->part_len;
  m->binary = binary;
  if (p->part_len) memcpy(m->buf + LWS_PRE, p->part, p->part_len);
  p->part_len = 0;
  if (p->tail != NULL)
    p->tail->next = m;
  else
    p->head = m;
  p->tail = m;
  return 0;
}

static int on_event(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len) {
  pss_t *p = user;
  msg_t *m;
  switch (reason) {
    case LWS_CALLBACK_ESTABLISHED:
      memset(p, 0, sizeof(*p));
      return 0;
    case LWS_CALLBACK_RECEIVE:
      if (gather(p, in, len) != 0) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
        return -1;
      }
      if (!lws_is_final_fragment(wsi)) return 0;
      if (enqueue(p, lws_frame_is_binary(wsi)) != 0) return -1;
      lws_callback_on_writable(wsi);
      return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
      if ((m = p->head) == NULL) return 0;
      if (lws_write(wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) <
          (int)m->len)
        return -1;
      p->head = m->next;
      if (p->head == NULL) p->tail = NULL;
      free(m);
      if (p->head != NULL) lws_callback_on_writable(wsi);
      return 0;
    case LWS_CALLBACK_CLOSED:
      drop_all(p);
      return 0;
    default:
      return 0;
  }
}

static const struct lws_protocols protocols[] = {
    {"echo", on_event, sizeof(pss_t), 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv) {
  struct lws_context_creation_info info;
  struct lws_context *ctx;
  if (argc != 2) {
    fprintf(stderr, "usage: lws_echo PORT\n");
    return 2;
  }
  lws_set_log_level(LLL_ERR, NULL);
  memset(&info, 0, sizeof info);
  info.port = atoi(argv[1]);
  info.iface = "127.0.0.1";
  info.protocols = protocols; /* the first serves clients that name none */
  info.ka_time = 0;
  info.timeout_secs = 0;
  if ((ctx = lws_create_context(&info)) == NULL) {
    fprintf(stderr, "lws_echo: cannot listen on port %s\n", argv[1]);
    return 1;
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  printf("listening %d\n", info.port);
  fflush(stdout);
  while (!stop && lws_service(ctx, 0) >= 0)
    ;
  lws_context_destroy(ctx);
  return 0;
}
