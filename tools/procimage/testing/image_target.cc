// The process the image tests open: four threads, a heap buffer holding a
// known pattern, and a string in .rodata. It prints, on one line to stdout,
// the buffer's address and size, the .rodata string's address and the four
// thread ids, then answers each line of stdin with "pong" until stdin closes,
// so a test can tell it is still running after it was stopped and let go.
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "pattern.h"

// Read by the tests through the core file's fallback to the executable on
// disk: gcore and the kernel leave unmodified file mappings out of the core.
extern const char kImageTargetRodata[];
const char kImageTargetRodata[] = "libdump procimage rodata marker";

int main() {
  // A tracer that is not our parent (gcore run by the test) may attach when
  // Yama's ptrace_scope is 1.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  // One arena: each thread's would reserve 64 MiB that gcore writes out,
  // and the tests want a small core.
  mallopt(M_ARENA_MAX, 1);
  auto* buffer = static_cast<uint8_t*>(std::malloc(libdump::procimage::testing::kPatternSize));
  libdump::procimage::testing::FillPattern(buffer, libdump::procimage::testing::kPatternSize);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> tids{static_cast<int>(gettid())};
  bool done = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      std::unique_lock lock(mu);
      tids.push_back(static_cast<int>(gettid()));
      cv.notify_all();
      cv.wait(lock, [&] { return done; });
    });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return tids.size() == 4; });
    std::printf("%p %zu %p %d %d %d %d\n", static_cast<void*>(buffer), libdump::procimage::testing::kPatternSize,
                static_cast<const void*>(kImageTargetRodata), tids[0], tids[1], tids[2], tids[3]);
    std::fflush(stdout);
  }
  char line[256];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    std::printf("pong\n");
    std::fflush(stdout);
  }
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  std::free(buffer);
  return 0;
}
