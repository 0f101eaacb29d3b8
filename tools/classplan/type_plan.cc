#include "type_plan.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_set>

namespace libdump::dumptohprof {
namespace {

using format::hprof::FieldSpec;
using format::hprof::Type;

constexpr size_t kMaxFields = 65535;  // a CLASS DUMP counts its fields in 16 bits

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The primitive type of a scalar of `size` bytes, or false for odd sizes.
bool ScalarType(uint64_t kind, uint64_t size, Type* out) {
  using namespace format;
  if (kind == kFieldFloat) {
    if (size == 4) return *out = Type::kFloat, true;
    if (size == 8) return *out = Type::kDouble, true;
    return false;
  }
  if (kind == kFieldBool && size == 1) return *out = Type::kBoolean, true;
  if (kind == kFieldChar && size == 2) return *out = Type::kChar, true;
  if (kind == kFieldBytes && size != 1) return false;
  switch (size) {
    case 1: return *out = Type::kByte, true;
    case 2: return *out = Type::kShort, true;
    case 4: return *out = Type::kInt, true;
    case 8: return *out = Type::kLong, true;
  }
  return false;
}

struct Builder {
  TypePlan& plan;
  unsigned ptr;

  void Add(uint64_t offset, uint32_t size, Type type, bool pointer, std::string name) {
    plan.fields.push_back({offset, size, type, pointer});
    plan.specs.push_back({std::move(name), type});
    plan.prefix = std::max(plan.prefix, offset + size);
  }
  // Scalar bytes of odd size: the widest integers that fit, named name, name+8, ...
  void Split(uint64_t offset, uint64_t size, const std::string& name) {
    uint64_t done = 0;
    while (done < size && plan.fields.size() < kMaxFields) {
      const uint64_t left = size - done;
      const uint32_t k = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      Type t = Type::kByte;
      ScalarType(format::kFieldInt, k, &t);
      Add(offset + done, k, t, false, done == 0 ? name : name + "+" + std::to_string(done));
      done += k;
    }
  }
  // Every word of [0, size): pointers where `is_pointer` says, integers
  // elsewhere, named by offset; a tail shorter than a word as bytes.
  template <typename IsPointer>
  void Words(uint64_t size, IsPointer&& is_pointer) {
    uint64_t off = 0;
    for (; off + ptr <= size && plan.fields.size() < kMaxFields; off += ptr) {
      const bool p = is_pointer(off);
      Add(off, ptr, p ? Type::kObject : ptr == 8 ? Type::kLong : Type::kInt, p, "f" + std::to_string(off));
    }
    if (off < size && plan.fields.size() < kMaxFields) Split(off, size - off, "f" + std::to_string(off));
  }
};

// Offsets of the pointer words of a type (seed field kinds included: a
// string's or slice's data pointer is its first word, an interface's its second).
std::set<uint64_t> PointerOffsets(const DumpType& t, unsigned ptr) {
  std::set<uint64_t> out;
  if (t.has_fields) {
    for (const format::NamedField& f : t.fields.fields) {
      if (f.kind == format::kFieldPtr) out.insert(f.offset);
    }
    return out;
  }
  for (const format::Field& f : t.type.fields) {
    out.insert(f.kind == format::kFieldIface || f.kind == format::kFieldEface ? f.offset + ptr : f.offset);
  }
  return out;
}

void PlanInstance(const DumpType& t, unsigned ptr, TypePlan& plan) {
  Builder b{plan, ptr};
  const uint64_t size = t.type.size;
  if (plan.conservative) {
    b.Words(size, [](uint64_t) { return true; });
  } else if (t.has_fields) {
    for (const format::NamedField& f : t.fields.fields) {
      if (plan.fields.size() >= kMaxFields) break;
      if (f.kind == format::kFieldPtr) {
        b.Add(f.offset, ptr, Type::kObject, true, f.name);
        continue;
      }
      Type type;
      if (f.size <= 8 && ScalarType(f.kind, f.size, &type)) {
        b.Add(f.offset, static_cast<uint32_t>(f.size), type, false, f.name);
      } else {
        b.Split(f.offset, f.size, f.name);
      }
    }
  } else {
    const std::set<uint64_t> pointers = PointerOffsets(t, ptr);
    b.Words(size, [&](uint64_t off) { return pointers.contains(off); });
  }
  plan.instance_size = static_cast<uint32_t>(std::clamp<uint64_t>(size, 1, UINT32_MAX));
}

void PlanElements(const DumpCatalog& c, const DumpType& t, unsigned ptr, TypePlan& plan) {
  const bool flagged = t.info.flags & format::kTypeArray;
  const DumpType* elem = &t;
  uint64_t elem_size = t.type.size;
  if (flagged) {
    elem_size = t.info.elem_size;
    auto it = c.types().find(t.info.elem_type);
    elem = t.info.elem_type != 0 && it != c.types().end() ? &it->second : nullptr;
  }
  const bool conservative = plan.conservative || (elem && (elem->info.flags & format::kTypeConservative));
  std::set<uint64_t> pointers;
  if (elem && !conservative) pointers = PointerOffsets(*elem, ptr);
  if (conservative || !pointers.empty()) {
    plan.array = Shape::kWordArray;
    if (conservative || elem_size == 0 || elem_size % ptr != 0 || elem_size / ptr > (uint64_t{1} << 20)) {
      plan.elem_words = 1;
      plan.pointer_words = {true};
    } else {
      plan.elem_words = elem_size / ptr;
      plan.pointer_words.assign(plan.elem_words, false);
      for (uint64_t off : pointers) {
        if (off % ptr == 0 && off / ptr < plan.elem_words) plan.pointer_words[off / ptr] = true;
      }
    }
    return;
  }
  plan.array = Shape::kPrimitiveArray;
  Type type = Type::kByte;
  if (elem && elem->has_fields && elem->fields.fields.size() == 1 && elem->fields.fields[0].offset == 0 &&
      elem->fields.fields[0].size == elem_size && ScalarType(elem->fields.fields[0].kind, elem_size, &type)) {
    plan.prim = type;
  } else if (ScalarType(format::kFieldInt, elem_size, &type)) {
    plan.prim = type;
  }
}

}  // namespace

std::vector<std::pair<uint64_t, TypePlan>> PlanTypes(const DumpCatalog& catalog) {
  const unsigned ptr = catalog.params().ptr_size == 4 ? 4 : 8;
  std::vector<std::pair<uint64_t, TypePlan>> out;
  std::unordered_set<std::string> used;
  std::unordered_map<std::string, int> uses;
  for (const auto& [id, t] : catalog.types()) uses[t.type.name]++;
  for (const auto& [id, t] : catalog.types()) {
    TypePlan plan;
    // Names readers would misread, or that several types share, carry their type id.
    std::string name = t.type.name;
    if (name.empty() || name[0] == '[' || name.find('\0') != std::string::npos || uses[name] > 1) {
      name = (name.empty() ? std::string("type") : name.substr(0, name.find('\0'))) + "@" + Hex(id);
    }
    while (!used.insert(name).second) name += "'";
    plan.name = name;
    plan.conservative = t.info.flags & format::kTypeConservative;
    PlanElements(catalog, t, ptr, plan);
    const bool has_layout = plan.conservative || t.has_fields || !t.type.fields.empty();
    if (t.info.flags & format::kTypeArray) {
      plan.regular = plan.array;
    } else if (has_layout) {
      PlanInstance(t, ptr, plan);
      plan.regular = plan.fields.size() < kMaxFields ? Shape::kInstance : plan.array;
      if (plan.regular != Shape::kInstance) plan.fields.clear(), plan.specs.clear();
    } else {
      plan.regular = Shape::kPrimitiveArray;
    }
    out.emplace_back(id, std::move(plan));
  }
  return out;
}

std::string DisplayName(const std::string& n) {
  static const std::pair<const char*, const char*> kPrimitive[] = {
      {"[Z", "boolean[]"}, {"[C", "char[]"}, {"[F", "float[]"}, {"[D", "double[]"},
      {"[B", "byte[]"},    {"[S", "short[]"}, {"[I", "int[]"},   {"[J", "long[]"}};
  for (const auto& [code, shown] : kPrimitive) {
    if (n == code) return shown;
  }
  std::string base = n;
  std::string suffix;
  if (n.size() > 3 && n.starts_with("[L") && n.back() == ';') {
    base = n.substr(2, n.size() - 3);
    suffix = "[]";
  }
  std::replace(base.begin(), base.end(), '/', '.');
  return base + suffix;
}

}  // namespace libdump::dumptohprof

