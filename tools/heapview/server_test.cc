// Which Host headers heapview answers: a DNS name a web page could rebind to
// 127.0.0.1 is refused; loopback literals in every spelling, localhost, the
// bound address and --allow-host names are served.
#include "server.h"

#include <gtest/gtest.h>

namespace libdump::heapview {
namespace {

TEST(HeapviewHost, LoopbackLocalhostBoundAndAllowed) {
  ServerOptions o;
  o.bind = "192.0.2.7";
  o.allowed_hosts = {"heaps.internal"};
  for (const char* h : {"localhost", "localhost:7000", "127.0.0.1:7000", "127.9.9.9", "[::1]:7000",
                        "[0:0:0:0:0:0:0:1]:7000", "[::ffff:127.0.0.1]:7000", "192.0.2.7:7000", "HEAPS.internal:80",
                        "198.51.100.1:7000"}) {
    EXPECT_TRUE(HostAllowed(h, o, "198.51.100.1")) << h;
  }
  for (const char* h : {"attacker.example", "attacker.example:7000", "192.0.2.8", "", "[::1", ":7000",
                        "[::ffff:192.0.2.8]:7000", "heaps"}) {
    EXPECT_FALSE(HostAllowed(h, o, "198.51.100.1")) << h;
  }
}

}  // namespace
}  // namespace libdump::heapview
