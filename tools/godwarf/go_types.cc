#include "go_types.h"

#include <algorithm>

namespace libdump::godwarf {
namespace {

// Typedef chains in Go's DWARF are one or two long; the bound only stops a
// cycle a corrupt binary could hold.
constexpr int kMaxTypedefs = 16;
// Struct and array nesting a lookup follows; deeper values are not looked into.
constexpr int kMaxDepth = 64;

}  // namespace

GoProgram::GoProgram(unsigned ptr_size) : ptr_(ptr_size == 4 ? 4 : 8) {}

uint32_t GoProgram::Add(GoType t) {
  types_.push_back(std::move(t));
  return static_cast<uint32_t>(types_.size() - 1);
}

uint32_t GoProgram::Resolve(uint32_t t) const {
  for (int i = 0; i < kMaxTypedefs && t < types_.size(); ++i) {
    if (types_[t].kind != GoKind::kTypedef) return t;
    t = types_[t].elem;
  }
  return kNoType;
}

uint32_t GoProgram::Byte() {
  if (byte_ != kNoType) return byte_;
  for (uint32_t i = 0; i < types_.size(); ++i) {
    if (types_[i].name == "uint8" && types_[i].kind == GoKind::kUint && types_[i].size == 1) return byte_ = i;
  }
  GoType b;
  b.name = "uint8";
  b.size = 1;
  b.kind = GoKind::kUint;
  return byte_ = Add(std::move(b));
}

void GoProgram::Finish() {
  std::sort(globals_.begin(), globals_.end(), [](const GoGlobal& a, const GoGlobal& b) { return a.addr < b.addr; });
}

const GoGlobal* GoProgram::GlobalAt(uint64_t addr) const {
  auto it = std::upper_bound(globals_.begin(), globals_.end(), addr,
                             [](uint64_t a, const GoGlobal& g) { return a < g.addr; });
  if (it == globals_.begin()) return nullptr;
  const GoGlobal& g = *--it;
  const uint32_t t = Resolve(g.type);
  if (t == kNoType) return nullptr;
  return addr - g.addr < types_[t].size ? &g : nullptr;
}

void GoProgram::AddRuntimeType(uint64_t addr, uint32_t t) {
  runtime_types_.try_emplace(addr, t);
  runtime_lo_ = std::min(runtime_lo_, addr);
  runtime_hi_ = std::max(runtime_hi_, addr);
}

uint32_t GoProgram::RuntimeType(uint64_t addr) const {
  if (addr - runtime_lo_ > runtime_hi_ - runtime_lo_) return kNoType;
  auto it = runtime_types_.find(addr);
  return it == runtime_types_.end() ? kNoType : it->second;
}

void GoProgram::AddLocal(uint64_t entry, uint64_t lo, uint64_t hi, int64_t cfa_offset, uint32_t type) {
  locals_[entry].push_back({lo, hi, cfa_offset, type});
  ++local_count_;
}

uint32_t GoProgram::LocalAt(uint64_t entry, uint64_t pc, int64_t cfa_offset, uint64_t* inner) const {
  auto it = locals_.find(entry);
  if (it == locals_.end()) return kNoType;
  for (const LocalSlot& l : it->second) {
    // A caller's frame is stopped at the return address, one past its call:
    // the call's own pc (pc - 1) is inside the ranges Go gives.
    if (!((pc >= l.lo && pc < l.hi) || (pc - 1 >= l.lo && pc - 1 < l.hi)) || cfa_offset < l.cfa_offset) continue;
    const uint32_t t = Resolve(l.type);
    if (t == kNoType) continue;
    const uint64_t off = static_cast<uint64_t>(cfa_offset - l.cfa_offset);
    if (off < types_[t].size) {
      *inner = off;
      return l.type;
    }
  }
  return kNoType;
}

uint64_t GoProgram::FunctionEntry(const std::string& name) const {
  auto it = functions_.find(name);
  // Assembly functions carry their ABI in the symbol table, not in the
  // runtime's function table (runtime.systemstack_switch.abi0).
  if (it == functions_.end()) it = functions_.find(name + ".abi0");
  return it == functions_.end() ? 0 : it->second;
}

bool GoProgram::PointerWords(uint32_t t, uint64_t base, std::vector<uint64_t>& out, size_t limit) const {
  return PointerWordsAt(t, base, out, limit, 0);
}

bool GoProgram::PointerWordsAt(uint32_t t, uint64_t base, std::vector<uint64_t>& out, size_t limit,
                               int array_depth) const {
  // An array type whose elements lead back to it (a corrupt binary) ends here.
  if (array_depth > kMaxDepth) return false;
  // An explicit stack instead of recursion: nesting comes from the binary.
  struct Item {
    uint32_t type;
    uint64_t base;
    int depth;
  };
  std::vector<Item> stack{{t, base, 0}};
  std::vector<uint64_t> found;
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    const uint32_t r = Resolve(it.type);
    if (r == kNoType || it.depth > kMaxDepth) continue;
    const GoType& g = types_[r];
    switch (g.kind) {
      case GoKind::kPointer: case GoKind::kMap: case GoKind::kChan: case GoKind::kFunc:
      case GoKind::kString: case GoKind::kSlice:
        found.push_back(it.base);
        break;
      case GoKind::kIface: case GoKind::kEface:
        // Only the data word: the itab or type word never points into the
        // heap, and the compiler's bitmaps leave it unmarked (typebits.Set).
        found.push_back(it.base + ptr_);
        break;
      case GoKind::kStruct:
        for (const GoMember& m : g.members) stack.push_back({m.type, it.base + m.offset, it.depth + 1});
        break;
      case GoKind::kArray: {
        const uint32_t e = Resolve(g.elem);
        if (e == kNoType || g.count == 0) break;
        std::vector<uint64_t> one;
        if (!PointerWordsAt(e, 0, one, limit, array_depth + 1)) return false;
        if (one.empty()) break;
        if (one.size() * g.count > limit - std::min(limit, found.size())) return false;
        for (uint64_t i = 0; i < g.count; ++i) {
          for (uint64_t o : one) found.push_back(it.base + i * types_[e].size + o);
        }
        break;
      }
      default:
        break;
    }
    if (found.size() > limit) return false;
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

WordTarget GoProgram::TargetAt(uint32_t t, uint64_t offset) const {
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const uint32_t r = Resolve(t);
    if (r == kNoType) return {};
    const GoType& g = types_[r];
    switch (g.kind) {
      case GoKind::kPointer:
        if (offset != 0 || g.elem == kNoType) return {};
        return {WordTarget::kValue, g.elem};
      case GoKind::kMap: case GoKind::kChan:
        if (offset != 0 || g.elem == kNoType) return {};
        return {WordTarget::kValue, g.elem};
      case GoKind::kSlice:
        if (offset != 0 || g.elem == kNoType) return {};
        return {WordTarget::kElements, g.elem};
      case GoKind::kString:
        if (offset != 0 || byte_ == kNoType) return {};
        return {WordTarget::kElements, byte_};
      case GoKind::kIface:
        return offset == ptr_ ? WordTarget{WordTarget::kIfaceData, kNoType} : WordTarget{};
      case GoKind::kEface:
        return offset == ptr_ ? WordTarget{WordTarget::kEfaceData, kNoType} : WordTarget{};
      case GoKind::kStruct: {
        // The last member starting at or before offset.
        auto it = std::upper_bound(g.members.begin(), g.members.end(), offset,
                                   [](uint64_t o, const GoMember& m) { return o < m.offset; });
        if (it == g.members.begin()) return {};
        --it;
        offset -= it->offset;
        t = it->type;
        continue;
      }
      case GoKind::kArray: {
        const uint32_t e = Resolve(g.elem);
        if (e == kNoType || types_[e].size == 0 || offset >= g.size) return {};
        offset %= types_[e].size;
        t = e;
        continue;
      }
      default:
        return {};
    }
  }
  return {};
}

bool GoProgram::DirectIface(uint32_t t) const {
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const uint32_t r = Resolve(t);
    if (r == kNoType) return false;
    const GoType& g = types_[r];
    switch (g.kind) {
      case GoKind::kPointer: case GoKind::kMap: case GoKind::kChan: case GoKind::kFunc:
        return true;
      case GoKind::kStruct:  // a struct of one pointer-shaped field is stored as that field
        if (g.members.size() != 1) return false;
        t = g.members[0].type;
        continue;
      case GoKind::kArray:
        if (g.count != 1) return false;
        t = g.elem;
        continue;
      default:
        return false;
    }
  }
  return false;
}

}  // namespace libdump::godwarf
