// Each record kind's fields on the wire, written once.
//
// Layout<Kind::kX>::Fields(record, v) names the fields of a kX record in wire
// order, after the kind varint, to a visitor v that does with each what it is
// for: the Writer encodes them, the Reader decodes them (naming the field in
// its errors) and readdump prints them. A new field or kind is an edit here
// and nowhere else; a visitor that lacks a field type does not compile.
//
// The visitor is called as
//   v.U(name, uint64_t& value, Show how[, check])   a uvarint
//   v.Bool(name, bool& value)                        a uvarint, 0 or 1
//   v.Str(name, std::string& value)                  length uvarint, bytes
//   v.List(count, key, prefix, items, item)          count uvarint, then for
//       each element e, item(v, e, previous element or nullptr)
// with const values when writing. `name` is the field's name in error
// messages and readdump's output (less `prefix` inside a list, where
// elements that are plain numbers have no name of their own). `check(value)`
// is for the reader alone: the whole error message, or "" when the value is
// valid; it runs once the field is decoded, and the error's offset is where the
// field starts. Records are templates on their type so the writer can pass
// views (OtherRootView, AllocStackView) that do not copy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "libdump/format/record.h"

namespace libdump::format {

// What a uvarint holds: how readdump shows it, and what the reader checks.
enum class Show : uint8_t {
  kHex,          // an address, pc or id
  kDec,          // a size, count, offset or number
  kPayloadSize,  // decimal: the object bytes that follow the record, which the
                 // reader checks against what is left of a regular file
  kObjectKind,   // ObjectKind
  kFieldKind,    // FieldKind
  kStatus,       // ThreadStatus
  kEndian,       // 0 little, 1 big
  kTypeFlags,    // TypeFlags
};

// The writer's record views: the fields of a record it is not given whole.
struct OtherRootView {
  std::string_view description;
  uint64_t ptr = 0;
};
struct AllocStackView {
  uint64_t obj = 0;
  uint64_t size = 0;
  std::span<const uint64_t> pcs;
};

template <Kind K>
struct Layout;

#define LIBDUMP_LAYOUT(name) \
  template <>                \
  struct Layout<Kind::k##name> {
#define LIBDUMP_FIELDS template <class R, class V> static void Fields(R& r, V& v)

LIBDUMP_LAYOUT(Object)
  LIBDUMP_FIELDS {
    v.U("addr", r.addr, Show::kHex);
    v.U("type", r.type, Show::kHex);
    v.U("kind", r.kind, Show::kObjectKind, [](uint64_t k) {
      return k > kObjChan ? "kind: expected 0, 1 or 2, got " + std::to_string(k) : std::string();
    });
    v.U("size", r.size, Show::kPayloadSize);
  }
};

LIBDUMP_LAYOUT(Eof)
  LIBDUMP_FIELDS {}
};

LIBDUMP_LAYOUT(StackRoot)
  LIBDUMP_FIELDS {
    v.U("addr", r.addr, Show::kHex);
    v.U("rootptr", r.ptr, Show::kHex);
    v.U("frame", r.frame, Show::kHex);
  }
};

LIBDUMP_LAYOUT(DataRoot)
  LIBDUMP_FIELDS {
    v.U("addr", r.addr, Show::kHex);
    v.U("rootptr", r.ptr, Show::kHex);
  }
};

LIBDUMP_LAYOUT(OtherRoot)
  LIBDUMP_FIELDS {
    v.Str("description", r.description);
    v.U("rootptr", r.ptr, Show::kHex);
  }
};

LIBDUMP_LAYOUT(Type)
  LIBDUMP_FIELDS {
    v.U("addr", r.addr, Show::kHex);
    v.U("size", r.size, Show::kDec);
    v.Str("name", r.name);
    v.Bool("efaceptr", r.eface_ptr);
    v.List("nfields", "fields", "field ", r.fields, [](auto& v, auto& f, auto* prev) {
      v.U("field kind", f.kind, Show::kFieldKind);
      v.U("field offset", f.offset, Show::kDec, [prev](uint64_t o) {
        return prev != nullptr && o <= prev->offset
                   ? "field offset " + std::to_string(o) + " does not increase"
                   : std::string();
      });
    });
  }
};

LIBDUMP_LAYOUT(Goroutine)
  LIBDUMP_FIELDS {
    v.U("addr", r.addr, Show::kHex);
    v.U("tos", r.tos, Show::kHex);
    v.U("goid", r.goid, Show::kDec);
    v.U("gopc", r.gopc, Show::kHex);
    v.U("status", r.status, Show::kStatus);
    v.Bool("issystem", r.is_system);
    v.Bool("isbackground", r.is_background);
    v.U("waitsince", r.wait_since, Show::kDec);
    v.Str("waitreason", r.wait_reason);
  }
};

LIBDUMP_LAYOUT(Frame)
  LIBDUMP_FIELDS {
    v.U("sp", r.sp, Show::kHex);
    v.U("parent", r.parent, Show::kHex);
    v.U("entry", r.entry, Show::kHex);
    v.U("pc", r.pc, Show::kHex);
    v.Str("name", r.name);
  }
};

LIBDUMP_LAYOUT(Params)
  LIBDUMP_FIELDS {
    v.U("endian", r.big_endian, Show::kEndian,
        [](uint64_t e) { return e > 1 ? std::string("endian: expected 0 or 1") : std::string(); });
    v.U("ptrsize", r.ptr_size, Show::kDec, [](uint64_t p) {
      return p != 4 && p != 8 ? "ptrsize: expected 4 or 8, got " + std::to_string(p) : std::string();
    });
    v.U("hchansize", r.hchan_size, Show::kDec);
    v.U("heapstart", r.heap_start, Show::kHex);
    v.U("heapend", r.heap_end, Show::kHex, [&r](uint64_t end) {
      return end < r.heap_start ? std::string("heapend: below heapstart") : std::string();
    });
  }
};

LIBDUMP_LAYOUT(Finalizer)
  LIBDUMP_FIELDS {
    v.U("obj", r.obj, Show::kHex);
    v.U("funcval", r.funcval, Show::kHex);
    v.U("code", r.code, Show::kHex);
    v.U("fint", r.fint, Show::kHex);
    v.U("ot", r.ot, Show::kHex);
  }
};

LIBDUMP_LAYOUT(Itab)
  LIBDUMP_FIELDS {
    v.U("addr", r.addr, Show::kHex);
    v.U("ptr", r.ptr, Show::kDec);
  }
};

// --- Extensions -----------------------------------------------------------

LIBDUMP_LAYOUT(TypeFields)
  LIBDUMP_FIELDS {
    v.U("type", r.type, Show::kHex);
    v.List("nfields", "fields", "field ", r.fields, [](auto& v, auto& f, auto*) {
      v.U("field offset", f.offset, Show::kDec);
      v.U("field kind", f.kind, Show::kFieldKind);
      v.U("field size", f.size, Show::kDec);
      v.Str("field name", f.name);
    });
  }
};

LIBDUMP_LAYOUT(TypeInfo)
  LIBDUMP_FIELDS {
    v.U("type", r.type, Show::kHex);
    v.U("flags", r.flags, Show::kTypeFlags);
    v.U("vtable", r.vtable, Show::kHex);
    v.U("elemtype", r.elem_type, Show::kHex);
    v.U("elemsize", r.elem_size, Show::kDec);
  }
};

LIBDUMP_LAYOUT(ThreadInfo)
  LIBDUMP_FIELDS {
    v.U("goroutine", r.goroutine, Show::kHex);
    v.U("tid", r.tid, Show::kDec);
    v.Str("name", r.name);
  }
};

LIBDUMP_LAYOUT(MemStats)
  LIBDUMP_FIELDS {
    v.List("nstats", "stats", "stat ", r.stats, [](auto& v, auto& s, auto*) {
      v.Str("stat name", s.name);
      v.U("stat value", s.value, Show::kDec);
    });
  }
};

LIBDUMP_LAYOUT(Module)
  LIBDUMP_FIELDS {
    v.U("start", r.start, Show::kHex);
    v.U("end", r.end, Show::kHex);
    v.U("offset", r.file_offset, Show::kHex);
    v.Str("path", r.path);
    v.Str("buildid", r.build_id);
  }
};

LIBDUMP_LAYOUT(AllocStack)
  LIBDUMP_FIELDS {
    v.U("obj", r.obj, Show::kHex);
    v.U("size", r.size, Show::kDec);
    v.List("npcs", "pcs", "", r.pcs, [](auto& v, auto& pc, auto*) { v.U("pc", pc, Show::kHex); });
  }
};

#undef LIBDUMP_FIELDS
#undef LIBDUMP_LAYOUT

// Calls f(std::integral_constant<Kind, K>{}, r.member) for the member that
// r.kind names; nothing for a kind outside the list.
template <class R, class F>
  requires std::is_same_v<std::remove_const_t<R>, Record>
void VisitRecord(R& r, F&& f) {
  switch (r.kind) {
#define LIBDUMP_FORMAT_VISIT(name, number, member, text) \
  case Kind::k##name:                                    \
    f(std::integral_constant<Kind, Kind::k##name>{}, r.member); \
    return;
    LIBDUMP_FORMAT_RECORD_KINDS(LIBDUMP_FORMAT_VISIT)
#undef LIBDUMP_FORMAT_VISIT
  }
}

}  // namespace libdump::format
