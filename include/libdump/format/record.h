// The record model of a heap dump: one plain struct per record kind, and
// each kind's fields on the wire, written once (Layout, at the end).
//
// Readers of every dialect (libdump's own "go1.3 heap dump" and, later, the
// dumps real Go runtimes write) decode into these structs, so consumers such as
// readdump and dumptohprof never see wire details. Strings and lists are owned
// and reused from record to record by the reader, so steady-state parsing does
// not allocate. Object payloads are not part of the model: they are copied
// straight from memory by the writer and streamed by the reader.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace libdump::format {

inline constexpr std::string_view kHeader = "go1.3 heap dump\n";

// Every record kind of the go1.3 format, once: X(Name, wire number, Record
// member, readdump's name). 1..12 come from the seed; 13.. are libdump
// extensions (docs/FORMAT.md) that a seed-only dump never contains. The kind
// enum, Record's members and KindName() are generated from this list, and
// Layout<Kind> (below) gives each kind's fields; a new kind is a line here,
// its struct and its layout.
#define LIBDUMP_FORMAT_RECORD_KINDS(X)              \
  X(Object, 1, object, "object")                    \
  X(Eof, 3, eof, "eof")                             \
  X(StackRoot, 4, stack_root, "stackroot")          \
  X(DataRoot, 5, data_root, "dataroot")             \
  X(OtherRoot, 6, other_root, "otherroot")          \
  X(Type, 7, type, "type")                          \
  X(Goroutine, 8, goroutine, "goroutine")           \
  X(Frame, 9, frame, "frame")                       \
  X(Params, 10, params, "params")                   \
  X(Finalizer, 11, finalizer, "finalizer")          \
  X(Itab, 12, itab, "itab")                         \
  X(TypeFields, 13, type_fields, "typefields")      \
  X(TypeInfo, 14, type_info, "typeinfo")            \
  X(ThreadInfo, 15, thread_info, "threadinfo")      \
  X(MemStats, 16, mem_stats, "memstats")            \
  X(Module, 17, module, "module")                   \
  X(AllocStack, 18, alloc_stack, "allocstack")

enum class Kind : uint64_t {
#define LIBDUMP_FORMAT_KIND_ENUM(name, number, member, text) k##name = number,
  LIBDUMP_FORMAT_RECORD_KINDS(LIBDUMP_FORMAT_KIND_ENUM)
#undef LIBDUMP_FORMAT_KIND_ENUM
};
inline constexpr uint64_t kFirstExtensionKind = 13;
inline constexpr uint64_t kLastKind = [] {
  uint64_t last = 0;
#define LIBDUMP_FORMAT_KIND_MAX(name, number, member, text) last = number > last ? number : last;
  LIBDUMP_FORMAT_RECORD_KINDS(LIBDUMP_FORMAT_KIND_MAX)
#undef LIBDUMP_FORMAT_KIND_MAX
  return last;
}();

// Lower-case record name as used by readdump ("object", "stackroot", ...);
// "unknown" for anything else.
const char* KindName(Kind k);
inline bool IsExtension(Kind k) { return static_cast<uint64_t>(k) >= kFirstExtensionKind; }

// Object kinds (ObjectRecord::kind).
enum ObjectKind : uint64_t { kObjRegular = 0, kObjArray = 1, kObjChan = 2 };

// Seed field kinds (TypeRecord::fields). Only kFieldPtr occurs in C++ dumps;
// the others are kept so Go dumps round-trip.
enum FieldKind : uint64_t {
  kFieldPtr = 0, kFieldString = 1, kFieldSlice = 2, kFieldIface = 3, kFieldEface = 4,
  // Extension field kinds (TypeFieldsRecord only): scalar data of NamedField::size bytes.
  kFieldInt = 16, kFieldUint = 17, kFieldFloat = 18, kFieldBool = 19, kFieldChar = 20,
  kFieldBytes = 21,
};

// Goroutine (thread) status.
enum ThreadStatus : uint64_t { kStatusIdle = 0, kStatusRunnable = 1, kStatusRunning = 2,
                               kStatusSyscall = 3, kStatusWaiting = 4 };

// TypeInfoRecord::flags.
enum TypeFlags : uint64_t {
  kTypeConservative = 1,  // objects carry no layout: scan every aligned word
  kTypePolymorphic = 2,   // named from a vtable's RTTI; vtable is that vtable
  kTypeArray = 4,         // elem_type/elem_size describe the elements
  kTypeOwn = 8,           // libdump's own memory (the dump writer, symbolizer, ...), not the program's
};

struct EofRecord {
  bool operator==(const EofRecord&) const = default;
};

struct ObjectRecord {
  uint64_t addr = 0;
  uint64_t type = 0;
  uint64_t kind = kObjRegular;
  uint64_t size = 0;  // payload bytes that follow
  bool operator==(const ObjectRecord&) const = default;
};

struct StackRootRecord {
  uint64_t addr = 0;   // where the pointer was found
  uint64_t ptr = 0;    // what it points to
  uint64_t frame = 0;  // sp of the frame holding it
  // Go dumps: the word before addr in its frame (DataRootRecord::before says
  // why). Not on libdump's wire (Layout below).
  uint64_t before = 0;
  bool operator==(const StackRootRecord&) const = default;
};

struct DataRootRecord {
  uint64_t addr = 0;
  uint64_t ptr = 0;
  // Go dumps: the word before addr in its segment. Go's bitmaps do not mark
  // an interface's itab or type word, so this is how dumptohprof --binary
  // learns the type behind an interface's data word. Not on libdump's wire
  // (Layout below).
  uint64_t before = 0;
  bool operator==(const DataRootRecord&) const = default;
};

struct OtherRootRecord {
  std::string description;
  uint64_t ptr = 0;
  bool operator==(const OtherRootRecord&) const = default;
};

struct Field {
  uint64_t kind = kFieldPtr;
  uint64_t offset = 0;
  bool operator==(const Field&) const = default;
};

struct TypeRecord {
  uint64_t addr = 0;
  uint64_t size = 0;
  std::string name;
  bool eface_ptr = false;
  std::vector<Field> fields;  // increasing offset
  bool operator==(const TypeRecord&) const = default;
};

struct GoroutineRecord {
  uint64_t addr = 0;  // thread identifier; frames and thread info refer to it
  uint64_t tos = 0;   // sp of the top frame
  uint64_t goid = 0;  // kernel tid for C++ threads
  uint64_t gopc = 0;  // pc of the start routine
  uint64_t status = kStatusIdle;
  bool is_system = false;
  bool is_background = false;
  uint64_t wait_since = 0;
  std::string wait_reason;
  bool operator==(const GoroutineRecord&) const = default;
};

struct FrameRecord {
  uint64_t sp = 0;
  uint64_t parent = 0;  // sp of the caller's frame, 0 at the bottom
  uint64_t entry = 0;
  uint64_t pc = 0;
  std::string name;
  // Bytes of the frame from sp up, when the dump says (Go dumps carry each
  // frame's contents); 0 otherwise. Not on libdump's wire (Layout below).
  uint64_t size = 0;
  bool operator==(const FrameRecord&) const = default;
};

struct ParamsRecord {
  uint64_t big_endian = 0;
  uint64_t ptr_size = 8;
  uint64_t hchan_size = 0;
  uint64_t heap_start = 0;
  uint64_t heap_end = 0;
  bool operator==(const ParamsRecord&) const = default;
};

struct FinalizerRecord {
  uint64_t obj = 0;
  uint64_t funcval = 0;
  uint64_t code = 0;
  uint64_t fint = 0;
  uint64_t ot = 0;
  bool operator==(const FinalizerRecord&) const = default;
};

struct ItabRecord {
  uint64_t addr = 0;
  uint64_t ptr = 0;  // 1: the data word of an interface with this itab is a pointer
  // Go dumps from go1.4 on: the address of the itab's type (go1.7: the type
  // stored in the interface), whose runtime descriptor a Go program's DWARF
  // names (dumptohprof --binary); 0 otherwise. Not on libdump's wire (Layout below).
  uint64_t type = 0;
  bool operator==(const ItabRecord&) const = default;
};

// --- Extensions -----------------------------------------------------------

struct NamedField {
  uint64_t offset = 0;
  uint64_t kind = kFieldPtr;  // FieldKind
  uint64_t size = 0;          // bytes
  std::string name;
  bool operator==(const NamedField&) const = default;
};

// Every field of a type, pointer or not, with its name.
struct TypeFieldsRecord {
  uint64_t type = 0;
  std::vector<NamedField> fields;  // increasing offset
  bool operator==(const TypeFieldsRecord&) const = default;
};

struct TypeInfoRecord {
  uint64_t type = 0;
  uint64_t flags = 0;      // TypeFlags
  uint64_t vtable = 0;     // kTypePolymorphic: the vtable address (also an itab record)
  uint64_t elem_type = 0;  // kTypeArray: element type, 0 for a scalar element
  uint64_t elem_size = 0;  // kTypeArray: element size in bytes
  bool operator==(const TypeInfoRecord&) const = default;
};

struct ThreadInfoRecord {
  uint64_t goroutine = 0;  // GoroutineRecord::addr
  uint64_t tid = 0;
  std::string name;
  bool operator==(const ThreadInfoRecord&) const = default;
};

struct MemStat {
  std::string name;
  uint64_t value = 0;
  bool operator==(const MemStat&) const = default;
};

struct MemStatsRecord {
  std::vector<MemStat> stats;
  bool operator==(const MemStatsRecord&) const = default;
};

// One executable mapping of a loaded module, for symbolising pcs offline.
struct ModuleRecord {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  std::string path;
  std::string build_id;  // lower-case hex, empty when unknown
  bool operator==(const ModuleRecord&) const = default;
};

// Where a sampled live object was allocated.
struct AllocStackRecord {
  uint64_t obj = 0;
  uint64_t size = 0;  // requested bytes
  std::vector<uint64_t> pcs;  // innermost first
  bool operator==(const AllocStackRecord&) const = default;
};

// A decoded record: `kind` says which member is valid. One struct rather than a
// std::variant so that the strings and vectors of each member keep their
// capacity from record to record.
struct Record {
  Kind kind = Kind::kEof;
  uint64_t offset = 0;  // byte offset of the record's kind varint in the (decompressed) stream
  // ObjectRecord object; EofRecord eof; StackRootRecord stack_root; ...
#define LIBDUMP_FORMAT_RECORD_MEMBER(name, number, member, text) name##Record member;
  LIBDUMP_FORMAT_RECORD_KINDS(LIBDUMP_FORMAT_RECORD_MEMBER)
#undef LIBDUMP_FORMAT_RECORD_MEMBER
};

// --- Wire layout ----------------------------------------------------------
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
