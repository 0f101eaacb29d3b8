#include "libdump/format/pprof_profile.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <vector>

namespace libdump::pprof {
namespace {

// A minimal protobuf reader for checking what the builder wrote: field
// number -> raw values (varints as numbers, length-delimited as bytes).
struct Field {
  uint64_t num = 0;
  std::string bytes;
};
using Message = std::multimap<int, Field>;

uint64_t ReadVarint(std::string_view& s) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (s.empty()) throw std::runtime_error("truncated varint");
    const uint8_t b = static_cast<uint8_t>(s[0]);
    s.remove_prefix(1);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw std::runtime_error("varint too long");
}

Message Parse(std::string_view s) {
  Message m;
  while (!s.empty()) {
    const uint64_t key = ReadVarint(s);
    Field f;
    if ((key & 7) == 0) {
      f.num = ReadVarint(s);
    } else if ((key & 7) == 2) {
      const uint64_t n = ReadVarint(s);
      if (n > s.size()) throw std::runtime_error("truncated bytes");
      f.bytes = std::string(s.substr(0, n));
      s.remove_prefix(n);
    } else {
      throw std::runtime_error("unexpected wire type");
    }
    m.emplace(static_cast<int>(key >> 3), std::move(f));
  }
  return m;
}

std::vector<uint64_t> Packed(const std::string& b) {
  std::vector<uint64_t> v;
  std::string_view s = b;
  while (!s.empty()) v.push_back(ReadVarint(s));
  return v;
}

std::vector<Message> All(const Message& m, int field) {
  std::vector<Message> out;
  auto [lo, hi] = m.equal_range(field);
  for (auto it = lo; it != hi; ++it) out.push_back(Parse(it->second.bytes));
  return out;
}

uint64_t Num(const Message& m, int field) {
  auto it = m.find(field);
  return it == m.end() ? 0 : it->second.num;
}

ProfileBuilder MakeHeapLike() {
  ProfileBuilder b({{"alloc_objects", "count"}, {"alloc_space", "bytes"}}, {"space", "bytes"}, 524288);
  b.set_time_nanos(1700000000000000000);
  b.set_duration_nanos(5);
  b.set_default_sample_type("alloc_space");
  const uint64_t m = b.AddMapping({0x400000, 0x500000, 0x1000, "/bin/prog", "abcdef", true, false, false});
  const uint64_t f1 = b.AddFunction("main", "main", "prog.cc");
  const uint64_t f2 = b.AddFunction("foo(int)", "_Z3fooi", "prog.cc");
  EXPECT_EQ(b.AddFunction("main", "main", "prog.cc"), f1);
  Line l1[] = {{f1, 10}};
  Line l2[] = {{f2, 3}};
  const uint64_t a = b.AddLocation(m, 0x401000, l1);
  const uint64_t c = b.AddLocation(m, 0x402000, l2);
  EXPECT_EQ(b.AddLocation(m, 0x401000, l1), a);
  EXPECT_EQ(b.FindLocation(0x402000), c);
  EXPECT_EQ(b.FindLocation(0x403000), 0u);
  uint64_t stack[] = {c, a};
  int64_t v[] = {7, 7 * 64};
  b.AddSample(stack, v, std::vector<Label>{{"thread", "main", 0, ""}, {"bytes", "", 64, "bytes"}});
  return b;
}

TEST(ProfileBuilder, EncodesEveryTable) {
  const Message p = Parse(MakeHeapLike().Encode());
  std::vector<std::string> strings;
  auto [lo, hi] = p.equal_range(6);
  for (auto it = lo; it != hi; ++it) strings.push_back(it->second.bytes);
  ASSERT_FALSE(strings.empty());
  EXPECT_EQ(strings[0], "");  // profile.proto requires "" at index 0
  auto str = [&](uint64_t i) { return i < strings.size() ? strings[i] : std::string("<bad index>"); };

  const auto types = All(p, 1);
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(str(Num(types[0], 1)), "alloc_objects");
  EXPECT_EQ(str(Num(types[1], 2)), "bytes");
  const auto period_type = All(p, 11);
  ASSERT_EQ(period_type.size(), 1u);
  EXPECT_EQ(str(Num(period_type[0], 1)), "space");
  EXPECT_EQ(Num(p, 12), 524288u);
  EXPECT_EQ(Num(p, 9), 1700000000000000000u);
  EXPECT_EQ(Num(p, 10), 5u);
  EXPECT_EQ(str(Num(p, 14)), "alloc_space");

  const auto maps = All(p, 3);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(Num(maps[0], 1), 1u);
  EXPECT_EQ(Num(maps[0], 2), 0x400000u);
  EXPECT_EQ(Num(maps[0], 3), 0x500000u);
  EXPECT_EQ(Num(maps[0], 4), 0x1000u);
  EXPECT_EQ(str(Num(maps[0], 5)), "/bin/prog");
  EXPECT_EQ(str(Num(maps[0], 6)), "abcdef");
  EXPECT_EQ(Num(maps[0], 7), 1u);

  const auto funcs = All(p, 5);
  ASSERT_EQ(funcs.size(), 2u);
  EXPECT_EQ(str(Num(funcs[1], 2)), "foo(int)");
  EXPECT_EQ(str(Num(funcs[1], 3)), "_Z3fooi");
  EXPECT_EQ(str(Num(funcs[1], 4)), "prog.cc");

  const auto locs = All(p, 4);
  ASSERT_EQ(locs.size(), 2u);
  EXPECT_EQ(Num(locs[1], 1), 2u);
  EXPECT_EQ(Num(locs[1], 2), 1u);
  EXPECT_EQ(Num(locs[1], 3), 0x402000u);
  const auto lines = All(locs[1], 4);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(Num(lines[0], 1), 2u);
  EXPECT_EQ(Num(lines[0], 2), 3u);

  const auto samples = All(p, 2);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(Packed(samples[0].find(1)->second.bytes), (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(Packed(samples[0].find(2)->second.bytes), (std::vector<uint64_t>{7, 448}));
  const auto labels = All(samples[0], 3);
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(str(Num(labels[0], 1)), "thread");
  EXPECT_EQ(str(Num(labels[0], 2)), "main");
  EXPECT_EQ(str(Num(labels[1], 1)), "bytes");
  EXPECT_EQ(Num(labels[1], 3), 64u);
  EXPECT_EQ(str(Num(labels[1], 4)), "bytes");
}

TEST(ProfileBuilder, RejectsInconsistentInput) {
  ProfileBuilder b({{"samples", "count"}, {"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 10000000);
  int64_t one[] = {1};
  EXPECT_THROW(b.AddSample({}, one), std::invalid_argument);
  uint64_t bad_loc[] = {1};
  int64_t two[] = {1, 10};
  EXPECT_THROW(b.AddSample(bad_loc, two), std::invalid_argument);
  Line bad_line[] = {{3, 0}};
  EXPECT_THROW(b.AddLocation(0, 0x10, bad_line), std::invalid_argument);
  EXPECT_THROW(b.AddLocation(2, 0x10, {}), std::invalid_argument);
  EXPECT_EQ(b.AddLocation(0, 0x10, {}), 1u);  // a bare address, no mapping
}

TEST(ProfileBuilder, GzipRoundTripAndMagic) {
  const ProfileBuilder b = MakeHeapLike();
  const std::string gz = b.EncodeGzip();
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<uint8_t>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
  EXPECT_EQ(Gunzip(gz), b.Encode());
  EXPECT_EQ(Gunzip(gz.substr(0, gz.size() - 4)), "");  // truncated trailer
}

TEST(ProfileBuilder, WriteGzipToFd) {
  char path[] = "/tmp/pprof_builder_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const ProfileBuilder b = MakeHeapLike();
  ASSERT_TRUE(b.WriteGzip(fd));
  std::string back(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
  ASSERT_EQ(pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  close(fd);
  unlink(path);
  EXPECT_EQ(Gunzip(back), b.Encode());
  EXPECT_FALSE(b.WriteGzip(-1));
}

}  // namespace
}  // namespace libdump::pprof
