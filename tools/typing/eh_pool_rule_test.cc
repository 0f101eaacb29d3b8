#include "eh_pool_rule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace libdump::typing {
namespace {

// A payload of `size` bytes starting {w0, w1}.
std::vector<uint8_t> Payload(uint64_t size, uint64_t w0, uint64_t w1) {
  std::vector<uint8_t> p(std::max<uint64_t>(size, 16), 0);
  std::memcpy(p.data(), &w0, 8);
  std::memcpy(p.data() + 8, &w1, 8);
  p.resize(size);
  return p;
}

TEST(EhPool, GccTwelvesPoolAtRestInItsRoundedAllocation) {
  // 64 x 1024 + 64 x 112 bytes, in libdump's 73,728-byte size class.
  EXPECT_TRUE(IsEhPoolAtRest(Payload(73728, 72704, 0), 73728, false));
  EXPECT_TRUE(IsEhPoolAtRest(Payload(72704, 72704, 0), 72704, false));
}

TEST(EhPool, APoolInUseOrAnotherBlockIsNotNamed) {
  EXPECT_FALSE(IsEhPoolAtRest(Payload(73728, 72704, 0x7f0000001000), 73728, false));  // a second free entry
  EXPECT_FALSE(IsEhPoolAtRest(Payload(73728, 72704, 0), 73728, true));               // it holds pointers
  EXPECT_FALSE(IsEhPoolAtRest(Payload(73728, 80000, 0), 73728, false));              // larger than itself
  EXPECT_FALSE(IsEhPoolAtRest(Payload(73728, 1024, 0), 73728, false));               // an entry, not the pool
  EXPECT_FALSE(IsEhPoolAtRest(Payload(73728, 0, 0), 73728, false));                  // zeros
  EXPECT_FALSE(IsEhPoolAtRest(Payload(8, 8, 0), 8, false));                          // too small to hold a header
}

}  // namespace
}  // namespace libdump::typing
