#include "platform/proc/maps_parser.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace libdump::proc {
namespace {

TEST(ParseMapsLine, FileMapping) {
  MapsLine m;
  ASSERT_TRUE(ParseMapsLine("55d0c8a00000-55d0c8a2b000 r-xp 00004000 fd:01 1183921                    /usr/bin/cat", &m));
  EXPECT_EQ(m.start, 0x55d0c8a00000u);
  EXPECT_EQ(m.end, 0x55d0c8a2b000u);
  EXPECT_EQ(m.offset, 0x4000u);
  EXPECT_TRUE(m.readable);
  EXPECT_FALSE(m.writable);
  EXPECT_TRUE(m.executable);
  EXPECT_EQ(m.path, "/usr/bin/cat");
}

TEST(ParseMapsLine, AnonymousTagsAndOddPaths) {
  MapsLine m;
  ASSERT_TRUE(ParseMapsLine("7ffd1c3a1000-7ffd1c3c2000 rw-p 00000000 00:00 0                          [stack]", &m));
  EXPECT_EQ(m.path, "[stack]");
  EXPECT_TRUE(m.writable);
  EXPECT_FALSE(m.executable);
  ASSERT_TRUE(ParseMapsLine("7f0000000000-7f0000001000 ---p 00000000 00:00 0 ", &m));
  EXPECT_EQ(m.path, "");
  EXPECT_FALSE(m.readable);
  ASSERT_TRUE(ParseMapsLine("7f0000000000-7f0000001000 rw-s 00000000 00:00 0", &m));
  EXPECT_EQ(m.path, "");
  // Blanks inside a path stay; the kernel's " (deleted)" stays too.
  ASSERT_TRUE(ParseMapsLine("1000-2000 r--p 00001000 08:02 42   /tmp/a b/lib x.so (deleted)\n", &m));
  EXPECT_EQ(m.path, "/tmp/a b/lib x.so (deleted)");
  EXPECT_EQ(m.offset, 0x1000u);
}

TEST(ParseMapsLine, RefusesWhatIsNotAMapsLine) {
  MapsLine m;
  for (const char* bad : {"", "hello", "1000", "1000-", "-2000 r--p 0 0:0 0", "1000-2000", "1000-2000 r-",
                          "1000-2000 r--p", "1000-2000 r--p x 00:00 0", "1000 2000 r--p 0 00:00 0"}) {
    EXPECT_FALSE(ParseMapsLine(bad, &m)) << bad;
  }
}

std::string WriteTemp(const std::string& text) {
  char name[] = "/tmp/maps_parser_testXXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return name;
}

TEST(ReadMaps, EveryLineInOrderLastOneWithoutNewline) {
  // Longer than the reader's buffer in all, so lines cross reads.
  std::string text;
  for (int i = 0; i < 400; ++i) {
    char line[128];
    snprintf(line, sizeof line, "%x-%x r--p 00000000 00:00 0    /lib/number-%d.so\n", 0x1000 * (i + 1),
             0x1000 * (i + 2), i);
    text += line;
  }
  text += "not a maps line\n";
  text += "ffff0000-ffff1000 rw-p 00000000 00:00 0";  // no newline at the end
  const std::string path = WriteTemp(text);
  std::vector<uint64_t> starts;
  std::string last_path;
  EXPECT_TRUE(ForEachMapsLine(
      [&](const MapsLine& m) {
        starts.push_back(m.start);
        if (m.start == 0x1000 * 400) last_path = std::string(m.path);
        return true;
      },
      path.c_str()));
  ASSERT_EQ(starts.size(), 401u);
  for (int i = 0; i < 400; ++i) EXPECT_EQ(starts[i], 0x1000u * (i + 1));
  EXPECT_EQ(starts.back(), 0xffff0000u);
  EXPECT_EQ(last_path, "/lib/number-399.so");
  unlink(path.c_str());
}

TEST(ReadMaps, StopsWhenTheVisitorSaysSoAndOnOverlongLines) {
  const std::string path = WriteTemp("1000-2000 r--p 0 00:00 0\n2000-3000 r--p 0 00:00 0\n");
  int seen = 0;
  EXPECT_FALSE(ForEachMapsLine([&](const MapsLine&) { return ++seen < 1; }, path.c_str()));
  EXPECT_EQ(seen, 1);
  unlink(path.c_str());

  const std::string longer = WriteTemp("1000-2000 r--p 0 00:00 0 /" + std::string(kMapsLineMax, 'x') + "\n");
  EXPECT_FALSE(ForEachMapsLine([](const MapsLine&) { return true; }, longer.c_str()));
  unlink(longer.c_str());
  EXPECT_FALSE(ForEachMapsLine([](const MapsLine&) { return true; }, "/nonexistent/maps"));
}

TEST(ReadMaps, FindsThisProcesssOwnMapping) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  // A readable page between two inaccessible ones: its own line.
  ASSERT_EQ(mprotect(static_cast<char*>(p) + page, page, PROT_READ | PROT_EXEC), 0);
  const uint64_t mid = reinterpret_cast<uintptr_t>(p) + page;
  bool found = false;
  EXPECT_TRUE(ForEachMapsLine([&](const MapsLine& m) {
    if (m.start == mid) {
      found = true;
      EXPECT_EQ(m.end, mid + page);
      EXPECT_TRUE(m.readable);
      EXPECT_FALSE(m.writable);
      EXPECT_TRUE(m.executable);
      EXPECT_EQ(m.path, "");
    }
    return true;
  }));
  EXPECT_TRUE(found);
  munmap(p, 3 * page);
}

}  // namespace
}  // namespace libdump::proc
