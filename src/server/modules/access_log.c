/* SPDX-License-Identifier: MIT */
/*
 * The access log (server.h hr_server_options_t.access_log): one line per
 * request, rendered when its exchange ends, in Common or Combined Log
 * Format or as a JSON object, with the request's id (request_id.c) at the
 * end of Combined and JSON lines while ids are on.  Only called when a
 * sink is set.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/modules/modules.h"
#include "util/text.h"

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, at most U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t avail) {
  unsigned c = p[0];
  size_t n, i;
  unsigned min, cp;
  if (c < 0xC2 || c > 0xF4) return 0;
  n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (avail < n) return 0;
  cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/* Bytes of `s` escaped: in CLF as nginx does (\xHH for '"', '\' and bytes
 * outside 0x20..0x7e), in JSON as a string body (\", \\, \u00XX, and a
 * byte that is not part of well-formed UTF-8 as U+FFFD, so that the line
 * is valid JSON). */
static size_t put_escaped(char *w, hr_span_t s, int json) {
  const char *hex = json ? "0123456789abcdef" : "0123456789ABCDEF";
  size_t i, n = 0;
  for (i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    if (json && (c == '"' || c == '\\')) {
      w[n++] = '\\';
      w[n++] = (char)c;
    } else if (json && c >= 0x80) {
      size_t u = utf8_len((const unsigned char *)s.ptr + i, s.len - i);
      if (u) {
        memcpy(w + n, s.ptr + i, u);
        n += u;
        i += u - 1;
      } else {
        memcpy(w + n, "\\ufffd", 6);
        n += 6;
      }
    } else if (json && (c < 0x20 || c == 0x7f)) {
      memcpy(w + n, "\\u00", 4);
      w[n + 4] = hex[c >> 4];
      w[n + 5] = hex[c & 15];
      n += 6;
    } else if (!json && (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f)) {
      w[n++] = '\\';
      w[n++] = 'x';
      w[n++] = hex[c >> 4];
      w[n++] = hex[c & 15];
    } else {
      w[n++] = (char)c;
    }
  }
  return n;
}

_Static_assert(HR__PEER_TEXT == sizeof(((hr_access_entry_t *)0)->peer),
              "the connection's peer room holds an entry's peer");

static void fill_entry(hr__exchange_t *ex, hr_access_entry_t *e) {
  hr_request_t *r = &ex->req;
  memset(e, 0, sizeof(*e));
  e->method = r->method;
  e->target = r->target;
  e->host = hr__route_host(r);
  e->version = r->version; /* 0 until the request line's version was read */
  (void)hr_request_field(r, HR_SPAN_LIT("Referer"), NULL, &e->referer);
  (void)hr_request_field(r, HR_SPAN_LIT("User-Agent"), NULL, &e->user_agent);
  /* hr__invoke_end ran first (hr__exchange_free). */
  e->status = ex->outcome.status;
  e->bytes = ex->outcome.bytes;
  e->duration_us = ex->outcome.duration_us;
  /* Rendered when the connection was made (hr__conn_peer_render), and copied
   * into the exchange if it outlived its connection. */
  if (ex->conn != NULL) {
    const char *room = hr__conn_peer_text(ex->conn);
    if (room != NULL) memcpy(e->peer, room, HR__PEER_TEXT);
  } else if (ex->peer_text != NULL) {
    memcpy(e->peer, ex->peer_text, HR__PEER_TEXT);
  }
  e->peer[HR__PEER_TEXT - 1] = '\0';
  /* The id the response echoed, or made now: also for a request cut short
   * or refused before its header section was whole. */
  e->request_id = hr__request_id(ex);
}

/* The time of the line, rendered once a second per thread: the Common Log
 * Format's "10/Oct/2000:13:55:36 +0000" and ISO 8601's
 * "2000-10-10T13:55:36Z". */
static const char *stamp(int json) {
  static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  static __thread time_t at = -1;
  static __thread char clf[64], iso[64]; /* room for any int the compiler imagines */
  time_t now = time(NULL);
  if (now != at) {
    struct tm tm;
    gmtime_r(&now, &tm);
    snprintf(clf, sizeof clf, "%02d/%s/%04d:%02d:%02d:%02d +0000", tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    at = now;
  }
  return json ? iso : clf;
}

void hr__access_log(hr__exchange_t *ex) {
  const hr_server_options_t *o = &ex->w->server->opts;
  hr_access_entry_t e;
  size_t cap, n = 0;
  char *line;
  int json = o->access_format == HR_ACCESS_JSON;
  fill_entry(ex, &e);
  /* Fixed text plus every span escaped at its widest (6 bytes a byte). */
  cap = 256 + 6 * (e.method.len + e.target.len + e.host.len + e.referer.len +
                   e.user_agent.len + e.request_id.len);
  line = hr__arena_alloc(&ex->arena, cap);
  if (line == NULL) return; /* out of memory: no line rather than a cut one */
#define PUT(s, l) (memcpy(line + n, (s), (l)), n += (l))
#define PUTS(s) PUT((s), strlen(s))
  if (json) {
    PUTS("{\"time\":\"");
    PUTS(stamp(1));
    PUTS("\",\"peer\":\"");
    PUTS(e.peer);
    PUTS("\",\"method\":\"");
    n += put_escaped(line + n, e.method, 1);
    PUTS("\",\"target\":\"");
    n += put_escaped(line + n, e.target, 1);
    PUTS(e.version == 10   ? "\",\"version\":\"HTTP/1.0"
         : e.version == 11 ? "\",\"version\":\"HTTP/1.1"
         : e.version == 20 ? "\",\"version\":\"HTTP/2.0"
                           : "\",\"version\":\"");
    PUTS("\",\"host\":\"");
    n += put_escaped(line + n, e.host, 1);
    PUTS("\",\"status\":");
    n += hr__put_u64(line + n, (uint64_t)(e.status > 0 ? e.status : 0));
    PUTS(",\"bytes\":");
    n += hr__put_u64(line + n, e.bytes);
    PUTS(",\"duration_us\":");
    n += hr__put_u64(line + n, e.duration_us);
    PUTS(",\"referer\":\"");
    n += put_escaped(line + n, e.referer, 1);
    PUTS("\",\"user_agent\":\"");
    n += put_escaped(line + n, e.user_agent, 1);
    if (e.request_id.len) {
      PUTS("\",\"request_id\":\"");
      n += put_escaped(line + n, e.request_id, 1);
    }
    PUTS("\"}");
  } else {
    PUTS(e.peer[0] ? e.peer : "-");
    PUTS(" - - [");
    PUTS(stamp(0));
    PUTS("] \"");
    if (e.method.len && e.target.len) { /* as much of the request line as was read */
      n += put_escaped(line + n, e.method, 0);
      PUTS(" ");
      n += put_escaped(line + n, e.target, 0);
      if (e.version) PUTS(e.version == 10 ? " HTTP/1.0" : e.version == 11 ? " HTTP/1.1" : " HTTP/2.0");
    } else {
      PUTS("-");
    }
    PUTS("\" ");
    n += hr__put_u64(line + n, (uint64_t)(e.status > 0 ? e.status : 0));
    PUTS(" ");
    n += hr__put_u64(line + n, e.bytes);
    if (o->access_format == HR_ACCESS_COMBINED) {
      PUTS(" \"");
      if (e.referer.len) n += put_escaped(line + n, e.referer, 0); else PUTS("-");
      PUTS("\" \"");
      if (e.user_agent.len) n += put_escaped(line + n, e.user_agent, 0); else PUTS("-");
      PUTS("\"");
      if (e.request_id.len) { /* as nginx's "$request_id" after them */
        PUTS(" \"");
        n += put_escaped(line + n, e.request_id, 0);
        PUTS("\"");
      }
    }
  }
#undef PUT
#undef PUTS
  o->access_log(o->access_log_ctx, line, n, &e);
}
