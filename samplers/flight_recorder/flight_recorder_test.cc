#include "libdump/flight_recorder.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "samplers/flight_recorder/flight_recorder.h"

namespace libdump {
namespace {

using std::chrono::milliseconds;

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "." + std::to_string(getpid()))).string();
}

std::string Snapshot(FlightRecorder& r, const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_GT(r.WriteTo(fd), 0);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The structural check of tests/flight_recorder/check_trace.py (valid JSON,
// nesting, durations, ids, thread names), plus its expectation arguments.
int CheckTrace(const std::string& path, const std::string& args = "") {
  const std::string cmd = "python3 " LIBDUMP_SOURCE_DIR "/tests/flight_recorder/check_trace.py " + path + " " + args;
  return std::system(cmd.c_str());
}

uint64_t RssBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size, rss;
  in >> size >> rss;
  return rss * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

double OtherDataMicros(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

TEST(FlightRecorder, OneAtATime) {
  FlightRecorder a, b;
  EXPECT_EQ(a.MinAge(), std::chrono::seconds(10));
  EXPECT_EQ(a.MaxBytes(), uint64_t{10} << 20);
  EXPECT_FALSE(a.Enabled());
  EXPECT_FALSE(trace::IsEnabled());
  ASSERT_TRUE(a.Start());
  EXPECT_TRUE(a.Enabled());
  EXPECT_TRUE(trace::IsEnabled());
  EXPECT_FALSE(b.Start());
  EXPECT_EQ(errno, EBUSY);
  EXPECT_FALSE(b.Enabled());
  EXPECT_EQ(b.WriteTo(1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_FALSE(b.Stop());
  EXPECT_EQ(errno, EINVAL);
  EXPECT_TRUE(a.Stop());
  EXPECT_FALSE(a.Enabled());
  EXPECT_FALSE(trace::IsEnabled());
  EXPECT_FALSE(a.Stop());
  // Stopped, the second may start.
  EXPECT_TRUE(b.Start());
  EXPECT_TRUE(b.Stop());
}

TEST(FlightRecorder, AnnotationsWhileOffRecordNothing) {
  { trace::Region r("before-start"); }
  trace::Log("cat", "before-start");
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  { trace::Region x("after-start"); }
  const std::string path = TempPath("fr_off");
  const std::string json = Snapshot(r, path);
  EXPECT_EQ(json.find("before-start"), std::string::npos);
  EXPECT_NE(json.find("after-start"), std::string::npos);
  r.Stop();
  unlink(path.c_str());
}

TEST(FlightRecorder, RegionsTasksAndLogsAcrossThreads) {
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  {
    trace::Task task("fetch");
    {
      trace::Region outer("outer", task);
      std::this_thread::sleep_for(milliseconds(20));
      {
        trace::Region inner("inner", task);
        std::this_thread::sleep_for(milliseconds(10));
      }
      trace::Log("http", "quote \" backslash \\ newline \n bad \xff utf-8", task.id());
    }
    std::thread t([&task] {
      pthread_setname_np(pthread_self(), "fr-helper");
      trace::Region other("helper", task);
      libdump_region c;
      libdump_region_begin(&c, "c-region", task.id());
      std::this_thread::sleep_for(milliseconds(5));
      libdump_region_end(&c);
    });
    t.join();
  }
  trace::Region open("still-open");
  const std::string path = TempPath("fr_annotations");
  const std::string json = Snapshot(r, path);
  r.Stop();
  EXPECT_EQ(CheckTrace(path, "--region-at-least outer=30 --region-at-least inner=10 "
                             "--region-at-least c-region=5 --thread fr-helper"), 0);
  EXPECT_NE(json.find(R"("ph":"b","cat":"task")"), std::string::npos);
  EXPECT_NE(json.find(R"("name":"still-open","args":{"task":0,"open":true})"), std::string::npos);
  EXPECT_NE(json.find(R"("message":"quote \" backslash \\ newline \u000a bad \ufffd utf-8")"), std::string::npos);
  unlink(path.c_str());
}

// Regions named by an interned trace::Name: the snapshot names them from
// the table, nested, across threads, and one still open at the snapshot.
constinit trace::Name kNamedOuter("named-outer");
constinit trace::Name kNamedInner("named-inner");
TEST(FlightRecorder, InternedRegionNames) {
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  {
    trace::Region outer(kNamedOuter);
    std::this_thread::sleep_for(milliseconds(20));
    for (int i = 0; i < 3; ++i) {
      trace::Region inner(kNamedInner);
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
  std::thread t([] {
    pthread_setname_np(pthread_self(), "fr-named");
    trace::Region other(kNamedInner);
    std::this_thread::sleep_for(milliseconds(5));
  });
  t.join();
  EXPECT_NE(kNamedOuter.id(), 0u);
  EXPECT_NE(kNamedOuter.id(), kNamedInner.id());
  trace::Region open(kNamedOuter, 7);
  const std::string path = TempPath("fr_named");
  const std::string json = Snapshot(r, path);
  r.Stop();
  EXPECT_EQ(CheckTrace(path, "--region-at-least named-outer=35 --region-at-least named-inner=5 --thread fr-named"), 0);
  EXPECT_NE(json.find(R"("name":"named-outer","args":{"task":7,"open":true})"), std::string::npos);
  size_t inner = 0;
  for (size_t at = json.find(R"("name":"named-inner")"); at != std::string::npos;
       at = json.find(R"("name":"named-inner")", at + 1)) {
    ++inner;
  }
  EXPECT_EQ(inner, 4u);
  unlink(path.c_str());
}

// With the process's table of names full, a trace::Name's regions copy
// their name as a string-named region does.
TEST(FlightRecorder, NamesPastTheTableAreCopied) {
  while (libdump_trace_intern("filler") != 0) {
  }
  static constinit trace::Name late("late-name");
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  for (int i = 0; i < 2; ++i) trace::Region x(late);
  EXPECT_EQ(late.id(), 0u);
  const std::string path = TempPath("fr_late");
  const std::string json = Snapshot(r, path);
  r.Stop();
  EXPECT_EQ(CheckTrace(path), 0);
  size_t n = 0;
  for (size_t at = json.find(R"("name":"late-name")"); at != std::string::npos; at = json.find(R"("name":"late-name")", at + 1)) ++n;
  EXPECT_EQ(n, 2u);
  unlink(path.c_str());
}

TEST(FlightRecorder, ASecondConcurrentWriteToIsBusy) {
  FlightRecorder r;
  r.SetMaxBytes(2 << 20);
  ASSERT_TRUE(r.Start());
  for (int i = 0; i < 20000; ++i) trace::Log("fill", "a message long enough to fill more than a pipe's 64 KiB");
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  int64_t first = 0;
  std::thread writer([&] { first = r.WriteTo(p[1]); });
  // Once the pipe holds data the first WriteTo holds the writer lock, and
  // it stays blocked on the full pipe until this thread reads.
  pollfd pf{p[0], POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, 10000), 1);
  int queued = 0;
  while (ioctl(p[0], FIONREAD, &queued) == 0 && queued < 65536) std::this_thread::sleep_for(milliseconds(1));
  const int devnull = open("/dev/null", O_WRONLY);
  EXPECT_EQ(r.WriteTo(devnull), -1);
  EXPECT_EQ(errno, EBUSY);
  EXPECT_FALSE(r.WriteCPUProfileTo(devnull));
  EXPECT_EQ(errno, EBUSY);
  char buf[65536];
  int64_t drained = 0;
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) {
    drained += n;
    if (drained == first) break;
    if (first == 0 && drained > 0) {
      // keep reading until the writer finishes
    }
    pollfd q{p[0], POLLIN, 0};
    if (poll(&q, 1, 200) == 0) break;
  }
  writer.join();
  EXPECT_GT(first, 65536);
  EXPECT_GT(r.WriteTo(devnull), 0);  // free again
  close(devnull);
  close(p[0]);
  close(p[1]);
  r.Stop();
}

// After far more events than fit, the memory used stays within MaxBytes
// plus the metadata GetFlightRecorderStats reports (and a slack of 512 KiB
// for the test's own threads), and the window holds the newest events.
TEST(FlightRecorder, MemoryStaysWithinMaxBytes) {
  const uint64_t max_bytes = 1 << 20;
  [[maybe_unused]] const uint64_t before = RssBytes();
  FlightRecorder r;
  r.SetMaxBytes(max_bytes);
  ASSERT_TRUE(r.Start());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 250000; ++i) trace::Region x("many");
    });
  }
  for (auto& t : threads) t.join();
  const FlightRecorderStats st = GetFlightRecorderStats();
  [[maybe_unused]] const uint64_t after = RssBytes();
  EXPECT_LE(st.chunks * st.chunk_bytes, max_bytes);
  EXPECT_GT(st.recycled, 0u);
#if !defined(__SANITIZE_ADDRESS__)  // RSS then counts ASan's allocator and shadow too
  EXPECT_LE(after - std::min(after, before), max_bytes + st.metadata_bytes + (512 << 10))
      << "metadata " << st.metadata_bytes;
#endif
  const std::string path = TempPath("fr_bounds");
  Snapshot(r, path);
  r.Stop();
  EXPECT_EQ(CheckTrace(path), 0);
  unlink(path.c_str());
}

// Events arrive slowly enough for MaxBytes to hold all of them: the window
// reaches back at least MinAge, and chunks older than that are freed.
TEST(FlightRecorder, WindowCoversMinAge) {
  FlightRecorder r;
  r.SetMaxBytes(4 << 20);
  r.SetMinAge(milliseconds(300));
  ASSERT_TRUE(r.Start());
  const auto end = std::chrono::steady_clock::now() + milliseconds(1500);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 20; ++i) trace::Region x("steady");
    std::this_thread::sleep_for(milliseconds(1));
  }
  const std::string path = TempPath("fr_minage");
  const std::string json = Snapshot(r, path);
  const FlightRecorderStats st = GetFlightRecorderStats();
  r.Stop();
  // The busy thread's regions reach back MinAge and no further than the
  // aging allows:
  // chunks go once their newest event is older than MinAge, checked every
  // 100 ms. (A chunk still being filled keeps its old events: the
  // recorder's own heap counters reach back to the start.)
  double oldest = 1e300;
  for (size_t at = 0; (at = json.find(R"(,"name":"steady")", at)) != std::string::npos; ++at) {
    const size_t ts = json.rfind(R"("ts":)", at);
    oldest = std::min(oldest, std::strtod(json.c_str() + ts + 5, nullptr));
  }
  const double span_us = OtherDataMicros(json, "window_end_us") - oldest;
  EXPECT_GE(span_us, 300000);
  // Normally ~MinAge + 100 ms; the bound leaves room for a starved
  // recorder thread on a loaded machine while still requiring that the
  // first of the 1.5 s went.
  EXPECT_LT(span_us, 1200000);
  EXPECT_GT(st.aged, 0u);
  EXPECT_EQ(st.recycled, 0u);
  unlink(path.c_str());
}

TEST(FlightRecorder, TheWindowsCpuSamplesAsPprof) {
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  {
    trace::Region burn("burn");
    // 300 ms of this thread's CPU (6 periods at 20 Hz), however loaded the
    // machine is.
    const auto cpu = [] {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    };
    const int64_t end = cpu() + 300000000;
    volatile uint64_t x = 0;
    while (cpu() < end) {
      for (int i = 0; i < 100000; ++i) x = x * 3 + 1;
    }
  }
  const std::string path = TempPath("fr_cpu");
  const std::string json = Snapshot(r, path);
  EXPECT_NE(json.find(R"("name":"cpu sample")"), std::string::npos);
  const int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
  EXPECT_TRUE(r.WriteCPUProfileTo(fd));
  close(fd);
  r.Stop();
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {};
  in.read(magic, 2);
  EXPECT_EQ(static_cast<unsigned char>(magic[0]), 0x1f);  // gzip, as go tool pprof reads it
  EXPECT_EQ(static_cast<unsigned char>(magic[1]), 0x8b);
  unlink(path.c_str());
}

TEST(FlightRecorder, AForkedChildRecordsNothing) {
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  const pid_t pid = fork();
  if (pid == 0) {
    trace::Region x("in-child");
    _exit(trace::IsEnabled() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(r.Enabled());
  r.Stop();
}

}  // namespace
}  // namespace libdump
