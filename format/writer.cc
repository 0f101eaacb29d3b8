#include "libdump/format/writer.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

#include "libdump/format/record.h"
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

void Writer::Payload(const void* p, size_t n) {
  if (options_.gather_min != 0 && n != 0 && n >= options_.gather_min) return Gather(p, n);
  Bytes(p, n);
}

void Writer::Bytes(const void* p, size_t n) {
  if (n == 0) return;  // p may then be null, which memcpy does not allow
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

struct Writer::Encoder {
  Writer& w;
  template <class... Check>
  void U(const char*, uint64_t v, Show, Check&&...) { w.U(v); }
  void Bool(const char*, bool v) { w.U(v ? 1 : 0); }
  void Str(const char*, std::string_view s) { w.Str(s); }
  template <class Items, class Item>
  void List(const char*, const char*, const char*, const Items& items, Item&& item) {
    w.U(items.size());
    const auto* prev = static_cast<const typename Items::value_type*>(nullptr);
    for (const auto& e : items) {
      item(*this, e, prev);
      prev = &e;
    }
  }
};

template <Kind Which, class R>
void Writer::Put(const R& r) {
  if (options_.seed_only && IsExtension(Which)) return;
  U(K(Which));
  Encoder e{*this};
  Layout<Which>::Fields(r, e);
}

void Writer::Object(const ObjectRecord& r, const void* payload) {
  Put<Kind::kObject>(r);
  Payload(payload, r.size);
}

void Writer::ObjectHead(const ObjectRecord& r) { Put<Kind::kObject>(r); }

void Writer::StackRoot(const StackRootRecord& r) { Put<Kind::kStackRoot>(r); }
void Writer::DataRoot(const DataRootRecord& r) { Put<Kind::kDataRoot>(r); }
void Writer::OtherRoot(std::string_view description, uint64_t ptr) {
  Put<Kind::kOtherRoot>(OtherRootView{description, ptr});
}
void Writer::Type(const TypeRecord& r) { Put<Kind::kType>(r); }
void Writer::Goroutine(const GoroutineRecord& r) { Put<Kind::kGoroutine>(r); }
void Writer::Frame(const FrameRecord& r) { Put<Kind::kFrame>(r); }
void Writer::Params(const ParamsRecord& r) { Put<Kind::kParams>(r); }
void Writer::Finalizer(const FinalizerRecord& r) { Put<Kind::kFinalizer>(r); }
void Writer::Itab(const ItabRecord& r) { Put<Kind::kItab>(r); }
void Writer::TypeFields(const TypeFieldsRecord& r) { Put<Kind::kTypeFields>(r); }
void Writer::TypeInfo(const TypeInfoRecord& r) { Put<Kind::kTypeInfo>(r); }
void Writer::ThreadInfo(const ThreadInfoRecord& r) { Put<Kind::kThreadInfo>(r); }
void Writer::MemStats(const MemStatsRecord& r) { Put<Kind::kMemStats>(r); }
void Writer::Module(const ModuleRecord& r) { Put<Kind::kModule>(r); }
void Writer::AllocStack(uint64_t obj, uint64_t size, std::span<const uint64_t> pcs) {
  Put<Kind::kAllocStack>(AllocStackView{obj, size, pcs});
}

void Writer::Eof() {
  Put<Kind::kEof>(EofRecord{});
  Flush();
}

void Writer::Write(const Record& r, const void* payload) {
  VisitRecord(r, [&](auto kind, const auto& record) {
    if constexpr (kind() == Kind::kObject) {
      Object(record, payload);
    } else if constexpr (kind() == Kind::kEof) {
      Eof();
    } else {
      Put<kind()>(record);
    }
  });
}

}  // namespace libdump::format
