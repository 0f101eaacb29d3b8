#include "heap_walker.h"

#include <gtest/gtest.h>

#include "testing/synthetic_image.h"

namespace libdump::heapwalk {
namespace {

TEST(HeapWalkerTest, GlibcIsTheFirstWalker) {
  const auto walkers = AllWalkers();
  ASSERT_FALSE(walkers.empty());
  EXPECT_EQ(walkers[0]->Name(), "glibc");
}

TEST(HeapWalkerTest, OtherAllocatorsAreNamed) {
  testing::SyntheticImage image;
  EXPECT_EQ(OtherAllocator(image), "");
  procimage::ImageModule m;
  m.path = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
  image.AddModule(m);
  EXPECT_EQ(OtherAllocator(image), "the heap is jemalloc's (libjemalloc.so.2 mapped): not walked yet");
  testing::SyntheticImage tc;
  m.path = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";
  tc.AddModule(m);
  EXPECT_EQ(OtherAllocator(tc), "the heap is tcmalloc's (libtcmalloc_minimal.so.4 mapped): not walked yet");
}

}  // namespace
}  // namespace libdump::heapwalk
