#include "libdump/format/hprof_standard_classes.h"

#include <vector>

namespace libdump::format::hprof {

StandardClasses::StandardClasses(ClassTable& classes) {
  object_ = classes.Add("java/lang/Object", 0, {});
  classes.Add("java/lang/Class", object_, {});
  classes.Add("java/lang/ClassLoader", object_, {});
  const FieldSpec string_fields[] = {{"value", Type::kObject}, {"hash", Type::kInt}};
  string_ = classes.Add("java/lang/String", object_, string_fields);
  const FieldSpec thread_fields[] = {{"name", Type::kObject},
                                     {"tid", Type::kLong},
                                     {"priority", Type::kInt},
                                     {"daemon", Type::kBoolean},
                                     {"threadStatus", Type::kInt}};
  thread_ = classes.Add("java/lang/Thread", object_, thread_fields);
  const FieldSpec reference_fields[] = {{"referent", Type::kObject}};
  reference_ = classes.Add("java/lang/ref/Reference", object_, reference_fields);
  classes.Add("java/lang/ref/WeakReference", reference_, {});
  classes.Add("java/lang/ref/SoftReference", reference_, {});
  classes.Add("java/lang/ref/PhantomReference", reference_, {});
  const Id final_reference = classes.Add("java/lang/ref/FinalReference", reference_, {});
  finalizer_ = classes.Add("java/lang/ref/Finalizer", final_reference, {});
  object_array_ = classes.Add("[Ljava/lang/Object;", object_, {});
  for (Type t : {Type::kBoolean, Type::kChar, Type::kFloat, Type::kDouble, Type::kByte, Type::kShort, Type::kInt,
                 Type::kLong}) {
    primitive_arrays_[static_cast<size_t>(t)] = classes.Add(PrimitiveArrayClassName(t), object_, {});
  }
}

namespace {

void PutU4(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

void PutU8(std::vector<uint8_t>& out, uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

}  // namespace

std::u16string Utf16(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  std::u16string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t more = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : 4;
    uint32_t cp = 0xFFFD;
    size_t n = 1;
    if (more == 0) {
      cp = b;
    } else if (more < 4 && s.size() - i > more) {
      uint32_t v = b & (0x3F >> more);
      bool ok = true;
      for (size_t k = 1; k <= more; ++k) {
        const auto c = static_cast<uint8_t>(s[i + k]);
        ok = ok && (c >> 6) == 2;
        v = v << 6 | (c & 0x3F);
      }
      if (ok && v >= kMin[more] && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF)) {
        cp = v;
        n = more + 1;
      }
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
    i += n;
  }
  return out;
}

Id StandardClasses::WriteString(Writer& w, IdAllocator& ids, std::string_view utf8) const {
  const std::u16string chars = Utf16(utf8);
  const Id value = ids.Next();
  w.BeginPrimitiveArray(value, kEmptyTrace, Type::kChar, static_cast<uint32_t>(chars.size()));
  std::vector<uint8_t> be;
  be.reserve(chars.size() * 2);
  for (char16_t c : chars) {
    be.push_back(static_cast<uint8_t>(c >> 8));
    be.push_back(static_cast<uint8_t>(c));
  }
  w.Raw(be);
  std::vector<uint8_t> data;
  PutU8(data, value);
  PutU4(data, 0);  // hash
  const Id id = ids.Next();
  w.Instance(id, kEmptyTrace, string_, data);
  return id;
}

void StandardClasses::WriteThread(Writer& w, Id id, const ThreadFields& f) const {
  std::vector<uint8_t> data;
  PutU8(data, f.name);
  PutU8(data, static_cast<uint64_t>(f.tid));
  PutU4(data, 5);  // Thread.NORM_PRIORITY
  data.push_back(f.daemon ? 1 : 0);
  PutU4(data, static_cast<uint32_t>(f.status));
  w.Instance(id, kEmptyTrace, thread_, data);
}

Id StandardClasses::WriteFinalizer(Writer& w, IdAllocator& ids, Id object) const {
  std::vector<uint8_t> data;
  PutU8(data, object);  // Reference.referent: the only field down the chain
  const Id id = ids.Next();
  w.Instance(id, kEmptyTrace, finalizer_, data);
  return id;
}

}  // namespace libdump::format::hprof
