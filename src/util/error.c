/* SPDX-License-Identifier: MIT */
/*
 * The error table (hr_strerror, hr_err_name), the version string and the
 * small span helpers of the public API.
 */
#include <string.h>
#include <uv.h>

#include "hroute/common.h"
#include "hroute/error.h"

#define HR__STR2(x) #x
#define HR__STR(x) HR__STR2(x)

const char *hr_version_string(void) {
  return HR__STR(HR_VERSION_MAJOR) "." HR__STR(HR_VERSION_MINOR) "." HR__STR(HR_VERSION_PATCH);
}

/* hroute's own range, reserved whole so unknown codes in it are not passed
 * to libuv. */
#define HR__IS_OWN(err) ((err) <= -20001 && (err) >= -20999)

/* Whether libuv knows `err`.  For codes it does not know, uv_err_name() and
 * uv_strerror() allocate an "Unknown system error N" string that is never
 * freed, so ask through the buffer variant first. */
static int is_uv_code(int err) {
  char buf[64];
  if (err >= 0 || HR__IS_OWN(err)) return 0;
  uv_err_name_r(err, buf, sizeof(buf));
  return strncmp(buf, "Unknown system error", 20) != 0;
}

const char *hr_strerror(int err) {
  if (err == 0) return "success";
  switch (err) {
#define HR__ERR_MSG(name, val, msg) \
  case (val):                       \
    return (msg);
    HR_ERRNO_MAP(HR__ERR_MSG)
#undef HR__ERR_MSG
    default:
      break;
  }
  if (is_uv_code(err)) return uv_strerror(err);
  return "unknown error";
}

const char *hr_err_name(int err) {
  if (err == 0) return "OK";
  switch (err) {
#define HR__ERR_NAME(name, val, msg) \
  case (val):                        \
    return "HR_" #name;
    HR_ERRNO_MAP(HR__ERR_NAME)
#undef HR__ERR_NAME
    default:
      break;
  }
  if (is_uv_code(err)) return uv_err_name(err);
  return "UNKNOWN";
}

hr_span_t hr_span_cstr(const char *s) {
  hr_span_t r = {s, s != NULL ? strlen(s) : 0};
  return r;
}

int hr_span_eq(hr_span_t a, hr_span_t b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static unsigned char lower(unsigned char c) {
  return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c;
}

int hr_span_eq_nocase(hr_span_t a, hr_span_t b) {
  size_t i;
  if (a.len != b.len) return 0;
  for (i = 0; i < a.len; i++)
    if (lower((unsigned char)a.ptr[i]) != lower((unsigned char)b.ptr[i]))
      return 0;
  return 1;
}
