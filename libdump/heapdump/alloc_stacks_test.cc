// A heap dump of a process whose heap profiler samples every allocation
// names, for each sampled live object, the stack that allocated it (allocstack
// records): objects made in a known function carry a return address into it,
// and no record names an object the dump does not hold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/heap_dump.h"
#include "libdump/profiler.h"
#include "libdump/typed.h"

struct Tracked {
  Tracked* next;
  long id;
};
LIBDUMP_TYPE(Tracked, next)

namespace {

using namespace libdump::format;

constexpr int kTracked = 200;
constexpr uintptr_t kMaxFunctionBytes = 512;  // AllocateTracked is far smaller

__attribute__((noipa)) Tracked* AllocateTracked(Tracked* next, long id) {
  Tracked* t = libdump::make<Tracked>();
  asm volatile("" ::: "memory");  // not a tail call: its return address is in here
  t->next = next;
  t->id = id;
  return t;
}

TEST(HeapDumpAllocStacks, SampledObjectsNameTheFunctionThatMadeThem) {
  ASSERT_TRUE(libdump::InstallHeapProfiler());
  libdump::SetMemProfileRate(1);  // every allocation
  Tracked* head = nullptr;
  for (long i = 0; i < kTracked; ++i) head = AllocateTracked(head, i);
  std::set<uint64_t> tracked;
  for (Tracked* t = head; t; t = t->next) tracked.insert(reinterpret_cast<uint64_t>(t));
  // Freed sampled objects must leave no record behind.
  for (int i = 0; i < 100; ++i) libdump::destroy(libdump::make<Tracked>());

  char path[] = "/tmp/libdump_allocstack_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  ASSERT_EQ(libdump::WriteHeapDump(fd), 0);
  libdump::SetMemProfileRate(512 * 1024);
  lseek(fd, 0, SEEK_SET);

  std::set<uint64_t> objects;
  std::map<uint64_t, std::vector<uint64_t>> stacks;
  Reader reader(fd);
  Record r;
  while (reader.Next(r)) {
    if (r.kind == Kind::kObject) objects.insert(r.object.addr);
    if (r.kind == Kind::kAllocStack) {
      EXPECT_TRUE(stacks.emplace(r.alloc_stack.obj, r.alloc_stack.pcs).second) << "two stacks for one object";
    }
  }
  close(fd);
  for (const auto& [obj, pcs] : stacks) EXPECT_TRUE(objects.count(obj)) << std::hex << obj << " not dumped";
  const auto fn = reinterpret_cast<uintptr_t>(&AllocateTracked);
  size_t named = 0;
  for (uint64_t t : tracked) {
    auto it = stacks.find(t);
    ASSERT_NE(it, stacks.end()) << std::hex << t << " was sampled but has no allocstack";
    for (uint64_t pc : it->second) {
      if (pc > fn && pc - fn < kMaxFunctionBytes) {
        ++named;
        break;
      }
    }
  }
  EXPECT_EQ(named, tracked.size());
}

}  // namespace
