// LIBDUMP_HEAPDUMP_ZSTD_LEVEL, _THREADS and _MODE: each valid spelling, and
// the default (with a line on stderr) for anything else.
#include "dump_environment.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <string>

#include "libdump/heap_dump.h"

namespace libdump::heapdump {
namespace {

struct Env {
  Env(const char* name, const char* value) : name_(name) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~Env() { unsetenv(name_); }
  const char* name_;
};

TEST(DumpEnvironment, ZstdLevel) {
  for (int level = -5; level <= 19; ++level) {
    Env e("LIBDUMP_HEAPDUMP_ZSTD_LEVEL", std::to_string(level).c_str());
    EXPECT_EQ(ZstdLevelFromEnvironment(), level);
  }
  for (const char* bad : {"-6", "20", "fast", "1.5", "--1", "-", "99999999999999999999"}) {
    Env e("LIBDUMP_HEAPDUMP_ZSTD_LEVEL", bad);
    testing::internal::CaptureStderr();
    EXPECT_EQ(ZstdLevelFromEnvironment(), kDefaultZstdLevel) << bad;
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(std::string("LIBDUMP_HEAPDUMP_ZSTD_LEVEL=") + bad + " is not a zstd level (-5 to 19); using 1"),
              std::string::npos)
        << err;
  }
  Env unset("LIBDUMP_HEAPDUMP_ZSTD_LEVEL", nullptr);
  EXPECT_EQ(ZstdLevelFromEnvironment(), kDefaultZstdLevel);
}

TEST(DumpEnvironment, Threads) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  {
    Env unset("LIBDUMP_HEAPDUMP_THREADS", nullptr);
    EXPECT_EQ(DumpThreadsFromEnvironment(), std::min(CPU_COUNT(&set), 64));
  }
  {
    Env e("LIBDUMP_HEAPDUMP_THREADS", "3");
    EXPECT_EQ(DumpThreadsFromEnvironment(), 3);
  }
  for (const char* bad : {"0", "65", "two"}) {
    Env e("LIBDUMP_HEAPDUMP_THREADS", bad);
    testing::internal::CaptureStderr();
    EXPECT_EQ(DumpThreadsFromEnvironment(), std::min(CPU_COUNT(&set), 64)) << bad;
    EXPECT_NE(testing::internal::GetCapturedStderr().find("LIBDUMP_HEAPDUMP_THREADS="), std::string::npos);
  }
}

TEST(DumpEnvironment, ModeDefaultsToForkForCompressedDumpsOnly) {
  {
    Env unset("LIBDUMP_HEAPDUMP_MODE", nullptr);
    EXPECT_TRUE(ForkSnapshotFromEnvironment(true));
    EXPECT_FALSE(ForkSnapshotFromEnvironment(false));
    const HeapDumpOptions o = HeapDumpOptionsFromEnvironment(true);
    EXPECT_TRUE(o.zstd);
    EXPECT_TRUE(o.fork_snapshot);
    EXPECT_EQ(o.zstd_level, kDefaultZstdLevel);
  }
  for (const char* fork : {"fork", "FORK"}) {
    Env e("LIBDUMP_HEAPDUMP_MODE", fork);
    EXPECT_TRUE(ForkSnapshotFromEnvironment(false));
  }
  {
    Env e("LIBDUMP_HEAPDUMP_MODE", "Stop");
    EXPECT_FALSE(ForkSnapshotFromEnvironment(true));
  }
  Env e("LIBDUMP_HEAPDUMP_MODE", "vfork");
  testing::internal::CaptureStderr();
  EXPECT_TRUE(ForkSnapshotFromEnvironment(true));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("LIBDUMP_HEAPDUMP_MODE=vfork is not fork or stop"),
            std::string::npos);
}

}  // namespace
}  // namespace libdump::heapdump
