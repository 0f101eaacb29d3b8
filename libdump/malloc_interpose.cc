// The C and C++ allocation entry points, for LD_PRELOAD=libdump.so or for
// linking libdump.so in. Only this file defines malloc & co.: the static
// libdump_heap library (used by tests under sanitizers) leaves them alone.
//
// No libc header declaring malloc is included, so these definitions need not
// match glibc's exception specifications.
#include <errno.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "allocator.h"
#include "background_release.h"
#include "libdump/heap.h"
#include "platform/proc/maps_parser.h"

#define LIBDUMP_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace libdump::internal;

// Mappings that existed before libdump's first allocation: the dynamic
// loader allocates from them before it switches to our malloc, and may later
// hand such pointers to free or realloc.
struct Range {
  uintptr_t start, end;
};
constexpr int kMaxPreinit = 512;
Range g_preinit[kMaxPreinit];
int g_npreinit = 0;

bool IsPowerOfTwo(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

[[noreturn]] void OutOfMemoryForNew() { throw std::bad_alloc(); }

void* NewSlow(size_t size, size_t align, bool nothrow) {
  for (;;) {
    void* p = align != 0 ? AllocateAlignedImpl(align, size) : AllocateFast(size);
    if (p != nullptr) return p;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      if (nothrow) return nullptr;
      OutOfMemoryForNew();
    }
    if (nothrow) {
      try {
        handler();
      } catch (...) {
        return nullptr;
      }
    } else {
      handler();
    }
  }
}

inline void* New(size_t size) {
  void* p = AllocateFast(size);
  return LIBDUMP_LIKELY(p != nullptr) ? p : NewSlow(size, 0, false);
}

}  // namespace

LIBDUMP_EXPORT void libdump_snapshot_preinit() {
  libdump::proc::ForEachMapsLine([](const libdump::proc::MapsLine& m) {
    // The loader allocates from its own data pages and from anonymous
    // mappings: only those count, not stacks or other files.
    if (m.path.empty() || m.path.find("ld-linux") != std::string_view::npos) {
      g_preinit[g_npreinit++] = Range{static_cast<uintptr_t>(m.start), static_cast<uintptr_t>(m.end)};
    }
    return g_npreinit < kMaxPreinit;
  });
}

LIBDUMP_EXPORT bool libdump_preinit_pointer(const void* p, size_t* readable) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (int i = 0; i < g_npreinit; ++i) {
    if (a >= g_preinit[i].start && a < g_preinit[i].end) {
      *readable = g_preinit[i].end - a;
      return true;
    }
  }
  return false;
}

LIBDUMP_EXPORT void* malloc(size_t size) { return AllocateFast(size); }
LIBDUMP_EXPORT void free(void* p) { FreeFast(p); }
LIBDUMP_EXPORT void cfree(void* p) { FreeFast(p); }
LIBDUMP_EXPORT void* calloc(size_t n, size_t size) { return libdump::AllocateZeroed(n, size); }
LIBDUMP_EXPORT void* realloc(void* p, size_t size) { return ReallocateImpl(p, size); }

LIBDUMP_EXPORT void* reallocarray(void* p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return ReallocateImpl(p, total);
}

LIBDUMP_EXPORT void* memalign(size_t align, size_t size) {
  // glibc rounds a non-power-of-two alignment up rather than failing.
  if (!IsPowerOfTwo(align)) {
    if (align > (size_t{1} << 62)) {
      errno = EINVAL;
      return nullptr;
    }
    align = align <= 1 ? 1 : size_t{1} << (64 - __builtin_clzll(align - 1));
  }
  return AllocateAlignedImpl(align, size);
}

LIBDUMP_EXPORT void* aligned_alloc(size_t align, size_t size) {
  if (!IsPowerOfTwo(align)) {
    errno = EINVAL;
    return nullptr;
  }
  return AllocateAlignedImpl(align, size);
}

LIBDUMP_EXPORT int posix_memalign(void** out, size_t align, size_t size) {
  if (!IsPowerOfTwo(align) || align % sizeof(void*) != 0) return EINVAL;
  void* p = AllocateAlignedImpl(align, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

LIBDUMP_EXPORT void* valloc(size_t size) { return AllocateAlignedImpl(4096, size); }

LIBDUMP_EXPORT void* pvalloc(size_t size) {
  const size_t rounded = (size + 4095) & ~size_t{4095};
  if (rounded < size) {
    errno = ENOMEM;
    return nullptr;
  }
  return AllocateAlignedImpl(4096, rounded == 0 ? 4096 : rounded);
}

LIBDUMP_EXPORT size_t malloc_usable_size(void* p) { return UsableSizeImpl(p); }
// glibc's: 1 if memory was given back to the OS. pad is what to keep.
LIBDUMP_EXPORT int malloc_trim(size_t pad) { return libdump::internal::ReleaseFreeMemoryDownTo(pad) > 0 ? 1 : 0; }

// operator new and delete, every form.
#define LIBDUMP_NEW_EXPORT __attribute__((visibility("default")))

LIBDUMP_NEW_EXPORT void* operator new(size_t size) { return New(size); }
LIBDUMP_NEW_EXPORT void* operator new[](size_t size) { return New(size); }
LIBDUMP_NEW_EXPORT void* operator new(size_t size, const std::nothrow_t&) noexcept {
  void* p = AllocateFast(size);
  return p != nullptr ? p : NewSlow(size, 0, true);
}
LIBDUMP_NEW_EXPORT void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  void* p = AllocateFast(size);
  return p != nullptr ? p : NewSlow(size, 0, true);
}
LIBDUMP_NEW_EXPORT void* operator new(size_t size, std::align_val_t a) {
  return NewSlow(size, static_cast<size_t>(a), false);
}
LIBDUMP_NEW_EXPORT void* operator new[](size_t size, std::align_val_t a) {
  return NewSlow(size, static_cast<size_t>(a), false);
}
LIBDUMP_NEW_EXPORT void* operator new(size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return NewSlow(size, static_cast<size_t>(a), true);
}
LIBDUMP_NEW_EXPORT void* operator new[](size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return NewSlow(size, static_cast<size_t>(a), true);
}

LIBDUMP_NEW_EXPORT void operator delete(void* p) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete[](void* p) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete(void* p, size_t) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete[](void* p, size_t) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete(void* p, std::align_val_t) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete[](void* p, std::align_val_t) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete(void* p, size_t, std::align_val_t) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete[](void* p, size_t, std::align_val_t) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { FreeFast(p); }
LIBDUMP_NEW_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { FreeFast(p); }
