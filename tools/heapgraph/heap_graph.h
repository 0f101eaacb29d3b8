// The heap as a graph, built once from a libdump dump or an hprof and then
// only read (so any number of threads may query it).
//
// Objects are numbered 0..n-1 in file order; each array below has one entry
// per object (structure of arrays, so an object costs a few fixed words and
// nothing per field). References are a CSR: the targets of object i are
// out[out_begin[i] .. out_begin[i+1]), offsets of 64 bits packed to about 4
// bytes an object, indices of 4 or 8 bytes (index_array.h). Field values are
// not kept: an object page reads its one record again (ReadObject in
// object_detail.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "big_array.h"
#include "index_array.h"
#include "packed_u64.h"

namespace libdump::heapgraph {

enum class Source { kDump, kHprof };

// Which rule of the typing pass (tools/typing/typing.h) gave a class its
// name, strongest first. The loaders set kDump for every class the file names
// and kNothing for libdump's "(untyped)"; a smaller non-zero value is more
// trusted.
enum class NamedBy : uint8_t {
  kNothing = 0,  // untyped
  kDump = 1,     // the file's own type: the typed API, a vtable, an hprof class
  kDwarf = 2,    // the debug information of a module the dump names
  kShape = 3,    // a standard-library layout proved by its links
  kHolder = 4,   // the named object (or root) and offset that holds it
  kSize = 5,     // nothing names it: grouped by its size
};
// "untyped", "dump", "dwarf", "shape", "holder", "size".
const char* NamedByName(NamedBy n);

struct FieldInfo {
  std::string name;
  uint32_t offset = 0;  // in the instance data (hprof: of this class's own part)
  uint32_t size = 0;
  uint8_t type = 0;     // hprof basic type (2 object, 4 boolean, 5 char, ... 11 long)
  bool is_ref = false;
};

struct StaticInfo {
  std::string name;
  uint8_t type = 0;
  uint64_t value = 0;  // an object id for references
};

struct ClassInfo {
  std::string name;
  uint64_t id = 0;         // hprof class object id; dump type id
  Index super = kNone;     // class index
  Index object = kNone;    // the class's own node (hprof class objects)
  uint32_t instance_size = 0;
  bool platform = false;   // java.*, javax.*, sun.*, jdk.*, primitive arrays, libdump's synthetic classes
  bool weak = false;       // a java.lang.ref.Reference: its referent does not keep objects alive
  bool own = false;        // libdump's own memory (a dump type whose typeinfo has kTypeOwn)
  uint8_t array_type = 0;  // hprof: primitive array element type; 2 for object arrays
  std::vector<FieldInfo> fields;  // own fields, in data order
  std::vector<StaticInfo> statics;
  NamedBy named_by = NamedBy::kDump;
  // Filled by Analyze().
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t retained = 0;  // retained set of all instances together
};

struct Root {
  Index object = kNone;
  uint32_t kind = 0;      // index into HeapGraph::root_kinds
  Index thread = kNone;   // index into HeapGraph::threads
  std::string label;      // frame, description or slot address
  uint64_t slot = 0;      // dump stack and data roots: the address of the word holding the pointer
  uint64_t ptr = 0;       // dump roots: the pointer itself (it may point inside `object`)
  uint64_t frame_sp = 0;  // dump stack roots: the sp of the frame holding it
  std::string variable;   // the global holding a data root, when the typing pass found its symbol
  std::string module;     // the module (file name) whose data holds a data root
};

// A module (executable or shared library) mapped in the dumped process.
struct ModuleInfo {
  uint64_t start = 0, end = 0, file_offset = 0;
  std::string path;
  std::string build_id;  // lower-case hex, empty when unknown
};

// A stack frame of the dump, for typing its locals.
struct FrameInfo {
  uint64_t sp = 0, parent = 0, entry = 0, pc = 0;
  std::string name;
  uint32_t thread = UINT32_MAX;  // index into HeapGraph::threads
};

struct ThreadInfo {
  std::string name;
  uint64_t id = 0;         // dump: goroutine addr; hprof: thread serial
  Index object = kNone;    // hprof: the java.lang.Thread
  std::string state;
  std::vector<std::string> frames;  // top first
};

struct HeapGraph {
  Source source = Source::kDump;
  std::string path;
  std::string format;  // "go1.3 heap dump (zstd)", "JAVA PROFILE 1.0.2, 8-byte ids"
  uint32_t id_size = 8;  // hprof ids; a dump's pointer size
  bool go = false;  // a Go runtime's dump: classes are synthetic (size and pointer offsets)

  std::vector<ClassInfo> classes;
  std::vector<std::string> root_kinds;
  std::vector<Root> roots;
  std::vector<ThreadInfo> threads;
  std::vector<Index> finalizable;  // objects with a finalizer (dump) or a pending Finalizer (hprof)
  uint64_t dropped_roots = 0;      // roots naming no object
  uint64_t dangling = 0;           // references to no object (hprof ids; dump words that looked like pointers are not counted)
  // libdump's own memory (its dump writer, symbolizer, buffers: objects of
  // types flagged kTypeOwn, docs/FORMAT.md). Left out of the graph by the
  // loader, and only counted here, unless include_own is set before loading:
  // then its objects are in, one class per component, each a root of its
  // own (root kind "libdump"), and the counts are the same.
  bool include_own = false;
  uint64_t own_objects = 0;
  uint64_t own_bytes = 0;
  bool big_endian = false;         // a dump's byte order
  std::vector<ModuleInfo> modules;  // dump module records
  std::vector<FrameInfo> frames;    // dump frame records, by increasing sp

  // Per object.
  PackedU64 ids;                 // address or hprof id (4 bytes each when in order)
  BigArray<uint32_t> cls;     // class index
  BigArray<uint32_t> size32;  // shallow bytes; UINT32_MAX: see big_sizes
  std::unordered_map<Index, uint64_t> big_sizes;
  std::unordered_map<Index, uint64_t> elements;  // element counts the typing pass found (arrays of a named type)
  PackedU64 where;               // offset of the object's record, for ReadObject (4 bytes each)
  // The width of every IndexArray below: 8 bytes from 2^32 - 2 objects on
  // (WideFor), or when set before the objects are added (tests run the wide
  // path on small graphs so).
  bool wide = false;
  PackedU64 out_begin;  // n + 1 offsets into out (4 bytes each while they grow slowly)
  IndexArray out;
  BigArray<uint64_t> weak_edges;  // bit per entry of `out`: a Reference's referent
  IndexArray by_id;      // object indices in increasing id; empty when file order is id order

  // Allocation stacks (dump: allocstack records; hprof: traces of objects
  // that name one). stack_of maps an object to an index of stacks.
  std::vector<std::vector<std::string>> stacks;
  std::unordered_map<Index, uint32_t> stack_of;

  // Filled by Analyze().
  IndexArray idom;       // kSuperRoot for objects only the roots dominate, kNone unreachable
  BigArray<uint64_t> retained;
  IndexArray path_parent;  // BFS from the roots over strong references; kSuperRoot at a root
  IndexArray top_retainers;  // children of the super root, most retained first
  uint64_t reachable_bytes = 0;
  uint64_t total_bytes = 0;
  uint64_t reachable_objects = 0;

  size_t size() const { return ids.size(); }
  Index ById(size_t k) const { return by_id.empty() ? static_cast<Index>(k) : by_id[k]; }
  uint64_t Size(Index i) const { return size32[i] != UINT32_MAX ? size32[i] : big_sizes.at(i); }
  IndexSpan Out(Index i) const { return out.span(out_begin[i], out_begin[i + 1]); }
  bool WeakEdge(uint64_t e) const { return weak_edges[e >> 6] >> (e & 63) & 1; }
  // The object with this id, or kNone.
  Index Find(uint64_t id) const;
  const std::string& ClassName(Index i) const { return classes[cls[i]].name; }
  // Whether `sub` is `base` or one of its subclasses.
  bool IsSubclass(Index sub, Index base) const;
  // Bytes of memory the graph itself holds.
  uint64_t MemoryBytes() const;
};

// Appends objects and references in file order. Pass 1 adds every object
// (AddObject) and FinishObjects() sorts the ids; pass 2 adds the references
// of each object in the same order (BeginEdges(i), then Edge...).
// FinishObjects chooses the width of the index arrays by the object count;
// an object with 2^32 or more references widens them too.
class GraphBuilder {
 public:
  explicit GraphBuilder(HeapGraph& g) : g_(g) {}
  Index AddObject(uint64_t id, uint32_t cls, uint64_t size, uint64_t where);
  // Sorts the ids; throws std::runtime_error naming a duplicate id.
  void FinishObjects();
  // Start of object i's references (objects in order, none skipped).
  void BeginEdges(Index i);
  void Edge(Index to, bool weak = false);
  void FinishEdges();

 private:
  HeapGraph& g_;
  Index next_ = 0;
  uint64_t begin_ = 0;  // where the current object's references start in out
};

// Resolves a pointer to the object whose [id, id + size) holds it (dump
// pointers may point inside an object), or kNone.
Index FindContaining(const HeapGraph& g, uint64_t ptr);

}  // namespace libdump::heapgraph
