// The index file's bytes (index_cache.h): a head read into memory and
// checked whole (magic, sizes, the tag and every small part of the graph,
// and a table of the large arrays), then the large arrays, each at an offset
// that is a multiple of kAlign, so a reader maps them straight from the file
// instead of reading them.
//
//   "LDINDEX" and the version (kMagic, index_cache.cc)  u64 arrays  u64 meta bytes
//   table: per array {u64 element size, u64 count, u64 offset, u64 hash}
//   meta: the tag, then the graph's small parts, field by field
//   u64 hash of everything above
//   zeros up to the first array; each array's values, then zeros up to the
//   next; the file ends where the last array does.
//
// Each array's element size is in the table (a reader refuses a width it
// does not expect). A reader checks that the table tiles the file exactly
// and the gaps are zeros, checks every length in the meta against what is
// left before it allocates, and hashes and range-checks each array in one
// pass of bounded resident memory (Verify) before anything queries the graph.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <string>
#include <vector>

#include "big_array.h"
#include "heap_graph.h"

namespace libdump::heapgraph::index {

// A 4-lane multiply-rotate hash: fast enough to check gigabytes of index at
// memory speed, which a byte-wise FNV is not.
class Hash {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    // The lanes in locals: kept in registers, four independent chains.
    uint64_t l0 = lane_[0], l1 = lane_[1], l2 = lane_[2], l3 = lane_[3];
    for (; n >= 32; p += 32, n -= 32) {
      uint64_t w[4];
      std::memcpy(w, p, 32);
      l0 = Round(l0, w[0]);
      l1 = Round(l1, w[1]);
      l2 = Round(l2, w[2]);
      l3 = Round(l3, w[3]);
    }
    lane_[0] = l0;
    lane_[1] = l1;
    lane_[2] = l2;
    lane_[3] = l3;
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      lane_[0] = Round(lane_[0], w);
    }
    for (; n; --n) lane_[1] = Round(lane_[1], *p++);
  }
  uint64_t Value() const {
    uint64_t h = total_ * 0x9E3779B97F4A7C15ull;
    for (uint64_t l : lane_) h = Round(h, l);
    return h ^ (h >> 31);
  }

 private:
  static uint64_t Round(uint64_t h, uint64_t w) {
    h ^= w * 0xC2B2AE3D27D4EB4Full;
    h = (h << 31 | h >> 33) * 0x9E3779B97F4A7C15ull;
    return h;
  }
  uint64_t lane_[4] = {1, 2, 3, 4};
  uint64_t total_ = 0;
};

inline bool PreadAll(int fd, void* buf, size_t n, uint64_t off) {
  auto* p = static_cast<char*>(buf);
  while (n) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return true;
}

inline constexpr uint64_t kAlign = 64 << 10;  // array offsets: a page of any size up to 64 KiB
// Arrays are hashed and checked by this many bytes at a time (a multiple of
// 32, so the hash of a whole array does not depend on the chunking).
inline constexpr size_t kChunk = 8 << 20;
inline constexpr uint64_t kMaxArrays = 64;

struct ArrayEntry {
  uint64_t element_size = 0, count = 0, offset = 0, hash = 0;
};

inline uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The meta in memory, hashed with everything else once complete; the large
// arrays recorded, written at their offsets by Finish.
class Writer {
 public:
  void Bytes(const void* p, size_t n) {
    if (n) meta_.append(static_cast<const char*>(p), n);
  }
  void U64(uint64_t v) { Bytes(&v, sizeof v); }
  void Str(const std::string& s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  // A small std::vector of plain values, in the meta.
  template <typename V>
  void Vec(const V& v) {
    static_assert(std::is_trivially_copyable_v<typename V::value_type>);
    U64(v.size());
    Bytes(v.data(), v.size() * sizeof(typename V::value_type));
  }
  // A large array: the next entry of the table.
  template <typename T>
  void Array(const BigArray<T>& v) {
    arrays_.push_back({v.data(), sizeof(T), v.size()});
  }
  // Writes the whole file to `fd` (empty, at offset 0): the arrays first,
  // hashed as written, then the head. False with errno in *err.
  bool Finish(int fd, const char (&magic)[8], int* err);
  // Told the bytes written and the bytes Finish writes in all after each chunk.
  void OnWrite(std::function<void(uint64_t written, uint64_t total)> f) { on_write_ = std::move(f); }

 private:
  struct Pending {
    const void* data;
    uint64_t element_size, count;
  };
  std::string meta_;
  std::vector<Pending> arrays_;
  std::function<void(uint64_t, uint64_t)> on_write_;
};

// The head of an index file in memory, read and checked by Open; the meta
// read field by field, every length checked against what is left; the arrays
// mapped in table order.
class Reader {
 public:
  // kOtherVersion: the magic but for its last byte, the format's version.
  enum class Status { kOk, kNotIndex, kOtherVersion, kDamaged };
  // Reads the head, checks its hash, that the table tiles the file of
  // `size` bytes exactly and that the gaps are zeros.
  Status Open(int fd, uint64_t size, const char (&magic)[8]);

  bool Bytes(void* p, size_t n) {
    if (!ok_ || n > left_) return ok_ = false;
    if (n) std::memcpy(p, at_, n);  // (an empty vector's data may be null)
    at_ += n;
    left_ -= n;
    return true;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Bytes(&v, sizeof v);
    return v;
  }
  std::string Str() {
    const uint64_t n = U64();
    if (!ok_ || n > left_) {
      ok_ = false;
      return {};
    }
    std::string s(at_, n);
    at_ += n;
    left_ -= n;
    return s;
  }
  template <typename V>
  void Vec(V& v) {
    using T = typename V::value_type;
    const uint64_t n = U64();
    if (!ok_ || n > left_ / sizeof(T)) {
      ok_ = false;
      return;
    }
    v.resize(n);
    Bytes(v.data(), n * sizeof(T));
  }
  // A count of items each at least `min_bytes` long in the meta.
  uint64_t Count(size_t min_bytes) {
    const uint64_t n = U64();
    if (n > left_ / std::max<size_t>(min_bytes, 1)) ok_ = false;
    return ok_ ? n : 0;
  }
  // Maps the table's next array into `v` (its values unchecked until
  // Verify reads them).
  template <typename T>
  void Array(BigArray<T>& v) {
    if (!ok_ || next_ >= table_.size() || table_[next_].element_size != sizeof(T)) {
      ok_ = false;
      return;
    }
    const ArrayEntry& e = table_[next_++];
    if (!v.Map(fd_, e.offset, e.count)) ok_ = false;
  }
  // Reads `v`, an array this reader mapped, once: hashes it against its
  // entry and calls check(values, count, index of the first) on each chunk,
  // dropping the chunk's pages from the process after. False when the hash
  // differs or a check fails.
  template <typename T, typename Check>
  bool Verify(const BigArray<T>& v, Check check) {
    const ArrayEntry* e = Entry(v.data(), v.size(), sizeof(T));
    if (!e) return false;
    Hash h;
    constexpr size_t per = kChunk / sizeof(T);
    const T* p = v.data();
    for (size_t i = 0; i < v.size(); i += per) {
      const size_t m = std::min(per, v.size() - i);
      if (i + per < v.size()) big_array::Prefetch(p + i + per, std::min(per, v.size() - i - per) * sizeof(T));
      h.Add(p + i, m * sizeof(T));
      const bool good = check(p + i, m, i);
      big_array::DropRange(p + i, m * sizeof(T));
      if (!good) return false;
    }
    return h.Value() == e->hash;
  }
  template <typename T>
  bool Verify(const BigArray<T>& v) {
    return Verify(v, [](const T*, size_t, size_t) { return true; });
  }
  // Everything read: the meta to its end, every array mapped and verified.
  bool Finish() const {
    return ok_ && left_ == 0 && next_ == table_.size() && verified_ == table_.size();
  }
  bool ok() const { return ok_; }

 private:
  const ArrayEntry* Entry(const void* data, uint64_t count, uint64_t element_size) {
    // Arrays are verified in table order; an empty one has no data.
    if (verified_ >= next_) return nullptr;
    const ArrayEntry& e = table_[verified_++];
    if (e.count != count || e.element_size != element_size || (count != 0 && data == nullptr)) return nullptr;
    return &e;
  }
  int fd_ = -1;
  std::string head_;
  std::vector<ArrayEntry> table_;
  const char* at_ = nullptr;
  uint64_t left_ = 0;
  size_t next_ = 0, verified_ = 0;
  bool ok_ = true;
};

void PutGraph(Writer& w, const HeapGraph& g);
// False when the bytes do not make a consistent graph: every array verified
// (Reader::Verify) and every index a query follows in range.
bool GetGraph(Reader& r, HeapGraph& g);

}  // namespace libdump::heapgraph::index
