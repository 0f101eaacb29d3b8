#include "threads.h"

#include <gtest/gtest.h>

namespace libdump::readdump {
namespace {

using format::Kind;
using format::Record;

Record Goroutine(uint64_t addr, uint64_t tos) {
  Record r;
  r.kind = Kind::kGoroutine;
  r.goroutine.addr = addr;
  r.goroutine.tos = tos;
  return r;
}

Record Frame(uint64_t sp, uint64_t parent) {
  Record r;
  r.kind = Kind::kFrame;
  r.frame.sp = sp;
  r.frame.parent = parent;
  return r;
}

TEST(ThreadTable, StacksFollowParentsInAnyRecordOrder) {
  ThreadTable t;
  Record root;
  root.kind = Kind::kStackRoot;
  root.stack_root.frame = 0x200;
  t.Add(root);  // before its frame
  t.Add(Frame(0x200, 0));
  t.Add(Goroutine(1, 0x100));
  t.Add(Frame(0x100, 0x200));
  const auto threads = t.Threads();
  ASSERT_EQ(threads.size(), 1u);
  ASSERT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].frames[0].record->sp, 0x100u);
  EXPECT_EQ(threads[0].frames[0].roots, 0u);
  EXPECT_EQ(threads[0].frames[1].record->sp, 0x200u);
  EXPECT_EQ(threads[0].frames[1].roots, 1u);
  EXPECT_EQ(threads[0].broken, "");
}

TEST(ThreadTable, LoopsSharedAndMissingFramesEndAStack) {
  ThreadTable t;
  t.Add(Goroutine(1, 0x100));
  t.Add(Frame(0x100, 0x200));
  t.Add(Frame(0x200, 0x100));  // loop
  t.Add(Goroutine(2, 0x300));
  t.Add(Frame(0x300, 0x200));  // joins thread 1's stack
  t.Add(Goroutine(3, 0x400));  // no such frame
  const auto threads = t.Threads();
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].broken, "frame 0x100 repeats: the chain loops");
  EXPECT_EQ(threads[1].frames.size(), 1u);
  EXPECT_EQ(threads[1].broken, "frame 0x200 is on the stack of thread 0x1");
  EXPECT_EQ(threads[2].frames.size(), 0u);
  EXPECT_EQ(threads[2].broken, "frame 0x400 is not in the dump");
}

}  // namespace
}  // namespace libdump::readdump
