// The typing pass: names what holds memory in a heap that its file leaves
// partly untyped (C++ programs dumped through LD_PRELOAD), for every tool that
// opens a heap (readdump, heapview, dumptohprof) - docs/TYPING.md.
//
// Rules run in order of trust; each names only objects no stronger rule has
// named (Context::Name refuses the rest), so a weaker rule never overrides a
// stronger one. Type() first names the roots (NameRoots: data roots by the
// ELF object symbols of their module), then runs:
//   1. kDump    the dump's own types (typed API, vtable classes): set by the loader
//   2. kDwarf   DWARF of the modules the dump names       ApplyDwarfRule (dwarf_rule.h)
//   3. kShape   libstdc++ layouts proved by their links   ApplyShapeRule (shape_rule.cc)
//               and libstdc++'s exception pool at rest    ApplyEhPoolRule (eh_pool_rule.h)
//   4. kHolder  the holder's class and the holding offset ApplyHolderRule (holder_rule.cc)
//   5. kSize    what nothing names, grouped by size        ApplySizeRule (holder_rule.cc)
// A Go runtime's dump runs ApplyGoRule (go_rule.h, --binary) alone.
//
// Interface of a rule (e.g. `void ApplyDwarfRule(Context& ctx)`):
//   - ctx.graph(): the HeapGraph (objects by index in file order, ids,
//     sizes, edges, classes, roots with slot, ptr and frame_sp (variable and
//     module once NameRoots found the global), threads, frames, modules with
//     path, build-id, start/end/offset); ctx.options(): --binary / --debug-dir.
//   - contents: ctx.Scan(objects, fn) reads the payloads of the given objects
//     (ascending indices) in one forward pass over the file; ctx.ScanAll(fn)
//     every object's. Payload spans live only during fn. Nothing is kept per
//     object: a rule that needs a second look scans again (level by level),
//     never one ctx.Read(i) per object (a compressed dump has no random access).
//   - ctx.Word(data, off): the pointer-sized word at off in the dump's byte order.
//   - naming: c = ctx.Class("Foo", Rule::kDwarf) finds or creates the class
//     (fill ctx.graph().classes[c].fields / instance_size for object pages);
//     ctx.Name(i, c, Rule::kDwarf, elements) names object i when nothing at
//     least as strong named it (elements: the count of a T[] body, else 0).
//   - memory: at most ~8 bytes per object of its own (the pass's budget is 16).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "heap_graph.h"
#include "load.h"

namespace libdump::typing {

using heapgraph::HeapGraph;
using heapgraph::Index;
using heapgraph::kNone;
using Rule = heapgraph::NamedBy;

// "dump", "dwarf", "shape", "holder", "size", "untyped".
const char* RuleName(Rule r);
// The legend line of a rule, for class pages and --help.
const char* RuleLegend(Rule r);

struct Options {
  bool enabled = true;                  // false: the loader's classes only (--no-typing)
  std::vector<std::string> binaries;    // --binary FILE (repeatable): ELF files with symbols or DWARF
  std::vector<std::string> debug_dirs;  // --debug-dir DIR (repeatable): .build-id/xx/yyyy.debug trees
};

// What each rule named (objects and bytes), and the objects left untyped.
struct Stats {
  uint64_t objects[6] = {};  // by Rule value (0: untyped)
  uint64_t bytes[6] = {};
  uint64_t total_objects = 0, total_bytes = 0;
  uint64_t named_roots = 0;  // roots given a variable's name
  double seconds = 0;
};
// From the graph as it is now (each object counts under its class's rule).
Stats Measure(const HeapGraph& g);

class Context {
 public:
  // `progress` hears the rules' steps and their scans.
  Context(HeapGraph& g, const Options& o, const heapgraph::Progress& progress = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  HeapGraph& graph() { return g_; }
  const HeapGraph& graph() const { return g_; }
  const Options& options() const { return o_; }
  unsigned ptr_size() const { return g_.id_size == 4 ? 4 : 8; }

  // The rule that named object i (kNothing: untyped).
  Rule RuleOf(Index i) const { return g_.classes[g_.cls[i]].named_by; }
  // Whether the loader read object i word by word (it had no type then):
  // its references are then one per word that points into an object, in
  // the order of the words, whatever a rule has named it since.
  bool LoaderScanned(Index i) const { return i < scanned_.size() && scanned_[i]; }
  // The class called `name`, created with `rule` when there is none.
  uint32_t Class(std::string_view name, Rule rule);
  // Names object i as class `cls` unless a rule at least as strong already
  // named it; false then. `elements` > 0 records a T[] body's element count.
  bool Name(Index i, uint32_t cls, Rule rule, uint64_t elements = 0);

  using Visit = std::function<void(Index, std::span<const uint8_t>)>;
  // Calls fn(i, payload) for each object of `objects` (ascending), in one
  // forward pass over the file. Throws format::FormatError for a bad file.
  void Scan(std::span<const Index> objects, const Visit& fn);
  void ScanAll(const Visit& fn);
  // One object's payload (a new reader: for a few objects only).
  std::vector<uint8_t> Read(Index i);
  // The rule (or the part of one) running now, for the progress of its
  // scans: "typing: STEP" with the objects scanned of the scan's.
  void SetStep(const char* step) {
    step_ = step;
    progress_(step_, 0);
  }
  // Item `done` of the step's `total` is reached: a report every 2^16th.
  void Tick(uint64_t done, uint64_t total) {
    if ((done & 0xFFFF) == 0) progress_(step_, done, total);
  }

  // 0 past the end (inline: the shapes read every word of the heap).
  uint64_t Word(std::span<const uint8_t> data, size_t off) const {
    const unsigned w = ptr_size();
    if (off + w > data.size() || off + w < off) return 0;
    uint64_t v = 0;
    if (g_.big_endian) {
      for (unsigned k = 0; k < w; ++k) v = v << 8 | data[off + k];
    } else if (w == 8 && std::endian::native == std::endian::little) {
      std::memcpy(&v, data.data() + off, 8);
    } else {
      for (unsigned k = w; k-- > 0;) v = v << 8 | data[off + k];
    }
    return v;
  }

 private:
  HeapGraph& g_;
  const Options& o_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<bool> scanned_;
  heapgraph::Progress progress_;
  const char* step_ = "";
};

// Whether a field has no name of its own: the loader calls a field the dump
// does not name f<offset>.
inline bool UnnamedField(const heapgraph::FieldInfo& f) {
  return f.name.size() < 2 || (f.name[0] == 'f' && f.name.find_first_not_of("0123456789", 1) == std::string::npos);
}

// Runs the rules in order over a freshly loaded dump (hprofs and Go dumps are
// left as they are) and rewrites g's classes; before Analyze(). Deterministic;
// bounded work on hostile input; throws what the readers throw.
Stats Type(HeapGraph& g, const Options& o, const heapgraph::Progress& progress = {});

// What an index of a typed graph (heapgraph/index_cache.h) depends on besides
// the dump: the options, and each --binary and debug file's size and time.
std::string CacheSalt(const Options& o);

// Load, Type, Analyze: what the tools call to open a heap.
void Open(const std::string& path, HeapGraph& g, const Options& o, const heapgraph::Progress& progress = {},
          Stats* stats = nullptr);

// The rules (each in its own file).
void ApplyDwarfRule(Context& ctx);   // dwarf_rule.cc
void ApplyShapeRule(Context& ctx);   // shape_rule.cc
void ApplyHolderRule(Context& ctx);  // holder_rule.cc
void ApplySizeRule(Context& ctx);    // holder_rule.cc
// Data roots: the global (ELF object symbol) holding each one; stack roots:
// their frame. Returns how many got a variable's name.
uint64_t NameRoots(Context& ctx);    // root_names.cc

}  // namespace libdump::typing
