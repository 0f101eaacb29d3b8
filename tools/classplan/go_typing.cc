#include "go_typing.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
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

// Every object's pointer words, in blocks that never move: a growing vector
// copied the whole store at each doubling and held twice it at the peak.
class WordStore {
 public:
  // Room for n words of one object, contiguous, and their index; nullptr
  // once the 32-bit index space is used up (the object stays untyped).
  uint64_t* Add(size_t n, uint32_t* index) {
    if (n > kBlock) {  // an object of its own block
      if (blocks_.size() >= kMaxBlocks) return nullptr;
      blocks_.emplace_back(new uint64_t[n]);
      used_ = kBlock;  // the next object opens a new block
      *index = static_cast<uint32_t>((blocks_.size() - 1) << kBits);
      return blocks_.back().get();
    }
    if (blocks_.empty() || used_ + n > kBlock) {
      if (blocks_.size() >= kMaxBlocks) return nullptr;
      blocks_.emplace_back(new uint64_t[kBlock]);  // not zeroed: every word is written before it is read
      used_ = 0;
    }
    *index = static_cast<uint32_t>((blocks_.size() - 1) << kBits | used_);
    uint64_t* p = blocks_.back().get() + used_;
    used_ += n;
    return p;
  }
  const uint64_t* At(uint32_t index) const { return blocks_[index >> kBits].get() + (index & (kBlock - 1)); }

 private:
  static constexpr unsigned kBits = 20;
  static constexpr size_t kBlock = size_t{1} << kBits;  // 8 MiB of words
  static constexpr size_t kMaxBlocks = size_t{1} << (32 - kBits);
  std::vector<std::unique_ptr<uint64_t[]>> blocks_;
  size_t used_ = 0;
};

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
        case format::Kind::kDataRoot: roots_.push_back(r.data_root); break;
        case format::Kind::kStackRoot: stack_roots_.push_back(r.stack_root); break;
        case format::Kind::kItab:
          if (r.itab.type != 0) {
            itab_type_.try_emplace(r.itab.addr, r.itab.type);
            itab_lo_ = std::min(itab_lo_, r.itab.addr);
            itab_hi_ = std::max(itab_hi_, r.itab.addr);
          }
          break;
        default: break;
      }
    }
  }

  void Propagate() {
    for (const format::DataRootRecord& r : roots_) {  // in dump order: the first type to reach an object keeps it
      const godwarf::GoGlobal* g = program_.GlobalAt(r.addr);
      if (g == nullptr) continue;
      ++out_.stats.roots_in_globals;
      Apply(program_.TargetAt(g->type, r.addr - g->addr), r.ptr, r.before);
    }
    // Then the locals of goroutines' frames: a frame's CFA is the end of its
    // dumped contents (Go's frame.fp), locals sit at fixed offsets from it.
    std::unordered_map<uint64_t, const format::FrameRecord*> frames;
    for (const Thread& t : catalog_.threads()) {
      for (const format::FrameRecord& f : t.frames) frames.try_emplace(f.sp, &f);
    }
    for (const format::StackRootRecord& r : stack_roots_) {
      auto it = frames.find(r.frame);
      if (it == frames.end()) continue;
      const format::FrameRecord& f = *it->second;
      uint64_t inner = 0;
      const int64_t off = static_cast<int64_t>(r.addr - (f.sp + f.size));
      const uint32_t local = program_.LocalAt(f.entry, f.pc, off, &inner);
      if (local == kNoType) continue;
      ++out_.stats.roots_in_locals;
      Apply(program_.TargetAt(local, inner), r.ptr, r.before);
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
      // An interface's pointer is its data word (go1.3 to go1.6 field lists).
      const bool iface = f.kind == format::kFieldIface || f.kind == format::kFieldEface;
      offs.push_back(iface ? f.offset + ptr_ : f.offset);
    }
    layouts_.push_back(std::move(offs));
    return it->second = static_cast<uint32_t>(layouts_.size() - 1);
  }

  void Object(format::Reader& reader, const format::ObjectRecord& o) {
    if (o.kind != format::kObjRegular || o.size > kMaxObject) return;
    const size_t pos = index_.PositionOf(o.addr);
    if (pos == AddressIndex::kNone || layout_of_[pos] != kNoLayout) return;  // a repeated address: pass 2 refuses it
    const uint32_t l = Layout(o.type);
    if (l == kNoLayout) return;
    const std::vector<uint64_t>& offs = layouts_[l];
    uint64_t* out = nullptr;
    if (!offs.empty() && (out = words_.Add(offs.size(), &start_[pos])) == nullptr) return;
    layout_of_[pos] = l;
    if (offs.empty()) return;
    const std::span<const uint8_t> payload = reader.Payload(kMaxObject);
    auto word = [&](uint64_t off) {
      return off <= payload.size() && payload.size() - off >= ptr_ ? Word(payload.data() + off) : 0;
    };
    for (size_t i = 0; i < offs.size(); ++i) {
      out[i] = word(offs[i]);
      if (offs[i] < ptr_ || (i > 0 && offs[i - 1] == offs[i] - ptr_)) continue;
      // Itabs and type descriptors lie in ranges known by now (itab records
      // come before objects): most scalars are out of both at one compare.
      const uint64_t before = word(offs[i] - ptr_);
      const bool itab = before - itab_lo_ <= itab_hi_ - itab_lo_ && itab_type_.contains(before);
      if (before != 0 && (itab || program_.RuntimeType(before) != kNoType)) before_.emplace(o.addr + offs[i], before);
    }
  }

  const TypeWords& Words(uint32_t type) {
    if (type == last_words_type_) return *last_words_;
    auto [it, fresh] = type_words_.try_emplace(type);
    if (fresh) {
      TypeWords& w = it->second;
      w.ok = program_.PointerWords(type, 0, w.offsets, kMaxTypeWords);
      if (w.ok) {
        for (uint64_t off : w.offsets) w.targets.push_back(program_.TargetAt(type, off));
      }
    }
    last_words_type_ = type;
    last_words_ = &it->second;  // the map's nodes do not move
    return it->second;
  }

  uint32_t Intern(GoTyping t) {
    // Neighbours in a list or an array mostly share their typing.
    if (last_typing_id_ != 0 && t == out_.typings[last_typing_id_]) return last_typing_id_;
    const uint64_t key = uint64_t{t.type} << 1 | (t.elements ? 1 : 0);
    auto [it, fresh] = typing_ids_.try_emplace(key, 0);
    if (fresh) {
      out_.typings.push_back(t);
      it->second = static_cast<uint32_t>(out_.typings.size() - 1);
    }
    return last_typing_id_ = it->second;
  }

  // Whether the dump's pointer words of an object are pointer words of the
  // typing: of the type, or of the element repeated (no further than the
  // object). A subset, not equality: Go's bitmaps leave out pointers to
  // memory outside the heap (pointers to go:notinheap types such as
  // runtime.mspan, which DWARF does not mark), and past a slice's length.
  bool Fits(uint32_t layout, uint32_t typing, uint64_t object_size) {
    const uint64_t key = uint64_t{layout} << 32 | typing;
    if (key == last_fits_key_) return last_fits_;
    if (auto it = fits_.find(key); it != fits_.end()) {
      last_fits_key_ = key;
      return last_fits_ = it->second;
    }
    const GoTyping& t = out_.typings[typing];
    const TypeWords& w = Words(t.type);
    const uint64_t size = program_.type(t.type).size;
    bool ok = true;
    for (uint64_t off : layouts_[layout]) {
      if (!w.ok || (!t.elements && off >= size) || (t.elements && off / size >= object_size / size) ||
          !std::binary_search(w.offsets.begin(), w.offsets.end(), t.elements ? off % size : off)) {
        ok = false;
        break;
      }
    }
    fits_.emplace(key, ok);
    last_fits_key_ = key;
    return last_fits_ = ok;
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
    uint32_t typing = Intern({type, elements});
    uint32_t& cur = out_.of_object[pos];
    if (cur == typing) return;
    if (cur != 0) {
      ++out_.stats.conflicts;
      return;
    }
    bool fits = type_size != 0 && type_size <= object_size && Fits(layout, typing, object_size);
    if (!fits && !elements && type_size != 0 && type_size <= object_size) {
      // A *T may point at the first of an array of T (runtime.allgptr, a
      // map's buckets): the layout says so.
      typing = Intern({type, true});
      fits = Fits(layout, typing, object_size);
    }
    if (!fits) {
      ++out_.stats.mismatched;
      return;
    }
    cur = typing;
    queue_.push_back(static_cast<uint32_t>(pos));
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
    const uint64_t addr = index_.StartAt(pos);
    const std::vector<uint64_t>& offs = layouts_[layout_of_[pos]];
    if (offs.empty()) return;  // a pointer-free object has no words in the store
    const uint64_t* words = words_.At(start_[pos]);
    const TypeWords& w = Words(t.type);  // Fits found each of offs in it
    const uint64_t size = program_.type(t.type).size;
    for (size_t i = 0; i < offs.size(); ++i) {
      const uint64_t rel = t.elements ? offs[i] % size : offs[i];
      const size_t k = std::lower_bound(w.offsets.begin(), w.offsets.end(), rel) - w.offsets.begin();
      const WordTarget& tg = w.targets[k];
      if (tg.what == WordTarget::kNothing) continue;
      uint64_t before = 0;
      if (tg.what == WordTarget::kIfaceData || tg.what == WordTarget::kEfaceData) {
        if (auto it = before_.find(addr + offs[i]); it != before_.end()) before = it->second;
      }
      Apply(tg, words[i], before);
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
  WordStore words_;
  uint64_t itab_lo_ = UINT64_MAX, itab_hi_ = 0;
  std::vector<std::vector<uint64_t>> layouts_;
  std::unordered_map<uint64_t, uint32_t> layout_ids_;  // dump type -> layout
  std::vector<format::DataRootRecord> roots_;
  std::vector<format::StackRootRecord> stack_roots_;
  // The word before a pointer word when it is not one itself and names an
  // itab or a type the program knows: an interface's data word and its
  // itab or type, keyed by the data word's address.
  std::unordered_map<uint64_t, uint64_t> before_;
  std::unordered_map<uint64_t, uint64_t> itab_type_;   // itab -> type descriptor
  std::unordered_map<uint32_t, TypeWords> type_words_;
  std::unordered_map<uint64_t, uint32_t> typing_ids_;
  std::unordered_map<uint64_t, bool> fits_;
  std::vector<uint32_t> queue_;  // positions
  // The last answers of Intern, Fits and Words.
  uint32_t last_typing_id_ = 0;
  uint64_t last_fits_key_ = UINT64_MAX;
  bool last_fits_ = false;
  uint32_t last_words_type_ = kNoType;
  const TypeWords* last_words_ = nullptr;
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
