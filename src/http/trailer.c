/* SPDX-License-Identifier: MIT */
/*
 * The field names a trailer section must not carry (RFC 9110 §6.5.1).
 * Request trailers with these names are dropped (not delivered, the
 * request goes on, as nginx ignores request trailers altogether); a
 * handler's response trailer with one is refused (HR_EINVAL).
 */
#include "http/trailer.h"

#include <stddef.h>

int hr__trailer_forbidden(hr_span_t name) {
  static const hr_span_t names[] = {
      /* framing, of the message or the connection (RFC 9112 §6, §7;
       * RFC 9110 §7.6.1, §7.8, §10.1.4) */
      HR_SPAN_INIT("Content-Length"), HR_SPAN_INIT("Transfer-Encoding"),
      HR_SPAN_INIT("Trailer"), HR_SPAN_INIT("TE"), HR_SPAN_INIT("Connection"),
      HR_SPAN_INIT("Keep-Alive"), HR_SPAN_INIT("Proxy-Connection"),
      HR_SPAN_INIT("Upgrade"),
      /* routing (§7.2) */
      HR_SPAN_INIT("Host"),
      /* request modifiers: controls (§10.1) and conditionals (§13.1, the
       * If- prefix below) */
      HR_SPAN_INIT("Cache-Control"), HR_SPAN_INIT("Expect"), HR_SPAN_INIT("Max-Forwards"),
      HR_SPAN_INIT("Pragma"), HR_SPAN_INIT("Range"),
      /* authentication (§11) and the credentials cookies carry */
      HR_SPAN_INIT("Authorization"), HR_SPAN_INIT("Proxy-Authorization"),
      HR_SPAN_INIT("WWW-Authenticate"), HR_SPAN_INIT("Proxy-Authenticate"),
      HR_SPAN_INIT("Cookie"), HR_SPAN_INIT("Set-Cookie"),
      /* how the content is encoded and typed (§8.3, §8.4, §14.4) */
      HR_SPAN_INIT("Content-Encoding"), HR_SPAN_INIT("Content-Type"),
      HR_SPAN_INIT("Content-Range"),
      /* content negotiation (§12.5) */
      HR_SPAN_INIT("Accept"), HR_SPAN_INIT("Accept-Charset"),
      HR_SPAN_INIT("Accept-Encoding"), HR_SPAN_INIT("Accept-Language"),
  };
  size_t i;
  if (name.len >= 3 && hr_span_eq_nocase((hr_span_t){name.ptr, 3}, HR_SPAN_LIT("If-")))
    return 1;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (hr_span_eq_nocase(name, names[i])) return 1;
  return 0;
}
