// Differential fuzzing of the allocator: the input is a program of calls
// (malloc, calloc, realloc, free, memalign, posix_memalign, aligned_alloc,
// malloc_usable_size, of sizes up to 4 MiB; 256 calls, 8 MiB live at most) run against libdump's heap and
// checked against a model of what each call promised: no two live blocks
// overlap (over their usable sizes), a block's contents stay as written,
// across realloc up to the smaller size, calloc's are zero, the usable size
// is at least the request, and the alignment asked for is honoured. At the
// end of each input every block is looked up (FindObject) and freed.
// The allocator under ASan/UBSan is blind to its own bugs: this is how a
// slot handed out twice or a realloc that loses bytes shows.
#include <cerrno>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <new>

#include "libdump/heap.h"

namespace {

// A broken promise: named on stderr, then a trap (the finding).
[[noreturn]] void Broken(const char* what, const void* p, size_t n) {
  std::fprintf(stderr, "allocator_fuzz: %s (block %p, %zu bytes)\n", what, p, n);
  __builtin_trap();
}

constexpr int kSlots = 64;
constexpr size_t kMaxSize = 4 << 20;
constexpr size_t kMaxLive = 8 << 20;  // bytes requested, all blocks together
// Calls per input: a longer program explores no more, and costs the rate.
constexpr int kMaxCalls = 256;

struct Live {
  uint8_t* p = nullptr;
  size_t size = 0;
  uint64_t seed = 0;
};

// The program's bytes, read as needed; zeros past the end.
struct Program {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  bool done() const { return at >= size; }
  uint8_t U8() { return at < size ? data[at++] : 0; }
  uint32_t U16() { return U8() | static_cast<uint32_t>(U8()) << 8; }
  // Sizes: mostly small, every size class, some large, 0 now and then.
  size_t Size() {
    const uint8_t kind = U8();
    const uint32_t v = U16();
    switch (kind & 3) {
      case 0: return v % 1025;                                    // small classes, 0 included
      case 1: return v % 32769;                                   // up to the largest class
      case 2:  // large one time in four, else up to 64 KiB (the large-span cache's)
        return (kind >> 2) % 4 == 0 ? 32768 + (static_cast<size_t>(v) << 6) % (kMaxSize - 32768) : 32768 + v % 32769;
      default: return (kind >> 2) == 0 ? 0 : static_cast<size_t>(1) << ((kind >> 2) % 17);  // powers of two to 64 KiB
    }
  }
};

// The pattern's loops are not what the fuzzer explores: without coverage
// tracing of their compares (most of the time, traced) the rate is ~20x.
// Nor does ASan see into the allocator's own pages, which they read.
#if defined(__clang__)
#define LIBDUMP_NO_COVERAGE __attribute__((no_sanitize("coverage", "address")))
#else
#define LIBDUMP_NO_COVERAGE
#endif

// A block's bytes hold a function of its block's seed and offset. Which
// bytes are written and checked depends on the offset alone (so that a
// realloc's kept prefix is checked exactly where it was written): the
// first KiB, and the first and last 32 bytes of every 4 KiB page after it,
// which is where a copy cut short, a slot's neighbour or a page's would
// show. (Every KiB instead cost the target three quarters of its rate in
// these loops, and a slot's neighbour shows in that neighbour's first KiB.)
__attribute__((always_inline)) inline uint64_t Word(uint64_t seed, size_t w) { return (seed ^ (w * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull; }
__attribute__((always_inline)) inline uint8_t Byte(uint64_t seed, size_t i) { return static_cast<uint8_t>(Word(seed, i / 8) >> (i % 8 * 8)); }

// The first sampled offset at or after i, and the end of its range.
constexpr size_t kPage = 4096;
__attribute__((always_inline)) inline size_t SampledFrom(size_t i) {
  if (i < 1024) return i;
  const size_t in_page = i & (kPage - 1);
  if (in_page < 32 || in_page >= kPage - 32) return i;
  return (i & ~(kPage - 1)) + kPage - 32;
}
__attribute__((always_inline)) inline size_t SampledEnd(size_t i) {
  if (i < 1024) return 1024;
  return (i & (kPage - 1)) < 32 ? (i & ~(kPage - 1)) + 32 : (i & ~(kPage - 1)) + kPage;
}

// The sampled bytes of [from, b.size). (No lambdas here: each is a function
// of its own, which no_sanitize("coverage") would not cover.)
__attribute__((noinline)) LIBDUMP_NO_COVERAGE void Fill(const Live& b, size_t from) {
  for (size_t i = SampledFrom(from); i < b.size; i = SampledFrom(i)) {
    const size_t end = SampledEnd(i) < b.size ? SampledEnd(i) : b.size;
    for (; i < end && i % 8 != 0; ++i) b.p[i] = Byte(b.seed, i);
    for (; i + 8 <= end; i += 8) {
      const uint64_t w = Word(b.seed, i / 8);
      std::memcpy(b.p + i, &w, 8);
    }
    for (; i < end; ++i) b.p[i] = Byte(b.seed, i);
  }
}

// The sampled bytes of [0, n) hold b's pattern; the offset of the first
// word that does not, or n. (Ranges start at multiples of 8.)
__attribute__((noinline)) LIBDUMP_NO_COVERAGE size_t FirstChanged(const Live& b, size_t n) {
  for (size_t i = 0; i < n; i = SampledFrom(i)) {
    const size_t end = SampledEnd(i) < n ? SampledEnd(i) : n;
    for (; i + 8 <= end; i += 8) {
      uint64_t w;
      std::memcpy(&w, b.p + i, 8);
      if (w != Word(b.seed, i / 8)) return i;
    }
    for (; i < end; ++i) {
      if (b.p[i] != Byte(b.seed, i)) return i;
    }
  }
  return n;
}

void Check(const Live& b, size_t n) {
  const size_t at = FirstChanged(b, n);
  if (at != n) Broken("contents changed", b.p, at);
}

// calloc's block: its sampled bytes are zero.
__attribute__((noinline)) LIBDUMP_NO_COVERAGE bool AllZero(const uint8_t* p, size_t n) {
  uint8_t any = 0;
  for (size_t i = 0; i < n; i = SampledFrom(i)) {
    const size_t end = SampledEnd(i) < n ? SampledEnd(i) : n;
    for (; i < end; ++i) any |= p[i];
  }
  return any == 0;
}

class Model {
 public:
  // Frees what is left; its contents were checked by CheckAll just before.
  ~Model() {
    for (Live& b : slots_) {
      if (b.p != nullptr) libdump::Free(b.p);
    }
  }

  // Block b (p, size set) enters the model: aligned as asked, its usable
  // size at least its size, overlapping no other live block.
  void Place(const Live& b, size_t align) {
    const auto a = reinterpret_cast<uintptr_t>(b.p);
    if (a % align != 0 || a % 16 != 0) Broken("misaligned", b.p, align);
    const size_t usable = libdump::UsableSize(b.p);
    if (usable < b.size) Broken("usable size below the request", b.p, usable);
    Claim(a, usable == 0 ? 1 : usable);
    live_ += b.size;
  }

  // A new block of `size` bytes at p, asked with alignment `align`.
  void Born(Live& b, void* p, size_t size, size_t align, bool zeroed) {
    if (p == nullptr) {
      if (size <= kMaxSize) Broken("allocation failed", p, size);  // nothing this small may fail
      return;
    }
    b.p = static_cast<uint8_t*>(p);
    b.size = size;
    b.seed = ++serial_ * 0x9e3779b97f4a7c15ull;
    Place(b, align);
    if (zeroed && !AllZero(b.p, size)) Broken("calloc not zeroed", b.p, size);
    Fill(b, 0);
  }

  void Drop(Live& b) {
    if (b.p == nullptr) return;
    Check(b, b.size);
    Release(b);
    libdump::Free(b.p);
    b = Live{};
  }

  // The block leaves the model (before the call that frees or moves it).
  void Release(const Live& b) {
    blocks_.erase(reinterpret_cast<uintptr_t>(b.p));
    live_ -= b.size;
  }

  // [a, a+n) must overlap no live block.
  void Claim(uintptr_t a, size_t n) {
    auto next = blocks_.lower_bound(a);
    if (next != blocks_.end() && next->first < a + n) Broken("overlaps the next live block", reinterpret_cast<void*>(a), n);
    if (next != blocks_.begin() && std::prev(next)->second > a) Broken("overlaps the previous live block", reinterpret_cast<void*>(a), n);
    blocks_.emplace(a, a + n);
  }

  bool Room(size_t size) const { return live_ + size <= kMaxLive; }
  Live& Slot(uint8_t i) { return slots_[i % kSlots]; }

  void CheckAll() {
    for (const Live& b : slots_) {
      if (b.p == nullptr) continue;
      libdump::ObjectInfo o;
      if (!libdump::FindObject(b.p, &o) || o.addr != reinterpret_cast<uintptr_t>(b.p) || o.size < b.size) {
        Broken("FindObject does not see the block", b.p, b.size);
      }
      Check(b, b.size);
    }
  }

 private:
  Live slots_[kSlots];
  std::map<uintptr_t, uintptr_t> blocks_;  // start -> end over usable sizes
  size_t live_ = 0;
  uint64_t serial_ = 0;
};

size_t Alignment(Program& in) { return size_t{1} << (in.U8() % 17); }  // 1 B .. 64 KiB

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Program in{data, size};
  Model m;
  for (int calls = 0; calls < kMaxCalls && !in.done(); ++calls) {
    const uint8_t op = in.U8();
    Live& b = m.Slot(in.U8());
    switch (op % 9) {
      case 0:  // malloc
      case 1: {
        const size_t n = in.Size();
        if (b.p != nullptr || !m.Room(n)) break;
        m.Born(b, libdump::Allocate(n), n, 1, false);
        break;
      }
      case 2: {  // calloc
        const size_t count = 1 + in.U8() % 16;
        const size_t n = in.Size() / count;
        if (b.p != nullptr || !m.Room(n * count)) break;
        m.Born(b, libdump::AllocateZeroed(count, n), n * count, 1, true);
        break;
      }
      case 3: {  // realloc (also of null and to 0, which frees)
        const size_t n = in.Size();
        if (!m.Room(n)) break;
        if (b.p == nullptr) {
          m.Born(b, libdump::Reallocate(nullptr, n), n, 1, false);
          break;
        }
        Check(b, b.size);
        m.Release(b);
        if (n == 0) {
          if (libdump::Reallocate(b.p, 0) != nullptr) Broken("realloc to 0 kept a block", b.p, 0);
          b = Live{};
          break;
        }
        auto* q = static_cast<uint8_t*>(libdump::Reallocate(b.p, n));
        if (q == nullptr) Broken("realloc failed", b.p, n);
        const size_t kept = n < b.size ? n : b.size;
        b.p = q;
        b.size = n;
        Check(b, kept);  // kept, byte for byte
        m.Place(b, 1);
        Fill(b, kept);
        break;
      }
      case 4:  // free
        m.Drop(b);
        break;
      case 5: {  // memalign
        const size_t align = Alignment(in);
        const size_t n = in.Size();
        if (b.p != nullptr || !m.Room(n)) break;
        m.Born(b, libdump::AllocateAligned(align, n), n, align, false);
        break;
      }
      case 6: {  // posix_memalign: a power of two, at least a pointer
        size_t align = Alignment(in);
        if (align < sizeof(void*)) align = sizeof(void*);
        const size_t n = in.Size();
        if (b.p != nullptr || !m.Room(n)) break;
        m.Born(b, libdump::AllocateAligned(align, n), n, align, false);
        break;
      }
      case 7: {  // aligned_alloc: a size that is a multiple of the alignment
        const size_t align = Alignment(in);
        const size_t n = in.Size() / align * align;
        if (b.p != nullptr || !m.Room(n)) break;
        m.Born(b, libdump::AllocateAligned(align, n), n, align, false);
        break;
      }
      default:  // malloc_usable_size
        if (b.p != nullptr && libdump::UsableSize(b.p) < b.size) Broken("usable size below the request", b.p, b.size);
        break;
    }
  }
  m.CheckAll();
  return 0;
}
