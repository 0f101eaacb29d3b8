// What a typed C++ value points to: given a type from a module's DWARF
// (cxx_types.h) and the value's bytes, the pointers to follow, each with the
// type and the number of elements at its target (docs/TYPING.md, "DWARF (rule 2)").
//
// Plain pointers and references give their pointee; libstdc++'s containers
// (GCC 12, x86-64 layouts, recognised by their DWARF names and read through
// their members' names and their own template arguments) give their heap
// parts:
//
//   std::basic_string   the heap buffer (capacity + 1 characters) unless _M_p
//                       points to the string's local buffer
//   std::vector         the body: (finish - start) / sizeof(T) elements of T
//   std::map, set, ...  every _Rb_tree_node<V>, from the header's root through
//                       left and right (at most _M_node_count)
//   std::list           every _List_node<T>, from the header (at most _M_size)
//   std::forward_list   every _Fwd_list_node<T>
//   std::unordered_*    the bucket array (_M_bucket_count pointers) and every
//                       _Hash_node<V, cache>, from _M_before_begin (at most
//                       _M_element_count)
//   std::deque          the map (_M_map_size pointers) and each block between
//                       the start and finish iterators' nodes, of
//                       max(1, 512 / sizeof(T)) elements
//   std::function       the heap-stored functor, when the manager names its type
//                       (_Function_handler<Sig, F>::_M_manager) and F is larger
//                       than the local storage (16 bytes)
//   __aligned_membuf<T>, __aligned_buffer<T>  (node and make_shared storage)
//                       a T inline
//
// and abseil's swiss tables (absl::container_internal::raw_hash_set, read
// through its members ctrl_, slots_ and capacity_): the slot array slots_
// points at, inside the allocation that starts at ctrl_, its full slots
// (control byte >= 0) expanded; a map_slot_type union through its `value`.
// abseil's btree_node<P> (no members in DWARF: the layout abseil's Layout
// gives it, from its nested slot_type and P's target node size): its live
// values, and an internal node's children, each carrying the links its own
// payload must prove (Reach::parent_link) before it is named.
// Protocol Buffers' google::protobuf::Map<K, V>::InnerMap (table_, num_buckets_):
// the table's num_buckets_ entries, each list's InnerMap::Node chain.
//
// A union is followed only when a member of its enclosing struct is an enum
// whose enumerators are named like the union's members (a discriminator:
// nlohmann::json's m_type / m_value); void* never.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cxx_types.h"

namespace libdump::typing {

// Reads the process's memory as the dump holds it.
class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  // The n bytes at addr, false when the dump does not hold them all.
  virtual bool Read(uint64_t addr, void* out, size_t n) const = 0;
  bool Word(uint64_t addr, uint64_t* out) const { return Read(addr, out, 8); }
};

// One pointer to follow.
struct Reach {
  enum Naming : uint8_t {
    kValue,         // one `type`
    kArray,         // `count` elements of `type`: "T[]"
    kStringBuffer,  // a std::basic_string's heap buffer of `count` characters
  };
  uint64_t addr = 0;
  CxxProgram* program = nullptr;
  uint32_t type = kNoCxxType;
  uint64_t count = 1;  // UINT64_MAX with kArray: not known (a char* to a C string)
  Naming naming = kValue;
  bool leaf = false;  // named but not expanded (bucket arrays, deque maps: their words are followed by the owner)
  // The live elements' bytes, from addr (a vector's unused capacity, a
  // deque block's unused ends are not expanded).
  uint64_t live_begin = 0, live_end = UINT64_MAX;
  // A std::deque's map (T*[]): the blocks' element type, and the start and
  // finish iterators' _M_cur (where the first block's and the last block's
  // live elements begin and end).
  uint32_t deque_elem = kNoCxxType;
  uint64_t deque_first_cur = 0, deque_last_cur = 0;
  // An abseil swiss table's slots (addr, inside the allocation that starts
  // at its control bytes, `ctrl`): element i is live while ctrl byte i is
  // >= 0, up to the sentinel (-1) at index capacity. 0: none.
  uint64_t ctrl = 0;
  // A protobuf Map's table (void*[], `count` buckets): the node type of the
  // lists its entries head (an entry equal to its pair's other, b ^ 1, is a
  // tree, not followed).
  uint32_t map_node = kNoCxxType;
  // Named only once the target's own payload proves the link (an abseil
  // btree child): its first word is parent_link, its byte 8 parent_index.
  uint64_t parent_link = 0;
  int parent_index = -1;
};

// The class name a reach gives its target: the type's DWARF name, "T[]",
// or "std::string buffer".
std::string ReachName(const Reach& r);

class Expander {
 public:
  // functor_of(pc): the program and functor type of a std::function manager
  // at runtime address pc (in whichever module holds it).
  using FunctorOf = std::function<std::pair<CxxProgram*, uint32_t>(uint64_t pc)>;
  explicit Expander(FunctorOf functor_of);
  ~Expander();

  // Appends to `out` the pointers held by the value(s) a reach named at
  // what.addr (its elements whose bytes lie in [live_begin, live_end), read
  // through `mem`). `budget` bounds the work (slots, elements) and decreases;
  // the expansion ends when it reaches 0.
  void Expand(const Reach& what, const MemoryReader& mem, uint64_t& budget, std::vector<Reach>& out);

 private:
  struct Slot;
  struct Plan;
  const Plan& PlanOf(CxxProgram& program, uint32_t type);
  void BuildPlan(CxxProgram& program, uint32_t type, uint64_t base, int depth, Plan& plan);
  void Run(CxxProgram& program, const Plan& plan, uint64_t addr, const MemoryReader& mem, uint64_t& budget,
           std::vector<Reach>& out, int depth);

  FunctorOf functor_of_;
  std::unordered_map<const CxxProgram*, std::unordered_map<uint32_t, std::unique_ptr<Plan>>> plans_;
};

}  // namespace libdump::typing
