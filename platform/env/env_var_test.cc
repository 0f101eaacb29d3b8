#include "platform/env/env_var.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace libdump::env {
namespace {

TEST(EnvParseBool, Spellings) {
  bool b = false;
  for (const char* t : {"1", "true", "TRUE", "yes", "Yes", "on", "ON"}) {
    b = false;
    EXPECT_TRUE(ParseBool(t, &b)) << t;
    EXPECT_TRUE(b) << t;
  }
  for (const char* f : {"0", "false", "False", "no", "NO", "off", "Off"}) {
    b = true;
    EXPECT_TRUE(ParseBool(f, &b)) << f;
    EXPECT_FALSE(b) << f;
  }
  for (const char* bad : {"", "2", "maybe", "y", "n", "1 ", " 1", "truee", "-1", "01"}) {
    EXPECT_FALSE(ParseBool(bad, &b)) << bad;
  }
}

TEST(EnvParseSize, SuffixesAreBinary) {
  uint64_t v = 0;
  struct Case {
    const char* s;
    uint64_t want;
  } const kCases[] = {
      {"0", 0},          {"512", 512},           {"512b", 512},        {"512B", 512},
      {"512k", 512 << 10}, {"512K", 512 << 10},  {"512kb", 512 << 10}, {"512KiB", 512 << 10},
      {"4M", 4 << 20},   {"4MB", 4 << 20},       {"4mib", 4 << 20},    {"1G", uint64_t{1} << 30},
      {"1GiB", uint64_t{1} << 30}, {"2T", uint64_t{2} << 40},
      {"18446744073709551615", UINT64_MAX}, {"16777215T", uint64_t{16777215} << 40},
  };
  for (const Case& c : kCases) {
    v = 1;
    EXPECT_TRUE(ParseSize(c.s, &v)) << c.s;
    EXPECT_EQ(v, c.want) << c.s;
  }
  for (const char* bad : {"", "abc", "k", "-1", "+1", "1.5M", "12x", "1kx", "1KiBB", "1 k", " 1", "1bb",
                          "18446744073709551616", "16777216T", "1P"}) {
    EXPECT_FALSE(ParseSize(bad, &v)) << bad;
  }
}

TEST(EnvParseUint, DigitsOnly) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseUint("100", &v));
  EXPECT_EQ(v, 100u);
  for (const char* bad : {"", "1k", "-1", "0x10", "1e3", " 1"}) EXPECT_FALSE(ParseUint(bad, &v)) << bad;
}

TEST(EnvParseSignal, NamesNumbersAndRealTime) {
  const char* why = nullptr;
  EXPECT_EQ(ParseSignal("USR2", &why), SIGUSR2);
  EXPECT_EQ(why, nullptr);
  EXPECT_EQ(ParseSignal("SIGUSR1", &why), SIGUSR1);
  EXPECT_EQ(ParseSignal("sigusr1", &why), SIGUSR1);
  EXPECT_EQ(ParseSignal("12", &why), SIGUSR2);
  EXPECT_EQ(ParseSignal("HUP", &why), SIGHUP);
  EXPECT_EQ(ParseSignal("RTMIN", &why), SIGRTMIN);
  EXPECT_EQ(ParseSignal("RTMIN+4", &why), SIGRTMIN + 4);
  EXPECT_EQ(ParseSignal("SIGRTMAX-1", &why), SIGRTMAX - 1);
}

TEST(EnvParseSignal, RefusalsSayWhy) {
  const char* why = nullptr;
  EXPECT_EQ(ParseSignal("SEGV", &why), 0);
  EXPECT_STREQ(why, "is reserved for crashes");
  EXPECT_EQ(ParseSignal("11", &why), 0);
  EXPECT_STREQ(why, "is reserved for crashes");
  EXPECT_EQ(ParseSignal("SIGBUS", &why), 0);
  EXPECT_STREQ(why, "is reserved for crashes");
  EXPECT_EQ(ParseSignal("KILL", &why), 0);
  EXPECT_STREQ(why, "cannot be caught");
  EXPECT_EQ(ParseSignal("PROF", &why), 0);
  EXPECT_STREQ(why, "is the CPU profiler's timer signal");
  EXPECT_EQ(ParseSignal("TERM", &why), 0);
  EXPECT_STREQ(why, "asks the process to stop, and must keep doing so");
  EXPECT_EQ(ParseSignal("32", &why), 0);
  EXPECT_STREQ(why, "is reserved by the C library for its threads");
  for (const char* bad : {"", "FOO", "0", "65", "RTMIN+", "RTMIN+99", "RTMIN-1", "USR2x", "-12"}) {
    EXPECT_EQ(ParseSignal(bad, &why), 0) << bad;
    EXPECT_STREQ(why, "is not a signal (a name such as USR2 or SIGUSR2, RTMIN+N, or a number)") << bad;
  }
}

// The warning is one line on stderr naming the variable and the value; the
// default is returned.
class EnvGetTest : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("LIBDUMP_TEST_VAR"); }
  static void Set(const char* v) { ::setenv("LIBDUMP_TEST_VAR", v, 1); }
  static void Start() { ::testing::internal::CaptureStderr(); }
  static std::string Stop() { return ::testing::internal::GetCapturedStderr(); }
};

TEST_F(EnvGetTest, UnsetAndEmptyAreTheDefaultSilently) {
  Start();
  EXPECT_TRUE(GetBool("LIBDUMP_TEST_VAR", true));
  Set("");
  EXPECT_FALSE(GetBool("LIBDUMP_TEST_VAR", false));
  EXPECT_EQ(GetSize("LIBDUMP_TEST_VAR", 7, 0, 100), 7u);
  EXPECT_EQ(Stop(), "");
}

TEST_F(EnvGetTest, Bool) {
  Set("yes");
  Start();
  EXPECT_TRUE(GetBool("LIBDUMP_TEST_VAR", false));
  EXPECT_EQ(Stop(), "");
  Set("maybe");
  Start();
  EXPECT_FALSE(GetBool("LIBDUMP_TEST_VAR", false));
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=maybe is not a boolean (1/0, true/false, yes/no, on/off); using off\n");
}

// Two readers of one variable (dumps on a signal and on OOM both read
// LIBDUMP_HEAPDUMP_ZSTD) report one mistake once; another mistake still shows.
TEST_F(EnvGetTest, OneMistakeIsReportedOnce) {
  Set("twice");
  Start();
  EXPECT_FALSE(GetBool("LIBDUMP_TEST_VAR", false));
  EXPECT_FALSE(GetBool("LIBDUMP_TEST_VAR", false));
  Set("thrice");
  EXPECT_FALSE(GetBool("LIBDUMP_TEST_VAR", false));
  EXPECT_EQ(Stop(),
            "libdump: LIBDUMP_TEST_VAR=twice is not a boolean (1/0, true/false, yes/no, on/off); using off\n"
            "libdump: LIBDUMP_TEST_VAR=thrice is not a boolean (1/0, true/false, yes/no, on/off); using off\n");
}

TEST_F(EnvGetTest, Size) {
  Set("512k");
  Start();
  EXPECT_EQ(GetSize("LIBDUMP_TEST_VAR", 1, 0, UINT64_MAX), 524288u);
  EXPECT_EQ(Stop(), "");
  Set("abc");
  Start();
  EXPECT_EQ(GetSize("LIBDUMP_TEST_VAR", 524288, 0, UINT64_MAX), 524288u);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=abc is not a size (bytes, or with a suffix: 512k, 4M, 1G); using 524288\n");
  Set("2G");
  Start();
  EXPECT_EQ(GetSize("LIBDUMP_TEST_VAR", 10, 1, 1 << 30), 10u);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=2G is out of range (1 to 1073741824 bytes); using 10\n");
}

TEST_F(EnvGetTest, Uint) {
  Set("250");
  EXPECT_EQ(GetUint("LIBDUMP_TEST_VAR", 100, 1, 1000), 250u);
  Set("0");
  Start();
  EXPECT_EQ(GetUint("LIBDUMP_TEST_VAR", 100, 1, 1000), 100u);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=0 is out of range (1 to 1000); using 100\n");
  Set("1k");
  Start();
  EXPECT_EQ(GetUint("LIBDUMP_TEST_VAR", 100, 1, 1000), 100u);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=1k is not a number; using 100\n");
}

TEST_F(EnvGetTest, Signal) {
  Set("SIGUSR2");
  EXPECT_EQ(GetSignal("LIBDUMP_TEST_VAR", 0), SIGUSR2);
  Set("SEGV");
  Start();
  EXPECT_EQ(GetSignal("LIBDUMP_TEST_VAR", 0), 0);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=SEGV is reserved for crashes; ignored\n");
  Start();
  EXPECT_EQ(GetSignal("LIBDUMP_TEST_VAR", SIGRTMIN + 4), SIGRTMIN + 4);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=SEGV is reserved for crashes; using SIGRTMIN+4\n");
  Set("USR1");
  Start();
  EXPECT_EQ(GetSignal("LIBDUMP_TEST_VAR", SIGUSR2, SIGUSR1, "is already the other one"), SIGUSR2);
  EXPECT_EQ(Stop(), "libdump: LIBDUMP_TEST_VAR=USR1 is already the other one; using SIGUSR2\n");
}

TEST_F(EnvGetTest, LongValueIsTruncatedNotOverrun) {
  const std::string v(2000, 'x');
  Set(v.c_str());
  Start();
  EXPECT_FALSE(GetBool("LIBDUMP_TEST_VAR", false));
  const std::string err = Stop();
  EXPECT_EQ(err.size(), 512u);
  EXPECT_EQ(err.back(), '\n');
}

}  // namespace
}  // namespace libdump::env
