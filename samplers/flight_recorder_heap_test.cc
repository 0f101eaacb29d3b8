// With libdump's allocator in the process, the heap counters carry its
// HeapStats: in use, allocated (cumulative) and released.
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

}  // namespace
}  // namespace libdump
