// BigArray in RAM and in files: the same contents either way, through growth,
// shrinking, copies and dropped pages; arrays adopted from a file; and the
// --memory sizes.
#include "big_array.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace libdump::heapgraph {
namespace {

// The budget is process-wide: each test sets the one it needs and puts the
// unbounded default back.
struct Budget {
  explicit Budget(uint64_t bytes) { SetMemoryBudget(bytes, ::testing::TempDir()); }
  ~Budget() { SetMemoryBudget(0, ""); }
};

void Fill(BigArray<uint64_t>& a, size_t n) {
  for (size_t i = 0; i < n; ++i) a.push_back(i * 0x9E3779B97F4A7C15ull);
}

bool Holds(const BigArray<uint64_t>& a, size_t n) {
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != i * 0x9E3779B97F4A7C15ull) return false;
  }
  return true;
}

TEST(BigArray, WithoutABudgetEverythingIsInRam) {
  const uint64_t files = GetMemoryStats().file_arrays;
  BigArray<uint64_t> a;
  Fill(a, 1 << 20);
  EXPECT_FALSE(a.in_file());
  EXPECT_TRUE(Holds(a, 1 << 20));
  EXPECT_EQ(GetMemoryStats().file_arrays, files);
}

TEST(BigArray, PastHalfTheBudgetArraysMoveToFilesAndKeepTheirContents) {
  Budget b(4 << 20);  // 2 MiB of arrays in RAM at most
  const uint64_t files = GetMemoryStats().file_arrays;
  BigArray<uint64_t> a;
  Fill(a, 1 << 20);  // 8 MiB: outgrows RAM on the way
  EXPECT_TRUE(a.in_file());
  EXPECT_GT(GetMemoryStats().file_arrays, files);
  EXPECT_TRUE(Holds(a, 1 << 20));
  // Dropped pages come back from the file, written ones included.
  a[12345] = 7;
  DropFilePages();
  EXPECT_EQ(a[12345], 7u);
  a[12345] = 12345 * 0x9E3779B97F4A7C15ull;
  EXPECT_TRUE(Holds(a, 1 << 20));
  // Copies, moves, shrinking and growth keep the values.
  BigArray<uint64_t> c = a;
  EXPECT_TRUE(c == a);
  BigArray<uint64_t> m = std::move(c);
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(Holds(m, 1 << 20));
  m.resize(1000);
  m.shrink_to_fit();
  EXPECT_TRUE(Holds(m, 1000));
  m.resize(3 << 20, 5);
  EXPECT_EQ(m[999], 999 * 0x9E3779B97F4A7C15ull);
  EXPECT_EQ(m[1000], 5u);
  EXPECT_EQ(m[(3 << 20) - 1], 5u);
  m.Free();
  a.Free();
  EXPECT_EQ(GetMemoryStats().file_bytes, 0u);
}

// An unnamed file: 64 KiB of zeros, then `n` values of Fill's sequence.
int FileWith(size_t n) {
  const std::string path = ::testing::TempDir() + "/big_array_test." + std::to_string(::getpid());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ::unlink(path.c_str());
  if (fd < 0) return -1;
  BigArray<uint64_t> a;
  Fill(a, n);
  const auto bytes = static_cast<ssize_t>(n * sizeof(uint64_t));
  if (::pwrite(fd, a.data(), static_cast<size_t>(bytes), 64 << 10) != bytes) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(BigArray, MapsValuesFromAFileWithoutReadingThem) {
  constexpr size_t kN = 300000;
  const int fd = FileWith(kN);
  ASSERT_GE(fd, 0);
  const uint64_t before = GetMemoryStats().mapped_bytes;
  BigArray<uint64_t> a;
  ASSERT_TRUE(a.Map(fd, 64 << 10, kN));
  ::close(fd);  // the mapping keeps the file
  EXPECT_TRUE(a.mapped());
  EXPECT_FALSE(a.in_file());
  EXPECT_GE(GetMemoryStats().mapped_bytes, before + kN * sizeof(uint64_t));
  EXPECT_TRUE(Holds(a, kN));
  // Dropped pages are read again from the file.
  DropFilePages();
  big_array::DropRange(a.data(), kN * sizeof(uint64_t));
  EXPECT_TRUE(Holds(a, kN));
  // A copy is the array's own; growing the mapped one copies it first, and
  // the mapping is gone.
  BigArray<uint64_t> c = a;
  EXPECT_FALSE(c.mapped());
  EXPECT_TRUE(Holds(c, kN));
  a.push_back(kN * 0x9E3779B97F4A7C15ull);
  EXPECT_FALSE(a.mapped());
  EXPECT_TRUE(Holds(a, kN + 1));
  a[0] = 0;  // writable now
  EXPECT_EQ(GetMemoryStats().mapped_bytes, before);
}

// A push_back after a shrink (pop_back, clear, a smaller resize) writes a
// copy, never the read-only mapping (which would fault).
TEST(BigArray, AMappedArrayShrunkThenPushedCopiesBeforeWriting) {
  const int fd = FileWith(1000);
  ASSERT_GE(fd, 0);
  for (int how = 0; how < 3; ++how) {
    SCOPED_TRACE(how);
    BigArray<uint64_t> a;
    ASSERT_TRUE(a.Map(fd, 64 << 10, 1000));
    if (how == 0) a.pop_back();
    if (how == 1) a.clear();
    if (how == 2) a.resize(10);
    EXPECT_TRUE(a.mapped());
    const size_t n = a.size();
    a.reserve(n + 1);  // within the mapping's length: still no writable room
    a.push_back(42);
    EXPECT_FALSE(a.mapped());
    ASSERT_EQ(a.size(), n + 1);
    EXPECT_EQ(a[n], 42u);
    if (n > 0) EXPECT_EQ(a[n - 1], (n - 1) * 0x9E3779B97F4A7C15ull);
  }
  ::close(fd);
}

TEST(BigArray, AMappedArrayShrunkThenGrownCopiesBeforeWriting) {
  const int fd = FileWith(1000);
  ASSERT_GE(fd, 0);
  BigArray<uint64_t> a;
  ASSERT_TRUE(a.Map(fd, 64 << 10, 1000));
  a.resize(10);
  EXPECT_TRUE(a.mapped());  // a smaller view, still the file's
  a.resize(20, 7);
  EXPECT_FALSE(a.mapped());
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(a[i], i * 0x9E3779B97F4A7C15ull);
  EXPECT_EQ(a[19], 7u);
  // An offset that is not a page's is refused.
  BigArray<uint64_t> b;
  EXPECT_FALSE(b.Map(fd, 100, 10));
  EXPECT_TRUE(b.empty());
  ::close(fd);
}

TEST(BigArray, ComparesWithAVector) {
  BigArray<uint32_t> a(3, 9);
  EXPECT_TRUE(a == (std::vector<uint32_t>{9, 9, 9}));
  EXPECT_FALSE(a == (std::vector<uint32_t>{9, 9}));
  a.assign(2, 1);
  EXPECT_TRUE(a == (std::vector<uint32_t>{1, 1}));
}

TEST(MemorySize, ParsesUnits) {
  uint64_t b = 0;
  EXPECT_TRUE(ParseMemorySize("2G", &b));
  EXPECT_EQ(b, uint64_t{2} << 30);
  EXPECT_TRUE(ParseMemorySize("512m", &b));
  EXPECT_EQ(b, uint64_t{512} << 20);
  EXPECT_TRUE(ParseMemorySize("1.5GB", &b));
  EXPECT_EQ(b, uint64_t{3} << 29);
  EXPECT_TRUE(ParseMemorySize("2097152", &b));
  EXPECT_EQ(b, uint64_t{2} << 20);
  for (const char* bad : {"", "G", "-1G", "2X", "2GG", "100", "1k", "nan"}) EXPECT_FALSE(ParseMemorySize(bad, &b)) << bad;
  EXPECT_GT(DefaultMemoryBudget(), 0u);
}

}  // namespace
}  // namespace libdump::heapgraph
