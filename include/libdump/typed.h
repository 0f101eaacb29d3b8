// Typed objects: register a struct's pointer fields once, then make<T>() and
// make_array<T>() allocate objects whose type the heap walk reports, without
// any header in front of the object (its address and layout are the same as
// with new).
//
//   struct Node { int value; Node* left; Node* right; };
//   LIBDUMP_TYPE(Node, left, right)          // at namespace scope
//   Node* n = libdump::make<Node>(1, nullptr, nullptr);
//   libdump::destroy(n);
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "libdump/heap.h"

namespace libdump {

// A pointer field, or an array of `count` pointers.
struct FieldInfo {
  const char* name;
  uint32_t offset;
  uint32_t count;
};

struct TypeInfo {
  uint32_t id;  // set by RegisterType: stable for the life of the process, never 0
  const char* name;
  size_t size;
  const FieldInfo* fields;
  size_t nfields;
};

// Assigns info->id and publishes the type; info must live forever.
uint32_t RegisterType(TypeInfo* info);
// Lock- and allocation-free (usable while the world is stopped). Null if unknown.
const TypeInfo* FindType(uint32_t id);
// Registered types have ids 1 .. TypeCount().
uint32_t TypeCount();

// Specialised by LIBDUMP_TYPE.
template <class T>
struct TypeTraits;

namespace internal {

// Allocates size bytes tagged with the type and element count.
void* AllocateTyped(size_t size, uint32_t type_id, uint32_t count);
// The element count recorded by make/make_array (0 for untyped objects).
uint32_t TypedCount(const void* p);

template <class F>
constexpr uint32_t PointerFieldCount() {
  if constexpr (std::is_pointer_v<F>) {
    return 1;
  } else if constexpr (std::is_array_v<F> && std::rank_v<F> == 1 && std::is_pointer_v<std::remove_extent_t<F>>) {
    return static_cast<uint32_t>(std::extent_v<F>);
  } else {
    static_assert(std::is_pointer_v<F>, "LIBDUMP_TYPE lists pointer fields or arrays of pointers");
    return 0;
  }
}

}  // namespace internal

template <class T, class... Args>
T* make(Args&&... args) {
  void* p = internal::AllocateTyped(sizeof(T), TypeTraits<T>::id(), 1);
  if (p == nullptr) throw std::bad_alloc();
  try {
    return ::new (p) T(std::forward<Args>(args)...);
  } catch (...) {
    Free(p);
    throw;
  }
}

// n value-initialised elements.
template <class T>
T* make_array(size_t n) {
  if (n > UINT32_MAX || n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
  void* p = internal::AllocateTyped(n * sizeof(T), TypeTraits<T>::id(), static_cast<uint32_t>(n));
  if (p == nullptr) throw std::bad_alloc();
  T* a = static_cast<T*>(p);
  size_t i = 0;
  try {
    for (; i < n; ++i) ::new (a + i) T();
  } catch (...) {
    while (i > 0) a[--i].~T();
    Free(p);
    throw;
  }
  return a;
}

// Destroys an object from make<T> or all elements of one from make_array<T>.
template <class T>
void destroy(T* p) {
  if (p == nullptr) return;
  if constexpr (!std::is_trivially_destructible_v<T>) {
    for (uint32_t i = internal::TypedCount(p); i > 0; --i) p[i - 1].~T();
  }
  Free(const_cast<std::remove_cv_t<T>*>(p));
}

}  // namespace libdump

// Field list machinery: applies LIBDUMP_FIELD_ to each name.
#define LIBDUMP_PARENS_ ()
#define LIBDUMP_EXPAND_(...) LIBDUMP_EXPAND3_(LIBDUMP_EXPAND3_(LIBDUMP_EXPAND3_(__VA_ARGS__)))
#define LIBDUMP_EXPAND3_(...) LIBDUMP_EXPAND2_(LIBDUMP_EXPAND2_(LIBDUMP_EXPAND2_(__VA_ARGS__)))
#define LIBDUMP_EXPAND2_(...) LIBDUMP_EXPAND1_(LIBDUMP_EXPAND1_(LIBDUMP_EXPAND1_(__VA_ARGS__)))
#define LIBDUMP_EXPAND1_(...) __VA_ARGS__
#define LIBDUMP_FIELDS_(T, ...) __VA_OPT__(LIBDUMP_EXPAND_(LIBDUMP_FIELDS_STEP_(T, __VA_ARGS__)))
#define LIBDUMP_FIELDS_STEP_(T, f, ...) \
  LIBDUMP_FIELD_(T, f) __VA_OPT__(LIBDUMP_FIELDS_AGAIN_ LIBDUMP_PARENS_(T, __VA_ARGS__))
#define LIBDUMP_FIELDS_AGAIN_() LIBDUMP_FIELDS_STEP_
#define LIBDUMP_FIELD_(T, f) \
  ::libdump::FieldInfo{#f, static_cast<uint32_t>(offsetof(T, f)), ::libdump::internal::PointerFieldCount<decltype(T::f)>()},

// Registers T (a complete type at namespace scope) with its pointer fields,
// by name. The type gets its id on first use.
#define LIBDUMP_TYPE(T, ...)                                                                        \
  template <>                                                                                       \
  struct libdump::TypeTraits<T> {                                                                   \
    static uint32_t id() {                                                                          \
      _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Winvalid-offsetof\"")       \
      static const ::libdump::FieldInfo fields[] = {LIBDUMP_FIELDS_(T, __VA_ARGS__){nullptr, 0, 0}}; \
      _Pragma("GCC diagnostic pop")                                                                 \
      static ::libdump::TypeInfo info{0, #T, sizeof(T), fields, sizeof(fields) / sizeof(fields[0]) - 1}; \
      static const uint32_t type_id = ::libdump::RegisterType(&info);                                \
      return type_id;                                                                               \
    }                                                                                               \
  };
