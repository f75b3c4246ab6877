/* SPDX-License-Identifier: MIT */
/*
 * rest: a small REST service built on typed header values.  It keeps an
 * in-memory collection of items, each a short UTF-8 text with a version
 * counter and a modification time, under /items/:id, where :id is a typed
 * path parameter (HR_PARAM_UINT64: /items/abc is answered 404 by the router
 * before any handler runs).  It shows, in order: content negotiation
 * (Accept read as HR_TYPE_MEDIA_RANGES, then hr_media_negotiate() between
 * application/json and text/plain, 406 when neither will do); validators
 * written by header delegates (ETag as HR_TYPE_ETAG, Last-Modified as
 * HR_TYPE_DATE, Cache-Control as HR_TYPE_CACHE_CONTROL, all formatted
 * straight into the response); conditional GET with hr_response_not_modified()
 * (304 for If-None-Match or If-Modified-Since); and a conditional PUT (a
 * buffered body, If-Match read as HR_TYPE_ETAG_LIST, 412 when it does not
 * match: no lost updates).  With --threads > 1 several worker loops share the
 * collection, so it is guarded by a uv_mutex_t.  Server set-up and graceful
 * shutdown on SIGINT and SIGTERM follow examples/hello.c.
 *
 * JSON goes through the JSON module (include/hroute/json.h, on jansson): the
 * item's JSON representation, the list, every error body (hr_json_error,
 * and hr_json_error_body for what the router answers itself), and a PUT
 * may send {"text": "..."} as application/json (hr_json_read: a malformed
 * body is answered 400 saying where).
 *
 * It also shows the handler API around the routes: a JSON list with query
 * parameters (hr_request_query_get), a create from an HTML form
 * (hr_request_form_get), head middleware that refuses writes without a
 * token before their body is read (--token), a request id kept as a
 * request local and sent as X-Request-Id, JSON bodies for what the router
 * answers itself (hr_router_set_answers), and an access log (--access-log).
 *
 *   rest [--host ADDR] [--port N] [--threads N] [--token T] [--access-log]
 *   curl -i http://127.0.0.1:8081/items/1
 *   curl -i -X PUT -H 'Content-Type: text/plain' -H 'If-Match: "1-text"' \
 *        --data-binary 'new text' http://127.0.0.1:8081/items/1
 *   curl -i -X PUT -H 'Content-Type: application/json' \
 *        --data '{"text": "from JSON"}' http://127.0.0.1:8081/items/1
 */
/* uv.h needs POSIX types (pthread_rwlock_t) that a strict -std=c11 hides;
 * ask for them unless the build already chose a feature set. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "hroute.h"
#include "hroute/json.h"

/* How long a shutdown waits for requests in flight before closing them. */
#define SHUTDOWN_DEADLINE_MS 5000
/* Largest item text a PUT may send (bytes); the server answers 413 above. */
#define MAX_VALUE_BYTES 65536
/* Most items the collection holds; a PUT creating one more gets 507. */
#define MAX_ITEMS 100000
/* How long clients and caches may reuse a GET response (seconds). */
#define MAX_AGE 60

/* ---- command line ------------------------------------------------------ */

typedef struct options_s {
  const char *host;
  int port;
  unsigned threads;
  const char *token;  /* --token: writes need "Authorization: Bearer <token>" */
  int access_log;     /* --access-log: Common Log Format lines on stderr */
} options_t;

static void usage(FILE *out) {
  fprintf(out,
          "usage: rest [--host ADDR] [--port N] [--threads N] [--token T]\n"
          "            [--access-log]\n"
          "\n"
          "  --host ADDR    numeric IPv4 or IPv6 address to listen on "
          "(default 0.0.0.0)\n"
          "  --port N       TCP port, 0 picks a free one (default 8081)\n"
          "  --threads N    1 serves on this thread's loop; more starts N "
          "worker\n"
          "                 threads sharing the listening socket (default 1, "
          "max 256)\n"
          "  --token T      PUT and POST need \"Authorization: Bearer T\";\n"
          "                 refused before their body is read (default: none)\n"
          "  --access-log   one Common Log Format line per request on stderr\n"
          "  --help         show this text\n"
          "\n"
          "Routes (:id is a decimal uint64; item 1 exists at start):\n"
          "  GET /items/:id  200 JSON or text/plain (Accept), with ETag,\n"
          "                  Last-Modified, Cache-Control: max-age=%d;\n"
          "                  304 for If-None-Match / If-Modified-Since; 404; "
          "406\n"
          "  PUT /items/:id  text/plain body (at most %d bytes) replaces the "
          "item:\n"
          "                  204 (201 when created) with the new ETag; 412 when\n"
          "                  If-Match (or If-None-Match) fails; 400; 413; 415\n"
          "  GET /items?after=N&limit=N  JSON list of ids (limit 1..100, 20)\n"
          "  POST /items     form body text=... creates an item: 201, Location\n"
          "Errors are JSON: {\"status\":N,\"error\":\"...\"}; every response\n"
          "carries X-Request-Id.\n",
          MAX_AGE, MAX_VALUE_BYTES);
}

/* Parses a whole decimal number in [min, max]; returns 0 or -1. */
static int parse_number(const char *text, long min, long max, long *out) {
  char *end;
  long value;

  errno = 0;
  value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max)
    return -1;
  *out = value;
  return 0;
}

/*
 * Accepts "--name value" and "--name=value".  Returns 1 and sets *value when
 * argv[*i] is option `name` (advancing *i past a separate value), 0 when it is
 * another option, -1 when `name` lacks its value.
 */
static int option_value(int argc, char **argv, int *i, const char *name,
                        const char **value) {
  const char *arg = argv[*i];
  size_t n = strlen(name);

  if (strncmp(arg, name, n) != 0)
    return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != '\0')
    return 0;
  if (*i + 1 >= argc)
    return -1;
  *i += 1;
  *value = argv[*i];
  return 1;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line (usage shown). */
static int parse_options(int argc, char **argv, options_t *opts) {
  opts->host = "0.0.0.0";
  opts->port = 8081;
  opts->threads = 1;
  opts->token = NULL;
  opts->access_log = 0;

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = NULL;
    long number;
    int r;

    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return 1;
    }
    if ((r = option_value(argc, argv, &i, "--host", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->host = value;
    } else if ((r = option_value(argc, argv, &i, "--port", &value)) != 0) {
      if (r < 0 || parse_number(value, 0, 65535, &number) != 0)
        goto bad;
      opts->port = (int)number;
    } else if ((r = option_value(argc, argv, &i, "--threads", &value)) != 0) {
      if (r < 0 || parse_number(value, 1, 256, &number) != 0)
        goto bad;
      opts->threads = (unsigned)number;
    } else if ((r = option_value(argc, argv, &i, "--token", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->token = value;
    } else if (strcmp(arg, "--access-log") == 0) {
      opts->access_log = 1;
    } else {
      goto bad;
    }
    continue;

  bad:
    fprintf(stderr, "rest: bad or incomplete option '%s'\n", arg);
    usage(stderr);
    return 2;
  }
  return 0;
}

/* ---- the collection -------------------------------------------------------- */

/*
 * An item.  Its version starts at 1 and goes up by one with every PUT; the
 * entity tags are derived from it (see make_etag), so they change exactly
 * when the text does.  `modified` is what Last-Modified says: HTTP dates
 * have one-second resolution, which is why the ETag, not the date, is the
 * validator clients should prefer.
 */
typedef struct item_s {
  uint64_t id;
  uint64_t version;
  int64_t modified; /* seconds since the epoch */
  char *text;       /* UTF-8, `len` bytes, malloc'd (not NUL-terminated) */
  size_t len;
} item_t;

/*
 * The collection, sorted by id.  With --threads N every worker loop runs
 * handlers on its own thread, and all of them share this one collection:
 * every access holds `lock`.  With one thread the lock is never contended
 * and costs a few tens of nanoseconds, so the code is the same either way.
 * Handlers copy what they need while holding it and send after releasing
 * it: nothing that can wait (a write to a socket) happens under the lock.
 */
typedef struct store_s {
  uv_mutex_t lock;
  item_t *items;
  size_t n, cap;
} store_t;

/* Index of `id`, or of where it would go (then *found is 0). */
static size_t store_find(const store_t *s, uint64_t id, int *found) {
  size_t lo = 0, hi = s->n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->items[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = lo < s->n && s->items[lo].id == id;
  return lo;
}

/*
 * Sets item `id` to a copy of text[0..len), creating it at index `at` when
 * `found` is 0 (lock held).  Returns the item, or NULL when out of memory
 * or full (the collection is then unchanged).
 */
static item_t *store_put(store_t *s, size_t at, int found, uint64_t id,
                         const char *text, size_t len) {
  char *copy = malloc(len > 0 ? len : 1);
  item_t *it;

  if (copy == NULL)
    return NULL;
  if (len > 0)
    memcpy(copy, text, len);
  if (!found) {
    if (s->n == MAX_ITEMS) {
      free(copy);
      return NULL;
    }
    if (s->n == s->cap) {
      size_t cap = s->cap ? s->cap * 2 : 16;
      item_t *items = realloc(s->items, cap * sizeof(*items));
      if (items == NULL) {
        free(copy);
        return NULL;
      }
      s->items = items;
      s->cap = cap;
    }
    memmove(&s->items[at + 1], &s->items[at], (s->n - at) * sizeof(*s->items));
    s->n++;
    it = &s->items[at];
    it->id = id;
    it->version = 0;
    it->text = NULL;
  }
  it = &s->items[at];
  free(it->text);
  it->text = copy;
  it->len = len;
  it->version++;
  it->modified = (int64_t)time(NULL);
  return it;
}

static int store_init(store_t *s) {
  static const char first[] = "Hello from hroute";
  int found;
  size_t at;
  int err;

  memset(s, 0, sizeof(*s));
  if ((err = uv_mutex_init(&s->lock)) != 0)
    return err;
  at = store_find(s, 1, &found);
  if (store_put(s, at, found, 1, first, sizeof(first) - 1) == NULL) {
    uv_mutex_destroy(&s->lock);
    return HR_ENOMEM;
  }
  return 0;
}

static void store_free(store_t *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->items[i].text);
  free(s->items);
  uv_mutex_destroy(&s->lock);
}

/* ---- representations and their entity tags --------------------------------- */

/*
 * An item has two representations, JSON and plain text, chosen by Accept.
 * They differ byte for byte, so they must not share a strong entity tag
 * (RFC 9110 §8.8.3): a cache that stored both (Vary: Accept) tells them
 * apart by their tags.  Each tag is the version plus the representation:
 * "3-json" and "3-text".
 */
enum { REP_JSON = 0, REP_TEXT = 1 };

static const char *const rep_suffix[] = {"json", "text"};
static const hr_span_t rep_content_type[] = {
    HR_SPAN_INIT("application/json"),
    HR_SPAN_INIT("text/plain; charset=utf-8"),
};

/* What the GET handler can produce, in its order of preference: the index
 * hr_media_negotiate() returns is the REP_ value. */
static const hr_media_type_t offers[] = {
    {.type = HR_SPAN_INIT("application"), .subtype = HR_SPAN_INIT("json")},
    {.type = HR_SPAN_INIT("text"), .subtype = HR_SPAN_INIT("plain")},
};

/* Writes the tag of `version` in representation `rep` into buf (at least
 * 32 bytes) and points `etag` at it: a strong tag. */
static void make_etag(hr_etag_t *etag, char *buf, uint64_t version, int rep) {
  int n = snprintf(buf, 32, "%" PRIu64 "-%s", version, rep_suffix[rep]);

  etag->tag.ptr = buf;
  etag->tag.len = (size_t)n;
  etag->weak = 0;
}

/*
 * Does If-Match / If-None-Match `list` select the item?  "*" selects any
 * existing item; a tag selects it when it is one of the current tags of
 * either representation.  If-Match compares strongly (a weak tag never
 * matches), If-None-Match weakly (RFC 9110 §8.8.3.2, §13.1.1, §13.1.2).
 */
static int list_selects(const hr_etag_list_t *list, int exists, uint64_t version,
                        int weak) {
  if (!exists)
    return 0;
  if (list->any)
    return 1;
  for (size_t i = 0; i < list->n; i++) {
    for (int rep = REP_JSON; rep <= REP_TEXT; rep++) {
      char buf[32];
      hr_etag_t cur;
      make_etag(&cur, buf, version, rep);
      if ((weak || !list->tags[i].weak) && hr_span_eq(list->tags[i].tag, cur.tag))
        return 1;
    }
  }
  return 0;
}

/*
 * The JSON representation, {"id":1,"version":2,"text":"..."}, encoded by
 * jansson (the JSON module's library) into the request's arena (released
 * when the response completes).  Returns NULL when out of memory.
 */
static char *render_json(hr_request_t *req, const item_t *it, size_t *len) {
  json_t *v = json_pack("{s:I, s:I, s:s%}", "id", (json_int_t)it->id, "version",
                        (json_int_t)it->version, "text", it->text, it->len);
  size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER, n;
  char *out = NULL;
  if (v == NULL) return NULL;
  n = json_dumpb(v, NULL, 0, flags);
  if (n > 0 && (out = hr_request_alloc(req, n)) != NULL) *len = json_dumpb(v, out, n, flags);
  json_decref(v);
  return out;
}

/* The text representation: the item's bytes, copied into the arena. */
static char *render_text(hr_request_t *req, const item_t *it, size_t *len) {
  char *out = hr_request_alloc(req, it->len > 0 ? it->len : 1);

  if (out != NULL && it->len > 0)
    memcpy(out, it->text, it->len);
  *len = it->len;
  return out;
}

/* ---- handlers ---------------------------------------------------------------- */

/*
 * Sends a short JSON error, {"status":N,"error":"..."} (hr_json_error
 * escapes the message).  Every handler must complete its response exactly
 * once; when even this fails (the client left: HR_ECLOSED) the response is
 * complete anyway.
 */
static void send_error(hr_response_t *res, int status, const char *msg) {
  char text[320];
  size_t n = strlen(msg);
  /* The messages are ours: drop the newline the text versions ended with. */
  if (n > 0 && msg[n - 1] == '\n') n--;
  snprintf(text, sizeof text, "%.*s", (int)n, msg);
  if (hr_json_error(res, status, text) == HR_ENOMEM) (void)hr_response_send(res, status, NULL, 0);
}

/*
 * A handler that fails half-way (out of memory while adding a field) must
 * still complete the response: try a bare 500.  hr_response_send() answers
 * HR_ESTATE when the response was completed already (for example by a
 * hr_response_not_modified() that failed after sending), and then there is
 * nothing left to do.
 */
static void send_500(hr_response_t *res, int err) {
  if (err != HR_ECLOSED)
    (void)hr_response_send(res, 500, NULL, 0);
}

/* The :id parameter, converted by the router (HR_PARAM_UINT64). */
static uint64_t item_id(const hr_request_t *req) {
  hr_value_t v;

  /* Cannot fail: the route declares parameter 0 as HR_PARAM_UINT64, and a
   * value that does not convert never reaches the handler (404). */
  (void)hr_request_param_value(req, 0, &v);
  return v.u64;
}

/*
 * GET /items/:id (and HEAD, which the server answers with the GET route,
 * sending the same fields without the body).
 */
static void get_item(hr_request_t *req, hr_response_t *res, void *udata) {
  store_t *store = udata;
  uint64_t id = item_id(req);
  hr_media_ranges_t accept;
  hr_cache_control_t cc;
  hr_date_t last_modified;
  hr_etag_t etag;
  char tag[32];
  char *body = NULL;
  size_t len = 0;
  uint64_t version = 0;
  int found, rep, err;
  size_t at;

  /* 1. Content negotiation, before anything else: the chosen representation
   * decides the entity tag the conditional check below compares with.  No
   * Accept field (HR_ENOTFOUND) accepts anything; a malformed one is
   * treated the same way, a lenient choice: the client gets the preferred
   * representation rather than an error. */
  if (hr_request_typed(req, HR_SPAN_LIT("Accept"), HR_TYPE_MEDIA_RANGES,
                       &accept) != 0)
    accept.n = 0;
  rep = hr_media_negotiate(&accept, offers, sizeof(offers) / sizeof(offers[0]));
  if (rep < 0) {
    /* Vary tells caches that this answer depends on Accept (RFC 9110
     * §12.5.5); the 200 and 304 below say so too. */
    (void)hr_response_add_field(res, HR_SPAN_LIT("Vary"), HR_SPAN_LIT("Accept"));
    send_error(res, 406,
               "Not Acceptable: this resource is available as "
               "application/json or text/plain\n");
    return;
  }

  /* 2. Copy the item while holding the lock (a PUT on another thread may
   * replace its text the moment we let go).  The copy lives in the
   * request's arena, so there is nothing to free. */
  uv_mutex_lock(&store->lock);
  at = store_find(store, id, &found);
  if (found) {
    const item_t *it = &store->items[at];
    version = it->version;
    last_modified.seconds = it->modified;
    body = rep == REP_JSON ? render_json(req, it, &len) : render_text(req, it, &len);
  }
  uv_mutex_unlock(&store->lock);
  if (!found) {
    send_error(res, 404, "Not Found: no such item\n");
    return;
  }
  if (body == NULL) {
    send_500(res, HR_ENOMEM);
    return;
  }
  make_etag(&etag, tag, version, rep);

  /* 3. Fields a 304 must repeat (RFC 9110 §15.4.5: Cache-Control and Vary,
   * besides the validators).  Cache-Control is a typed value: the delegate
   * of HR_TYPE_CACHE_CONTROL writes "max-age=60" straight into the
   * response's field buffer.  Numeric directives are -1 when absent. */
  memset(&cc, 0, sizeof(cc));
  cc.max_age = MAX_AGE;
  cc.s_maxage = cc.max_stale = cc.min_fresh = -1;
  if ((err = hr_response_add_field(res, HR_SPAN_LIT("Vary"),
                                   HR_SPAN_LIT("Accept"))) != 0 ||
      (err = hr_response_add_typed(res, HR_SPAN_LIT("Cache-Control"),
                                   HR_TYPE_CACHE_CONTROL, &cc)) != 0) {
    send_500(res, err);
    return;
  }

  /* 4. Conditional GET.  When If-None-Match names this tag (or, without
   * If-None-Match, If-Modified-Since is not older than the item), this
   * answers 304 with ETag and Last-Modified itself and returns 1. */
  err = hr_response_not_modified(req, res, &etag, last_modified.seconds);
  if (err == 1)
    return;
  if (err < 0) {
    send_500(res, err);
    return;
  }

  /* 5. The full response.  ETag and Last-Modified are typed too: HR_TYPE_ETAG
   * adds the quotes, HR_TYPE_DATE writes an IMF-fixdate. */
  if ((err = hr_response_add_typed(res, HR_SPAN_LIT("ETag"), HR_TYPE_ETAG,
                                   &etag)) != 0 ||
      (err = hr_response_add_typed(res, HR_SPAN_LIT("Last-Modified"),
                                   HR_TYPE_DATE, &last_modified)) != 0 ||
      (err = hr_response_add_field(res, HR_SPAN_LIT("Content-Type"),
                                   rep_content_type[rep])) != 0) {
    send_500(res, err);
    return;
  }
  err = hr_response_send(res, 200, body, len);
  if (err != 0)
    send_500(res, err);
}

/* Returns 1 when text[0..len) is well-formed UTF-8 (RFC 3629 §4: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static int is_utf8(const unsigned char *s, size_t len) {
  size_t i = 0;

  while (i < len) {
    unsigned c = s[i], n, min, cp;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1, min = 0x80, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, min = 0x800, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return 0;
    }
    if (len - i <= n)
      return 0;
    for (unsigned k = 1; k <= n; k++) {
      if ((s[i + k] & 0xC0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    i += n + 1;
  }
  return 1;
}

/*
 * Checks the request's Content-Type: text/plain, in UTF-8 when a charset is
 * given; no Content-Type at all is taken as text/plain.  The field is read
 * as a typed value (HR_TYPE_MEDIA_TYPE): type, subtype and parameters come
 * back as spans into the request.  Returns 0, or the status to answer.
 */
static int check_content_type(const hr_request_t *req) {
  hr_media_type_t mt;
  int err = hr_request_typed(req, HR_SPAN_LIT("Content-Type"),
                             HR_TYPE_MEDIA_TYPE, &mt);

  if (err == HR_ENOTFOUND)
    return 0;
  if (err != 0)
    return 400;
  if (!hr_span_eq_nocase(mt.type, HR_SPAN_LIT("text")) ||
      !hr_span_eq_nocase(mt.subtype, HR_SPAN_LIT("plain")))
    return 415;
  for (size_t i = 0; i < mt.nparams; i++)
    if (hr_span_eq_nocase(mt.params[i].name, HR_SPAN_LIT("charset")) &&
        !hr_span_eq_nocase(mt.params[i].value, HR_SPAN_LIT("utf-8")) &&
        !hr_span_eq_nocase(mt.params[i].value, HR_SPAN_LIT("us-ascii")))
      return 415;
  return 0;
}

/*
 * PUT /items/:id.  The route buffers the body (HR_BODY_BUFFER, the default),
 * so the handler runs once it is complete, up to MAX_VALUE_BYTES (the
 * server answers 413 above that without calling us).
 *
 * Preconditions (RFC 9110 §13.2.2 order: If-Match, then If-None-Match) are
 * evaluated and the item replaced under one lock, so two clients that both
 * read version 3 and both PUT with If-Match: "3-text" cannot both win: the
 * second gets 412 and must GET the new version first.
 */
static void put_item(hr_request_t *req, hr_response_t *res, void *udata) {
  store_t *store = udata;
  json_t *in = NULL; /* a JSON body, whose "text" body points into */
  hr_json_error_t jerr;
  int jrc;
  uint64_t id = item_id(req);
  hr_span_t body = hr_request_body(req);
  hr_etag_list_t if_match, if_none_match;
  int has_if_match, has_if_none_match;
  hr_etag_t etag;
  char tag[32], location[48];
  uint64_t version = 0;
  int status = 0, found, err;
  const item_t *it;
  size_t at;

  /* The text comes as text/plain, or as JSON: {"text": "..."}, read by
   * the JSON module (jansson checks the syntax and the UTF-8; a malformed
   * body is answered 400 saying where). */
  jrc = hr_json_read(req, 4, &in, &jerr);
  if (jrc == HR_ENOMEM || (jrc != 0 && jerr.status != 415)) {
    if (jrc == HR_ENOMEM || hr_json_reject(res, &jerr) != 0) send_500(res, HR_ENOMEM);
    return;
  }
  if (jrc == 0) {
    json_t *t = json_object_get(in, "text");
    if (!json_is_string(t)) {
      json_decref(in);
      send_error(res, 422, "a JSON body is {\"text\": \"...\"}");
      return;
    }
    body.ptr = json_string_value(t);
    body.len = json_string_length(t);
  } else if ((status = check_content_type(req)) != 0) {
    send_error(res, status,
               status == 415 ? "Unsupported Media Type: send text/plain "
                               "(UTF-8) or application/json\n"
                             : "Bad Request: malformed Content-Type\n");
    return;
  } else if (!is_utf8((const unsigned char *)body.ptr, body.len)) {
    send_error(res, 400, "Bad Request: the body is not UTF-8 text\n");
    return;
  }

  /* The conditional fields as typed values: "*" or a list of entity tags.
   * A malformed If-Match is refused rather than ignored: ignoring it would
   * turn a conditional write into an unconditional one. */
  err = hr_request_typed(req, HR_SPAN_LIT("If-Match"), HR_TYPE_ETAG_LIST,
                         &if_match);
  has_if_match = err == 0;
  if (err != 0 && err != HR_ENOTFOUND) {
    json_decref(in);
    send_error(res, 400, "Bad Request: malformed If-Match\n");
    return;
  }
  err = hr_request_typed(req, HR_SPAN_LIT("If-None-Match"), HR_TYPE_ETAG_LIST,
                         &if_none_match);
  has_if_none_match = err == 0;
  if (err != 0 && err != HR_ENOTFOUND) {
    json_decref(in);
    send_error(res, 400, "Bad Request: malformed If-None-Match\n");
    return;
  }

  uv_mutex_lock(&store->lock);
  at = store_find(store, id, &found);
  version = found ? store->items[at].version : 0;
  if (has_if_match && !list_selects(&if_match, found, version, 0)) {
    status = 412; /* not the version the client last saw (or no item) */
  } else if (has_if_none_match &&
             list_selects(&if_none_match, found, version, 1)) {
    status = 412; /* "If-None-Match: *": create only, and it exists */
  } else if ((it = store_put(store, at, found, id, body.ptr, body.len)) == NULL) {
    status = !found && store->n == MAX_ITEMS ? 507 : 500;
  } else {
    version = it->version;
    status = found ? 204 : 201;
  }
  uv_mutex_unlock(&store->lock);
  json_decref(in); /* the text is the store's copy now */

  if (status == 412) {
    send_error(res, 412, "Precondition Failed: the item has changed; GET it "
                         "again\n");
    return;
  }
  if (status >= 500) {
    send_error(res, status, status == 507 ? "Insufficient Storage\n"
                                          : "Internal Server Error\n");
    return;
  }

  /* A text/plain body is exactly the text representation now stored, so
   * the response may carry its new validator (RFC 9110 §9.3.4), which the
   * client can use in its next If-Match; a JSON body is no representation
   * of ours, so no ETag then. */
  err = 0;
  if (jrc != 0) {
    make_etag(&etag, tag, version, REP_TEXT);
    err = hr_response_add_typed(res, HR_SPAN_LIT("ETag"), HR_TYPE_ETAG, &etag);
  }
  if (err == 0 && status == 201) {
    int n = snprintf(location, sizeof(location), "/items/%" PRIu64, id);
    err = hr_response_add_field(res, HR_SPAN_LIT("Location"),
                                (hr_span_t){location, (size_t)n});
  }
  if (err == 0)
    err = hr_response_send(res, status, NULL, 0);
  if (err != 0)
    send_500(res, err);
}

/* ---- listing and creating: query strings and forms ------------------------ */

/* A whole decimal in [min, max] from a query value; returns 0 or -1. */
static int span_number(hr_span_t v, uint64_t min, uint64_t max, uint64_t *out) {
  uint64_t n = 0;
  size_t i;
  if (v.len == 0 || v.len > 19) return -1;
  for (i = 0; i < v.len; i++) {
    if (v.ptr[i] < '0' || v.ptr[i] > '9') return -1;
    n = n * 10 + (uint64_t)(v.ptr[i] - '0');
  }
  if (n < min || n > max) return -1;
  *out = n;
  return 0;
}

/*
 * GET /items?after=N&limit=N: the ids after N, at most `limit`, as JSON.
 * The query comes decoded from hr_request_query_get (a bad escape anywhere
 * in it is HR_EPARSE).
 */
static void list_items(hr_request_t *req, hr_response_t *res, void *udata) {
  store_t *store = udata;
  uint64_t after = 0, limit = 20;
  hr_span_t v;
  json_t *ids, *out;
  size_t i, sent = 0;
  int rc;
  rc = hr_request_query_get(req, HR_SPAN_LIT("after"), NULL, &v);
  if (rc == 0 && span_number(v, 0, UINT64_MAX / 10, &after) != 0) rc = HR_EPARSE;
  if (rc == 0 || rc == HR_ENOTFOUND) {
    rc = hr_request_query_get(req, HR_SPAN_LIT("limit"), NULL, &v);
    if (rc == 0 && span_number(v, 1, 100, &limit) != 0) rc = HR_EPARSE;
  }
  if (rc != 0 && rc != HR_ENOTFOUND) {
    send_error(res, 400, "after and limit are whole numbers, limit 1..100");
    return;
  }
  if ((ids = json_array()) == NULL) {
    send_500(res, HR_ENOMEM);
    return;
  }
  uv_mutex_lock(&store->lock);
  for (i = 0; i < store->n && sent < limit; i++) {
    if (store->items[i].id <= after) continue;
    if (json_array_append_new(ids, json_integer((json_int_t)store->items[i].id)) != 0) break;
    sent++;
  }
  uv_mutex_unlock(&store->lock);
  out = json_pack("{s:o}", "ids", ids); /* takes ids */
  rc = out != NULL ? hr_json_send(res, 200, out, 0) : HR_ENOMEM;
  json_decref(out);
  if (rc != 0) send_500(res, rc);
}

/* POST /items with an HTML form (text=...): a new item after the last. */
static void create_item(hr_request_t *req, hr_response_t *res, void *udata) {
  store_t *store = udata;
  hr_span_t text;
  char location[48];
  uint64_t id;
  int found, rc, n;
  size_t at;
  rc = hr_request_form_get(req, HR_SPAN_LIT("text"), NULL, &text);
  if (rc == HR_EINVAL) {
    send_error(res, 415, "send application/x-www-form-urlencoded with text=...");
    return;
  }
  if (rc != 0 || !is_utf8((const unsigned char *)text.ptr, text.len)) {
    send_error(res, 400, "the form needs text=..., in UTF-8");
    return;
  }
  uv_mutex_lock(&store->lock);
  /* After the highest id; none is left after UINT64_MAX (a PUT may have
   * made it): refuse rather than wrap around onto an existing item. */
  id = store->n ? store->items[store->n - 1].id + 1 : 1;
  rc = id == 0 ? -2 : 0;
  if (rc == 0) {
    at = store_find(store, id, &found);
    rc = store_put(store, at, found, id, text.ptr, text.len) == NULL ? -1 : 0;
  }
  uv_mutex_unlock(&store->lock);
  if (rc != 0) {
    send_error(res, 507, rc == -2 ? "no id is left after the highest one" : "the collection is full");
    return;
  }
  n = snprintf(location, sizeof(location), "/items/%" PRIu64, id);
  (void)hr_response_add_field(res, HR_SPAN_LIT("Location"), (hr_span_t){location, (size_t)n});
  (void)hr_response_send(res, 201, NULL, 0);
}

/* ---- middleware: authentication before the body, a request id -------------- */

static hr_local_key_t request_id_key;
static uv_mutex_t id_lock; /* worker loops share the counter */
static uint64_t next_request_id;

/* Head middleware (hr_router_use_head): a write without the token is
 * refused before its body is read -- a 1 MB upload costs nothing. */
static hr_next_t require_token(hr_request_t *req, hr_response_t *res, void *udata) {
  const char *token = udata;
  hr_span_t got, m = hr_request_method(req);
  if (!hr_span_eq(m, HR_SPAN_LIT("PUT")) && !hr_span_eq(m, HR_SPAN_LIT("POST"))) return HR_NEXT;
  /* "Bearer " then the token, whatever its length. */
  if (hr_request_field(req, HR_SPAN_LIT("Authorization"), NULL, &got) == 0 && got.len > 7 &&
      memcmp(got.ptr, "Bearer ", 7) == 0 &&
      hr_span_eq((hr_span_t){got.ptr + 7, got.len - 7}, hr_span_cstr(token)))
    return HR_NEXT;
  (void)hr_response_add_field(res, HR_SPAN_LIT("WWW-Authenticate"), HR_SPAN_LIT("Bearer"));
  send_error(res, 401, "a bearer token is needed to write");
  return HR_ANSWERED;
}

/* Before-middleware: gives the request an id (a request local, in the
 * request's memory) and sends it back as X-Request-Id. */
static hr_next_t tag_request(hr_request_t *req, hr_response_t *res, void *udata) {
  char *id = hr_request_alloc(req, 24);
  int n;
  (void)udata;
  if (id == NULL) return HR_NEXT;
  uv_mutex_lock(&id_lock);
  n = snprintf(id, 24, "%" PRIu64, ++next_request_id);
  uv_mutex_unlock(&id_lock);
  (void)hr_request_set_local(req, request_id_key, id);
  (void)hr_response_add_field(res, HR_SPAN_LIT("X-Request-Id"), (hr_span_t){id, (size_t)n});
  return HR_NEXT;
}

/* ---- JSON errors for what the router answers itself ------------------------- */

static void not_found(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  send_error(res, 404, "no such resource");
}

static void method_not_allowed(hr_request_t *req, hr_response_t *res, void *udata) {
  char msg[128];
  hr_span_t allow = hr_request_allow(req); /* also in the Allow field already */
  (void)udata;
  snprintf(msg, sizeof msg, "allowed here: %.*s", (int)allow.len, allow.ptr);
  send_error(res, 405, msg);
}

static void print_access(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  (void)ctx;
  (void)e;
  fprintf(stderr, "%.*s\n", (int)len, line);
}

/*
 * Registers both routes.  :id is declared HR_PARAM_UINT64: the router's
 * invoker converts it before the handler runs, and a segment that is not a
 * decimal uint64 (/items/abc, /items/-1) is answered 404 -- the path names
 * no item.  The option structs and arrays are copied at registration.
 */
static int add_routes(hr_router_t *router, store_t *store) {
  const hr_param_type_t id_type[] = {HR_PARAM_UINT64};
  hr_route_options_t ro;
  int err;

  hr_route_options_init(&ro);
  ro.param_types = id_type;
  ro.nparam_types = 1;
  if ((err = hr_router_add(router, "GET", "/items/:id", get_item, store,
                           &ro)) != 0)
    return err;
  ro.max_body_bytes = MAX_VALUE_BYTES;
  if ((err = hr_router_add(router, "PUT", "/items/:id", put_item, store, &ro)) != 0)
    return err;
  if ((err = hr_router_add(router, "GET", "/items", list_items, store, NULL)) != 0)
    return err;
  hr_route_options_init(&ro);
  ro.max_body_bytes = MAX_VALUE_BYTES * 3 + 16; /* text=, %-encoded */
  return hr_router_add(router, "POST", "/items", create_item, store, &ro);
}

/* Middleware, the request-id key and the JSON answers of the router. */
static int add_middleware(hr_router_t *router, const options_t *opts) {
  hr_answers_t answers;
  int err;
  if ((err = uv_mutex_init(&id_lock)) != 0) return err;
  if ((err = hr_router_local_key(router, NULL, NULL, &request_id_key)) != 0) return err;
  if ((err = hr_router_use(router, NULL, NULL, tag_request, NULL, NULL)) != 0) return err;
  if (opts->token != NULL &&
      (err = hr_router_use_head(router, NULL, "/items", require_token, (void *)opts->token)) != 0)
    return err;
  hr_answers_init(&answers);
  answers.not_found = not_found;
  answers.method_not_allowed = method_not_allowed;
  answers.error_body = hr_json_error_body; /* the JSON module's */
  return hr_router_set_answers(router, NULL, &answers);
}

/* ---- graceful shutdown on SIGINT and SIGTERM ---------------------------- */

/* What the signal handlers need; lives on main's stack. */
typedef struct app_s {
  hr_server_t *server;
  uv_signal_t sigint;
  uv_signal_t sigterm;
  int shutting_down;
} app_t;

static const char *signal_name(int signum) {
  return signum == SIGINT ? "SIGINT" : "SIGTERM";
}

static void close_signals(app_t *app) {
  /* Closing the watchers hands SIGINT/SIGTERM back to their default action,
   * so a second Ctrl-C during a slow shutdown ends the process at once. */
  uv_close((uv_handle_t *)&app->sigint, NULL);
  uv_close((uv_handle_t *)&app->sigterm, NULL);
}

/* Attached mode.  Runs on the loop thread once every connection is closed. */
static void on_server_closed(hr_server_t *server, void *udata) {
  (void)server;
  (void)udata;
  fprintf(stderr, "rest: stopped\n");
}

/* Attached mode: the server lives on the same loop as the signal watchers. */
static void on_signal_attached(uv_signal_t *handle, int signum) {
  app_t *app = handle->data;
  int err;

  if (app->shutting_down)
    return;
  app->shutting_down = 1;
  fprintf(stderr, "rest: %s, shutting down\n", signal_name(signum));
  /* Stop accepting, let requests in flight finish (up to the deadline); the
   * loop runs until the server's last handle and the watchers are closed. */
  err = hr_server_close(app->server, SHUTDOWN_DEADLINE_MS, on_server_closed,
                        NULL);
  if (err != 0)
    fprintf(stderr, "rest: hr_server_close: %s\n", hr_strerror(err));
  close_signals(app);
}

/* Threaded mode: our loop only watches for signals; the server's loops run
 * on its worker threads. */
static void on_signal_threaded(uv_signal_t *handle, int signum) {
  app_t *app = handle->data;
  int err;

  if (app->shutting_down)
    return;
  app->shutting_down = 1;
  fprintf(stderr, "rest: %s, shutting down\n", signal_name(signum));
  /* Blocks until every worker has drained (up to the deadline) and been
   * joined: after this no handler touches the collection any more. */
  err = hr_server_stop(app->server, SHUTDOWN_DEADLINE_MS);
  if (err != 0)
    fprintf(stderr, "rest: hr_server_stop: %s\n", hr_strerror(err));
  else
    fprintf(stderr, "rest: stopped\n");
  close_signals(app);
}

/* Installs both signal watchers on `loop`.  Returns 0 or a libuv error. */
static int watch_signals(uv_loop_t *loop, app_t *app, uv_signal_cb cb) {
  int err;

  if ((err = uv_signal_init(loop, &app->sigint)) != 0)
    return err;
  app->sigint.data = app;
  if ((err = uv_signal_init(loop, &app->sigterm)) != 0) {
    uv_close((uv_handle_t *)&app->sigint, NULL);
    return err;
  }
  app->sigterm.data = app;
  if ((err = uv_signal_start(&app->sigint, cb, SIGINT)) != 0 ||
      (err = uv_signal_start(&app->sigterm, cb, SIGTERM)) != 0) {
    close_signals(app);
    return err;
  }
  return 0;
}

/* ---- main -------------------------------------------------------------- */

/* Reports a failed call and returns 1 (the exit status). */
static int fail(const char *what, int err) {
  fprintf(stderr, "rest: %s: %s (%s)\n", what, hr_strerror(err),
          hr_err_name(err));
  return 1;
}

int main(int argc, char **argv) {
  options_t opts;
  app_t app;
  store_t store;
  int store_ready = 0;
  hr_router_t *router = NULL;
  hr_server_t *server = NULL;
  hr_server_options_t so;
  uv_loop_t *loop = uv_default_loop();
  int status = 1;
  int err;

  switch (parse_options(argc, argv, &opts)) {
  case 0:
    break;
  case 1:
    return 0;
  default:
    return 2;
  }

  /* See examples/hello.c: a peer resetting its connection must not kill the
   * process with SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  memset(&app, 0, sizeof(app));

  /* 1. The collection (its mutex first: handlers may run on any worker). */
  if ((err = store_init(&store)) != 0) {
    status = fail("store_init", err);
    goto out;
  }
  store_ready = 1;

  /* 2. The router and the routes.  The built-in value types (HR_TYPE_ETAG,
   * HR_TYPE_DATE, ...) and their delegates come with every router. */
  if ((err = hr_router_new(&router, NULL)) != 0) {
    status = fail("hr_router_new", err);
    goto out;
  }
  if ((err = add_routes(router, &store)) != 0) {
    status = fail("hr_router_add", err);
    goto out;
  }
  if ((err = add_middleware(router, &opts)) != 0) {
    status = fail("middleware", err);
    goto out;
  }

  /* 3. The server.  Its default body limit (1 MiB) is above the PUT route's
   * own, which wins for that route. */
  hr_server_options_init(&so);
  if (opts.access_log) {
    so.access_log = print_access;
    so.access_format = HR_ACCESS_COMMON;
  }
  if ((err = hr_server_new(&server, router, &so)) != 0) {
    status = fail("hr_server_new", err);
    goto out;
  }
  app.server = server;
  if ((err = hr_server_listen(server, opts.host, opts.port)) != 0) {
    status = fail("hr_server_listen", err);
    goto out;
  }

  /* 4. Signal watchers, then serve: on this loop, or on worker threads. */
  err = watch_signals(
      loop, &app, opts.threads == 1 ? on_signal_attached : on_signal_threaded);
  if (err != 0) {
    status = fail("uv_signal_start", err);
    goto out;
  }
  err = opts.threads == 1 ? hr_server_attach(server, loop)
                          : hr_server_start(server, opts.threads);
  if (err != 0) {
    status = fail(opts.threads == 1 ? "hr_server_attach" : "hr_server_start",
                  err);
    close_signals(&app);
    goto out;
  }
  fprintf(stderr, "rest: listening on %s:%d with %u thread(s)\n", opts.host,
          hr_server_port(server, 0), opts.threads);

  /* Returns once the server and the signal watchers are all closed. */
  uv_run(loop, UV_RUN_DEFAULT);
  status = 0;

out:
  /* 5. Tear down in reverse order: the server before the router it uses and
   * the collection its handlers use, the loop last. */
  uv_run(loop, UV_RUN_NOWAIT);
  hr_server_free(server);
  hr_router_free(router);
  if (store_ready)
    store_free(&store);
  if ((err = uv_loop_close(loop)) != 0)
    status = fail("uv_loop_close", err);
  return status;
}
