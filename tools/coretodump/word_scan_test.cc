#include "word_scan.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "testing/fake_image.h"

namespace libdump::coretodump {
namespace {

TEST(ScanWords, AlignedWordsIntoBlocksAcrossChunksAndHoles) {
  testing::FakeImage image;
  image.Map(0x100000, 0x130000, "rw-");                  // 192 KiB: three 64 KiB chunks
  image.Map(0x130000, 0x132000, "rw-", {}, /*present=*/false);
  image.Map(0x132000, 0x133000, "rw-");
  const std::vector<heapwalk::LiveBlock> blocks = {{0x900000, 0x100}};
  BlockIndex idx(blocks);
  image.PutWord(0x100000, 0x900000);        // first word
  image.PutWord(0x10fff8, 0x9000ff);        // last word of the first chunk, interior
  image.PutWord(0x110000, 0x900100);        // one past the block: no
  image.PutWord(0x12fff8, 0x900008);        // before the hole
  image.PutWord(0x132008, 0x900010);        // after it
  uint32_t unaligned = 0x9000;              // a pointer straddling words is not one
  image.Put(0x120004, &unaligned, 4);
  std::vector<std::pair<uint64_t, uint64_t>> got;
  const uint64_t missing = ScanWords(image, idx, 0x100000, 0x133000, [&](uint64_t a, uint64_t v) {
    got.push_back({a, v});
  });
  const std::vector<std::pair<uint64_t, uint64_t>> want = {
      {0x100000, 0x900000}, {0x10fff8, 0x9000ff}, {0x12fff8, 0x900008}, {0x132008, 0x900010}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(missing, 0x2000u);
}

TEST(ScanWords, WordsInsideBlocksAreNoRoots) {
  testing::FakeImage image;
  image.Map(0x1000, 0x3000, "rw-");
  // An mmapped chunk sharing the mapping, and a block beyond it.
  const std::vector<heapwalk::LiveBlock> blocks = {{0x1800, 0x100}, {0x2ff0, 0x10}, {0x900000, 0x10}};
  image.PutWord(0x17f8, 0x900000);  // before the chunk: a root
  image.PutWord(0x1800, 0x900000);  // inside: an edge of the chunk
  image.PutWord(0x18f8, 0x900000);
  image.PutWord(0x1900, 0x1808);    // after: a root into the chunk
  image.PutWord(0x2ff0, 0x900000);  // the last block, running to the end
  std::vector<uint64_t> got;
  ScanWords(image, BlockIndex(blocks), 0x1000, 0x3000, [&](uint64_t a, uint64_t) { got.push_back(a); });
  EXPECT_EQ(got, (std::vector<uint64_t>{0x17f8, 0x1900}));
  got.clear();
  ScanWords(image, BlockIndex(blocks), 0x1810, 0x1908, [&](uint64_t a, uint64_t) { got.push_back(a); });
  EXPECT_EQ(got, (std::vector<uint64_t>{0x1900}));  // starting inside a block
}

TEST(ScanWords, UnalignedBoundsRoundInward) {
  testing::FakeImage image;
  image.Map(0x1000, 0x2000, "rw-");
  const std::vector<heapwalk::LiveBlock> blocks = {{0x900000, 0x10}};
  image.PutWord(0x1000, 0x900000);
  image.PutWord(0x1008, 0x900000);
  image.PutWord(0x1ff8, 0x900000);
  int n = 0;
  ScanWords(image, BlockIndex(blocks), 0x1001, 0x1fff, [&](uint64_t a, uint64_t) {
    EXPECT_EQ(a, 0x1008u);
    ++n;
  });
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace libdump::coretodump
