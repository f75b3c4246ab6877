// SPDX-License-Identifier: MIT
//
// uws_hello: the uWebSockets peer of bench/run.sh --compare uws.  It answers
// GET /hello/<name> with what examples/hello.c sends: 200, Content-Type
// text/plain, a Content-Length and the body "Hello, <name>" (the name as it
// appears in the request target, without the query).  uWebSockets adds its
// own Date and "uWebSockets: 20" fields; anything else gets its 404.  It is
// built by bench/run.sh against a fetched copy of uWebSockets and uSockets
// (--uws-git, --usockets-git: their git directories; nothing of them is kept
// in this tree), with uSockets' epoll loop and no TLS or compression, and
// listens on 127.0.0.1:PORT in one thread, as uWebSockets is meant to run
// (one App per thread; SO_REUSEPORT for more, not used here).
//
//   uws_hello PORT
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "App.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: uws_hello PORT\n");
    return 2;
  }
  int port = std::atoi(argv[1]);
  uWS::App()
      .get("/hello/:name",
           [](auto *res, auto *req) {
             std::string_view name = req->getParameter(0);
             std::string body;
             body.reserve(7 + name.size());
             body.append("Hello, ").append(name);
             res->writeHeader("Content-Type", "text/plain");
             res->end(body);
           })
      .listen("127.0.0.1", port,
              [port](auto *listen_socket) {
                if (listen_socket == nullptr) {
                  std::fprintf(stderr, "uws_hello: cannot listen on port %d\n", port);
                  std::exit(1);
                }
              })
      .run();
  return 0;
}
