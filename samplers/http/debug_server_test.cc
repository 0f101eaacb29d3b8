// The debug server's address rule: loopback unless the address names
// another host; bad addresses are refused with the reason.
#include "samplers/http/debug_server.h"

#include <gtest/gtest.h>

#include "libdump/profiler.h"

namespace libdump::samplers {
namespace {

TEST(DebugServerAddress, EmptyHostIsLoopback) {
  ParsedAddress a;
  std::string error;
  ASSERT_TRUE(ParseListenAddress(":6060", &a, &error)) << error;
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6060);
  ASSERT_TRUE(ParseListenAddress("localhost:0", &a, &error)) << error;
  EXPECT_EQ(a.host, "127.0.0.1");
  ASSERT_TRUE(ParseListenAddress("[::1]:7000", &a, &error)) << error;
  EXPECT_EQ(a.host, "::1");
  ASSERT_TRUE(ParseListenAddress("0.0.0.0:6060", &a, &error)) << error;  // explicit: allowed
  EXPECT_EQ(a.host, "0.0.0.0");
}

TEST(DebugServerAddress, BadAddressesSayWhy) {
  ParsedAddress a;
  std::string error;
  EXPECT_FALSE(ParseListenAddress("6060", &a, &error));
  EXPECT_EQ(error, "\"6060\" has no :PORT");
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:70000", &a, &error));
  EXPECT_EQ(error, "\"70000\" is not a port (0-65535)");
  EXPECT_FALSE(ParseListenAddress("example.com:80", &a, &error));
  EXPECT_EQ(error, "\"example.com\" is not an IP address");
  EXPECT_FALSE(StartDebugServer("127.0.0.1:x", &error));
  EXPECT_EQ(error, "\"x\" is not a port (0-65535)");
}

TEST(DebugServerAddress, EveryLoopbackSpelling) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "0::1"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a : {"0.0.0.0", "::", "192.0.2.1", "::ffff:192.0.2.1", "localhost", "example.com", ""}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

TEST(DebugServerHost, OnlyLoopbackLocalhostAndTheServersOwnAddress) {
  for (const char* h : {"localhost", "LOCALHOST:6060", "127.0.0.1", "127.0.0.1:6060", "[::1]:6060", "[::1]",
                        "[::ffff:127.0.0.1]:80", "192.0.2.7:6060"}) {
    EXPECT_TRUE(HostAllowed(h, "192.0.2.7")) << h;
  }
  // A DNS name that a web page could rebind to 127.0.0.1, another address,
  // an empty or malformed header.
  for (const char* h : {"attacker.example", "attacker.example:6060", "192.0.2.8:6060", "", ":6060", "[::1",
                        "localhost.attacker.example"}) {
    EXPECT_FALSE(HostAllowed(h, "192.0.2.7")) << h;
  }
  setenv("LIBDUMP_PPROF_HOSTS", "build-box,profiler.internal", 1);
  EXPECT_TRUE(HostAllowed("profiler.internal:6060", "127.0.0.1"));
  EXPECT_FALSE(HostAllowed("profiler", "127.0.0.1"));
  unsetenv("LIBDUMP_PPROF_HOSTS");
}

TEST(DebugServer, OneServerPerProcess) {
  std::string error, bound;
  ASSERT_TRUE(StartDebugServer("127.0.0.1:0", &error, &bound)) << error;
  EXPECT_EQ(bound.rfind("127.0.0.1:", 0), 0u) << bound;
  EXPECT_FALSE(StartDebugServer("127.0.0.1:0", &error));
  EXPECT_EQ(error, "a debug server is already running");
}

}  // namespace
}  // namespace libdump::samplers
