#include "go_class_plan.h"

#include <algorithm>

namespace libdump::dumptohprof {
namespace {

using format::hprof::Type;
using godwarf::GoKind;
using godwarf::GoProgram;
using godwarf::kNoType;

// Fields one class gets before it is planned as words instead; arrays longer
// than kMaxNamedElements elements are not flattened element by element.
constexpr size_t kMaxLeaves = 4096;
constexpr uint64_t kMaxNamedElements = 16;
constexpr int kMaxDepth = 32;
constexpr size_t kMaxVisits = size_t{1} << 16;

Type IntegerOf(uint64_t size) {
  return size == 8 ? Type::kLong : size == 4 ? Type::kInt : size == 2 ? Type::kShort : Type::kByte;
}

// The primitive holding one scalar of kind k and `size` bytes, if one does.
bool Scalar(GoKind k, uint64_t size, Type* out) {
  switch (k) {
    case GoKind::kBool:
      if (size != 1) return false;
      return *out = Type::kBoolean, true;
    case GoKind::kInt:
    case GoKind::kUint:
      if (size != 1 && size != 2 && size != 4 && size != 8) return false;
      return *out = IntegerOf(size), true;
    case GoKind::kFloat:
      if (size != 4 && size != 8) return false;
      return *out = size == 4 ? Type::kFloat : Type::kDouble, true;
    default:
      return false;
  }
}

std::string Join(const std::string& outer, const std::string& inner) {
  return outer.empty() ? inner : outer + "." + inner;
}

class Flattener {
 public:
  Flattener(const GoProgram& p, unsigned ptr, TypePlan& plan) : p_(p), ptr_(ptr), plan_(plan) {}

  // False when the value has more leaves than one class should.
  bool Value(uint32_t t, uint64_t off, const std::string& name, int depth) {
    // Empty structs nested in arrays add no leaves: the visits are bounded too.
    if (++visits_ > kMaxVisits) return false;
    const uint32_t r = p_.Resolve(t);
    if (r == kNoType || depth > kMaxDepth) return true;
    const godwarf::GoType& g = p_.type(r);
    const std::string self = name.empty() ? "value" : name;
    switch (g.kind) {
      case GoKind::kPointer: case GoKind::kMap: case GoKind::kChan: case GoKind::kFunc:
        return Ref(off, self);
      case GoKind::kString:
        return Ref(off, Join(name, "str")) && Word(off + ptr_, Join(name, "len"));
      case GoKind::kSlice:
        return Ref(off, Join(name, "array")) && Word(off + ptr_, Join(name, "len")) &&
               Word(off + 2 * ptr_, Join(name, "cap"));
      case GoKind::kIface:
        return Ref(off, Join(name, "tab")) && Ref(off + ptr_, Join(name, "data"));
      case GoKind::kEface:
        return Ref(off, Join(name, "_type")) && Ref(off + ptr_, Join(name, "data"));
      case GoKind::kComplex: {
        const uint64_t half = g.size / 2;
        Type part;
        if (!Scalar(GoKind::kFloat, half, &part)) return Bytes(off, g.size, self);
        return Leaf(off, static_cast<uint32_t>(half), part, false, Join(name, "real")) &&
               Leaf(off + half, static_cast<uint32_t>(half), part, false, Join(name, "imag"));
      }
      case GoKind::kStruct:
        for (const godwarf::GoMember& m : g.members) {
          if (!Value(m.type, off + m.offset, Join(name, m.name), depth + 1)) return false;
        }
        return true;
      case GoKind::kArray: {
        const uint32_t e = p_.Resolve(g.elem);
        if (e == kNoType || g.count == 0) return true;
        const uint64_t esize = p_.type(e).size;
        std::vector<uint64_t> pointers;
        p_.PointerWords(r, 0, pointers, kMaxLeaves);
        if (pointers.empty() && g.count > kMaxNamedElements) return Bytes(off, g.size, self);
        if (g.count > kMaxLeaves) return false;
        for (uint64_t i = 0; i < g.count; ++i) {
          if (!Value(e, off + i * esize, self + "[" + std::to_string(i) + "]", depth + 1)) return false;
        }
        return true;
      }
      default: {
        Type type;
        if (Scalar(g.kind, g.size, &type)) return Leaf(off, static_cast<uint32_t>(g.size), type, false, self);
        return Bytes(off, g.size, self);
      }
    }
  }

 private:
  bool Leaf(uint64_t off, uint32_t size, Type type, bool pointer, std::string name) {
    if (plan_.fields.size() >= kMaxLeaves) return false;
    plan_.fields.push_back({off, size, type, pointer});
    plan_.specs.push_back({std::move(name), type});
    plan_.prefix = std::max(plan_.prefix, off + size);
    return true;
  }
  bool Ref(uint64_t off, std::string name) { return Leaf(off, ptr_, Type::kObject, true, std::move(name)); }
  bool Word(uint64_t off, std::string name) { return Leaf(off, ptr_, IntegerOf(ptr_), false, std::move(name)); }
  // Bytes of no primitive type: the widest integers that fit, name, name+8, ...
  bool Bytes(uint64_t off, uint64_t size, const std::string& name) {
    for (uint64_t done = 0; done < size;) {
      const uint64_t left = size - done;
      const uint32_t k = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      if (!Leaf(off + done, k, IntegerOf(k), false, done == 0 ? name : name + "+" + std::to_string(done))) return false;
      done += k;
    }
    return true;
  }

  const GoProgram& p_;
  unsigned ptr_;
  TypePlan& plan_;
  size_t visits_ = 0;
};

// Elements with pointers: one slot per word, references where the element has pointers.
bool PlanWords(const GoProgram& p, uint32_t elem, unsigned ptr, TypePlan& plan) {
  const uint64_t size = p.type(elem).size;
  std::vector<uint64_t> pointers;
  if (size == 0 || size % ptr != 0 || !p.PointerWords(elem, 0, pointers, size_t{1} << 20)) return false;
  plan.elem_words = size / ptr;
  plan.pointer_words.assign(plan.elem_words, false);
  for (uint64_t off : pointers) {
    if (off % ptr == 0 && off / ptr < plan.elem_words) plan.pointer_words[off / ptr] = true;
  }
  plan.regular = plan.array = Shape::kWordArray;
  return true;
}

}  // namespace

TypePlan PlanGoClass(const GoProgram& p, const GoTyping& typing, unsigned ptr) {
  TypePlan plan;
  const godwarf::GoType& g = p.type(typing.type);
  plan.name = g.name.empty() ? "(unnamed Go type)" : g.name;
  // Readers take a class name opening with '[' for an array descriptor:
  // Go's slice and array types ("[]*runtime.moduledata") are parenthesised.
  if (plan.name[0] == '[') plan.name = "(" + plan.name + ")";
  std::vector<uint64_t> pointers;
  const bool has_pointers = !p.PointerWords(typing.type, 0, pointers, 1) || !pointers.empty();
  if (typing.elements) {
    if (has_pointers && PlanWords(p, typing.type, ptr, plan)) return plan;
    plan.regular = plan.array = Shape::kPrimitiveArray;
    if (!has_pointers) Scalar(g.kind, g.size, &plan.prim);
    return plan;
  }
  Flattener f(p, ptr, plan);
  if (f.Value(typing.type, 0, "", 0)) {
    plan.regular = Shape::kInstance;
    plan.instance_size = static_cast<uint32_t>(std::clamp<uint64_t>(g.size, 1, UINT32_MAX));
    return plan;
  }
  // Too many fields for a class: its words, as an array of the type.
  plan.fields.clear();
  plan.specs.clear();
  plan.prefix = 0;
  if (PlanWords(p, typing.type, ptr, plan)) return plan;
  plan.regular = plan.array = Shape::kPrimitiveArray;
  return plan;
}

}  // namespace libdump::dumptohprof
