#include "big_array.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <thread>

namespace libdump::heapgraph {
namespace {

// Everything the arrays share: the budget, the file mappings (for the
// governor) and the counts.
struct State {
  std::mutex mu;
  uint64_t budget = 0;
  std::string dir;
  std::map<void*, size_t> files;  // file-backed mappings, own and adopted: start, bytes
  uint64_t ram = 0, file = 0, file_arrays = 0, drops = 0, mapped = 0;
  bool governed = false;  // the governor thread runs
  // Past this resident size the file pages are dropped (0: no files yet).
  std::atomic<uint64_t> trigger{0};
  std::condition_variable cv;
};

// Never destroyed: arrays in static objects may be released after main
// returns, and the governor (detached) may still hold the lock then.
State& S() {
  static State* s = new State;
  return *s;
}

const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));

// Resident and file-backed resident bytes of this process.
bool Resident(uint64_t* rss, uint64_t* shared) {
  // Kept open: the working thread reads it every few thousand steps.
  static const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char b[128];
  const ssize_t n = ::pread(fd, b, sizeof b - 1, 0);
  if (n <= 0) return false;
  b[n] = '\0';
  unsigned long long size, res, sh;
  if (std::sscanf(b, "%llu %llu %llu", &size, &res, &sh) != 3) return false;
  *rss = res * kPage;
  *shared = sh * kPage;
  return true;
}

void DropLocked(State& s) {
  for (const auto& [p, bytes] : s.files) ::madvise(p, bytes, MADV_DONTNEED);
  ++s.drops;
}

// Checks the resident set every few milliseconds (a page fault costs about a
// microsecond, so a loop grows it by some tens of MB in between) and drops
// the file pages once it passes a trigger, at first 7/8 of the budget,
// leaving the rest for that overshoot. A check that finds the budget passed
// lowers the trigger by the excess (to half the budget at most): on a loaded
// machine the thread wakes late and the overshoot is larger. Dropping file
// pages loses nothing: a shared file mapping's dirty pages go to the page
// cache and, later, to the file.
void Govern() {
  State& s = S();
  std::unique_lock<std::mutex> l(s.mu);
  uint64_t budget = 0;
  for (;;) {
    s.cv.wait_for(l, std::chrono::milliseconds(5));
    if (s.files.empty()) continue;
    if (budget != s.budget) {
      budget = s.budget;
      s.trigger = budget / 8 * 7;
    }
    uint64_t rss, shared;
    if (!Resident(&rss, &shared)) continue;
    uint64_t trigger = s.trigger;
    if (rss > budget) {
      trigger = std::max(budget / 2, trigger - std::min(trigger, rss - budget));
      s.trigger = trigger;
    }
    // Past the trigger with file pages worth dropping: RAM arrays alone over
    // it would otherwise have every file page dropped every time.
    if (rss > trigger && shared > budget / 16) DropLocked(s);
  }
}

int OpenFile(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // A file system without O_TMPFILE: a named file, unlinked at once.
  std::string name = dir + "/libdump-array-XXXXXX";
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(name.c_str());
  return fd;
}

std::string ArrayDir(const State& s) {
  if (!s.dir.empty()) return s.dir;
  if (const char* t = std::getenv("TMPDIR"); t && *t == '/') return t;
  return "/tmp";
}

void StartGovernor(State& s) {
  if (!s.governed) {
    std::thread(Govern).detach();
    s.governed = true;
  }
}

// A file of `bytes` mapped shared, registered with the governor; nullptr
// when the file cannot be made.
void* MapFile(State& s, size_t bytes, int* fd) {
  const int f = OpenFile(ArrayDir(s));
  if (f < 0) return nullptr;
  void* p = MAP_FAILED;
  if (::ftruncate(f, static_cast<off_t>(bytes)) == 0) {
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  }
  if (p == MAP_FAILED) {
    ::close(f);
    return nullptr;
  }
  *fd = f;
  s.files[p] = bytes;
  s.file += bytes;
  ++s.file_arrays;
  StartGovernor(s);
  return p;
}

// Whether `bytes` more of RAM arrays would pass half the budget (the other
// half is for the files' resident pages and everything else).
bool ToFile(const State& s, size_t bytes) { return s.budget != 0 && s.ram + bytes > s.budget / 2; }

}  // namespace

void SetMemoryBudget(uint64_t bytes, const std::string& dir) {
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  s.budget = bytes;
  s.dir = dir;
  s.trigger = bytes / 8 * 7;
}

uint64_t MemoryBudget() {
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  return s.budget;
}

uint64_t DefaultMemoryBudget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? static_cast<uint64_t>(pages) * kPage / 4 : uint64_t{1} << 30;
}

bool ParseMemorySize(const std::string& text, uint64_t* bytes) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || !std::isfinite(v)) return false;
  std::string unit(end);
  if (!unit.empty() && (unit.back() == 'b' || unit.back() == 'B') && unit.size() == 2) unit.pop_back();
  double mult = 1;
  if (unit.size() == 1) {
    switch (unit[0]) {
      case 'k': case 'K': mult = 1024.0; break;
      case 'm': case 'M': mult = 1024.0 * 1024; break;
      case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: return false;
    }
  } else if (!unit.empty()) {
    return false;
  }
  const double b = v * mult;
  if (b < 1024.0 * 1024 || b > 1e19) return false;
  *bytes = static_cast<uint64_t>(b);
  return true;
}

MemoryStats GetMemoryStats() {
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  return {s.ram, s.file, s.file_arrays, s.drops, s.mapped};
}

void DropFilePages() {
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  DropLocked(s);
}

namespace big_array {

thread_local uint32_t tick = 0;

void CheckNow() {
  State& s = S();
  const uint64_t trigger = s.trigger.load(std::memory_order_relaxed);
  if (trigger == 0) return;
  uint64_t rss, shared;
  if (!Resident(&rss, &shared) || rss <= trigger || shared < trigger / 14) return;
  std::lock_guard<std::mutex> l(s.mu);
  DropLocked(s);
}

size_t PageRound(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

void* Allocate(size_t bytes, int* fd) {
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  *fd = -1;
  if (ToFile(s, bytes)) {
    if (void* p = MapFile(s, bytes, fd)) return p;
    // No file (a full or read-only directory): RAM, as without a budget.
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  s.ram += bytes;
  return p;
}

const void* MapReadOnly(int fd, uint64_t offset, size_t bytes) {
  if (offset % kPage != 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return nullptr;
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  s.files[p] = PageRound(bytes);
  s.mapped += PageRound(bytes);
  // Past the budget its pages are dropped like a file array's (they are
  // never written, so nothing is lost).
  if (s.budget != 0) StartGovernor(s);
  return p;
}

void DropRange(const void* p, size_t bytes) {
  // Whole pages inside the range only: the neighbours may be another
  // array's, or written.
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (a + kPage - 1) / kPage * kPage, end = (a + bytes) / kPage * kPage;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void Prefetch(const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = a / kPage * kPage;
  ::madvise(reinterpret_cast<void*>(begin), a + bytes - begin, MADV_WILLNEED);
}

void* Resize(void* p, size_t old_bytes, size_t bytes, int* fd) {
  if (*fd == kMapped) {
    // Adopted values become the array's own: copied into new storage.
    int f = -1;
    void* q = Allocate(bytes, &f);
    std::memcpy(q, p, std::min(old_bytes, bytes));
    Release(p, old_bytes, kMapped);
    *fd = f;
    return q;
  }
  State& s = S();
  std::unique_lock<std::mutex> l(s.mu);
  if (*fd >= 0) {
    // Locked: the governor must not drop pages of a mapping being moved.
    if (::ftruncate(*fd, static_cast<off_t>(bytes)) != 0) throw std::bad_alloc();
    void* q = ::mremap(p, old_bytes, bytes, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) throw std::bad_alloc();
    s.files.erase(p);
    s.files[q] = bytes;
    s.file += bytes;
    s.file -= old_bytes;
    return q;
  }
  if (bytes > old_bytes && ToFile(s, bytes - old_bytes)) {
    // Outgrew the RAM share: the array moves to a file.
    int f = -1;
    if (void* q = MapFile(s, bytes, &f)) {
      std::memcpy(q, p, old_bytes);
      ::munmap(p, old_bytes);
      s.ram -= old_bytes;
      *fd = f;
      return q;
    }
  }
  void* q = ::mremap(p, old_bytes, bytes, MREMAP_MAYMOVE);
  if (q == MAP_FAILED) throw std::bad_alloc();
  s.ram += bytes;
  s.ram -= old_bytes;
  return q;
}

void Release(void* p, size_t bytes, int fd) {
  State& s = S();
  std::lock_guard<std::mutex> l(s.mu);
  if (fd == kMapped) {
    const auto it = s.files.find(p);
    if (it != s.files.end()) {
      ::munmap(p, it->second);
      s.mapped -= it->second;
      s.files.erase(it);
    }
    return;
  }
  ::munmap(p, bytes);
  if (fd >= 0) {
    ::close(fd);
    s.files.erase(p);
    s.file -= bytes;
  } else {
    s.ram -= bytes;
  }
}

}  // namespace big_array
}  // namespace libdump::heapgraph
