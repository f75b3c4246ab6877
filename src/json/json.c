/* SPDX-License-Identifier: MIT */
/*
 * JSON bodies on jansson (include/hroute/json.h), on the public API only.
 * jansson parses and encodes; this file checks the Content-Type, applies
 * the limits jansson has no option for (nesting depth), and frames the
 * answers.  Compiled when CMake finds jansson.
 */
#include <stdio.h>
#include <string.h>

#include "hroute/delegate.h" /* hr_request_typed, hr_media_type_t */
#include "hroute/json.h"
#include "hroute/upgrade.h"  /* hr_response_allocator */

static void set_error(hr_json_error_t *err, int status, int line, int column, size_t position,
                      const char *text) {
  if (err == NULL) return;
  err->status = status;
  err->line = line;
  err->column = column;
  err->position = position;
  snprintf(err->text, sizeof err->text, "%s", text);
}

/* Whether the request says its body is JSON: application/json or
 * application/<x>+json (RFC 6839 §3.1), a charset, if any, UTF-8. */
static int is_json(const hr_request_t *req) {
  hr_media_type_t mt;
  size_t i;
  if (hr_request_typed(req, HR_SPAN_LIT("Content-Type"), HR_TYPE_MEDIA_TYPE, &mt) != 0) return 0;
  if (!hr_span_eq_nocase(mt.type, HR_SPAN_LIT("application"))) return 0;
  if (!hr_span_eq_nocase(mt.subtype, HR_SPAN_LIT("json")) &&
      !(mt.subtype.len > 5 &&
        hr_span_eq_nocase((hr_span_t){mt.subtype.ptr + mt.subtype.len - 5, 5}, HR_SPAN_LIT("+json"))))
    return 0;
  for (i = 0; i < mt.nparams; i++)
    if (hr_span_eq_nocase(mt.params[i].name, HR_SPAN_LIT("charset")) &&
        !hr_span_eq_nocase(mt.params[i].value, HR_SPAN_LIT("utf-8")))
      return 0;
  return 1;
}

/* Whether `v` nests arrays and objects deeper than `left` more levels.
 * jansson's parser stops at 2048 levels, which bounds the recursion. */
static int too_deep(const json_t *v, size_t left) {
  size_t i;
  const char *key;
  json_t *item;
  if (!json_is_array(v) && !json_is_object(v)) return 0;
  if (left == 0) return 1;
  if (json_is_array(v)) {
    json_array_foreach(v, i, item) if (too_deep(item, left - 1)) return 1;
  } else {
    json_object_foreach((json_t *)v, key, item) if (too_deep(item, left - 1)) return 1;
  }
  return 0;
}

int hr_json_read(const hr_request_t *req, size_t max_depth, json_t **out, hr_json_error_t *err) {
  hr_span_t body;
  json_error_t je;
  json_t *v;
  if (req == NULL || out == NULL) return HR_EINVAL;
  *out = NULL;
  if (!is_json(req)) {
    set_error(err, 415, 0, 0, 0, "the body must be application/json (UTF-8)");
    return HR_EINVAL;
  }
  body = hr_request_body(req);
  /* Any value at the top (RFC 8259 §2); a repeated key is refused rather
   * than resolved (§4 leaves it to the implementation; the last or the
   * first would each surprise someone); NULs in strings refused (jansson's
   * default). */
  v = json_loadb(body.ptr != NULL ? body.ptr : "", body.len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
                 &je);
  if (v == NULL) {
    if (json_error_code(&je) == json_error_out_of_memory) return HR_ENOMEM;
    set_error(err, 400, je.line > 0 ? je.line : 0, je.column > 0 ? je.column : 0,
              (size_t)(je.position > 0 ? je.position : 0),
              /* jansson's own words, but for the flag it would name */
              json_error_code(&je) == json_error_null_character ? "\\u0000 in a string"
                                                                 : je.text);
    return HR_EPARSE;
  }
  if (max_depth == 0) max_depth = HR_JSON_DEFAULT_DEPTH;
  if (too_deep(v, max_depth)) {
    char text[96];
    json_decref(v);
    snprintf(text, sizeof text, "arrays and objects nested deeper than %zu", max_depth);
    set_error(err, 400, 0, 0, 0, text);
    return HR_EPARSE;
  }
  *out = v;
  return 0;
}

int hr_json_send(hr_response_t *res, int status, const json_t *value, size_t flags) {
  const hr_allocator_t *a;
  char small[1024], *buf = small;
  size_t n;
  int rc;
  if (res == NULL || value == NULL) return HR_EINVAL;
  flags |= JSON_COMPACT;
  if ((n = json_dumpb(value, NULL, 0, flags)) == 0) return HR_EINVAL;
  a = hr_response_allocator(res);
  if (n > sizeof small && (buf = a->malloc(a->ctx, n)) == NULL) return HR_ENOMEM;
  if (json_dumpb(value, buf, n, flags) != n) {
    rc = HR_EINVAL; /* cannot differ for an unchanged value */
  } else if ((rc = hr_response_add_field(res, HR_SPAN_LIT("Content-Type"),
                                         HR_SPAN_LIT("application/json"))) == 0) {
    rc = hr_response_send(res, status, buf, n); /* copies */
  }
  if (buf != small) a->free(a->ctx, buf);
  return rc;
}

/* Sends {"status":N,"error":text} plus, with a place, line and column. */
static int send_error(hr_response_t *res, int status, const char *text, int line, int column) {
  json_t *v = line > 0 ? json_pack("{s:i, s:s, s:i, s:i}", "status", status, "error", text,
                                   "line", line, "column", column)
                       : json_pack("{s:i, s:s}", "status", status, "error", text);
  int rc;
  if (v == NULL) return HR_ENOMEM;
  rc = hr_json_send(res, status, v, JSON_PRESERVE_ORDER);
  json_decref(v);
  return rc;
}

int hr_json_error(hr_response_t *res, int status, const char *message) {
  if (res == NULL || status < 400 || status > 599) return HR_EINVAL;
  return send_error(res, status, message != NULL ? message : hr_status_reason(status), 0, 0);
}

int hr_json_reject(hr_response_t *res, const hr_json_error_t *err) {
  if (res == NULL || err == NULL || err->status < 400 || err->status > 599) return HR_EINVAL;
  return send_error(res, err->status, err->text, err->line, err->column);
}

json_t *hr_json_body(hr_request_t *req, hr_response_t *res, size_t max_depth) {
  hr_json_error_t err;
  json_t *v = NULL;
  int rc;
  if (req == NULL || res == NULL) return NULL;
  memset(&err, 0, sizeof err);
  rc = hr_json_read(req, max_depth, &v, &err);
  if (rc == 0) return v;
  if (rc == HR_ENOMEM || hr_json_reject(res, &err) != 0)
    /* Out of memory for the JSON answer too: a bare 503, which completes
     * the response whatever happens. */
    (void)hr_response_send(res, 503, NULL, 0);
  return NULL;
}

size_t hr_json_error_body(void *udata, int status, char *buf, size_t cap,
                          const char **content_type) {
  int n;
  (void)udata;
  /* Reason phrases are plain ASCII words: nothing to escape. */
  n = snprintf(buf, cap, "{\"status\":%d,\"error\":\"%s\"}", status, hr_status_reason(status));
  if (n < 0 || (size_t)n >= cap) return 0;
  *content_type = "application/json";
  return (size_t)n;
}
