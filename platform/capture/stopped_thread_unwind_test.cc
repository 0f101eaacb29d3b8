#include "platform/capture/stopped_thread_unwind.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "platform/capture/modules.h"
#include "platform/capture/stop_the_world.h"

namespace libdump::capture {
namespace {

std::atomic<bool> g_ready{false}, g_quit{false};

// The empty asm keeps each call from becoming a tail call, so every function
// keeps a frame of its own.
extern "C" __attribute__((noinline)) void UnwindTestInner() {
  g_ready = true;
  while (!g_quit.load(std::memory_order_relaxed)) asm volatile("" ::: "memory");
}
extern "C" __attribute__((noinline)) void UnwindTestMiddle() { UnwindTestInner(); asm volatile(""); }
extern "C" __attribute__((noinline)) void UnwindTestOuter() { UnwindTestMiddle(); asm volatile(""); }

TEST(StackUnwind, FindsTheCallChainOfAStoppedThread) {
  std::thread t(UnwindTestOuter);
  while (!g_ready) std::this_thread::yield();
  const std::vector<Module> modules = LoadedModules();
  MemoryMap memory;
  ASSERT_TRUE(memory.Read());
  StackUnwinder unwinder(modules, memory);
  std::vector<ThreadSlot> slots(16);
  WorldStop w(slots.data(), slots.size());
  ASSERT_TRUE(w.Stop());
  std::vector<UnwoundFrame> frames;
  for (size_t i = 0; i < w.count(); ++i) {
    ThreadSlot& s = w.slot(i);
    if (s.state.load() != static_cast<int>(StopState::kStopped)) continue;
    UnwoundFrame buf[64];
    const size_t n = unwinder.Unwind(s.regs, buf, 64);
    if (n > 0 && buf[0].entry == reinterpret_cast<uint64_t>(&UnwindTestInner)) {
      frames.assign(buf, buf + n);
    }
  }
  w.Resume();
  g_quit = true;
  t.join();
  ASSERT_GE(frames.size(), 3u) << "the spinning thread was not found at the top of any stack";
  EXPECT_EQ(frames[1].entry, reinterpret_cast<uint64_t>(&UnwindTestMiddle));
  EXPECT_EQ(frames[2].entry, reinterpret_cast<uint64_t>(&UnwindTestOuter));
  for (size_t i = 1; i < frames.size(); ++i) EXPECT_GT(frames[i].sp, frames[i - 1].sp);
  // The bottom frames are the thread's start: libstdc++ and libc.
  EXPECT_GE(frames.size(), 4u);
}

}  // namespace
}  // namespace libdump::capture
