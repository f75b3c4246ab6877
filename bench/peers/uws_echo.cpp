// SPDX-License-Identifier: MIT
//
// uws_echo: bench/ws.sh's uWebSockets peer.  It echoes every WebSocket
// message back with its opcode (no compression, 16 MiB messages at most)
// on 127.0.0.1:PORT, any path, in one thread, as uWebSockets runs (one App
// per thread).  bench/ws.sh builds it against fetched copies of
// uWebSockets and uSockets given with --uws-git and --usockets-git
// (nothing of them is kept in this tree).
//
//   uws_echo PORT
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "App.h"

struct PerSocket {};

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: uws_echo PORT\n");
    return 2;
  }
  int port = std::atoi(argv[1]);
  uWS::App()
      .ws<PerSocket>("/*", {.compression = uWS::DISABLED,
                            .maxPayloadLength = 16 * 1024 * 1024,
                            .idleTimeout = 0,
                            .message =
                                [](auto *ws, std::string_view message, uWS::OpCode op) {
                                  ws->send(message, op);
                                }})
      .listen("127.0.0.1", port,
              [port](auto *listen_socket) {
                if (listen_socket == nullptr) {
                  std::fprintf(stderr, "uws_echo: cannot listen on port %d\n", port);
                  std::exit(1);
                }
                std::printf("listening %d\n", port);
                std::fflush(stdout);
              })
      .run();
  return 0;
}
