// Linked against libdump.so: malloc, new and friends are libdump's here.
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "libdump/heap.h"

namespace libdump {
namespace {

bool Ours(const void* p) {
  ObjectInfo o;
  return FindObject(p, &o) && o.addr == reinterpret_cast<uintptr_t>(p);
}

// Opaque to the optimizer, so calls are not folded away.
template <class T>
T Keep(T v) {
  asm volatile("" : "+r"(v));
  return v;
}

TEST(MallocInterpose, CFunctionsAllocateFromLibdump) {
  void* m = Keep(malloc(10));
  void* c = Keep(calloc(10, 10));
  void* r = Keep(realloc(nullptr, 30));
  void* ra = Keep(reallocarray(nullptr, 4, 8));
  void* ma = Keep(memalign(64, 100));
  void* aa = Keep(aligned_alloc(256, 512));
  void* va = Keep(valloc(10));
  void* pv = Keep(pvalloc(10));
  void* pm = nullptr;
  ASSERT_EQ(posix_memalign(&pm, 128, 1000), 0);
  for (void* p : {m, c, r, ra, ma, aa, va, pv, pm}) {
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(Ours(p));
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ma) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aa) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(va) % 4096, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pv) % 4096, 0u);
  EXPECT_GE(malloc_usable_size(pv), 4096u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pm) % 128, 0u);
  EXPECT_GE(malloc_usable_size(m), 10u);
  EXPECT_EQ(malloc_usable_size(nullptr), 0u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(static_cast<char*>(c)[i], 0);
  for (void* p : {m, c, r, ra, ma, aa, va, pv, pm}) free(p);
}

// Sizes the compiler cannot see, so it does not warn about them.
volatile size_t g_huge = SIZE_MAX - 100;
volatile size_t g_half = SIZE_MAX / 2;

TEST(MallocInterpose, ErrorsFollowGlibc) {
  void* p = nullptr;
  EXPECT_EQ(posix_memalign(&p, 24, 10), EINVAL);
  errno = 0;
  EXPECT_EQ(Keep(aligned_alloc(24, 10)), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(Keep(malloc(g_huge)), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(Keep(reallocarray(nullptr, g_half, 4)), nullptr);
  void* q = Keep(malloc(10));
  EXPECT_EQ(realloc(q, 0), nullptr);  // frees, as glibc does
}

// Zero bytes at any alignment is a block, as under glibc (over 8 KiB of
// alignment it was a page run of 0 pages, ENOMEM: found by allocator_fuzz).
TEST(MallocInterpose, ZeroBytesAtAnyAlignmentIsABlock) {
  for (size_t align = 16; align <= (size_t{1} << 20); align <<= 1) {
    void* m = Keep(memalign(align, 0));
    void* a = Keep(aligned_alloc(align, 0));
    void* p = nullptr;
    EXPECT_EQ(posix_memalign(&p, align, 0), 0) << align;
    for (void* x : {m, a, p}) {
      ASSERT_NE(x, nullptr) << align;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(x) % align, 0u) << align;
      free(x);
    }
  }
}

TEST(MallocInterpose, EveryOperatorNewAllocatesFromLibdump) {
  struct alignas(128) Wide {
    char c[200];
  };
  auto* a = Keep(new int(3));
  auto* b = Keep(new int[10]);
  auto* c = Keep(new (std::nothrow) long(4));
  auto* d = Keep(new (std::nothrow) long[5]);
  auto* e = Keep(new Wide);
  auto* f = Keep(new Wide[3]);
  auto* g = Keep(new (std::nothrow) Wide);
  for (const void* p : {static_cast<const void*>(a), static_cast<const void*>(b), static_cast<const void*>(c),
                        static_cast<const void*>(d), static_cast<const void*>(e), static_cast<const void*>(g)}) {
    EXPECT_TRUE(Ours(p));
  }
  ObjectInfo o;
  EXPECT_TRUE(FindObject(f, &o));  // new[] of a class type may keep a cookie before the array
  EXPECT_EQ(reinterpret_cast<uintptr_t>(e) % 128, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g) % 128, 0u);
  delete a;
  delete[] b;
  delete c;
  delete[] d;
  delete e;
  delete[] f;
  ::operator delete(g, std::align_val_t{128}, std::nothrow);
  EXPECT_THROW(Keep(::operator new(g_huge)), std::bad_alloc);
  EXPECT_EQ(Keep(::operator new(g_huge, std::nothrow)), nullptr);
}

TEST(MallocInterpose, LibraryAllocationsGoThroughLibdump) {
  const HeapStats before = GetHeapStats();
  std::vector<std::string> v;
  for (int i = 0; i < 1000; ++i) v.push_back(std::string(100, 'x'));
  auto shared = std::make_shared<std::vector<int>>(1000);
  std::thread([] { std::unique_ptr<char[]> p(new char[5000]); }).join();
  const HeapStats after = GetHeapStats();
  EXPECT_GE(after.mallocs - before.mallocs, 1002u);
  EXPECT_TRUE(Ours(v[500].data()));
}

TEST(MallocInterposeDeathTest, DoubleFreeThroughFreeIsFatal) {
  void* p = Keep(malloc(40));
  Keep(malloc(40));
  // Both frees in the child: a freed slot is the next one its class hands
  // out (free_list.h), and the death test's own allocations in between
  // would take it, so a second free there would free their object.
  EXPECT_DEATH(
      {
        free(Keep(p));
        free(Keep(p));
      },
      "libdump: double free");
}

TEST(MallocInterposeDeathTest, FreeingAStackAddressIsFatal) {
  char buf[16];
  EXPECT_DEATH(free(Keep(static_cast<void*>(buf))), "did not allocate");
}

}  // namespace
}  // namespace libdump

TEST(MallocInterpose, MallocTrimGivesFreePagesBack) {
  constexpr size_t kBlock = 4 << 20, kBlocks = 8;  // under the decay's hard cap: kept committed
  std::vector<void*> blocks;
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(malloc(kBlock));
    memset(blocks.back(), 1, kBlock);
  }
  for (void* p : blocks) free(p);
  const uint64_t before = libdump::GetHeapStats().bytes_free_committed;
  ASSERT_GE(before, kBlock * kBlocks);
  EXPECT_EQ(malloc_trim(0), 1);
  const uint64_t after = libdump::GetHeapStats().bytes_free_committed;
  EXPECT_LE(after + kBlock * kBlocks, before) << "released " << (before - after);
  EXPECT_EQ(malloc_trim(0), 0) << "nothing was left to give back";
}
