#include "validate.h"

#include <algorithm>
#include <cstring>

#include "escape.h"
#include "libdump/format/hprof_ids.h"
#include "record_fields.h"

namespace libdump::readdump {

using format::Kind;
using format::Record;

namespace {

std::string H(uint64_t v) { return HexString(v); }
std::string At(uint64_t offset) { return "offset " + std::to_string(offset); }

// Fields whose first word is a pointer. Iface and eface fields are not checked:
// whether their data word is a pointer depends on the itab or type stored
// beside it, which C++ dumps never use.
bool HoldsPointer(uint64_t field_kind) {
  return field_kind == format::kFieldPtr || field_kind == format::kFieldString ||
         field_kind == format::kFieldSlice;
}

}  // namespace

void Validator::Emit(uint64_t offset, Kind kind, std::string message) {
  ++problems_;
  sink_(Problem{offset, kind, std::move(message)});
}

void Validator::EmitPendingUpTo(uint64_t offset) {
  while (next_pending_ < pending_.size() && pending_[next_pending_].offset <= offset) {
    ++problems_;
    sink_(pending_[next_pending_++]);
  }
}

bool Validator::Dangling(uint64_t p) const {
  return params_ && p != 0 && p >= params_->heap_start && p < params_->heap_end &&
         objects_.Find(p) == nullptr && !InStack(p);
}

bool Validator::InStack(uint64_t p) const {
  auto it = std::upper_bound(stacks_.begin(), stacks_.end(), p,
                             [](uint64_t x, const std::pair<uint64_t, uint64_t>& s) { return x < s.first; });
  return it != stacks_.begin() && p < std::prev(it)->second;
}

// --- pass 1 ----------------------------------------------------------------

void Validator::Collect(const Record& r) {
  switch (r.kind) {
    case Kind::kObject:
      objects_.Add(r.object.addr, r.object.size, r.offset);
      // What dumptohprof refuses (overlaps, duplicates included, are found
      // in FindOverlaps).
      if (std::string why = format::hprof::HprofIdProblem(r.object.addr, r.object.size); !why.empty()) {
        pending_.push_back({r.offset, Kind::kObject, "object " + H(r.object.addr) + ": " + why});
      }
      break;
    case Kind::kParams:
      if (!params_) {
        params_ = r.params;
        params_offset_ = r.offset;
      }
      break;
    case Kind::kType: {
      auto [it, fresh] = types_.try_emplace(r.type.addr);
      if (!fresh) break;
      Type& t = it->second;
      t.offset = r.offset;
      t.size = r.type.size;
      t.name = r.type.name;
      for (const format::Field& f : r.type.fields) {
        if (HoldsPointer(f.kind)) t.pointer_offsets.push_back(f.offset);
      }
      break;
    }
    case Kind::kFrame:
      frames_.try_emplace(r.frame.sp, Frame{r.offset, r.frame.parent, r.frame.size, r.frame.name});
      break;
    case Kind::kGoroutine:
      threads_.push_back({r.goroutine.addr, r.offset, r.goroutine.tos});
      thread_offsets_.try_emplace(r.goroutine.addr, r.offset);
      break;
    case Kind::kItab:
      itabs_.insert(r.itab.addr);
      break;
    default:
      break;
  }
}

void Validator::FinishCollect() {
  objects_.Finish();
  // The word size is known only now: a params record may follow the types.
  const uint64_t w = word_size();
  for (auto& [addr, t] : types_) {
    for (size_t i = 0; i < t.pointer_offsets.size(); ++i) {
      const uint64_t off = t.pointer_offsets[i];
      if (off > t.size || t.size - off < w) t.scannable = false;
      if (i > 0 && off - t.pointer_offsets[i - 1] < w) t.scannable = false;
    }
  }
  FindOverlaps();
  WalkStacks();
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const Problem& a, const Problem& b) { return a.offset < b.offset; });
}

// Reports each object that starts inside an earlier one (in address order),
// at whichever of the two records comes later in the file.
void Validator::FindOverlaps() {
  const auto& e = objects_.entries();
  const ObjectIndex::Entry* cover = nullptr;  // the object reaching furthest so far
  for (const ObjectIndex::Entry& o : e) {
    if (cover != nullptr && (o.addr == cover->addr || o.addr - cover->addr < cover->size)) {
      const bool later = o.offset > cover->offset;
      const ObjectIndex::Entry& at = later ? o : *cover;
      const ObjectIndex::Entry& other = later ? *cover : o;
      pending_.push_back({at.offset, Kind::kObject,
                          "object " + H(at.addr) + " (" + std::to_string(at.size) +
                              " bytes) overlaps object " + H(other.addr) + " (" +
                              std::to_string(other.size) + " bytes) at " + At(other.offset)});
    }
    const auto end = [](const ObjectIndex::Entry* x) {
      return x->addr + x->size < x->addr ? ~uint64_t{0} : x->addr + x->size;
    };
    if (cover == nullptr || end(&o) > end(cover)) cover = &o;
  }
}

// Follows each thread's chain from its top frame, marking the frames it owns.
// A missing parent is reported at the frame that names it, in pass 2.
void Validator::WalkStacks() {
  for (size_t i = 0; i < threads_.size(); ++i) {
    const Thread& t = threads_[i];
    const std::string who = "thread " + H(t.addr);
    // The extent of the frames this thread owns: Go stacks grow down, so
    // from the top frame's sp to the end of the outermost frame.
    uint64_t lo = ~uint64_t{0}, hi = 0;
    for (uint64_t sp = t.tos; sp != 0;) {
      auto it = frames_.find(sp);
      if (it == frames_.end()) {
        if (sp == t.tos) {
          pending_.push_back({t.offset, Kind::kGoroutine,
                              who + ": top frame " + H(sp) + " is not a dumped frame"});
        }
        break;
      }
      Frame& f = it->second;
      if (f.owner == i) {
        pending_.push_back({t.offset, Kind::kGoroutine,
                            who + ": the frame chain loops back to frame " + H(sp)});
        break;
      }
      if (f.owner != kNoOwner) {
        const Thread& other = threads_[f.owner];
        pending_.push_back({t.offset, Kind::kGoroutine,
                            who + ": frame " + H(sp) + " is also on the stack of thread " +
                                H(other.addr) + " at " + At(other.offset)});
        break;
      }
      f.owner = i;
      lo = std::min(lo, sp);
      hi = std::max(hi, sp + f.size < sp ? ~uint64_t{0} : sp + f.size);
      sp = f.parent;
    }
    if (go_ && lo < hi) stacks_.emplace_back(lo, hi);
  }
  std::sort(stacks_.begin(), stacks_.end());
  // Overlapping stacks (a corrupt dump) merge, so that the search above
  // needs only the nearest start.
  size_t n = 0;
  for (const auto& s : stacks_) {
    if (n > 0 && s.first <= stacks_[n - 1].second) {
      stacks_[n - 1].second = std::max(stacks_[n - 1].second, s.second);
    } else {
      stacks_[n++] = s;
    }
  }
  stacks_.resize(n);
}

// --- pass 2 ----------------------------------------------------------------

void Validator::Check(const Record& r, format::Reader& reader) {
  EmitPendingUpTo(r.offset);
  switch (r.kind) {
    case Kind::kObject:
      CheckObject(r, reader);
      return;
    case Kind::kEof:
      EmitPendingUpTo(~uint64_t{0});
      if (!params_) Emit(r.offset, r.kind, "the dump has no params record: heap pointers were not checked");
      return;
    case Kind::kStackRoot: {
      const std::string what = "stack root at " + H(r.stack_root.addr);
      if (!frames_.contains(r.stack_root.frame)) {
        Emit(r.offset, r.kind, what + ": frame " + H(r.stack_root.frame) + " is not a dumped frame");
      }
      CheckRoot(r, what, r.stack_root.ptr);
      return;
    }
    case Kind::kDataRoot:
      CheckRoot(r, "data root at " + H(r.data_root.addr), r.data_root.ptr);
      return;
    case Kind::kOtherRoot:
      CheckRoot(r, "other root " + QuoteText(r.other_root.description), r.other_root.ptr);
      return;
    case Kind::kType:
      CheckType(r);
      return;
    case Kind::kGoroutine: {
      auto it = thread_offsets_.find(r.goroutine.addr);
      if (it != thread_offsets_.end() && it->second != r.offset) {
        Emit(r.offset, r.kind, "thread " + H(r.goroutine.addr) + " is defined again (first at " + At(it->second) + ")");
      }
      return;
    }
    case Kind::kFrame: {
      auto it = frames_.find(r.frame.sp);
      if (it == frames_.end()) return;  // the file changed since pass 1; ValidateDump notices
      const Frame& f = it->second;
      const std::string what = "frame " + H(r.frame.sp) + " " + QuoteText(r.frame.name);
      if (f.offset != r.offset) {
        Emit(r.offset, r.kind, what + " is defined again (first at " + At(f.offset) + ")");
        return;
      }
      if (f.parent != 0 && !frames_.contains(f.parent)) {
        Emit(r.offset, r.kind, what + ": parent " + H(f.parent) + " is not a dumped frame");
      }
      if (f.owner == kNoOwner) Emit(r.offset, r.kind, what + " is on no thread's stack");
      return;
    }
    case Kind::kParams:
      if (r.offset != params_offset_) {
        Emit(r.offset, r.kind, "params repeated (first at " + At(params_offset_) + ")");
      }
      return;
    case Kind::kFinalizer:
      if (objects_.FindStart(r.finalizer.obj) == nullptr) {
        Emit(r.offset, r.kind, "finalizer: obj " + H(r.finalizer.obj) + " is not the start of a dumped object");
      }
      // Go writes a finalizer's types without their type records.
      if (!go_ && r.finalizer.ot != 0 && !types_.contains(r.finalizer.ot)) {
        Emit(r.offset, r.kind, "finalizer of " + H(r.finalizer.obj) + ": ot " + H(r.finalizer.ot) + " is not a defined type");
      }
      return;
    case Kind::kItab:
      return;
    case Kind::kTypeFields: {
      auto it = types_.find(r.type_fields.type);
      if (it == types_.end()) {
        Emit(r.offset, r.kind, "typefields: type " + H(r.type_fields.type) + " is not defined");
        return;
      }
      for (const format::NamedField& f : r.type_fields.fields) {
        if (f.offset > it->second.size || it->second.size - f.offset < f.size) {
          Emit(r.offset, r.kind, "typefields of type " + H(r.type_fields.type) + ": field " +
                                     QuoteText(f.name) + " at +" + std::to_string(f.offset) + " (" +
                                     std::to_string(f.size) + " bytes) runs past the type's " +
                                     std::to_string(it->second.size) + " bytes");
        }
      }
      return;
    }
    case Kind::kTypeInfo: {
      const format::TypeInfoRecord& ti = r.type_info;
      const std::string what = "typeinfo of type " + H(ti.type);
      if (!types_.contains(ti.type)) Emit(r.offset, r.kind, "typeinfo: type " + H(ti.type) + " is not defined");
      if ((ti.flags & format::kTypePolymorphic) && !itabs_.contains(ti.vtable)) {
        Emit(r.offset, r.kind, what + ": vtable " + H(ti.vtable) + " has no itab record");
      }
      if ((ti.flags & format::kTypeArray) && ti.elem_type != 0 && !types_.contains(ti.elem_type)) {
        Emit(r.offset, r.kind, what + ": element type " + H(ti.elem_type) + " is not defined");
      }
      return;
    }
    case Kind::kThreadInfo:
      if (!thread_offsets_.contains(r.thread_info.goroutine)) {
        Emit(r.offset, r.kind, "threadinfo " + QuoteText(r.thread_info.name) + ": goroutine " +
                                   H(r.thread_info.goroutine) + " is not a dumped thread");
      }
      return;
    case Kind::kMemStats:
      return;
    case Kind::kModule:
      if (r.module.end < r.module.start) {
        Emit(r.offset, r.kind, "module " + QuoteText(r.module.path) + ": end " + H(r.module.end) +
                                   " is below start " + H(r.module.start));
      }
      return;
    case Kind::kAllocStack:
      if (objects_.FindStart(r.alloc_stack.obj) == nullptr) {
        Emit(r.offset, r.kind, "allocstack: obj " + H(r.alloc_stack.obj) + " is not the start of a dumped object");
      }
      return;
  }
}

void Validator::CheckRoot(const Record& r, const std::string& what, uint64_t ptr) {
  if (Dangling(ptr)) {
    Emit(r.offset, r.kind, what + ": rootptr " + H(ptr) + " is in the heap but in no dumped object");
  }
}

void Validator::CheckType(const Record& r) {
  auto it = types_.find(r.type.addr);
  if (it == types_.end()) return;  // the file changed since pass 1
  const Type& t = it->second;
  const std::string what = "type " + H(r.type.addr) + " " + QuoteText(r.type.name);
  if (t.offset != r.offset) {
    Emit(r.offset, r.kind, what + " is defined again (first at " + At(t.offset) + ")");
    return;
  }
  const uint64_t w = word_size();
  for (size_t i = 0; i < t.pointer_offsets.size(); ++i) {
    const uint64_t off = t.pointer_offsets[i];
    if (off > t.size || t.size - off < w) {
      Emit(r.offset, r.kind, what + ": pointer field at +" + std::to_string(off) + " runs past the type's " +
                                 std::to_string(t.size) + " bytes");
    }
    if (i > 0 && off - t.pointer_offsets[i - 1] < w) {
      Emit(r.offset, r.kind, what + ": pointer fields at +" + std::to_string(t.pointer_offsets[i - 1]) +
                                 " and +" + std::to_string(off) + " overlap");
    }
  }
}

void Validator::CheckObject(const Record& r, format::Reader& reader) {
  const format::ObjectRecord& o = r.object;
  const std::string what = "object " + H(o.addr);
  if (params_) {
    const uint64_t hs = params_->heap_start, he = params_->heap_end;
    if (o.addr < hs || o.addr > he || he - o.addr < o.size) {
      Emit(r.offset, r.kind, what + " (" + std::to_string(o.size) + " bytes) is not inside the heap [" +
                                 H(hs) + ", " + H(he) + ")");
    }
  }
  if (o.type == 0) {
    if (o.kind != format::kObjRegular) {
      Emit(r.offset, r.kind, what + ": an untyped object has kind " + ObjectKindName(o.kind));
    }
    return;
  }
  auto it = types_.find(o.type);
  if (it == types_.end()) {
    Emit(r.offset, r.kind, what + ": type " + H(o.type) + " is not defined");
    return;
  }
  const Type& t = it->second;
  if (o.kind == format::kObjRegular && t.size > o.size) {
    Emit(r.offset, r.kind, what + " (" + std::to_string(o.size) + " bytes) is smaller than its type " +
                               QuoteText(t.name) + " (" + std::to_string(t.size) + " bytes)");
  }
  if (params_ && t.scannable && !t.pointer_offsets.empty()) CheckPointerWords(r, t, reader);
}

// Streams the payload once, assembling each pointer word (which may straddle
// two chunks) in a small buffer. Pointer words come in increasing order:
// element by element, and within an element in field order, which
// Type::scannable guarantees does not overlap or leave the element.
void Validator::CheckPointerWords(const Record& r, const Type& t, format::Reader& reader) {
  const format::ObjectRecord& o = r.object;
  const uint64_t w = word_size();
  const bool big = params_->big_endian != 0;
  uint64_t base = 0, stride = 0;  // stride 0: one element
  if (o.kind == format::kObjArray) {
    stride = t.size;
  } else if (o.kind == format::kObjChan) {
    base = params_->hchan_size;
    stride = t.size;
  }
  if (base >= o.size) return;

  uint64_t element = base;  // start of the current element
  size_t field = 0;
  constexpr uint64_t kDone = ~uint64_t{0};
  // Offset of the next pointer word that fits in the object, or kDone.
  const auto next_word = [&]() -> uint64_t {
    for (;;) {
      if (field == t.pointer_offsets.size()) {
        if (stride == 0 || o.size - element <= stride) return kDone;
        element += stride;
        field = 0;
      }
      const uint64_t off = element + t.pointer_offsets[field++];
      if (off < element || off > o.size || o.size - off < w) {
        field = t.pointer_offsets.size();
        if (stride == 0) return kDone;
        continue;
      }
      return off;
    }
  };

  uint64_t want = next_word();
  uint8_t word[8];
  size_t have = 0;
  uint64_t pos = 0;  // payload offset of the chunk
  reader.ReadPayload([&](std::span<const uint8_t> chunk) {
    const uint64_t chunk_end = pos + chunk.size();
    while (want != kDone && want + have < chunk_end) {
      const uint64_t from = want + have;
      const size_t k = static_cast<size_t>(std::min<uint64_t>(w - have, chunk_end - from));
      std::memcpy(word + have, chunk.data() + (from - pos), k);
      have += k;
      if (have < w) break;
      uint64_t p = 0;
      for (size_t i = 0; i < w; ++i) {
        const uint8_t b = big ? word[i] : word[w - 1 - i];
        p = (p << 8) | b;
      }
      if (Dangling(p)) {
        Emit(r.offset, r.kind, "object " + H(o.addr) + " " + QuoteText(t.name) + ": pointer at +" +
                                   std::to_string(want) + " is " + H(p) +
                                   ", in the heap but in no dumped object");
      }
      have = 0;
      want = next_word();
    }
    pos = chunk_end;
  });
}

void ThrowChanged(uint64_t offset) {
  throw format::FormatError(offset, "input", "the file changed between the two passes of --validate");
}

uint64_t ValidateDump(const ReaderFactory& open, const ProblemSink& sink,
                      const std::function<void(const Record&, format::Reader&)>& first_pass) {
  Validator v(sink);
  Record r;
  uint64_t end = 0;
  {
    std::shared_ptr<format::Reader> reader = open();
    v.SetGoRuntime(reader->dialect() != format::Dialect::kLibdump);
    while (reader->Next(r)) {
      v.Collect(r);
      if (first_pass) first_pass(r, *reader);
    }
    end = r.offset;
  }
  v.FinishCollect();
  std::shared_ptr<format::Reader> reader = open();
  while (reader->Next(r)) {
    if (r.offset > end || (r.offset == end && r.kind != Kind::kEof)) ThrowChanged(r.offset);
    v.Check(r, *reader);
  }
  if (r.offset != end) ThrowChanged(r.offset);
  return v.problems();
}

}  // namespace libdump::readdump
