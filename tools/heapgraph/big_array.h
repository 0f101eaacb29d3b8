// The graph's per-object and per-reference arrays, in RAM or in files, by a
// memory budget.
//
// A BigArray is a vector of plain values whose storage is a mapping: anonymous
// memory while the arrays held in RAM stay within half the budget, otherwise
// an unnamed file in the budget's directory (the index directory) mapped
// shared. Pages of a file mapping can be dropped from the process at any time
// and read back from the page cache or the file when touched again, so a
// governor thread drops them whenever the resident set passes the budget: the
// resident peak is the budget, not a function of the heap's size, and the
// algorithms stay the in-RAM ones. Files are unnamed (O_TMPFILE), so a process
// stopped by Ctrl-C or a crash leaves none behind.
//
// With no budget set (the default, and what tests and library users get)
// every array is anonymous memory: the in-RAM path, as fast as std::vector
// (growth is mremap, never a copy).
//
// An array can also adopt values already in a file (the index cache's
// arrays, index_cache.h): a private read-only mapping of that file, so
// nothing is copied or decoded, the kernel reads pages as they are touched,
// and the governor drops them like a file array's. Such an array is read
// only until it grows or shrinks, which copies it into storage of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace libdump::heapgraph {

// 0 means no budget: everything in RAM. `dir` holds the arrays' files
// (empty: $TMPDIR, else /tmp). Process-wide, set once by a tool's main before
// anything is loaded.
void SetMemoryBudget(uint64_t bytes, const std::string& dir);
uint64_t MemoryBudget();
// A quarter of physical memory.
uint64_t DefaultMemoryBudget();
// "2G", "512M", "1.5g", "64k", "100000" (bytes; K, M, G, T are powers of
// 1024). False for anything else or for less than 1 MiB.
bool ParseMemorySize(const std::string& s, uint64_t* bytes);

struct MemoryStats {
  uint64_t ram_bytes = 0;    // capacity of the arrays held in RAM now
  uint64_t file_bytes = 0;   // capacity of the arrays held in files now
  uint64_t file_arrays = 0;  // arrays ever placed in a file
  uint64_t drops = 0;        // times the governor dropped the files' pages
  uint64_t mapped_bytes = 0;  // bytes of the arrays adopted from files (Map) now
};
MemoryStats GetMemoryStats();
// Drops every file-backed array's pages from the process now (what the
// governor does past the budget); their contents stay.
void DropFilePages();

namespace big_array {
// Storage of `bytes` (a multiple of the page size): anonymous or a file, by
// the budget; *fd is the file or -1. Throws std::bad_alloc when neither works.
void* Allocate(size_t bytes, int* fd);
void* Resize(void* p, size_t old_bytes, size_t bytes, int* fd);
void Release(void* p, size_t bytes, int fd);
size_t PageRound(size_t bytes);
// The `fd` of an array that adopted a file's values (BigArray::Map).
inline constexpr int kMapped = -2;
// `bytes` of file `fd` from `offset` (a multiple of the page size), mapped
// private and read only and registered with the governor; nullptr when the
// mapping fails.
const void* MapReadOnly(int fd, uint64_t offset, size_t bytes);
// Pages of [p, p + bytes) (within an array) out of the process now: for a
// pass that reads an adopted array once and need not keep it resident.
void DropRange(const void* p, size_t bytes);
// Asks the kernel to start reading [p, p + bytes) of a mapping.
void Prefetch(const void* p, size_t bytes);

// The check the governor thread makes, made by the working thread itself
// every 4096 calls: a thread starved of CPU on a loaded machine wakes late,
// while the loop that touches the pages never does. Called from push_back
// and from the passes' loops that push nothing. Any thread may make it (the
// loaders' worker threads do): the count is the thread's own, the resident
// size a pread, the drop under the arrays' lock.
extern thread_local uint32_t tick;
void CheckNow();
inline void Check() {
  if ((++tick & 4095) == 0) CheckNow();
}
}  // namespace big_array

template <typename T>
class BigArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  BigArray() = default;
  explicit BigArray(size_t n, const T& v = T()) { assign(n, v); }
  BigArray(const BigArray& o) { *this = o; }
  BigArray(BigArray&& o) noexcept { swap(o); }
  ~BigArray() { Free(); }
  BigArray& operator=(const BigArray& o) {
    if (this != &o) {
      clear();
      Reserve(o.size_);
      if (o.size_) std::memcpy(data_, o.data_, o.size_ * sizeof(T));
      size_ = o.size_;
    }
    return *this;
  }
  BigArray& operator=(BigArray&& o) noexcept {
    if (this != &o) {
      Free();
      swap(o);
    }
    return *this;
  }
  void swap(BigArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
    std::swap(fd_, o.fd_);
  }

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  bool in_file() const { return fd_ >= 0; }
  // Whether the values are a read-only mapping of a file (Map).
  bool mapped() const { return fd_ == big_array::kMapped; }

  // Replaces the contents with `n` values stored in file `fd` from `offset`
  // (a multiple of the page size; the caller has checked the file holds
  // them), mapped read only: nothing is read until a value is. Writing a
  // value of a mapped array faults; growing it copies it first, shrinking it
  // leaves a smaller view of the file. False (and empty) when the mapping
  // fails.
  bool Map(int fd, uint64_t offset, size_t n) {
    Free();
    if (n == 0) return true;
    if (n > SIZE_MAX / sizeof(T) / 2) return false;
    const void* p = big_array::MapReadOnly(fd, offset, n * sizeof(T));
    if (!p) return false;
    data_ = static_cast<T*>(const_cast<void*>(p));
    // Capacity is the size (and stays so as it shrinks: ViewShrunk): a
    // push_back must copy, never write the mapping.
    size_ = cap_ = n;
    fd_ = big_array::kMapped;
    return true;
  }

  void push_back(const T& v) {
    big_array::Check();
    if (size_ == cap_) Reserve(cap_ < 1024 ? 1024 : cap_ * 2);
    data_[size_++] = v;
  }
  void pop_back() {
    --size_;
    ViewShrunk();
  }
  void reserve(size_t n) {
    if (n > cap_) Reserve(n);
  }
  void resize(size_t n, const T& v = T()) {
    if (n > cap_) Reserve(n);
    // By the MiB, checking the budget in between: a fill touches pages
    // faster than anything else.
    constexpr size_t kChunk = (size_t{1} << 20) / sizeof(T);
    for (size_t i = size_; i < n;) {
      const size_t end = n - i > kChunk ? i + kChunk : n;
      for (; i < end; ++i) data_[i] = v;
      big_array::CheckNow();
    }
    size_ = n;
    ViewShrunk();
  }
  void assign(size_t n, const T& v) {
    size_ = 0;
    resize(n, v);
  }
  // n zeros in new storage, no page touched: the mapping of a file is
  // sparse until written (tests of offsets past 2^32 entries use it).
  void AssignZeros(size_t n) {
    Free();
    if (n) Reserve(n);
    size_ = n;
  }
  void clear() {
    size_ = 0;
    ViewShrunk();
  }
  // Gives the storage back (vector's swap-with-empty).
  void Free() {
    if (data_) big_array::Release(data_, cap_ * sizeof(T), fd_);
    data_ = nullptr;
    size_ = cap_ = 0;
    fd_ = -1;
  }
  void shrink_to_fit() {
    if (size_ == 0) {
      Free();
    } else if (big_array::PageRound(size_ * sizeof(T)) < cap_ * sizeof(T)) {
      Reserve(size_, true);
    }
  }

  friend bool operator==(const BigArray& a, const BigArray& b) { return Equal(a, b.data_, b.size_); }
  friend bool operator==(const BigArray& a, const std::vector<T>& b) { return Equal(a, b.data(), b.size()); }

 private:
  static bool Equal(const BigArray& a, const T* b, size_t n) {
    if (a.size_ != n) return false;
    for (size_t i = 0; i < n; ++i) {
      if (!(a.data_[i] == b[i])) return false;
    }
    return true;
  }
  // A mapped array's capacity follows its size down, so that every growth
  // goes through Reserve, which copies (the mapping's own length is the
  // arrays' registry's, for Release).
  void ViewShrunk() {
    if (mapped()) cap_ = size_;
  }
  // Storage for `n` values (a whole number of pages of them).
  void Reserve(size_t n, bool shrink = false) {
    if (n > SIZE_MAX / sizeof(T) / 2) throw std::bad_alloc();
    const size_t bytes = big_array::PageRound(n * sizeof(T));
    if (!shrink && bytes <= cap_ * sizeof(T) && !mapped()) return;
    data_ = static_cast<T*>(data_ ? big_array::Resize(data_, cap_ * sizeof(T), bytes, &fd_)
                                  : big_array::Allocate(bytes, &fd_));
    cap_ = bytes / sizeof(T);
  }

  T* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
  int fd_ = -1;
};

}  // namespace libdump::heapgraph
