#include "image_window.h"

#include <gtest/gtest.h>

#include <cstring>

#include "testing/synthetic_image.h"

namespace libdump::heapwalk {
namespace {

TEST(ImageWindowTest, ReadsWordsAcrossWindowsAndStopsAtHoles) {
  testing::SyntheticImage image;
  std::vector<uint8_t> a(200 << 10), b(4096);
  for (size_t i = 0; i < a.size(); i += 8) {
    const uint64_t v = 0x1000000 + i;
    std::memcpy(&a[i], &v, 8);
  }
  image.AddMapping(0x100000, a, "");
  image.AddMapping(0x100000 + a.size() + 4096, b, "");  // a hole between them
  ImageWindow w(image);
  uint64_t v = 0;
  for (uint64_t off : {uint64_t{0}, uint64_t{8}, uint64_t{70000}, uint64_t{65536}, uint64_t{8}, a.size() - 8}) {
    ASSERT_TRUE(w.Word(0x100000 + off, &v)) << off;
    EXPECT_EQ(v, 0x1000000 + off);
  }
  EXPECT_FALSE(w.Word(0x100000 + a.size() - 4, &v));  // straddles into the hole
  EXPECT_FALSE(w.Word(0x100000 + a.size() + 8, &v));
  EXPECT_TRUE(w.Word(0x100000 + a.size() + 4096, &v));
  EXPECT_EQ(v, 0u);
}

}  // namespace
}  // namespace libdump::heapwalk
