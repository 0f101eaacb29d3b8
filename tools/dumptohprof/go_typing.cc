#include "go_typing.h"

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <unordered_map>

#include "libdump/format/reader.h"

namespace libdump::dumptohprof {
namespace {

using godwarf::GoKind;
using godwarf::GoProgram;
using godwarf::kNoType;
using godwarf::WordTarget;

constexpr uint32_t kNoLayout = UINT32_MAX;
// Pointer words of one type compared with a layout; larger types stay untyped.
constexpr size_t kMaxTypeWords = size_t{1} << 16;
// Objects read whole for their pointer words (Reader::Payload's bound).
constexpr uint64_t kMaxObject = uint64_t{64} << 20;

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

class Typer {
 public:
  Typer(const DumpCatalog& c, const GoProgram& p)
      : catalog_(c), program_(p), index_(c.index()), ptr_(c.params().ptr_size == 4 ? 4 : 8),
        big_(c.params().big_endian != 0) {}

  // Every frame's function must start where the binary has it.
  void CheckFrames() const {
    for (const Thread& t : catalog_.threads()) {
      for (const format::FrameRecord& f : t.frames) {
        if (f.name.empty()) continue;
        const uint64_t entry = program_.FunctionEntry(f.name);
        if (entry == f.entry) continue;
        throw BinaryMismatch("--binary is not the program that wrote this dump: function " + f.name + " starts at " +
                             Hex(f.entry) + " in the dump, " +
                             (entry == 0 ? std::string("and the binary has no such function")
                                         : "at " + Hex(entry) + " in the binary"));
      }
    }
  }

  void Read(format::Reader& reader) {
    const size_t n = index_.size();
    layout_of_.assign(n, kNoLayout);
    start_.assign(n, 0);
    out_.of_object.assign(n, 0);
    format::Record r;
    while (reader.Next(r)) {
      switch (r.kind) {
        case format::Kind::kObject: Object(reader, r.object); break;
        case format::Kind::kDataRoot:
          root_list_.emplace_back(r.data_root.addr, r.data_root.ptr);
          roots_.emplace(r.data_root.addr, r.data_root.ptr);
          break;
        case format::Kind::kItab:
          if (r.itab.type != 0) itab_type_.try_emplace(r.itab.addr, r.itab.type);
          break;
        default: break;
      }
    }
  }

  void Propagate() {
    for (const auto& [addr, ptr] : root_list_) {  // in dump order: the first type to reach an object keeps it
      const godwarf::GoGlobal* g = program_.GlobalAt(addr);
      if (g == nullptr) continue;
      ++out_.stats.roots_in_globals;
      const auto prev = roots_.find(addr - ptr_);
      Apply(program_.TargetAt(g->type, addr - g->addr), ptr, prev == roots_.end() ? 0 : prev->second);
    }
    for (size_t next = 0; next < queue_.size(); ++next) Follow(queue_[next]);
  }

  GoTypes Take() {
    GoTypingStats& s = out_.stats;
    s.objects = index_.size();
    s.bytes = catalog_.object_bytes();
    for (size_t i = 0; i < out_.of_object.size(); ++i) {
      if (out_.of_object[i] != 0) ++s.typed_objects, s.typed_bytes += index_.SizeAt(i);
    }
    return std::move(out_);
  }

 private:
  struct TypeWords {
    bool ok = false;
    std::vector<uint64_t> offsets;     // the type's pointer words
    std::vector<WordTarget> targets;  // what each points to
  };

  uint64_t Word(const uint8_t* p) const {
    if (ptr_ == 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return big_ ? __builtin_bswap64(v) : v;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return big_ ? __builtin_bswap32(v) : v;
  }

  // The pointer words of a dump type (the offsets its field list gives).
  uint32_t Layout(uint64_t type_id) {
    auto [it, fresh] = layout_ids_.try_emplace(type_id, kNoLayout);
    if (!fresh) return it->second;
    auto t = catalog_.types().find(type_id);
    if (t == catalog_.types().end()) return kNoLayout;
    std::vector<uint64_t> offs;
    for (const format::Field& f : t->second.type.fields) {
      offs.push_back(f.offset);
      if (f.kind == format::kFieldIface || f.kind == format::kFieldEface) offs.push_back(f.offset + ptr_);
    }
    layouts_.push_back(std::move(offs));
    return it->second = static_cast<uint32_t>(layouts_.size() - 1);
  }

  void Object(format::Reader& reader, const format::ObjectRecord& o) {
    if (o.kind != format::kObjRegular || o.size > kMaxObject) return;
    const size_t pos = index_.PositionOf(o.addr);
    if (pos == AddressIndex::kNone || layout_of_[pos] != kNoLayout) return;  // a repeated address: pass 2 refuses it
    const uint32_t l = Layout(o.type);
    if (l == kNoLayout || words_.size() + layouts_[l].size() > UINT32_MAX) return;
    layout_of_[pos] = l;
    start_[pos] = static_cast<uint32_t>(words_.size());
    if (layouts_[l].empty()) return;
    const std::span<const uint8_t> payload = reader.Payload(kMaxObject);
    for (uint64_t off : layouts_[l]) {
      words_.push_back(off <= payload.size() && payload.size() - off >= ptr_ ? Word(payload.data() + off) : 0);
    }
  }

  const TypeWords& Words(uint32_t type) {
    auto [it, fresh] = type_words_.try_emplace(type);
    if (fresh) {
      TypeWords& w = it->second;
      w.ok = program_.PointerWords(type, 0, w.offsets, kMaxTypeWords);
      if (w.ok) {
        for (uint64_t off : w.offsets) w.targets.push_back(program_.TargetAt(type, off));
      }
    }
    return it->second;
  }

  uint32_t Intern(GoTyping t) {
    const uint64_t key = uint64_t{t.type} << 1 | (t.elements ? 1 : 0);
    auto [it, fresh] = typing_ids_.try_emplace(key, 0);
    if (fresh) {
      out_.typings.push_back(t);
      it->second = static_cast<uint32_t>(out_.typings.size() - 1);
    }
    return it->second;
  }

  // Whether the dump's pointer words of an object are those of the typing:
  // the type's exactly, or the element's repeated for the first k elements
  // (Go marks no pointers past a slice's length in its size class).
  bool Fits(uint32_t layout, uint32_t typing, uint64_t object_size) {
    const uint64_t key = uint64_t{layout} << 32 | typing;
    if (auto it = fits_.find(key); it != fits_.end()) return it->second;
    const GoTyping& t = out_.typings[typing];
    const TypeWords& w = Words(t.type);
    const std::vector<uint64_t>& l = layouts_[layout];
    bool ok = w.ok;
    if (ok && !t.elements) {
      ok = l == w.offsets;
    } else if (ok) {
      const uint64_t size = program_.type(t.type).size;
      const size_t p = w.offsets.size();
      if (p == 0) {
        ok = l.empty();
      } else if (l.size() % p != 0 || l.size() / p > object_size / size) {
        ok = false;
      } else {
        for (size_t i = 0; i < l.size() && ok; ++i) ok = l[i] == (i / p) * size + w.offsets[i % p];
      }
    }
    fits_.emplace(key, ok);
    return ok;
  }

  void Assign(uint64_t word, uint32_t type, bool elements) {
    if (word == 0 || type == kNoType) return;
    const size_t pos = index_.PositionOf(word);
    if (pos == AddressIndex::kNone) {
      if (index_.Find(word) != 0) ++out_.stats.interior;
      return;
    }
    const uint32_t layout = layout_of_[pos];
    if (layout == kNoLayout) return;
    const uint64_t type_size = program_.type(type).size;
    const uint64_t object_size = index_.SizeAt(pos);
    const uint32_t typing = Intern({type, elements});
    uint32_t& cur = out_.of_object[pos];
    if (cur == typing) return;
    if (cur != 0) {
      ++out_.stats.conflicts;
      return;
    }
    if (type_size == 0 || type_size > object_size || !Fits(layout, typing, object_size)) {
      if (getenv("GT_DEBUG")) { fprintf(stderr, "mismatch %s%s tsize %llu osize %llu layout", program_.type(type).name.c_str(), elements?"[]":"", (unsigned long long)type_size, (unsigned long long)object_size); for (auto o : layouts_[layout]) fprintf(stderr, " %llu", (unsigned long long)o); fprintf(stderr, " | type:"); for (auto o : Words(type).offsets) fprintf(stderr, " %llu", (unsigned long long)o); fprintf(stderr, "\n"); }
      ++out_.stats.mismatched;
      return;
    }
    cur = typing;
    queue_.push_back(pos);
  }

  // An interface's data word holding a `type`: the pointer itself when the
  // type is pointer-shaped, else a pointer to a copy of the value.
  void Dynamic(uint32_t type, uint64_t word) {
    if (type == kNoType) return;
    if (program_.DirectIface(type)) {
      const WordTarget inner = program_.TargetAt(type, 0);
      if (inner.what == WordTarget::kValue || inner.what == WordTarget::kElements) Apply(inner, word, 0);
      return;
    }
    Apply({WordTarget::kValue, type}, word, 0);
  }

  // `prev`: the word before, an interface's itab or type.
  void Apply(const WordTarget& t, uint64_t word, uint64_t prev) {
    switch (t.what) {
      case WordTarget::kValue: {
        const uint32_t r = program_.Resolve(t.type);
        if (r == kNoType) return;
        const godwarf::GoType& g = program_.type(r);
        if (g.kind == GoKind::kArray) return Assign(word, program_.Resolve(g.elem), true);
        return Assign(word, r, false);
      }
      case WordTarget::kElements:
        return Assign(word, program_.Resolve(t.type), true);
      case WordTarget::kIfaceData:
        if (auto it = itab_type_.find(prev); it != itab_type_.end()) Dynamic(program_.RuntimeType(it->second), word);
        return;
      case WordTarget::kEfaceData:
        return Dynamic(program_.RuntimeType(prev), word);
      case WordTarget::kNothing:
        return;
    }
  }

  void Follow(size_t pos) {
    const GoTyping t = out_.typings[out_.of_object[pos]];
    const std::vector<uint64_t>& offs = layouts_[layout_of_[pos]];
    const uint64_t* words = words_.data() + start_[pos];
    const std::vector<WordTarget>& targets = Words(t.type).targets;  // Fits checked it is ok
    const size_t p = targets.size();
    for (size_t i = 0; i < offs.size() && p != 0; ++i) {
      const WordTarget& tg = targets[i % p];
      if (tg.what == WordTarget::kNothing) continue;
      const uint64_t prev = i > 0 && offs[i - 1] + ptr_ == offs[i] ? words[i - 1] : 0;
      Apply(tg, words[i], prev);
    }
  }

  const DumpCatalog& catalog_;
  const GoProgram& program_;
  const AddressIndex& index_;
  const unsigned ptr_;
  const bool big_;
  GoTypes out_;
  // Per object position: its layout and where its pointer words start in words_.
  std::vector<uint32_t> layout_of_;
  std::vector<uint32_t> start_;
  std::vector<uint64_t> words_;
  std::vector<std::vector<uint64_t>> layouts_;
  std::unordered_map<uint64_t, uint32_t> layout_ids_;  // dump type -> layout
  std::vector<std::pair<uint64_t, uint64_t>> root_list_;  // data roots: address, pointer
  std::unordered_map<uint64_t, uint64_t> roots_;       // data root address -> pointer
  std::unordered_map<uint64_t, uint64_t> itab_type_;   // itab -> type descriptor
  std::unordered_map<uint32_t, TypeWords> type_words_;
  std::unordered_map<uint64_t, uint32_t> typing_ids_;
  std::unordered_map<uint64_t, bool> fits_;
  std::vector<size_t> queue_;
};

}  // namespace

GoTypes TypeGoObjects(const std::string& dump_path, const DumpCatalog& catalog, const GoProgram& program) {
  auto reader = format::Reader::Open(dump_path);
  if (reader->dialect() == format::Dialect::kLibdump) {
    throw BinaryMismatch("--binary types the dumps of Go runtimes; this is a libdump dump");
  }
  Typer t(catalog, program);
  t.CheckFrames();
  t.Read(*reader);
  t.Propagate();
  return t.Take();
}

}  // namespace libdump::dumptohprof
