// The java.lang classes real readers look for, and the synthetic instances a
// non-Java producer needs them for (thread objects, their name strings,
// finalizer references).
//
// What readers require: java.lang.Object with an instance size > 0 (VisualVM
// guesses the object header size from it with 8-byte ids), Class, ClassLoader,
// String (JDK 8 layout: char[] value, which jhat understands), Thread (with
// its name as a String), java.lang.ref.Reference with a `referent` field and
// its Weak, Soft, Final and Phantom subclasses (VisualVM's retained sizes and
// MAT's reference queries), and an array class per primitive array type used.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "libdump/format/hprof_classes.h"
#include "libdump/format/hprof_writer.h"

namespace libdump::format::hprof {

// java.lang.Thread.threadStatus values (JVMTI thread state bits).
inline constexpr int32_t kThreadRunnable = 0x0005;  // alive | runnable
inline constexpr int32_t kThreadWaiting = 0x0091;   // alive | waiting | waiting indefinitely

struct ThreadFields {
  Id name = 0;  // a java.lang.String
  int64_t tid = 0;
  bool daemon = false;
  int32_t status = kThreadRunnable;
};

class StandardClasses {
 public:
  // Declares every standard class (LOAD CLASS now, CLASS DUMP with the
  // table's DumpAll): call before the heap begins.
  explicit StandardClasses(ClassTable& classes);

  Id object() const { return object_; }
  Id string() const { return string_; }
  Id thread() const { return thread_; }
  Id reference() const { return reference_; }
  Id finalizer() const { return finalizer_; }
  // "[Ljava/lang/Object;"
  Id object_array() const { return object_array_; }
  Id primitive_array(Type t) const { return primitive_arrays_.at(static_cast<size_t>(t)); }

  // Synthetic instances (heap phase). Each returns the new object's id.
  Id WriteString(Writer& w, IdAllocator& ids, std::string_view utf8) const;
  // `id` is allocated by the caller: START THREAD names it before the heap.
  void WriteThread(Writer& w, Id id, const ThreadFields& f) const;
  // A java.lang.ref.Finalizer whose referent is `object`.
  Id WriteFinalizer(Writer& w, IdAllocator& ids, Id object) const;

 private:
  Id object_ = 0, string_ = 0, thread_ = 0, reference_ = 0, finalizer_ = 0, object_array_ = 0;
  std::array<Id, 12> primitive_arrays_{};  // by Type
};

// UTF-8 to the UTF-16 code units of a Java char[]; invalid bytes become U+FFFD.
std::u16string Utf16(std::string_view utf8);

}  // namespace libdump::format::hprof
