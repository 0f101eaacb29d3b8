#include "record_fields.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "libdump/format/record.h"

namespace libdump::readdump {

std::string HexString(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string ObjectKindName(uint64_t kind) {
  switch (kind) {
    case format::kObjRegular: return "regular";
    case format::kObjArray: return "array";
    case format::kObjChan: return "chan";
  }
  return std::to_string(kind);
}

std::string FieldKindName(uint64_t kind) {
  switch (kind) {
    case format::kFieldPtr: return "ptr";
    case format::kFieldString: return "string";
    case format::kFieldSlice: return "slice";
    case format::kFieldIface: return "iface";
    case format::kFieldEface: return "eface";
    case format::kFieldInt: return "int";
    case format::kFieldUint: return "uint";
    case format::kFieldFloat: return "float";
    case format::kFieldBool: return "bool";
    case format::kFieldChar: return "char";
    case format::kFieldBytes: return "bytes";
  }
  return std::to_string(kind);
}

std::string StatusName(uint64_t status) {
  switch (status) {
    case format::kStatusIdle: return "idle";
    case format::kStatusRunnable: return "runnable";
    case format::kStatusRunning: return "running";
    case format::kStatusSyscall: return "syscall";
    case format::kStatusWaiting: return "waiting";
  }
  return std::to_string(status);
}

std::string TypeFlagsName(uint64_t flags) {
  if (flags == 0) return "0";
  std::string out;
  const auto add = [&](const char* s) { out += out.empty() ? s : std::string("|") + s; };
  if (flags & format::kTypeConservative) add("conservative");
  if (flags & format::kTypePolymorphic) add("polymorphic");
  if (flags & format::kTypeArray) add("array");
  if (flags & format::kTypeOwn) add("own");
  const uint64_t unknown = flags & ~uint64_t{format::kTypeConservative | format::kTypePolymorphic |
                                             format::kTypeArray | format::kTypeOwn};
  if (unknown != 0) add(HexString(unknown).c_str());
  return out;
}

namespace {

// The visitor of record.h that prints: each field to the sink, named
// as in the reader's errors (less the list's prefix inside a list).
class Printer {
 public:
  explicit Printer(FieldSink& s, size_t strip = 0, bool scalars = false) : s_(s), strip_(strip), scalars_(scalars) {}

  template <class... Check>
  void U(const char* name, uint64_t v, format::Show show, Check&&...) {
    const char* key = Key(name);
    switch (show) {
      case format::Show::kHex: return s_.Hex(key, v);
      case format::Show::kDec:
      case format::Show::kPayloadSize: return s_.Dec(key, v);
      case format::Show::kObjectKind: return s_.Name(key, ObjectKindName(v));
      case format::Show::kFieldKind: return s_.Name(key, FieldKindName(v));
      case format::Show::kStatus: return s_.Name(key, StatusName(v));
      case format::Show::kEndian: return s_.Name(key, v ? "big" : "little");
      case format::Show::kTypeFlags: return s_.Name(key, TypeFlagsName(v));
    }
  }
  void Bool(const char* name, bool v) { s_.Bool(Key(name), v); }
  void Str(const char* name, std::string_view v) { s_.Str(Key(name), v); }

  // A list of plain numbers prints them bare; a list of structs prints each
  // as an item of named fields.
  template <class Items, class Item>
  void List(const char*, const char* key, const char* prefix, const Items& items, Item&& item) {
    using T = typename Items::value_type;
    s_.BeginList(key);
    const T* prev = nullptr;
    for (const T& e : items) {
      if constexpr (std::is_arithmetic_v<T>) {
        Printer bare(s_, 0, true);
        item(bare, e, prev);
      } else {
        s_.BeginItem();
        Printer fields(s_, std::strlen(prefix));
        item(fields, e, prev);
        s_.EndItem();
      }
      prev = &e;
    }
    s_.EndList();
  }

 private:
  const char* Key(const char* name) const { return scalars_ ? nullptr : name + strip_; }

  FieldSink& s_;
  size_t strip_;
  bool scalars_;
};

}  // namespace

void VisitFields(const format::Record& r, FieldSink& s) {
  format::VisitRecord(r, [&s](auto kind, const auto& record) {
    Printer p(s);
    format::Layout<kind()>::Fields(record, p);
  });
}

}  // namespace libdump::readdump
