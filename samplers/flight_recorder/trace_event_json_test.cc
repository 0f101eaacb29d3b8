#include "samplers/flight_recorder/trace_event_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace libdump::samplers {
namespace {

// Runs f on a JsonOut whose output goes through a pipe; returns the bytes.
template <class F>
std::string Render(F&& f, size_t cap = 64) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  {
    char buf[256];
    JsonOut o(p[1], buf, cap);
    f(o);
    o.Flush();
    EXPECT_TRUE(o.ok());
  }
  close(p[1]);
  std::string out;
  char c[512];
  for (ssize_t n; (n = read(p[0], c, sizeof c)) > 0;) out.append(c, static_cast<size_t>(n));
  close(p[0]);
  return out;
}

TEST(TraceEventJson, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Render([](JsonOut& o) { o.String("a\"b\\c\nd\x01"); }), R"("a\"b\\c\u000ad\u0001")");
}

TEST(TraceEventJson, KeepsValidUtf8AndReplacesInvalidBytes) {
  // é (2 bytes), U+1D11E (4 bytes) stay; a lone continuation byte, an
  // overlong NUL (C0 80), a surrogate (ED A0 80) and a truncated sequence
  // become U+FFFD, one per byte.
  EXPECT_EQ(Render([](JsonOut& o) { o.String("\xc3\xa9 \xf0\x9d\x84\x9e"); }), "\"\xc3\xa9 \xf0\x9d\x84\x9e\"");
  EXPECT_EQ(Render([](JsonOut& o) { o.String("\x80"); }), R"("\ufffd")");
  EXPECT_EQ(Render([](JsonOut& o) { o.String("\xc0\x80"); }), R"("\ufffd\ufffd")");
  EXPECT_EQ(Render([](JsonOut& o) { o.String("\xed\xa0\x80"); }), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(Render([](JsonOut& o) { o.String("x\xe2\x82"); }), R"("x\ufffd\ufffd")");
}

TEST(TraceEventJson, FormatsNumbers) {
  EXPECT_EQ(Render([](JsonOut& o) { o.Micros(1234567); }), "1234.567");
  EXPECT_EQ(Render([](JsonOut& o) { o.Micros(5); }), "0.005");
  EXPECT_EQ(Render([](JsonOut& o) { o.Micros(-1500); }), "-1.500");
  EXPECT_EQ(Render([](JsonOut& o) { o.Int(INT64_MIN); }), "-9223372036854775808");
  EXPECT_EQ(Render([](JsonOut& o) { o.Uint(UINT64_MAX); }), "18446744073709551615");
  EXPECT_EQ(Render([](JsonOut& o) { o.Hex(0x7f00dead); }), "\"0x7f00dead\"");
  EXPECT_EQ(Render([](JsonOut& o) { o.Hex(0); }), "\"0x0\"");
}

TEST(TraceEventJson, FlushesThroughASmallBuffer) {
  const std::string s(1000, 'x');
  EXPECT_EQ(Render([&](JsonOut& o) { o.String(s); }, 3), "\"" + s + "\"");
}

TEST(TraceEventJson, ReportsAWriteError) {
  const int fd = open("/dev/null", O_RDONLY);
  char buf[8];
  JsonOut o(fd, buf, sizeof buf);
  o.Raw("0123456789");
  o.Flush();
  EXPECT_FALSE(o.ok());
  EXPECT_EQ(o.error(), EBADF);
  close(fd);
}

}  // namespace
}  // namespace libdump::samplers
