// The Go types and global variables of one Go program, as its DWARF
// describes them (dwarf_loader.h fills the table; tests build it by hand),
// and what a pointer-sized word at an offset of a typed value points to.
// No libdw here: the propagation over a heap dump (classplan's go_typing)
// reads only this table.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace libdump::godwarf {

inline constexpr uint32_t kNoType = UINT32_MAX;

enum class GoKind : uint8_t {
  kOther,    // a size and nothing known inside (no pointers)
  kBool, kInt, kUint, kFloat, kComplex,
  kPointer,  // elem: the pointee (kNoType: unsafe.Pointer)
  kStruct,   // members
  kArray,    // elem, count
  kSlice,    // elem: the element; the header is {array, len, cap}
  kString,   // {str, len}; the bytes are an array of uint8
  kIface,    // {tab, data}: a non-empty interface
  kEface,    // {_type, data}: interface{}
  kMap,      // elem: the runtime's hash table struct (hash<K,V>) the word points to
  kChan,     // elem: the runtime's channel struct (hchan<T>) the word points to
  kFunc,     // a pointer to a closure, whose type DWARF does not give
  kTypedef,  // elem: the type it names (resolved by GoProgram::Resolve)
};

struct GoMember {
  std::string name;
  uint64_t offset = 0;
  uint32_t type = kNoType;
};

struct GoType {
  std::string name;  // Go syntax: "main.node", "*main.node", "[]int", "map[string]int"
  uint64_t size = 0;
  GoKind kind = GoKind::kOther;
  uint32_t elem = kNoType;
  uint64_t count = 0;  // kArray
  std::vector<GoMember> members;  // kStruct, increasing offset
};

struct GoGlobal {
  std::string name;
  uint64_t addr = 0;
  uint32_t type = kNoType;
};

// What the pointer word at an offset of a typed value points to.
struct WordTarget {
  enum What : uint8_t {
    kNothing,    // not a pointer, or one to memory of no known type (unsafe.Pointer, a closure, an itab)
    kValue,      // an object holding one `type` (an array type: its elements)
    kElements,   // an object holding `type` repeated (a slice's or string's backing array)
    kIfaceData,  // an interface's data word: its type is in the word before (iface: an itab, eface: a type)
    kEfaceData,
  };
  What what = kNothing;
  uint32_t type = kNoType;
};

class GoProgram {
 public:
  explicit GoProgram(unsigned ptr_size = 8);

  uint32_t Add(GoType t);
  GoType& mutable_type(uint32_t i) { return types_[i]; }
  const GoType& type(uint32_t i) const { return types_[i]; }
  size_t type_count() const { return types_.size(); }
  // Follows typedefs (a bounded number: a cycle of typedefs ends at kNoType).
  uint32_t Resolve(uint32_t t) const;
  // The type uint8, for strings' bytes (added when the DWARF has none).
  uint32_t Byte();

  void AddGlobal(GoGlobal g) { globals_.push_back(std::move(g)); }
  // The runtime's type descriptor at `addr` (itabs and interface{} words name
  // types by it) is DWARF type `t`.
  void AddRuntimeType(uint64_t addr, uint32_t t);
  // Sorts the globals; call once all are added.
  void Finish();

  const std::vector<GoGlobal>& globals() const { return globals_; }
  // The global whose value holds `addr`, or nullptr.
  const GoGlobal* GlobalAt(uint64_t addr) const;
  uint32_t RuntimeType(uint64_t addr) const;
  size_t runtime_type_count() const { return runtime_types_.size(); }
  // A local variable or parameter of the function starting at `entry` that
  // lives at CFA + cfa_offset while the pc is in [lo, hi) (Go's location
  // lists: DW_OP_fbreg, its frame base DW_OP_call_frame_cfa).
  void AddLocal(uint64_t entry, uint64_t lo, uint64_t hi, int64_t cfa_offset, uint32_t type);
  // The local of the function at `entry`, stopped at `pc`, whose value holds
  // CFA + cfa_offset: its type, and the offset inside it in *inner; kNoType
  // when none does.
  uint32_t LocalAt(uint64_t entry, uint64_t pc, int64_t cfa_offset, uint64_t* inner) const;
  size_t local_count() const { return local_count_; }

  // Functions by name, from the symbol table: a dump's frames name theirs
  // with their entry addresses, which must match.
  void AddFunction(std::string name, uint64_t entry) { functions_.try_emplace(std::move(name), entry); }
  // The entry address of the function named `name`, or 0.
  uint64_t FunctionEntry(const std::string& name) const;
  size_t function_count() const { return functions_.size(); }
  unsigned ptr_size() const { return ptr_; }

  // Offsets of the pointer words of a value of type t, from `base`, as Go's
  // garbage collector sees them (pointers, maps, channels, funcs, a string's
  // and a slice's first word, an interface's data word). False, with `out`
  // cut short, when there are more than `limit`.
  bool PointerWords(uint32_t t, uint64_t base, std::vector<uint64_t>& out, size_t limit) const;
  // What the pointer word at `offset` inside a value of type t points to.
  WordTarget TargetAt(uint32_t t, uint64_t offset) const;
  // Whether an interface holding a t stores it in its data word itself
  // (pointer-shaped types) rather than pointing to a copy.
  bool DirectIface(uint32_t t) const;

 private:
  bool PointerWordsAt(uint32_t t, uint64_t base, std::vector<uint64_t>& out, size_t limit, int array_depth) const;

  unsigned ptr_;
  std::vector<GoType> types_;
  std::vector<GoGlobal> globals_;
  std::unordered_map<uint64_t, uint32_t> runtime_types_;
  uint64_t runtime_lo_ = UINT64_MAX, runtime_hi_ = 0;  // most words are out of this range: no hash
  std::unordered_map<std::string, uint64_t> functions_;
  struct LocalSlot {
    uint64_t lo, hi;
    int64_t cfa_offset;
    uint32_t type;
  };
  std::unordered_map<uint64_t, std::vector<LocalSlot>> locals_;  // function entry -> its stack slots
  size_t local_count_ = 0;
  uint32_t byte_ = kNoType;
};

}  // namespace libdump::godwarf
