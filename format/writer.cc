#include "libdump/format/writer.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

#include "libdump/format/uvarint.h"

namespace libdump::format {

namespace {
constexpr size_t kMinBuffer = 4096;
inline uint64_t K(Kind k) { return static_cast<uint64_t>(k); }
}  // namespace

Writer::Writer(Sink& sink, WriterOptions options)
    : sink_(sink), options_(options) {
  if (options_.buffer_size < kMinBuffer) options_.buffer_size = kMinBuffer;
  options_.buffer_size = (options_.buffer_size + 4095) & ~size_t{4095};
  void* p = mmap(nullptr, MappingSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  buf_ = static_cast<uint8_t*>(p);
  pos_ = buf_;
  piece_ = buf_;
  end_ = buf_ + options_.buffer_size;
  iov_ = reinterpret_cast<iovec*>(end_);
}

Writer::~Writer() { munmap(buf_, MappingSize()); }

size_t Writer::MappingSize() const { return options_.buffer_size + kMaxIov * sizeof(iovec); }

void Writer::Drain() {
  if (n_iov_ == 0) {
    sink_.Write(buf_, static_cast<size_t>(pos_ - buf_));
  } else {
    if (pos_ != piece_) iov_[n_iov_++] = {piece_, static_cast<size_t>(pos_ - piece_)};
    sink_.Writev(iov_, n_iov_);
    n_iov_ = 0;
  }
  pos_ = buf_;
  piece_ = buf_;
}

void Writer::Flush() {
  Drain();
  sink_.Flush();
}

void Writer::U(uint64_t v) {
  Reserve(kMaxUvarintLen);
  pos_ += PutUvarint(pos_, v);
}

void Writer::Gather(const void* p, size_t n) {
  // Room for the buffer piece before p, p itself, and the piece after it.
  if (n_iov_ + 3 > kMaxIov) Drain();
  if (pos_ != piece_) iov_[n_iov_++] = {piece_, static_cast<size_t>(pos_ - piece_)};
  iov_[n_iov_++] = {const_cast<void*>(p), n};
  piece_ = pos_;
}

void Writer::Bytes(const void* p, size_t n) {
  if (n == 0) return;  // p may then be null, which memcpy does not allow
  if (options_.gather_min != 0 && n >= options_.gather_min) return Gather(p, n);
  if (static_cast<size_t>(end_ - pos_) >= n) {
    std::memcpy(pos_, p, n);
    pos_ += n;
    return;
  }
  Drain();
  // Large payloads go straight to the sink: copying them through the buffer
  // would only double the memory traffic.
  if (n >= options_.buffer_size / 2) {
    sink_.Write(p, n);
  } else {
    std::memcpy(pos_, p, n);
    pos_ += n;
  }
}

void Writer::Str(std::string_view s) {
  U(s.size());
  Bytes(s.data(), s.size());
}

void Writer::Header() { Bytes(kHeader.data(), kHeader.size()); }

void Writer::Object(const ObjectRecord& r, const void* payload) {
  U(K(Kind::kObject));
  U(r.addr);
  U(r.type);
  U(r.kind);
  U(r.size);
  Bytes(payload, r.size);
}

void Writer::StackRoot(const StackRootRecord& r) {
  U(K(Kind::kStackRoot));
  U(r.addr);
  U(r.ptr);
  U(r.frame);
}

void Writer::DataRoot(const DataRootRecord& r) {
  U(K(Kind::kDataRoot));
  U(r.addr);
  U(r.ptr);
}

void Writer::OtherRoot(std::string_view description, uint64_t ptr) {
  U(K(Kind::kOtherRoot));
  Str(description);
  U(ptr);
}

void Writer::Type(const TypeRecord& r) {
  U(K(Kind::kType));
  U(r.addr);
  U(r.size);
  Str(r.name);
  U(r.eface_ptr ? 1 : 0);
  U(r.fields.size());
  for (const Field& f : r.fields) {
    U(f.kind);
    U(f.offset);
  }
}

void Writer::Goroutine(const GoroutineRecord& r) {
  U(K(Kind::kGoroutine));
  U(r.addr);
  U(r.tos);
  U(r.goid);
  U(r.gopc);
  U(r.status);
  U(r.is_system ? 1 : 0);
  U(r.is_background ? 1 : 0);
  U(r.wait_since);
  Str(r.wait_reason);
}

void Writer::Frame(const FrameRecord& r) {
  U(K(Kind::kFrame));
  U(r.sp);
  U(r.parent);
  U(r.entry);
  U(r.pc);
  Str(r.name);
}

void Writer::Params(const ParamsRecord& r) {
  U(K(Kind::kParams));
  U(r.big_endian);
  U(r.ptr_size);
  U(r.hchan_size);
  U(r.heap_start);
  U(r.heap_end);
}

void Writer::Finalizer(const FinalizerRecord& r) {
  U(K(Kind::kFinalizer));
  U(r.obj);
  U(r.funcval);
  U(r.code);
  U(r.fint);
  U(r.ot);
}

void Writer::Itab(const ItabRecord& r) {
  U(K(Kind::kItab));
  U(r.addr);
  U(r.ptr);
}

void Writer::TypeFields(const TypeFieldsRecord& r) {
  if (options_.seed_only) return;
  U(K(Kind::kTypeFields));
  U(r.type);
  U(r.fields.size());
  for (const NamedField& f : r.fields) {
    U(f.offset);
    U(f.kind);
    U(f.size);
    Str(f.name);
  }
}

void Writer::TypeInfo(const TypeInfoRecord& r) {
  if (options_.seed_only) return;
  U(K(Kind::kTypeInfo));
  U(r.type);
  U(r.flags);
  U(r.vtable);
  U(r.elem_type);
  U(r.elem_size);
}

void Writer::ThreadInfo(const ThreadInfoRecord& r) {
  if (options_.seed_only) return;
  U(K(Kind::kThreadInfo));
  U(r.goroutine);
  U(r.tid);
  Str(r.name);
}

void Writer::MemStats(const MemStatsRecord& r) {
  if (options_.seed_only) return;
  U(K(Kind::kMemStats));
  U(r.stats.size());
  for (const MemStat& s : r.stats) {
    Str(s.name);
    U(s.value);
  }
}

void Writer::Module(const ModuleRecord& r) {
  if (options_.seed_only) return;
  U(K(Kind::kModule));
  U(r.start);
  U(r.end);
  U(r.file_offset);
  Str(r.path);
  Str(r.build_id);
}

void Writer::AllocStack(uint64_t obj, uint64_t size, std::span<const uint64_t> pcs) {
  if (options_.seed_only) return;
  U(K(Kind::kAllocStack));
  U(obj);
  U(size);
  U(pcs.size());
  for (uint64_t pc : pcs) U(pc);
}

void Writer::Eof() {
  U(K(Kind::kEof));
  Flush();
}

void Writer::Write(const Record& r, const void* payload) {
  switch (r.kind) {
    case Kind::kObject: return Object(r.object, payload);
    case Kind::kEof: return Eof();
    case Kind::kStackRoot: return StackRoot(r.stack_root);
    case Kind::kDataRoot: return DataRoot(r.data_root);
    case Kind::kOtherRoot: return OtherRoot(r.other_root);
    case Kind::kType: return Type(r.type);
    case Kind::kGoroutine: return Goroutine(r.goroutine);
    case Kind::kFrame: return Frame(r.frame);
    case Kind::kParams: return Params(r.params);
    case Kind::kFinalizer: return Finalizer(r.finalizer);
    case Kind::kItab: return Itab(r.itab);
    case Kind::kTypeFields: return TypeFields(r.type_fields);
    case Kind::kTypeInfo: return TypeInfo(r.type_info);
    case Kind::kThreadInfo: return ThreadInfo(r.thread_info);
    case Kind::kMemStats: return MemStats(r.mem_stats);
    case Kind::kModule: return Module(r.module);
    case Kind::kAllocStack: return AllocStack(r.alloc_stack);
  }
}

}  // namespace libdump::format
