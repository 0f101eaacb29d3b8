// With libdump's allocator in the process, the heap counters carry its
// HeapStats: in use, allocated (cumulative) and released; and the heap
// profiler's sampled allocations are instant events with size and stack.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "libdump/flight_recorder.h"
#include "libdump/heap.h"
#include "libdump/profiler.h"

namespace libdump {
namespace {

uint64_t LastCounter(const std::string& json, const std::string& key) {
  const size_t at = json.rfind("\"" + key + "\":");
  return at == std::string::npos ? 0 : std::strtoull(json.c_str() + at + key.size() + 3, nullptr, 10);
}

TEST(FlightRecorderHeap, CountersComeFromLibdumpsHeapStats) {
  FlightRecorder r;
  ASSERT_TRUE(r.Start());
  const uint64_t allocated_before = GetHeapStats().total_allocated_bytes;
  std::vector<void*> held;
  for (int i = 0; i < 64; ++i) held.push_back(Allocate(256 << 10));  // 16 MiB, held
  std::this_thread::sleep_for(std::chrono::milliseconds(350));  // three ticks or more
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fr_heap." + std::to_string(getpid()))).string();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GT(r.WriteTo(fd), 0);
  close(fd);
  r.Stop();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string json = ss.str();
  EXPECT_GE(LastCounter(json, "in_use_bytes"), uint64_t{16} << 20);
  EXPECT_GE(LastCounter(json, "allocated_bytes"), allocated_before + (uint64_t{16} << 20));
  EXPECT_NE(json.find("\"released_bytes\":"), std::string::npos);
  for (void* p : held) Free(p);
  unlink(path.c_str());
}

std::string Snapshot(FlightRecorder& r) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fr_alloc." + std::to_string(getpid()))).string();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_GT(r.WriteTo(fd), 0);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path.c_str());
  return ss.str();
}

__attribute__((noipa)) void* FlightAllocateHere(size_t n) {
  void* p = Allocate(n);
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
  return p;
}

// Every allocation sampled (rate 1): each of the 50 shows as an instant
// event with its size, its address and a stack that starts in the caller,
// the allocator's and the profiler's frames cut. Before Start and after
// Stop, none does.
TEST(FlightRecorderHeap, SampledAllocationsWithSizeAndStack) {
  SetMemProfileRate(1);
  void* before = FlightAllocateHere(4321);
  FlightRecorder r;
  ASSERT_TRUE(r.Start());  // with libdump's allocator, installs the heap profiler's hooks
  std::vector<void*> held;
  for (int i = 0; i < 50; ++i) held.push_back(FlightAllocateHere(12345));
  const std::string json = Snapshot(r);
  r.Stop();
  void* after = FlightAllocateHere(4321);
  SetMemProfileRate(512 * 1024);
  const auto addr_of = [](const void* p) {
    char addr[40];
    std::snprintf(addr, sizeof addr, "\"address\":\"0x%lx\"", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
    return std::string(addr);
  };
  EXPECT_EQ(json.find(addr_of(before)), std::string::npos) << "recorded before Start";
  EXPECT_EQ(json.find(addr_of(after)), std::string::npos) << "recorded after Stop";
  size_t found = 0;
  for (size_t at = json.find("\"cat\":\"alloc\""); at != std::string::npos;
       at = json.find("\"cat\":\"alloc\"", at + 1)) {
    const std::string ev = json.substr(at, json.find('\n', at) - at);
    EXPECT_NE(ev.find("\"name\":\"allocation\""), std::string::npos) << ev;
    if (ev.find("\"stack\":[\"libdump::(anonymous namespace)::FlightAllocateHere") == std::string::npos) continue;
    ASSERT_LT(found, held.size()) << ev;
    // The size the allocator charges: 12345's size class.
    const size_t size_at = ev.find("\"size\":");
    ASSERT_NE(size_at, std::string::npos) << ev;
    const uint64_t size = std::strtoull(ev.c_str() + size_at + 7, nullptr, 10);
    EXPECT_GE(size, 12345u) << ev;
    EXPECT_LT(size, 2 * 12345u) << ev;
    EXPECT_NE(ev.find(addr_of(held[found])), std::string::npos) << ev;
    ++found;
  }
  EXPECT_EQ(found, held.size()) << json.substr(0, 4000);
  for (void* p : held) Free(p);
  Free(before);
  Free(after);
}

}  // namespace
}  // namespace libdump
