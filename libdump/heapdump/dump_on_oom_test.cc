// The out-of-memory dump on the real libdump heap: a child process runs out
// of address space (RLIMIT_AS) and must leave exactly one valid dump holding
// what it had allocated, while its failing malloc still returns null.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/heap_dump.h"
#include "libdump/typed.h"

struct OomMarker {
  OomMarker* self;
  long magic;
};
LIBDUMP_TYPE(OomMarker, self)

namespace {

constexpr long kMagic = 0x4f4f4d2d4d41524bL;  // "OOM-MARK"
OomMarker* g_marker;  // a data root

uint64_t VmSizeBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t pages = 0;
  in >> pages;
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// In the child: fill the address space in 1 MiB blocks until malloc fails,
// then tell the parent how many it holds. Exit codes: 0 malloc failed as it
// should, 2 it never failed, 3 set-up. Compressed: the blocks are untouched
// zeros, up to a GiB of them.
[[noreturn]] void RunOutOfMemory(const std::string& pattern, int report_fd) {
  if (!libdump::SetHeapDumpOnOutOfMemory(pattern.c_str(), {.zstd = true})) _exit(3);
  g_marker = libdump::make<OomMarker>();
  g_marker->self = g_marker;
  g_marker->magic = kMagic;
  std::vector<void*>* held = new std::vector<void*>;
  held->reserve(1 << 16);
  // Room for one more 1 GiB arena reservation, not two: the blocks fill the
  // arenas there are, and then the next reservation fails.
  const rlim_t limit = VmSizeBytes() + (1536ull << 20);
  const rlimit lim{limit, limit};
  if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
  for (int i = 0; i < (1 << 16); ++i) {
    void* p = std::malloc(1 << 20);
    if (p == nullptr) {
      const uint64_t n = held->size();
      _exit(write(report_fd, &n, sizeof n) == sizeof n ? 0 : 3);
    }
    held->push_back(p);
  }
  _exit(2);
}

TEST(DumpOnOutOfMemory, TheFirstFailedAllocationWritesOneValidDump) {
  char dir[] = "/tmp/libdump_oom_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pattern = std::string(dir) + "/oom.%p.dump";
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) RunOutOfMemory(pattern, report[1]);
  close(report[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "2: malloc never failed; 3: set-up failed";
  uint64_t held = 0;
  ASSERT_EQ(read(report[0], &held, sizeof held), static_cast<ssize_t>(sizeof held));
  close(report[0]);

  const std::string path = std::string(dir) + "/oom." + std::to_string(child) + ".dump";
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0) << "no dump at " << path;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  libdump::format::Reader reader(fd);
  libdump::format::Record r;
  uint64_t objects = 0, big_objects = 0, markers = 0;
  bool eof = false;
  while (reader.Next(r)) {
    if (r.kind == libdump::format::Kind::kEof) eof = true;
    if (r.kind != libdump::format::Kind::kObject) continue;
    ++objects;
    big_objects += r.object.size >= (1 << 20);
    if (r.object.size == sizeof(OomMarker)) {
      const auto s = reader.Payload();
      long magic;
      std::memcpy(&magic, s.data() + 8, sizeof magic);
      markers += magic == kMagic;
    }
  }
  close(fd);
  EXPECT_TRUE(eof) << "the dump is cut short";
  EXPECT_EQ(markers, 1u);
  // Exactly the blocks held when memory ran out: nothing else here is that big.
  EXPECT_GT(held, 500u);
  EXPECT_EQ(big_objects, held);
  EXPECT_GT(objects, big_objects);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
