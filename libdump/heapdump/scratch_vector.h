// A growable array backed by mmap/mremap instead of malloc, for data a heap
// dump collects while the world is stopped: allocating from the heap being
// dumped would change it under the walk, and another allocator's locks may be
// held by a stopped thread. Elements must be trivially copyable.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace libdump::heapdump {

template <class T>
class ScratchVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  ScratchVector() = default;
  ~ScratchVector() {
    if (data_ != nullptr) munmap(data_, capacity_ * sizeof(T));
  }
  ScratchVector(const ScratchVector&) = delete;
  ScratchVector& operator=(const ScratchVector&) = delete;

  // False when the system is out of memory; the element is dropped.
  bool push_back(const T& v) {
    if (size_ == capacity_ && !Grow()) return false;
    std::memcpy(static_cast<void*>(data_ + size_), &v, sizeof(T));
    ++size_;
    return true;
  }
  bool reserve(size_t n) {
    while (capacity_ < n) {
      if (!Grow()) return false;
    }
    return true;
  }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  bool Grow() {
    const size_t page = 4096;
    const size_t old_bytes = capacity_ * sizeof(T);
    size_t new_bytes = old_bytes == 0 ? 16 * page : 2 * old_bytes;
    new_bytes = (new_bytes + page - 1) / page * page;
    void* p = data_ == nullptr
                  ? mmap(nullptr, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : mremap(data_, old_bytes, new_bytes, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    data_ = static_cast<T*>(p);
    capacity_ = new_bytes / sizeof(T);
    return true;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace libdump::heapdump
