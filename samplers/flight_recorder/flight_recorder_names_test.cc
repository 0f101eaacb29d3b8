#include "samplers/flight_recorder/flight_recorder_names.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "samplers/flight_recorder/flight_recorder_buffer.h"

namespace libdump::samplers::flight {
namespace {

// A copy, not the caller's string; one id per call; a long name cut at
// kMaxName; unknown ids name nothing.
TEST(FlightRecorderNames, InternCopiesAndNumbers) {
  char buf[] = "parse";
  const uint32_t a = Intern(buf);
  const uint32_t b = Intern("parse");
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_NE(a, b);
  buf[0] = 'X';
  EXPECT_EQ(InternedName(a), "parse");
  EXPECT_EQ(InternedName(b), "parse");
  const std::string long_name(300, 'n');
  EXPECT_EQ(InternedName(Intern(long_name.c_str())).size(), kMaxName);
  EXPECT_EQ(InternedName(0), "");
  EXPECT_EQ(InternedName(kMaxInterned - 1), "");
  EXPECT_EQ(InternedName(kMaxInterned + 5), "");
}

// Four threads interning at once each read back their own names.
TEST(FlightRecorderNames, ConcurrentInterning) {
  std::vector<std::thread> t;
  std::vector<std::vector<uint32_t>> ids(4);
  for (int k = 0; k < 4; ++k) {
    t.emplace_back([k, &ids] {
      for (int i = 0; i < 100; ++i) ids[k].push_back(Intern(("t" + std::to_string(k) + "-" + std::to_string(i)).c_str()));
    });
  }
  for (auto& th : t) th.join();
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_NE(ids[k][i], 0u);
      EXPECT_EQ(InternedName(ids[k][i]), "t" + std::to_string(k) + "-" + std::to_string(i));
    }
  }
}

// Past the table's capacity, Intern says so (0) rather than overwrite, and
// names interned before stay.
TEST(FlightRecorderNames, FullTableReturnsZero) {
  const uint32_t first = Intern("first");
  ASSERT_NE(first, 0u);
  uint32_t last = 1;
  for (uint32_t i = 0; i < kMaxInterned + 10 && last != 0; ++i) last = Intern("x");
  EXPECT_EQ(last, 0u);
  for (int i = 0; i < 100000; ++i) EXPECT_EQ(Intern("after"), 0u);
  EXPECT_EQ(InternedName(first), "first");
}

}  // namespace
}  // namespace libdump::samplers::flight
