// Decodes the records of Go runtimes' heap dumps, go1.3 to go1.7 (Go 1.3's
// and 1.4's runtime/heapdump.c, heapdump.go since), into the record model;
// docs/GODUMP.md has each dialect's layouts and the mapping.
#include "go_dump.h"

#include <algorithm>
#include <cstring>

#include "libdump/format/reader.h"
#include "libdump/format/uvarint.h"

namespace libdump::format {

const char* GoTagName(uint64_t tag) {
  static constexpr const char* kNames[] = {
      "eof",     "object",   "otherroot", "type",           "goroutine", "stackframe",
      "params",  "finalizer", "itab",     "osthread",       "memstats",  "queuedfinalizer",
      "data",    "bss",      "defer",     "panic",          "memprof",   "allocsample"};
  return tag < std::size(kNames) ? kNames[tag] : "unknown";
}

namespace {

// runtime.MemStats as dumpmemstats writes it: these 24 words, PauseNs[256],
// then NumGC.
constexpr const char* kMemStatNames[] = {
    "Alloc",       "TotalAlloc",  "Sys",         "Lookups",     "Mallocs",      "Frees",
    "HeapAlloc",   "HeapSys",     "HeapIdle",    "HeapInuse",   "HeapReleased", "HeapObjects",
    "StackInuse",  "StackSys",    "MSpanInuse",  "MSpanSys",    "MCacheInuse",  "MCacheSys",
    "BuckHashSys", "GCSys",       "OtherSys",    "NextGC",      "LastGC",       "PauseTotalNs"};
constexpr int kPauses = 256;

constexpr uint64_t kGoFieldEol = 0;
// go1.3's object kind for an object without type information that the
// collector scans conservatively (TypeInfo_Conservative).
constexpr uint64_t kGo13Conservative = 127;

}  // namespace

bool LooksLikeGo13Params(std::span<const uint8_t> bytes) {
  size_t at = 0;
  uint64_t v[7];
  for (uint64_t& x : v) {
    const UvarintResult r = GetUvarint(bytes.data() + at, bytes.size() - at);
    if (r.status != UvarintStatus::kOk) return false;
    x = r.value;
    at += r.len;
  }
  const uint64_t kind = v[0], endian = v[1], ptr_size = v[2], heap_start = v[4], heap_end = v[5],
                 arch = v[6];
  return kind == kGoParams && endian <= 1 && (ptr_size == 4 || ptr_size == 8) &&
         heap_start <= heap_end && (arch == '5' || arch == '6' || arch == '8');
}

GoDecoder::GoDecoder(Input& in, Dialect dialect, uint64_t max_string)
    : in_(in), dialect_(dialect), max_string_(max_string) {}

void GoDecoder::Fail(uint64_t offset, const std::string& reason) const {
  throw FormatError(offset, "go kind " + std::to_string(tag_) + " (" + GoTagName(tag_) + ")", reason);
}

uint64_t GoDecoder::USlow(const char* field) {
  if (in_.Available() < kMaxUvarintLen) in_.Fill(kMaxUvarintLen);
  const UvarintResult r = GetUvarint(in_.pos, in_.Available());
  if (r.status != UvarintStatus::kOk) {
    Fail(in_.Offset(), std::string(field) + ": " +
                           (r.status == UvarintStatus::kTruncated ? "unexpected end of input"
                                                                  : UvarintStatusString(r.status)));
  }
  in_.pos += r.len;
  return r.value;
}

bool GoDecoder::Bool(const char* field) {
  const uint64_t at = in_.Offset();
  const uint64_t v = U(field);
  if (v > 1) Fail(at, std::string(field) + ": expected 0 or 1, got " + std::to_string(v));
  return v == 1;
}

// A count or length, checked before anything is sized from it: `unit` is the
// fewest bytes one element occupies.
uint64_t GoDecoder::Length(const char* field, uint64_t unit) {
  const uint64_t at = in_.Offset();
  const uint64_t n = U(field);
  if (n > max_string_ / unit) {
    Fail(at, std::string(field) + ": length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(max_string_ / unit));
  }
  if (auto rem = in_.Remaining(); rem && n > *rem / unit) {
    Fail(at, std::string(field) + ": length " + std::to_string(n) + " exceeds the " +
                 std::to_string(*rem) + " bytes left in the file");
  }
  return n;
}

// Grows only as bytes arrive, so a lying length allocates no more than the
// input holds.
void GoDecoder::Bytes(const char* field, std::vector<uint8_t>& out) {
  const uint64_t at = in_.Offset();
  const uint64_t n = Length(field, 1);
  if (in_.Available() >= n) [[likely]] {
    out.assign(in_.pos, in_.pos + n);
    in_.pos += n;
    return;
  }
  out.clear();
  for (uint64_t left = n; left > 0;) {
    if (in_.Available() == 0) {
      in_.Fill(1);
      if (in_.Available() == 0) {
        Fail(at, std::string(field) + ": unexpected end of input in " + std::to_string(n) + " bytes");
      }
    }
    const size_t k = static_cast<size_t>(std::min<uint64_t>(left, in_.Available()));
    out.insert(out.end(), in_.pos, in_.pos + k);
    in_.pos += k;
    left -= k;
  }
}

void GoDecoder::Str(const char* field, std::string& out) {
  const uint64_t at = in_.Offset();
  const uint64_t n = Length(field, 1);
  out.clear();
  for (uint64_t left = n; left > 0;) {
    if (in_.Available() == 0) {
      in_.Fill(1);
      if (in_.Available() == 0) {
        Fail(at, std::string(field) + ": unexpected end of input in a " + std::to_string(n) +
                     "-byte string");
      }
    }
    const size_t k = static_cast<size_t>(std::min<uint64_t>(left, in_.Available()));
    out.append(reinterpret_cast<const char*>(in_.pos), k);
    in_.pos += k;
    left -= k;
  }
}

void GoDecoder::Fields(uint64_t size, std::vector<Field>& out, bool increasing) {
  out.clear();
  const bool go13 = dialect_ == Dialect::kGo13;
  for (;;) {
    const uint64_t at = in_.Offset();
    const uint64_t kind = U("fieldkind");
    if (kind == kGoFieldEol) return;
    // go1.3: 1 ptr, 2 string, 3 slice, 4 iface, 5 eface, the model's kinds
    // plus one; from go1.4 strings and slices are plain pointers and the
    // kinds are 1 ptr, 2 iface, 3 eface.
    if (kind > (go13 ? 5u : 3u)) {
      Fail(at, std::string("fieldkind: expected 0 to ") + (go13 ? "5" : "3") + ", got " + std::to_string(kind));
    }
    Field f;
    f.kind = go13 ? kind - 1 : kind == 1 ? kFieldPtr : kind == 2 ? kFieldIface : kFieldEface;
    const uint64_t off_at = in_.Offset();
    f.offset = U("fieldoffset");
    const uint64_t words = f.kind == kFieldPtr ? 1 : f.kind == kFieldSlice ? 3 : 2;
    if (f.offset > size || size - f.offset < words * ptr_size_) {
      Fail(off_at, "fieldoffset: " + std::to_string(f.offset) + " is not inside the " +
                       std::to_string(size) + "-byte contents");
    }
    if (increasing && !out.empty() && f.offset <= out.back().offset) {
      Fail(off_at, "fieldoffset: offsets do not increase");
    }
    // Each field takes at least two bytes, so the list is bounded by the input.
    if (out.size() >= max_string_ / 2) Fail(off_at, "fieldoffset: too many fields");
    out.push_back(f);
  }
}

uint64_t GoDecoder::Word(const std::vector<uint8_t>& bytes, uint64_t offset) const {
  uint64_t v = 0;
  for (uint64_t i = 0; i < ptr_size_; ++i) {
    const uint64_t b = bytes[offset + i];
    v |= big_endian_ ? b << (8 * (ptr_size_ - 1 - i)) : b << (8 * i);
  }
  return v;
}

void GoDecoder::Resume() {
  frame_ready_ = false;
  roots_.clear();
  roots_next_ = 0;
  type_ready_ = false;
  ready_ = false;
  frame_held_ = false;
  held_roots_.clear();
}

bool GoDecoder::Next(Record& r) {
  for (;;) {
    if (frame_ready_) {
      frame_ready_ = false;
      r.kind = Kind::kFrame;
      r.offset = frame_out_offset_;
      r.frame = frame_out_;
      return true;
    }
    if (roots_next_ < roots_.size()) {
      const Root& x = roots_[roots_next_++];
      r.kind = x.kind;
      r.offset = x.at;
      if (x.kind == Kind::kStackRoot) {
        r.stack_root = {x.addr, x.ptr, x.frame, x.before};
      } else {
        r.data_root = {x.addr, x.ptr, x.before};
      }
      return true;
    }
    roots_.clear();
    roots_next_ = 0;
    if (type_ready_) {
      type_ready_ = false;
      r.kind = Kind::kType;
      r.offset = rec_.offset;
      r.type = rec_.type;
      return true;
    }
    if (type_info_ready_) {
      type_info_ready_ = false;
      r.kind = Kind::kTypeInfo;
      r.offset = rec_.offset;
      r.type_info = rec_.type_info;
      return true;
    }
    if (ready_) {
      ready_ = false;
      r.kind = rec_.kind;
      r.offset = rec_.offset;
      switch (rec_.kind) {
#define LIBDUMP_GO_COPY(name, number, member, text) \
  case Kind::k##name:                               \
    r.member = rec_.member;                         \
    break;
        LIBDUMP_FORMAT_RECORD_KINDS(LIBDUMP_GO_COPY)
#undef LIBDUMP_GO_COPY
      }
      return true;
    }
    if (done_) return false;
    DecodeOne();
  }
}

// The held frame goes out with its caller's sp once the record after it is
// known: Go writes a goroutine's frames innermost first, each naming the sp
// of the frame before it (its callee), so the caller is the next frame when
// that frame names this one.
void GoDecoder::FlushFrame(uint64_t caller_sp, bool caller_known) {
  if (!frame_held_) return;
  frame_held_ = false;
  held_.parent = caller_known ? caller_sp : 0;
  std::swap(frame_out_, held_);
  frame_out_offset_ = held_offset_;
  frame_ready_ = true;
  roots_.insert(roots_.end(), held_roots_.begin(), held_roots_.end());
  held_roots_.clear();
}

void GoDecoder::DecodeOne() {
  const uint64_t at = in_.Offset();
  tag_ = 0;
  in_.Fill(1);
  if (in_.Available() == 0) {
    throw FormatError(at, "record", "unexpected end of input: expected a record (no eof record)");
  }
  tag_ = U("kind");
  rec_.offset = at;
  if (tag_ == kGoFrame) {
    DecodeFrame(at);
    return;
  }
  FlushFrame(0, false);
  switch (tag_) {
    case kGoEof:
      in_.Fill(1);
      if (in_.Available() != 0) Fail(in_.Offset(), "unexpected data after the eof record");
      done_ = true;
      rec_.kind = Kind::kEof;
      ready_ = true;
      return;
    case kGoObject:
      DecodeObject();
      return;
    case kGoOtherRoot:
      rec_.kind = Kind::kOtherRoot;
      Str("description", rec_.other_root.description);
      rec_.other_root.ptr = U("ptr");
      ready_ = true;
      return;
    case kGoType: {
      TypeRecord& t = rec_.type;
      rec_.kind = Kind::kType;
      t.addr = U("addr");
      t.size = U("size");
      Str("name", t.name);
      t.eface_ptr = Bool("efaceptr");
      t.fields.clear();
      if (dialect_ == Dialect::kGo13) {  // go1.3 types carry the pointer layout
        Fields(t.size, t.fields, true);
      }
      // Go's type cache may write a type twice; the model defines it once.
      ready_ = type_is_ptr_.try_emplace(t.addr, t.eface_ptr).second;
      return;
    }
    case kGoGoroutine: {
      GoroutineRecord& g = rec_.goroutine;
      rec_.kind = Kind::kGoroutine;
      g.addr = U("addr");
      g.tos = U("sp");
      g.goid = U("goid");
      g.gopc = U("gopc");
      // _Gscan (0x1000) marks a status being scanned; _Gidle.._Gwaiting are
      // the model's 0..4, and Go's others (_Gdead 6, _Gcopystack 8,
      // _Gpreempted 9) stay as numbers.
      g.status = U("status") & ~uint64_t{0x1000};
      g.is_system = Bool("issystem");
      g.is_background = Bool("isbackground");
      g.wait_since = U("waitsince");
      Str("waitreason", g.wait_reason);
      U("ctxt");
      U("m");
      U("defer");
      U("panic");
      ready_ = true;
      return;
    }
    case kGoParams: {
      ParamsRecord& p = rec_.params;
      rec_.kind = Kind::kParams;
      p.big_endian = Bool("bigendian");
      const uint64_t p_at = in_.Offset();
      p.ptr_size = U("ptrsize");
      if (p.ptr_size != 4 && p.ptr_size != 8) {
        Fail(p_at, "ptrsize: expected 4 or 8, got " + std::to_string(p.ptr_size));
      }
      p.hchan_size = dialect_ == Dialect::kGo13 ? U("hchansize") : 0;
      p.heap_start = U("arenastart");
      const uint64_t h_at = in_.Offset();
      p.heap_end = U("arenaend");
      if (p.heap_end < p.heap_start) Fail(h_at, "arenaend: below arenastart");
      if (dialect_ == Dialect::kGo13 || dialect_ == Dialect::kGo14) {
        U("thechar");  // the architecture's letter: '5' arm, '6' amd64, '8' 386, '9' power64
      } else {
        Str("arch", skip_);  // GOARCH
      }
      Str("version", skip_);  // GOEXPERIMENT up to Go 1.9-ish, buildVersion since
      U("ncpu");
      ptr_size_ = p.ptr_size;
      big_endian_ = p.big_endian;
      ready_ = true;
      return;
    }
    case kGoFinalizer:
    case kGoQueuedFinalizer: {
      FinalizerRecord& f = rec_.finalizer;
      rec_.kind = Kind::kFinalizer;
      f.obj = U("obj");
      f.funcval = U("fn");
      f.code = U("fnentry");
      f.fint = U("fint");
      f.ot = U("ot");
      ready_ = true;
      return;
    }
    case kGoItab: {
      rec_.kind = Kind::kItab;
      rec_.itab.addr = U("addr");
      rec_.itab.type = 0;
      if (dialect_ == Dialect::kGo13) {
        // go1.3 says directly whether the interface's data word is a pointer
        // (small scalars were stored in the word itself).
        rec_.itab.ptr = Bool("ptr") ? 1 : 0;
        itab_is_ptr_[rec_.itab.addr] = rec_.itab.ptr != 0;
        ready_ = true;
        return;
      }
      const uint64_t type = U("type");
      rec_.itab.type = type;
      // The model's itab says whether an interface's data word is a pointer.
      // Up to go1.6 the type is that of the data word, always a pointer
      // type; from go1.7 it is the stored type, whose record precedes the
      // itab and says whether the data word points to it.
      const auto it = type_is_ptr_.find(type);
      rec_.itab.ptr = dialect_ != Dialect::kGo17 || it == type_is_ptr_.end() || it->second ? 1 : 0;
      ready_ = true;
      return;
    }
    case kGoOSThread:
      U("addr");
      U("id");
      U("procid");
      return;
    case kGoMemStats: {
      rec_.kind = Kind::kMemStats;
      auto& stats = rec_.mem_stats.stats;
      stats.resize(std::size(kMemStatNames) + 1);
      for (size_t i = 0; i < std::size(kMemStatNames); ++i) {
        stats[i].name = kMemStatNames[i];
        stats[i].value = U(kMemStatNames[i]);
      }
      for (int i = 0; i < kPauses; ++i) U("PauseNs");
      stats.back().name = "NumGC";
      stats.back().value = U("NumGC");
      ready_ = true;
      return;
    }
    case kGoData:
    case kGoBss:
      DecodeSegment();
      return;
    case kGoDefer:
      for (const char* f : {"addr", "gp", "sp", "pc", "fn", "fnentry", "link"}) U(f);
      return;
    case kGoPanic:
      for (const char* f : {"addr", "gp", "type", "data", "defer", "link"}) U(f);
      return;
    case kGoMemProf: {
      U("bucket");
      U("size");
      // Each frame takes at least three bytes: two strings and a line.
      const uint64_t n = Length("nstk", 3);
      for (uint64_t i = 0; i < n; ++i) {
        Str("func", skip_);
        Str("file", skip_);
        U("line");
      }
      U("allocs");
      U("frees");
      return;
    }
    case kGoAllocSample:
      U("obj");
      U("bucket");
      return;
    default:
      Fail(at, "unknown record kind");
  }
}

void GoDecoder::DecodeObject() {
  ObjectRecord& o = rec_.object;
  rec_.kind = Kind::kObject;
  ready_ = true;
  o.addr = U("addr");
  if (dialect_ == Dialect::kGo13) {
    // go1.3: the type and kind the span recorded, then the contents; the
    // layout is the type's (a channel's type is its element type).
    o.type = U("type");
    const uint64_t k_at = in_.Offset();
    const uint64_t kind = U("objkind");
    if (kind != kGo13Conservative && kind > kObjChan) {
      Fail(k_at, "objkind: expected 0, 1, 2 or 127, got " + std::to_string(kind));
    }
    if (o.type == 0 && kind != kObjRegular && kind != kGo13Conservative) {
      Fail(k_at, "objkind: an array or channel object without a type");
    }
    Bytes("contents", payload_);
    o.size = payload_.size();
    o.kind = kind == kGo13Conservative ? kObjRegular : kind;
    fields_.clear();
    if (kind == kGo13Conservative) {
      SyntheticType(o.size, true);
    } else if (o.type == 0) {
      SyntheticType(o.size, false);  // no pointers: noptrN
    }
    return;
  }
  Bytes("contents", payload_);
  o.size = payload_.size();
  o.kind = kObjRegular;
  Fields(o.size, fields_, true);
  SyntheticType(o.size, false);
}

void GoDecoder::SyntheticType(uint64_t size, bool conservative) {
  ObjectRecord& o = rec_.object;
  // Neighbours in a span mostly share a layout: one compare instead of a
  // key and a hash.
  if (size == last_size_ && conservative == last_conservative_ && fields_ == last_fields_ && last_type_ != 0) {
    o.type = last_type_;
    return;
  }
  last_size_ = size;
  last_conservative_ = conservative;
  last_fields_ = fields_;
  key_.assign(1, conservative ? 'c' : 'l');
  key_.append(reinterpret_cast<const char*>(&size), sizeof size);
  for (const Field& f : fields_) {
    key_.append(reinterpret_cast<const char*>(&f.offset), sizeof f.offset);
    key_ += static_cast<char>(f.kind);
  }
  auto [it, fresh] = layouts_.try_emplace(key_, kGoSyntheticTypeBase + layouts_.size());
  o.type = last_type_ = it->second;
  if (!fresh) return;
  TypeRecord& t = rec_.type;
  t.addr = o.type;
  t.size = size;
  t.eface_ptr = true;
  t.fields = fields_;
  // Named as the seed's converter named untyped objects: noptrN without
  // pointers, else by size and the first pointer offsets; go1.3's
  // conservatively scanned objects are conservativeN.
  if (conservative) {
    t.name = "conservative" + std::to_string(size);
    rec_.type_info = {t.addr, kTypeConservative, 0, 0, 0};
    type_info_ready_ = true;
  } else if (fields_.empty()) {
    t.name = "noptr" + std::to_string(size);
  } else {
    t.name = "obj" + std::to_string(size) + "[";
    for (size_t i = 0; i < fields_.size() && i < 8; ++i) {
      if (i != 0) t.name += ',';
      t.name += std::to_string(fields_[i].offset);
    }
    if (fields_.size() > 8) t.name += ",+" + std::to_string(fields_.size() - 8);
    t.name += "]";
  }
  type_ready_ = true;
}

// Strings and slices point through their first word, interfaces through
// their second; go1.3 stored small scalars in an interface's data word, and
// its itab or type record says so.
void GoDecoder::Roots(Kind kind, uint64_t base, uint64_t frame, uint64_t at, std::vector<Root>& out) const {
  for (const Field& f : fields_) {
    uint64_t off = f.offset;
    if (f.kind == kFieldIface || f.kind == kFieldEface) {
      if (dialect_ == Dialect::kGo13) {
        const auto& known = f.kind == kFieldIface ? itab_is_ptr_ : type_is_ptr_;
        if (auto it = known.find(Word(scratch_, off)); it != known.end() && !it->second) continue;
      }
      off += ptr_size_;
    }
    if (const uint64_t p = Word(scratch_, off); p != 0) {
      out.push_back({kind, base + off, p, frame, at, off >= ptr_size_ ? Word(scratch_, off - ptr_size_) : 0});
    }
  }
}

void GoDecoder::DecodeFrame(uint64_t at) {
  const uint64_t sp = U("sp");
  U("depth");
  const uint64_t child = U("childsp");
  FlushFrame(sp, frame_held_ && child == held_.sp && child != 0);
  Bytes("contents", scratch_);
  held_.sp = sp;
  held_.size = scratch_.size();
  held_.entry = U("entry");
  held_.pc = U("pc");
  U("continpc");
  Str("name", held_.name);
  Fields(scratch_.size(), fields_);
  held_roots_.clear();
  Roots(Kind::kStackRoot, sp, sp, at, held_roots_);
  held_offset_ = at;
  frame_held_ = true;
}

void GoDecoder::DecodeSegment() {
  const uint64_t at = rec_.offset;
  const uint64_t base = U("addr");
  Bytes("contents", scratch_);
  Fields(scratch_.size(), fields_);
  Roots(Kind::kDataRoot, base, 0, at, roots_);
}

}  // namespace libdump::format
