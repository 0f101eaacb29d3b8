#include "cxx_expand.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace libdump::typing {
namespace {

constexpr size_t kMaxSlots = 1 << 14;  // pointer slots of one type (larger: cut short)
constexpr int kMaxDepth = 32;          // members inside members
constexpr int kMaxMemberDepth = 8;     // FindMember's search
constexpr uint64_t kMaxCount = uint64_t{1} << 40;
constexpr uint64_t kMaxAlternatives = 256;  // a variant's alternatives walked to its index

// The link types of libstdc++'s nodes: a pointer of one of these types is a
// container's internal link (or an iterator), followed by the container
// itself with the node's real type.
bool IsLinkBase(std::string_view n) {
  return n == "std::_Rb_tree_node_base" || n == "std::__detail::_List_node_base" ||
         n == "std::__detail::_Hash_node_base" || n == "std::_Fwd_list_node_base" ||
         n == "std::__detail::_List_node_header";
}

// The offset of the first member called `name` in t, its bases and members
// (depth first, by offset), and its type.
bool FindMember(CxxProgram& p, uint32_t t, std::string_view name, uint64_t* off, uint32_t* type, int depth = 0) {
  if (t == kNoCxxType || depth > kMaxMemberDepth) return false;
  const CxxType& ty = p.type(t);
  if (ty.kind != CxxKind::kStruct && ty.kind != CxxKind::kUnion) return false;
  for (const CxxMember& m : ty.members) {
    if (m.name == name) {
      *off = m.offset;
      *type = m.type;
      return true;
    }
  }
  for (const CxxMember& m : ty.members) {
    uint64_t inner = 0;
    if (FindMember(p, m.type, name, &inner, type, depth + 1)) {
      *off = m.offset + inner;
      return true;
    }
  }
  return false;
}

uint32_t Arg(const CxxType& t, size_t i) { return i < t.template_types.size() ? t.template_types[i] : kNoCxxType; }

// The alignment the x86-64 ABI gives a type, from its members; 0 when a
// member's is not known (a function, a pointer to member), which keeps a
// layout computed from it from being used.
uint64_t AlignOf(CxxProgram& p, uint32_t t, int depth) {
  if (t == kNoCxxType || depth > kMaxMemberDepth) return 0;
  const CxxType& ty = p.type(t);
  switch (ty.kind) {
    case CxxKind::kBase:
    case CxxKind::kEnum:
      return ty.size != 0 && ty.size <= 16 && (ty.size & (ty.size - 1)) == 0 ? ty.size : 0;
    case CxxKind::kPointer:
      return p.ptr_size();
    case CxxKind::kArray:
      return AlignOf(p, ty.elem, depth + 1);
    case CxxKind::kStruct:
    case CxxKind::kUnion: {
      uint64_t a = 1;
      for (const CxxMember& m : ty.members) {
        const uint64_t ma = AlignOf(p, m.type, depth + 1);
        if (ma == 0) return 0;
        a = std::max(a, ma);
      }
      return a;
    }
    default:
      return 0;
  }
}

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The first pointer in t (depth first through its members and bases): a
// unique_ptr's, inside its tuple.
bool FirstPointer(CxxProgram& p, uint32_t t, int depth, uint64_t* off, uint32_t* type) {
  if (t == kNoCxxType || depth > kMaxMemberDepth) return false;
  const CxxType& ty = p.type(t);
  if (ty.kind != CxxKind::kStruct) return false;
  for (const CxxMember& m : ty.members) {
    if (m.type == kNoCxxType) continue;
    if (p.type(m.type).kind == CxxKind::kPointer) {
      *off = m.offset, *type = m.type;
      return true;
    }
    uint64_t inner = 0;
    if (FirstPointer(p, m.type, depth + 1, &inner, type)) {
      *off = m.offset + inner;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ReachName(const Reach& r) {
  if (r.program == nullptr || r.type == kNoCxxType) return "";
  const CxxType& t = r.program->type(r.type);
  switch (r.naming) {
    case Reach::kValue: return t.name;
    case Reach::kArray: return t.name + "[]";
    case Reach::kStringBuffer:
      return t.size == 1 ? "std::string buffer" : t.name == "wchar_t" ? "std::wstring buffer" : "std::basic_string<" + t.name + "> buffer";
  }
  return t.name;
}

struct Expander::Slot {
  enum Op : uint8_t {
    kPtr, kSelf, kString, kVector, kRbTree, kList, kFwdList, kHashtable, kDeque, kFunction, kTagged,
    kOptional, kVariant, kArrayPtr, kSwiss, kProtoMap, kBtree,
  };
  Op op;
  uint64_t off;     // of the value in the plan's type
  uint32_t a = kNoCxxType, b = kNoCxxType;  // types the op names
  uint64_t x = 0, y = 0, z = 0, w = 0;      // offsets the op reads, from off
  uint64_t u = 0, v = 0;
};

struct Expander::Plan {
  std::vector<Slot> slots;
  bool building = false;
};

Expander::Expander(FunctorOf functor_of) : functor_of_(std::move(functor_of)) {}
Expander::~Expander() = default;

const Expander::Plan& Expander::PlanOf(CxxProgram& program, uint32_t type) {
  auto& by_type = plans_[&program];
  auto it = by_type.find(type);
  if (it != by_type.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  Plan& ref = *plan;
  by_type.emplace(type, std::move(plan));
  ref.building = true;  // a type that holds itself (a corrupt file) reads as holding nothing more
  BuildPlan(program, type, 0, 0, ref);
  ref.building = false;
  return ref;
}

void Expander::BuildPlan(CxxProgram& p, uint32_t t, uint64_t base, int depth, Plan& plan) {
  if (t == kNoCxxType || depth > kMaxDepth || plan.slots.size() >= kMaxSlots) return;
  const CxxType& ty = p.type(t);
  auto add = [&](Slot s) {
    s.off = base;
    if (plan.slots.size() < kMaxSlots) plan.slots.push_back(s);
  };
  // Appends the plan of a member's type, shifted.
  auto inline_type = [&](uint32_t m, uint64_t at) {
    if (m == kNoCxxType) return;
    const Plan& sub = PlanOf(p, m);
    if (sub.building) return;
    for (const Slot& s : sub.slots) {
      if (plan.slots.size() >= kMaxSlots) return;
      Slot c = s;
      c.off += at;
      plan.slots.push_back(c);
    }
  };
  switch (ty.kind) {
    case CxxKind::kPointer: {
      if (ty.elem == kNoCxxType) return;  // void*
      const CxxType& target = p.type(ty.elem);
      if (target.kind == CxxKind::kOther || !target.complete || IsLinkBase(target.name)) return;
      if (target.kind != CxxKind::kArray && target.size == 0) return;
      return add({Slot::kPtr, 0, ty.elem});
    }
    case CxxKind::kArray: {
      if (ty.elem == kNoCxxType || ty.count == 0) return;
      const uint64_t es = p.type(ty.elem).size;
      if (es == 0) return;
      const Plan& sub = PlanOf(p, ty.elem);
      if (sub.building || sub.slots.empty()) return;
      for (uint64_t i = 0; i < ty.count && plan.slots.size() < kMaxSlots; ++i) inline_type(ty.elem, base + i * es);
      return;
    }
    case CxxKind::kStruct:
      break;
    case CxxKind::kUnion: {
      // abseil's map_slot_type<K, V>: `value` (pair<const K, V>), `mutable_value`
      // and `key` are the same bytes; the pair holds them all.
      if (ty.name.find("::container_internal::map_slot_type<") == std::string::npos) return;
      for (const CxxMember& m : ty.members) {
        if (m.name == "value") return inline_type(m.type, base + m.offset);
      }
      return;
    }
    default:
      return;
  }
  const std::string& n = ty.name;
  uint64_t o1 = 0, o2 = 0, o3 = 0, o4 = 0;
  uint32_t t1 = kNoCxxType, t2 = kNoCxxType;
  if (n.starts_with("std::__cxx11::basic_string<")) {
    if (FindMember(p, t, "_M_p", &o1, &t1) && FindMember(p, t, "_M_local_buf", &o2, &t2) &&
        FindMember(p, t, "_M_allocated_capacity", &o3, &t2) && Arg(ty, 0) != kNoCxxType) {
      add({Slot::kString, 0, Arg(ty, 0), kNoCxxType, o1, o2, o3});
    }
    return;
  }
  if (n.starts_with("std::_Vector_base<")) {
    if (FindMember(p, t, "_M_start", &o1, &t1) && FindMember(p, t, "_M_finish", &o2, &t1) && Arg(ty, 0) != kNoCxxType) {
      add({Slot::kVector, 0, Arg(ty, 0), kNoCxxType, o1, o2});
    }
    return;
  }
  if (n.starts_with("std::_Rb_tree<")) {
    const uint32_t v = Arg(ty, 1);
    if (v == kNoCxxType) return;
    const uint32_t node = p.FindType("std::_Rb_tree_node<" + p.type(v).name + ">");
    uint64_t left = 0, right = 0, parent = 0;
    if (node != kNoCxxType && FindMember(p, t, "_M_header", &o1, &t1) && FindMember(p, t, "_M_node_count", &o2, &t2) &&
        FindMember(p, node, "_M_left", &left, &t2) && FindMember(p, node, "_M_right", &right, &t2) &&
        FindMember(p, t1, "_M_parent", &parent, &t2)) {
      add({Slot::kRbTree, 0, node, kNoCxxType, o1 + parent, o2, left, right});
    }
    return;
  }
  if (n.starts_with("std::__cxx11::_List_base<") || n.starts_with("std::_List_base<")) {
    const uint32_t v = Arg(ty, 0);
    if (v == kNoCxxType) return;
    uint32_t node = p.FindType("std::_List_node<" + p.type(v).name + ">");
    if (node == kNoCxxType) node = p.FindType("std::__cxx11::_List_node<" + p.type(v).name + ">");
    uint64_t next = 0;
    if (node != kNoCxxType && FindMember(p, t, "_M_node", &o1, &t1) && FindMember(p, t, "_M_size", &o2, &t2) &&
        FindMember(p, node, "_M_next", &next, &t2)) {
      add({Slot::kList, 0, node, kNoCxxType, o1, o2, next});
    }
    return;
  }
  if (n.starts_with("std::_Fwd_list_base<")) {
    const uint32_t v = Arg(ty, 0);
    if (v == kNoCxxType) return;
    const uint32_t node = p.FindType("std::_Fwd_list_node<" + p.type(v).name + ">");
    uint64_t next = 0;
    if (node != kNoCxxType && FindMember(p, t, "_M_head", &o1, &t1) && FindMember(p, node, "_M_next", &next, &t2)) {
      add({Slot::kFwdList, 0, node, kNoCxxType, o1, next});
    }
    return;
  }
  if (n.starts_with("std::_Hashtable<")) {
    const uint32_t v = Arg(ty, 1);
    const uint32_t traits = Arg(ty, 9);
    if (v == kNoCxxType) return;
    std::vector<std::string> tries;
    if (traits != kNoCxxType && !p.type(traits).template_values.empty()) {
      tries.push_back(p.type(traits).template_values[0] ? "true" : "false");
    } else {
      tries = {"true", "false"};
    }
    uint32_t node = kNoCxxType;
    for (const std::string& c : tries) {
      if (node == kNoCxxType) node = p.FindType("std::__detail::_Hash_node<" + p.type(v).name + ", " + c + ">");
    }
    uint64_t nxt = 0, single = 0;
    uint32_t buckets_type = kNoCxxType;
    if (node != kNoCxxType && FindMember(p, t, "_M_buckets", &o1, &buckets_type) &&
        FindMember(p, t, "_M_bucket_count", &o2, &t2) && FindMember(p, t, "_M_before_begin", &o3, &t2) &&
        FindMember(p, t, "_M_element_count", &o4, &t2) && FindMember(p, t, "_M_single_bucket", &single, &t2) &&
        FindMember(p, node, "_M_nxt", &nxt, &t2) && buckets_type != kNoCxxType &&
        p.type(buckets_type).kind == CxxKind::kPointer) {
      Slot s{Slot::kHashtable, 0, node, p.type(buckets_type).elem, o1, o2, o3, o4};
      s.u = single;
      s.v = nxt;
      add(s);
    }
    return;
  }
  if (n.starts_with("std::_Deque_base<")) {
    const uint32_t v = Arg(ty, 0);
    uint64_t cur = 0, node = 0;
    uint32_t map_type = kNoCxxType, it_type = kNoCxxType;
    if (v != kNoCxxType && p.type(v).size != 0 && FindMember(p, t, "_M_map", &o1, &map_type) &&
        FindMember(p, t, "_M_map_size", &o2, &t2) && FindMember(p, t, "_M_start", &o3, &it_type) &&
        FindMember(p, t, "_M_finish", &o4, &t2) && FindMember(p, it_type, "_M_cur", &cur, &t2) &&
        FindMember(p, it_type, "_M_node", &node, &t2) && map_type != kNoCxxType &&
        p.type(map_type).kind == CxxKind::kPointer) {
      Slot s{Slot::kDeque, 0, v, p.type(map_type).elem, o1, o2, o3, o4};
      s.u = cur;
      s.v = node;
      add(s);
    }
    return;
  }
  // std::optional<T>: the value (a union member) only while engaged.
  if (n.starts_with("std::_Optional_payload_base<")) {
    uint32_t storage = kNoCxxType, value = kNoCxxType;
    uint64_t vo = 0;
    if (FindMember(p, t, "_M_payload", &o1, &storage) && FindMember(p, t, "_M_engaged", &o2, &t2) &&
        storage != kNoCxxType && FindMember(p, storage, "_M_value", &vo, &value) && value != kNoCxxType) {
      add({Slot::kOptional, 0, value, kNoCxxType, o2, o1 + vo});
    }
    return;
  }
  // std::variant<Ts...>: the alternative its index names (_M_u's _M_rest,
  // index times, then _M_first); the valueless index (all ones) names none.
  if (n.starts_with("std::__detail::__variant::_Variant_storage<")) {
    uint32_t u = kNoCxxType, index = kNoCxxType;
    if (FindMember(p, t, "_M_u", &o1, &u) && FindMember(p, t, "_M_index", &o2, &index) && u != kNoCxxType &&
        index != kNoCxxType) {
      const uint64_t is = p.type(index).size;
      if (is == 1 || is == 2 || is == 4 || is == 8) add({Slot::kVariant, 0, u, kNoCxxType, o2, o1, is});
    }
    return;
  }
  // std::unique_ptr<T[]>: an array of T whose length only the allocation
  // says; named T[], its elements not read (the allocation may be longer).
  if (n.starts_with("std::unique_ptr<") && Arg(ty, 0) != kNoCxxType && p.type(Arg(ty, 0)).kind == CxxKind::kArray) {
    const uint32_t elem = p.type(Arg(ty, 0)).elem;
    uint64_t at = 0;
    uint32_t ptr = kNoCxxType;
    if (elem != kNoCxxType && p.type(elem).size != 0 && FirstPointer(p, t, 0, &at, &ptr)) {
      add({Slot::kArrayPtr, 0, elem, kNoCxxType, at});
    }
    return;
  }
  // abseil's swiss table: its control bytes, then (in the same allocation) its slots.
  if (n.starts_with("absl::") && n.find("::container_internal::raw_hash_set<") != std::string::npos) {
    uint32_t ctrl = kNoCxxType, slots = kNoCxxType;
    if (FindMember(p, t, "ctrl_", &o1, &ctrl) && FindMember(p, t, "slots_", &o2, &slots) &&
        FindMember(p, t, "capacity_", &o3, &t2) && ctrl != kNoCxxType && slots != kNoCxxType &&
        p.type(ctrl).kind == CxxKind::kPointer && p.type(slots).kind == CxxKind::kPointer &&
        p.type(slots).elem != kNoCxxType && p.type(p.type(slots).elem).size != 0) {
      add({Slot::kSwiss, 0, p.type(slots).elem, kNoCxxType, o1, o2, o3});
    }
    return;
  }
  // protobuf's Map: a table of void* that head lists of InnerMap::Node (or trees).
  if (n.starts_with("google::protobuf::Map<") && n.ends_with(">::InnerMap")) {
    const uint32_t node = p.FindType(n + "::Node");
    uint32_t table = kNoCxxType;
    if (node != kNoCxxType && p.type(node).size != 0 && FindMember(p, t, "table_", &o1, &table) &&
        FindMember(p, t, "num_buckets_", &o2, &t2) && table != kNoCxxType && p.type(table).kind == CxxKind::kPointer &&
        p.type(table).elem != kNoCxxType) {
      add({Slot::kProtoMap, 0, node, p.type(table).elem, o1, o2});
    }
    return;
  }
  // abseil's btree node: DWARF gives it no data members. Its layout
  // (Layout<node*, [uint32_t generation,] field_type, slot_type, node*>, a
  // parameter pack DWARF does not spell out) places the parent; the bytes
  // position, start, finish and max_count; the slots; and in an internal
  // node (max_count 0) the children after kNodeSlots slots, the most whose
  // node fits the params' target size, at least 4. Read as built without
  // generations (abseil keeps them for sanitizer builds), field_type one byte.
  if (n.starts_with("absl::") && n.find("::container_internal::btree_node<") != std::string::npos) {
    const uint32_t slot = p.NestedType(t, "slot_type"), field = p.NestedType(t, "field_type");
    const uint32_t params = Arg(ty, 0);
    if (slot == kNoCxxType || field == kNoCxxType || params == kNoCxxType) return;
    const CxxType& pt = p.type(params);
    const uint64_t ss = p.type(slot).size, sa = AlignOf(p, slot, 0);
    if (ss == 0 || sa == 0 || p.type(field).size != 1 || pt.template_values.empty() || pt.template_values[0] <= 0 ||
        pt.template_values[0] > (1 << 16)) {
      return;
    }
    const uint64_t slots_at = AlignUp(8 + 4, sa), target = static_cast<uint64_t>(pt.template_values[0]);
    uint64_t node_slots = 0;
    while (node_slots < 255 && AlignUp(slots_at + (node_slots + 1) * ss, 8) <= target) ++node_slots;
    node_slots = std::max<uint64_t>(node_slots, 4);
    add({Slot::kBtree, 0, slot, t, slots_at, ss, AlignUp(slots_at + node_slots * ss, 8), node_slots});
    return;
  }
  if (n == "std::_Function_base") {
    if (FindMember(p, t, "_M_functor", &o1, &t1) && FindMember(p, t, "_M_manager", &o2, &t2)) {
      add({Slot::kFunction, 0, kNoCxxType, kNoCxxType, o1, o2});
    }
    return;
  }
  // Nodes: the links to the next nodes, as nodes of the same type (the
  // header's parent link and a list's last link point inside the container).
  const char* link[2] = {nullptr, nullptr};
  if (n.starts_with("std::_Rb_tree_node<")) {
    link[0] = "_M_left", link[1] = "_M_right";
  } else if (n.starts_with("std::_List_node<") || n.starts_with("std::__cxx11::_List_node<") ||
             n.starts_with("std::_Fwd_list_node<")) {
    link[0] = "_M_next";
  } else if (n.starts_with("std::__detail::_Hash_node<")) {
    link[0] = "_M_nxt";
  }
  for (const char* l : link) {
    if (l != nullptr && FindMember(p, t, l, &o1, &t1) && plan.slots.size() < kMaxSlots) {
      plan.slots.push_back({Slot::kSelf, base + o1, t});
    }
  }
  if (n.starts_with("__gnu_cxx::__aligned_membuf<") || n.starts_with("__gnu_cxx::__aligned_buffer<")) {
    return inline_type(Arg(ty, 0), base);
  }
  if (n.starts_with("std::_Bvector_base<")) return;  // words of bits
  // A discriminated union: an enum member whose enumerators name the union's members.
  const CxxMember* tag = nullptr;
  const CxxMember* uni = nullptr;
  for (const CxxMember& m : ty.members) {
    if (m.type == kNoCxxType) continue;
    const CxxKind k = p.type(m.type).kind;
    if (k == CxxKind::kEnum && tag == nullptr) tag = &m;
    if (k == CxxKind::kUnion && uni == nullptr) uni = &m;
  }
  bool tagged = false;
  if (tag != nullptr && uni != nullptr) {
    const CxxType& e = p.type(tag->type);
    const CxxType& u = p.type(uni->type);
    size_t named = 0;
    bool all = true;
    for (const CxxMember& um : u.members) {
      const bool found = std::any_of(e.enumerators.begin(), e.enumerators.end(),
                                     [&](const auto& en) { return en.first == um.name; });
      if (found) {
        ++named;
      } else if (um.type != kNoCxxType && p.type(um.type).kind == CxxKind::kPointer) {
        all = false;
      }
    }
    tagged = all && named > 0 && (e.size == 1 || e.size == 2 || e.size == 4 || e.size == 8);
    if (tagged) {
      Slot s{Slot::kTagged, 0, uni->type, tag->type, tag->offset, uni->offset, e.size};
      add(s);
    }
  }
  for (const CxxMember& m : ty.members) {
    if (m.type == kNoCxxType) continue;
    const CxxType& mt = p.type(m.type);
    if (mt.kind == CxxKind::kUnion) {
      // A union of one member always holds it (protobuf's `union { Impl_ _impl_; }`,
      // which keeps the fields from being constructed twice); others only
      // through a discriminator.
      if (mt.members.size() == 1 && mt.members[0].type != kNoCxxType) {
        const uint32_t only = mt.members[0].type;
        const uint64_t at = base + m.offset + mt.members[0].offset;
        inline_type(only, at);
      }
      continue;
    }
    inline_type(m.type, base + m.offset);
  }
}

void Expander::Run(CxxProgram& p, const Plan& plan, uint64_t addr, const MemoryReader& mem, uint64_t& budget,
                   std::vector<Reach>& out, int depth) {
  auto word = [&](uint64_t a) {
    uint64_t v = 0;
    return mem.Word(a, &v) ? v : 0;
  };
  // A count or a size: UINT64_MAX when the memory does not hold it (a
  // global's or a local's non-pointer words are not in the dump).
  auto count_at = [&](uint64_t a) {
    uint64_t v = 0;
    return mem.Word(a, &v) ? v : UINT64_MAX;
  };
  auto reach = [&](uint64_t at, uint32_t type, uint64_t count, Reach::Naming naming) -> Reach& {
    Reach r;
    r.addr = at;
    r.program = &p;
    r.type = type;
    r.count = count;
    r.naming = naming;
    out.push_back(r);
    return out.back();
  };
  for (const Slot& s : plan.slots) {
    if (budget == 0) return;
    --budget;
    const uint64_t at = addr + s.off;
    switch (s.op) {
      case Slot::kPtr: {
        const uint64_t w = word(at);
        if (w == 0) break;
        const CxxType& t = p.type(s.a);
        if (t.kind == CxxKind::kArray) {
          if (t.elem != kNoCxxType && t.count != 0) reach(w, t.elem, t.count, Reach::kArray);
        } else if (t.kind == CxxKind::kBase && t.size == 1) {
          reach(w, s.a, UINT64_MAX, Reach::kArray);  // a C string: its length is the allocation's
        } else if (t.kind == CxxKind::kPointer && t.elem == kNoCxxType) {
          // void**: a table of untyped pointers (protobuf's Map buckets) the allocation sizes.
          reach(w, s.a, UINT64_MAX, Reach::kArray);
        } else {
          reach(w, s.a, 1, Reach::kValue);
        }
        break;
      }
      case Slot::kString: {
        const uint64_t ptr = word(at + s.x);
        if (ptr == 0 || ptr == at + s.y) break;  // the local buffer
        const uint64_t cap = count_at(at + s.z);
        if (cap != UINT64_MAX && cap >= kMaxCount) break;
        reach(ptr, s.a, cap == UINT64_MAX ? cap : cap + 1, Reach::kStringBuffer).leaf = true;
        break;
      }
      case Slot::kVector: {
        const uint64_t b = word(at + s.x), e = count_at(at + s.y);
        const uint64_t es = p.type(s.a).size;
        if (b == 0 || es == 0) break;
        if (e == UINT64_MAX) {  // the end is not in the dump: named, its elements not read
          reach(b, s.a, UINT64_MAX, Reach::kArray).leaf = true;
          break;
        }
        if (e < b || (e - b) % es != 0 || (e - b) / es >= kMaxCount) break;
        reach(b, s.a, (e - b) / es, Reach::kArray);
        break;
      }
      case Slot::kRbTree: {
        // The root; each node reaches its children (left, right).
        if (count_at(at + s.y) == 0) break;  // no nodes
        if (const uint64_t root = word(at + s.x)) reach(root, s.a, 1, Reach::kValue);
        break;
      }
      case Slot::kList: {
        // The first node; each node reaches the next, the last one the header (inside the container: not an object's start).
        const uint64_t node = word(at + s.x);
        if (node != 0 && node != at + s.x) reach(node, s.a, 1, Reach::kValue);
        break;
      }
      case Slot::kFwdList: {
        if (const uint64_t node = word(at + s.x + s.y)) reach(node, s.a, 1, Reach::kValue);
        break;
      }
      case Slot::kSelf: {
        const uint64_t node = word(at);
        if (node != 0) reach(node, s.a, 1, Reach::kValue);
        break;
      }
      case Slot::kHashtable: {
        const uint64_t buckets = word(at + s.x), count = count_at(at + s.y);
        if (buckets != 0 && buckets != at + s.u && (count < kMaxCount || count == UINT64_MAX) && s.b != kNoCxxType) {
          reach(buckets, s.b, count, Reach::kArray).leaf = true;
        }
        if (count_at(at + s.w) == 0) break;  // no elements
        if (const uint64_t node = word(at + s.z + s.v)) reach(node, s.a, 1, Reach::kValue);
        break;
      }
      case Slot::kDeque: {
        const uint64_t map = word(at + s.x), map_size = count_at(at + s.y);
        const uint64_t es = p.type(s.a).size;
        if (map == 0 || (map_size >= kMaxCount && map_size != UINT64_MAX) || es == 0) break;
        const uint64_t first = word(at + s.z + s.v), last = word(at + s.w + s.v);
        if (first < map || last < first || (last - first) / 8 >= map_size || (first - map) % 8 != 0) break;
        // The map: its live entries [first, last] point to the blocks.
        Reach& r = reach(map, s.b, map_size, Reach::kArray);
        r.live_begin = first - map;
        r.live_end = last + 8 - map;
        r.deque_elem = s.a;
        r.deque_first_cur = word(at + s.z + s.u);  // 0 when not in the dump: the whole block
        r.deque_last_cur = word(at + s.w + s.u);
        break;
      }
      case Slot::kFunction: {
        const uint64_t manager = word(at + s.y);
        if (manager == 0 || !functor_of_) break;
        auto [fp, f] = functor_of_(manager);
        if (fp == nullptr || f == kNoCxxType || fp->type(f).size <= 16) break;  // stored locally
        const uint64_t w = word(at + s.x);
        if (w == 0) break;
        Reach r;
        r.addr = w;
        r.program = fp;
        r.type = f;
        out.push_back(r);
        break;
      }
      case Slot::kOptional: {
        if (depth >= 4) break;
        uint8_t engaged = 0;
        if (!mem.Read(at + s.x, &engaged, 1) || engaged == 0) break;
        const Plan& sub = PlanOf(p, s.a);
        if (!sub.building) Run(p, sub, at + s.y, mem, budget, out, depth + 1);
        break;
      }
      case Slot::kVariant: {
        if (depth >= 4) break;
        uint64_t index = 0;
        if (!mem.Read(at + s.x, &index, s.z)) break;
        if (s.z < 8 && index == (uint64_t{1} << (8 * s.z)) - 1) break;  // valueless
        uint32_t u = s.a;
        uint64_t off = s.y, o = 0;
        uint32_t next = kNoCxxType;
        for (uint64_t k = 0; k < index && u != kNoCxxType; ++k) {
          if (k >= kMaxAlternatives || !FindMember(p, u, "_M_rest", &o, &next)) {
            u = kNoCxxType;
            break;
          }
          u = next, off += o;
        }
        if (u == kNoCxxType || !FindMember(p, u, "_M_first", &o, &next) || next == kNoCxxType) break;
        // _Uninitialized<T>: T (or its __aligned_membuf) is _M_storage, in
        // an anonymous union with an empty byte.
        uint64_t so = 0;
        uint32_t st = kNoCxxType;
        if (FindMember(p, next, "_M_storage", &so, &st) && st != kNoCxxType) next = st, o += so;
        const Plan& sub = PlanOf(p, next);
        if (!sub.building) Run(p, sub, at + off + o, mem, budget, out, depth + 1);
        break;
      }
      case Slot::kArrayPtr: {
        if (const uint64_t w = word(at + s.x)) reach(w, s.a, UINT64_MAX, Reach::kArray).leaf = true;
        break;
      }
      case Slot::kSwiss: {
        const uint64_t ctrl = word(at + s.x), slots = word(at + s.y), cap = count_at(at + s.z);
        // An empty table points at a static group; its slots at nothing.
        if (ctrl == 0 || slots <= ctrl || cap == 0 || (cap != UINT64_MAX && cap >= kMaxCount)) break;
        if (cap != UINT64_MAX && slots - ctrl <= cap) break;  // the control bytes come first
        reach(slots, s.a, cap, Reach::kArray).ctrl = ctrl;
        break;
      }
      case Slot::kProtoMap: {
        const uint64_t table = word(at + s.x), buckets = count_at(at + s.y);
        if (table == 0 || buckets == 0 || buckets == UINT64_MAX || buckets >= kMaxCount || buckets % 2 != 0) break;
        reach(table, s.b, buckets, Reach::kArray).map_node = s.a;
        break;
      }
      case Slot::kBtree: {
        // The live slots [start, finish); an internal node's finish - start + 1
        // children, each named only once its own payload proves the links:
        // its parent is this node and its position its index here.
        uint8_t f[4];  // position, start, finish, max_count
        // A node abseil wrote: start 0, finish within the slots, max_count 0
        // (internal) or at least finish (a leaf).
        if (depth >= 4 || !mem.Read(at + 8, f, 4) || f[1] != 0 || f[2] > s.w || f[3] > s.w ||
            (f[3] != 0 && f[2] > f[3])) {
          break;
        }
        const Plan& sub = PlanOf(p, s.a);
        if (!sub.building && !sub.slots.empty()) {
          for (uint64_t i = f[1]; i < f[2] && budget > 0; ++i) Run(p, sub, at + s.x + i * s.y, mem, budget, out, depth + 1);
        }
        if (f[3] != 0) break;  // a leaf
        for (uint64_t i = f[1]; i <= f[2]; ++i) {
          const uint64_t child = word(at + s.z + 8 * i);
          if (child == 0) continue;
          Reach& r = reach(child, s.b, 1, Reach::kValue);
          r.parent_link = at;
          r.parent_index = static_cast<int>(i);
        }
        break;
      }
      case Slot::kTagged: {
        if (depth >= 4) break;
        uint64_t v = 0;
        if (!mem.Read(at + s.x, &v, s.z)) break;
        const CxxType& e = p.type(s.b);
        const std::string* name = nullptr;
        for (const auto& [en, ev] : e.enumerators) {
          if (static_cast<uint64_t>(ev) == v) name = &en;
        }
        if (name == nullptr) break;
        const CxxType& u = p.type(s.a);
        for (const CxxMember& m : u.members) {
          if (m.name != *name || m.type == kNoCxxType) continue;
          const Plan& sub = PlanOf(p, m.type);
          if (!sub.building) Run(p, sub, at + s.y + m.offset, mem, budget, out, depth + 1);
          break;
        }
        break;
      }
    }
  }
}

void Expander::Expand(const Reach& what, const MemoryReader& mem, uint64_t& budget, std::vector<Reach>& out) {
  if (what.program == nullptr || what.type == kNoCxxType || what.leaf) return;
  CxxProgram& program = *what.program;
  if (what.deque_elem != kNoCxxType) {
    // A deque's map: each live entry a block of max(1, 512 / sizeof(T)) elements.
    const uint64_t es = program.type(what.deque_elem).size;
    if (es == 0) return;
    const uint64_t block_n = es < 512 ? 512 / es : 1;
    for (uint64_t off = what.live_begin; off < what.live_end && budget > 0; off += 8, --budget) {
      uint64_t block = 0;
      if (!mem.Word(what.addr + off, &block) || block == 0) continue;
      Reach r;
      r.addr = block;
      r.program = &program;
      r.type = what.deque_elem;
      r.count = block_n;
      r.naming = Reach::kArray;
      if (off == what.live_begin && what.deque_first_cur >= block) r.live_begin = what.deque_first_cur - block;
      if (off + 8 >= what.live_end && what.deque_last_cur >= block) r.live_end = what.deque_last_cur - block;
      out.push_back(r);
    }
    return;
  }
  if (what.map_node != kNoCxxType) {
    // A protobuf Map's table: a non-empty entry unlike its pair's other (b ^ 1) heads a list.
    for (uint64_t b = 0; b < what.count && budget > 0; ++b, --budget) {
      uint64_t e = 0, pair = 0;
      if (!mem.Word(what.addr + 8 * b, &e) || e == 0 || !mem.Word(what.addr + 8 * (b ^ 1), &pair) || e == pair) continue;
      Reach r;
      r.addr = e;
      r.program = &program;
      r.type = what.map_node;
      out.push_back(r);
    }
    return;
  }
  const uint32_t type = what.type;
  const uint64_t addr = what.addr, live_begin = what.live_begin, live_end = what.live_end;
  const uint64_t count = what.naming == Reach::kValue ? 1 : what.count;
  const Plan& plan = PlanOf(program, type);
  if (plan.slots.empty() || plan.building) return;
  const uint64_t es = program.type(type).size;
  if (es == 0) return;
  for (uint64_t i = 0; i < count && budget > 0; ++i) {
    if (what.ctrl != 0) {
      // A swiss table's slot: full while its control byte is >= 0; the
      // sentinel (-1) ends the slots (the bytes after it clone the first ones).
      int8_t c = 0;
      if (what.ctrl + i >= addr || !mem.Read(what.ctrl + i, &c, 1) || c == -1) break;
      if (c < 0) continue;
    }
    const uint64_t lo = i * es;
    if (lo < live_begin) continue;
    if (lo + es > live_end) break;
    Run(program, plan, addr + lo, mem, budget, out, 0);
  }
}

}  // namespace libdump::typing
