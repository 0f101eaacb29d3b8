#include "object_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace libdump::dumptohprof {
namespace {

namespace hp = format::hprof;
using hp::Id;

constexpr size_t kWholePayload = size_t{64} << 20;  // objects up to this are looked at in one span
constexpr uint64_t kMaxArrayBody = UINT32_MAX - 64;  // an array record must fit a 32-bit length

void Be64(uint8_t* out, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(out, &v, 8);
}

// Calls fn(unit_bytes) for each of the first `count` units of `unit` bytes
// of the payload, joining units split between chunks.
template <typename Fn>
void ForEachUnit(format::Reader& reader, unsigned unit, uint64_t count, Fn&& fn) {
  uint8_t carry[8];
  unsigned carried = 0;
  uint64_t done = 0;
  reader.ReadPayload([&](std::span<const uint8_t> c) {
    size_t i = 0;
    if (carried > 0) {
      while (carried < unit && i < c.size()) carry[carried++] = c[i++];
      if (carried < unit) return;
      if (done < count) fn(carry), ++done;
      carried = 0;
    }
    for (; i + unit <= c.size() && done < count; i += unit, ++done) fn(c.data() + i);
    if (done < count) {
      while (i < c.size()) carry[carried++] = c[i++];
    }
  });
}

std::string HexAddr(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

void ObjectCounts::Add(const ObjectCounts& o) {
  objects += o.objects;
  instances += o.instances;
  object_arrays += o.object_arrays;
  primitive_arrays += o.primitive_arrays;
  truncated_arrays += o.truncated_arrays;
  roots += o.roots;
  unresolved_roots += o.unresolved_roots;
  alloc_stacks += o.alloc_stacks;
  for (const auto& [id, c] : o.by_type) {
    auto& mine = by_type[id];
    for (size_t s = 0; s < c.size(); ++s) mine[s] += c[s];
  }
  for (const auto& [id, c] : o.untyped) {
    untyped[id].arrays += c.arrays;
    untyped[id].bytes += c.bytes;
  }
  for (const auto& [key, n] : o.go_typed) go_typed[key] += n;
}

bool ObjectWriter::Convert(format::Reader& reader, const format::Record& r) {
  switch (r.kind) {
    case format::Kind::kObject: Object(reader, r); return true;
    case format::Kind::kStackRoot: StackRoot(r.stack_root); return true;
    case format::Kind::kDataRoot: DataRoot(r.data_root); return true;
    default: return false;
  }
}

Id ObjectWriter::Resolve(uint64_t p) {
  const Id id = plan_.catalog->index().Find(p);
  // A root of libdump's own memory is left out with it.
  if (id == 0 && !plan_.catalog->InOwnObject(p)) ++counts_.unresolved_roots;
  return id;
}

void ObjectWriter::StackRoot(const format::StackRootRecord& r) {
  const Id obj = Resolve(r.ptr);
  if (obj == 0) return;
  if (auto it = plan_.frame_roots.find(r.frame); it != plan_.frame_roots.end()) {
    out_.RootJavaFrame(obj, it->second.thread_serial, it->second.depth);
  } else {
    out_.RootUnknown(obj);
  }
  ++counts_.roots;
}

// Data roots: JNI globals, whose second id keeps the address of the slot.
void ObjectWriter::DataRoot(const format::DataRootRecord& r) {
  const Id obj = Resolve(r.ptr);
  if (obj == 0) return;
  out_.RootJniGlobal(obj, r.addr);
  ++counts_.roots;
}

inline uint64_t ObjectWriter::Word(const uint8_t* p) const {
  if (plan_.ptr == 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return plan_.big ? __builtin_bswap64(v) : v;
  }
  uint32_t v;
  std::memcpy(&v, p, 4);
  return plan_.big ? __builtin_bswap32(v) : v;
}

// A scalar field of n bytes into the big-endian hprof.
inline void ObjectWriter::Scalar(uint8_t* out, const uint8_t* src, uint32_t n) const {
  if (plan_.big) return static_cast<void>(std::memcpy(out, src, n));
  switch (n) {
    case 1: *out = *src; return;
    case 2: { uint16_t v; std::memcpy(&v, src, 2); v = __builtin_bswap16(v); std::memcpy(out, &v, 2); return; }
    case 4: { uint32_t v; std::memcpy(&v, src, 4); v = __builtin_bswap32(v); std::memcpy(out, &v, 4); return; }
    case 8: { uint64_t v; std::memcpy(&v, src, 8); v = __builtin_bswap64(v); std::memcpy(out, &v, 8); return; }
    default: for (uint32_t i = 0; i < n; ++i) out[i] = src[n - 1 - i];
  }
}

void ObjectWriter::Object(format::Reader& reader, const format::Record& r) {
  const format::ObjectRecord& o = r.object;
  const DumpCatalog& catalog = *plan_.catalog;
  if (!catalog.include_own() && o.type != 0 && catalog.IsOwnType(o.type)) return;  // libdump's own: left out
  ++counts_.objects;
  trace_ = hp::kEmptyTrace;
  if (const auto& of = catalog.alloc_stacks().of_object; !of.empty()) {
    if (auto it = of.find(o.addr); it != of.end()) {
      trace_ = plan_.alloc_traces[it->second];
      ++counts_.alloc_stacks;
    }
  }
  if (!catalog.duplicates().empty() && catalog.duplicates().contains(o.addr) &&
      !seen_duplicates_.insert(o.addr).second) {
    throw format::FormatError(r.offset, "kind 1 (object)",
                              "object " + HexAddr(o.addr) + " starts where an earlier object starts");
  }
  if (plan_.go_class_of != nullptr && GoObject(reader, o)) return;
  if (o.type != last_type_id_ || last_type_ == nullptr) {
    auto it = o.type == 0 ? plan_.types.end() : plan_.types.find(o.type);
    if (it == plan_.types.end()) return Untyped(reader, o, counts_.untyped[o.type]);
    last_type_id_ = o.type;
    last_type_ = &it->second;
    last_counts_ = &counts_.by_type[o.type];
  }
  const PlannedType& t = *last_type_;
  const Shape shape = o.kind == format::kObjRegular ? t.plan.regular : t.plan.array;
  ++(*last_counts_)[static_cast<size_t>(shape)];
  switch (shape) {
    case Shape::kInstance: return Instance(reader, o, t);
    case Shape::kWordArray: return Words(reader, o, t.array_class, t.plan.pointer_words);
    case Shape::kPrimitiveArray: return Primitives(reader, o, t.plan.prim);
  }
}

bool ObjectWriter::GoObject(format::Reader& reader, const format::ObjectRecord& o) {
  const size_t pos = plan_.catalog->index().PositionOf(o.addr);
  const uint32_t g = pos == AddressIndex::kNone ? 0 : (*plan_.go_class_of)[pos];
  if (g == 0) return false;
  const PlannedType& t = plan_.go_types[g];
  ++counts_.go_typed[{o.type, g}];
  switch (t.plan.regular) {
    case Shape::kInstance: Instance(reader, o, t); break;
    case Shape::kWordArray: Words(reader, o, t.array_class, t.plan.pointer_words); break;
    case Shape::kPrimitiveArray: Primitives(reader, o, t.plan.prim); break;
  }
  return true;
}

void ObjectWriter::Instance(format::Reader& reader, const format::ObjectRecord& o, const PlannedType& t) {
  const TypePlan& plan = t.plan;
  std::span<const uint8_t> payload;
  if (o.size <= kWholePayload) {
    payload = reader.Payload(kWholePayload);
  } else {
    prefix_.clear();
    reader.ReadPayload([&](std::span<const uint8_t> c) {
      const size_t take = std::min<size_t>(c.size(), plan.prefix - std::min<size_t>(plan.prefix, prefix_.size()));
      prefix_.insert(prefix_.end(), c.begin(), c.begin() + take);
    });
    payload = prefix_;
  }
  // Fields go straight into the writer's buffer; what no field fills is zero.
  uint8_t* const data = out_.InstanceData(o.addr, trace_, t.instance_class, static_cast<uint32_t>(t.data_size));
  uint8_t* out = data;
  const AddressIndex& index = plan_.catalog->index();
  for (const FieldPlan& f : plan.fields) {
    const bool inside = f.offset < payload.size() && payload.size() - f.offset >= f.size;
    if (f.pointer) {
      Be64(out, inside ? index.Find(Word(payload.data() + f.offset)) : 0);
      out += 8;
      continue;
    }
    if (inside && !plan_.redact) {
      Scalar(out, payload.data() + f.offset, f.size);
    } else {
      std::memset(out, 0, f.size);
    }
    out += f.size;
  }
  std::memset(out, 0, t.data_size - static_cast<uint64_t>(out - data));
  ++counts_.instances;
}

uint64_t ObjectWriter::CapLength(uint64_t length, uint64_t unit) {
  if (length * unit <= kMaxArrayBody) return length;
  ++counts_.truncated_arrays;
  return kMaxArrayBody / unit;
}

void ObjectWriter::Words(format::Reader& reader, const format::ObjectRecord& o, Id cls,
                         const std::vector<bool>& pointer_words) {
  const uint64_t length = CapLength(o.size / plan_.ptr, hp::kIdSize);
  out_.BeginObjectArray(o.addr, trace_, cls, static_cast<uint32_t>(length));
  ids_buf_.clear();
  uint64_t w = 0;
  const size_t period = pointer_words.size();
  const AddressIndex& index = plan_.catalog->index();
  ForEachUnit(reader, plan_.ptr, length, [&](const uint8_t* p) {
    ids_buf_.push_back(pointer_words[w++ % period] ? index.Find(Word(p)) : 0);
    if (ids_buf_.size() == 4096) out_.Ids(ids_buf_), ids_buf_.clear();
  });
  out_.Ids(ids_buf_);
  ++counts_.object_arrays;
}

void ObjectWriter::Primitives(format::Reader& reader, const format::ObjectRecord& o, hp::Type type) {
  const unsigned k = hp::TypeSize(type);
  const uint64_t length = CapLength(o.size / k, k);
  out_.BeginPrimitiveArray(o.addr, trace_, type, static_cast<uint32_t>(length));
  uint64_t left = length * k;
  if (plan_.redact) {
    const std::vector<uint8_t> zeros(std::min<uint64_t>(left, 1 << 16), 0);
    for (; left > 0; left -= std::min<uint64_t>(left, zeros.size())) {
      out_.Raw(std::span(zeros).first(std::min<uint64_t>(left, zeros.size())));
    }
  } else if ((k == 1 || plan_.big) && o.size <= kWholePayload) {
    out_.Raw(reader.Payload(kWholePayload).first(left));
  } else if (k == 1 || plan_.big) {
    reader.ReadPayload([&](std::span<const uint8_t> c) {
      const size_t take = std::min<uint64_t>(left, c.size());
      out_.Raw(c.first(take));
      left -= take;
    });
  } else {
    bytes_buf_.clear();
    ForEachUnit(reader, k, length, [&](const uint8_t* p) {
      for (unsigned i = k; i-- > 0;) bytes_buf_.push_back(p[i]);
      if (bytes_buf_.size() >= (1 << 16)) out_.Raw(bytes_buf_), bytes_buf_.clear();
    });
    out_.Raw(bytes_buf_);
  }
  ++counts_.primitive_arrays;
}

// No layout: an object array when some aligned word points into a dumped
// object, else byte[]. Objects too large to look at twice are taken as arrays.
void ObjectWriter::Untyped(format::Reader& reader, const format::ObjectRecord& o, UntypedCounts& counts) {
  static const std::vector<bool> kAll{true};
  if (o.size > kWholePayload) {
    ++counts.arrays;
    return Words(reader, o, plan_.untyped_array, kAll);
  }
  const std::span<const uint8_t> payload = reader.Payload(kWholePayload);
  const uint64_t words = payload.size() / plan_.ptr;
  ids_buf_.resize(words);
  bool any = false;
  const AddressIndex& index = plan_.catalog->index();
  for (uint64_t i = 0; i < words; ++i) {
    ids_buf_[i] = index.Find(Word(payload.data() + i * plan_.ptr));
    any |= ids_buf_[i] != 0;
  }
  if (any) {
    ++counts.arrays;
    out_.ObjectArray(o.addr, trace_, plan_.untyped_array, ids_buf_);
    ++counts_.object_arrays;
    return;
  }
  ++counts.bytes;
  const uint64_t length = CapLength(payload.size(), 1);
  out_.BeginPrimitiveArray(o.addr, trace_, hp::Type::kByte, static_cast<uint32_t>(length));
  if (plan_.redact) {
    bytes_buf_.assign(length, 0);
    out_.Raw(bytes_buf_);
  } else {
    out_.Raw(payload.first(length));
  }
  ++counts_.primitive_arrays;
}

}  // namespace libdump::dumptohprof
