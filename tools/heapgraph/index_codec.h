// The index file's bytes (index_cache.h): a buffered writer and a bounded
// reader that hash what passes through them, and a HeapGraph written and read
// field by field. A reader checks every length against what the file still
// holds before it allocates, and a graph read back is checked index by index
// before anything queries it.
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

#include "heap_graph.h"

namespace libdump::heapgraph::index {

// A 4-lane multiply-rotate hash: fast enough to check gigabytes of index at
// memory speed, which a byte-wise FNV is not.
class Hash {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    for (; n >= 32; p += 32, n -= 32) {
      for (int k = 0; k < 4; ++k) {
        uint64_t w;
        std::memcpy(&w, p + 8 * k, 8);
        lane_[k] = Round(lane_[k], w);
      }
    }
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

// Buffered sequential writes, hashed as written.
class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) { buf_.reserve(kBuf); }
  // Counts the bytes a write would take and writes nothing: the index's
  // size, which the progress of its write is measured against.
  struct CountOnly {};
  explicit Writer(CountOnly) : fd_(-1) {}
  uint64_t counted() const { return counted_ + sizeof(uint64_t); }  // with Finish's hash
  // Told the bytes written so far, after each write of the file.
  void OnWrite(std::function<void(uint64_t written)> f) { on_write_ = std::move(f); }
  void Bytes(const void* p, size_t n) {
    if (fd_ < 0) {
      counted_ += n;
      return;
    }
    hash_.Add(p, n);
    Raw(p, n);
  }
  void U64(uint64_t v) { Bytes(&v, sizeof v); }
  void Str(const std::string& s) {
    U64(s.size());
    Bytes(s.data(), s.size());
  }
  // A std::vector or a BigArray of plain values.
  template <typename V>
  void Vec(const V& v) {
    static_assert(std::is_trivially_copyable_v<typename V::value_type>);
    U64(v.size());
    Bytes(v.data(), v.size() * sizeof(typename V::value_type));
  }
  // The hash of everything so far, then flush; false on a write error.
  bool Finish() {
    const uint64_t h = hash_.Value();
    Raw(&h, sizeof h);
    return Flush() && ok_;
  }
  int error() const { return err_; }

 private:
  static constexpr size_t kBuf = 1 << 20;
  void Raw(const void* p, size_t n) {
    const auto* c = static_cast<const char*>(p);
    if (buf_.size() + n > kBuf) {
      Flush();
      if (n >= kBuf) {  // large arrays go straight to the file
        WriteAll(c, n);
        return;
      }
    }
    buf_.insert(buf_.end(), c, c + n);
  }
  bool Flush() {
    WriteAll(buf_.data(), buf_.size());
    buf_.clear();
    return ok_;
  }
  void WriteAll(const char* p, size_t n) {
    while (ok_ && n) {
      // Large arrays in steps, so the progress moves during them.
      const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{64} << 20));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        ok_ = false;
        err_ = w < 0 ? errno : ENOSPC;
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
      written_ += static_cast<uint64_t>(w);
      if (on_write_) on_write_(written_);
    }
  }
  int fd_;
  std::vector<char> buf_;
  Hash hash_;
  bool ok_ = true;
  int err_ = 0;
  uint64_t counted_ = 0, written_ = 0;
  std::function<void(uint64_t)> on_write_;
};

// Sequential reads, every length checked against what the file still holds
// before anything is allocated, hashed as read.
class Reader {
 public:
  Reader(int fd, uint64_t size) : fd_(fd), left_(size) {}
  bool Bytes(void* p, size_t n) {
    if (!ok_ || n > left_) return ok_ = false;
    if (!PreadAll(fd_, p, n, off_)) return ok_ = false;
    off_ += n;
    left_ -= n;
    hash_.Add(p, n);
    return true;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Bytes(&v, sizeof v);
    return v;
  }
  std::string Str() {
    const uint64_t n = U64();
    if (n > left_) {
      ok_ = false;
      return {};
    }
    std::string s(n, '\0');
    Bytes(s.data(), n);
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
  // A count of items each at least `min_bytes` long in the file.
  uint64_t Count(size_t min_bytes) {
    const uint64_t n = U64();
    if (n > left_ / std::max<size_t>(min_bytes, 1)) ok_ = false;
    return ok_ ? n : 0;
  }
  // The stored hash matches what was read, and nothing follows it.
  bool Finish() {
    const uint64_t want = hash_.Value();
    uint64_t got = 0;
    if (!ok_ || left_ != sizeof got || !PreadAll(fd_, &got, sizeof got, off_)) return false;
    return got == want;
  }
  bool ok() const { return ok_; }

 private:
  int fd_;
  uint64_t off_ = 0, left_;
  Hash hash_;
  bool ok_ = true;
};

void PutGraph(Writer& w, const HeapGraph& g);
// False when the bytes do not make a consistent graph.
bool GetGraph(Reader& r, HeapGraph& g);

}  // namespace libdump::heapgraph::index
