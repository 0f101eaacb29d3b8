// Writes the heap dump format of docs/FORMAT.md.
//
// Buffered in front of a Sink; varints are encoded straight into the buffer and
// object payloads are copied from memory, or, with gather_min set, handed to
// the sink where they lie as iovecs between the buffer's pieces (writev). The
// buffer is mapped with mmap, not malloc: a process dumping its own heap must
// not add objects to it, and writing costs no allocation after construction. In seed-only mode the
// extension records are silently dropped, so producers need not branch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <sys/uio.h>

#include "libdump/format/record.h"
#include "libdump/format/sink.h"

namespace libdump::format {

struct WriterOptions {
  bool seed_only = false;          // write no extension record (kinds >= 13)
  size_t buffer_size = 256 << 10;  // mapped once, in the constructor
  // Object payloads of at least this many bytes are not copied: the sink
  // reads them where they lie, so they must stay unchanged until the next
  // Flush() (a stopped world: flush before resuming it). 0 copies every
  // payload. Small payloads are cheaper to copy than to describe with an
  // iovec. Record fields (strings, lists) are always copied: a record is
  // built from values its caller may free as soon as the call returns.
  size_t gather_min = 0;
};

class Writer {
 public:
  explicit Writer(Sink& sink, WriterOptions options = {});
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Header();
  void Object(const ObjectRecord& r, const void* payload);  // r.size payload bytes
  // An object whose payload arrives in pieces (read from another process's
  // memory through a bounded buffer): the record, then exactly r.size bytes
  // over one or more ObjectBytes calls, each copied before it returns.
  void ObjectHead(const ObjectRecord& r);
  void ObjectBytes(const void* p, size_t n) { Bytes(p, n); }
  void StackRoot(const StackRootRecord& r);
  void DataRoot(const DataRootRecord& r);
  void OtherRoot(const OtherRootRecord& r) { OtherRoot(r.description, r.ptr); }
  void OtherRoot(std::string_view description, uint64_t ptr);
  void Type(const TypeRecord& r);
  void Goroutine(const GoroutineRecord& r);
  void Frame(const FrameRecord& r);
  void Params(const ParamsRecord& r);
  void Finalizer(const FinalizerRecord& r);
  void Itab(const ItabRecord& r);
  void TypeFields(const TypeFieldsRecord& r);
  void TypeInfo(const TypeInfoRecord& r);
  void ThreadInfo(const ThreadInfoRecord& r);
  void MemStats(const MemStatsRecord& r);
  void Module(const ModuleRecord& r);
  void AllocStack(uint64_t obj, uint64_t size, std::span<const uint64_t> pcs);
  void AllocStack(const AllocStackRecord& r) { AllocStack(r.obj, r.size, r.pcs); }
  // Writes the eof record and flushes the buffer into the sink.
  void Eof();
  // Writes any record of the model (payload only for objects).
  void Write(const Record& r, const void* payload = nullptr);

  void Flush();
  // errno of the first failed write, 0 if none.
  int error() const { return sink_.error(); }
  bool seed_only() const { return options_.seed_only; }

 private:
  struct Encoder;  // writes a record's fields as record.h lists them
  // The kind varint and the fields of a K record (dropped when seed-only and K
  // is an extension).
  template <Kind K, class R>
  void Put(const R& r);

  size_t MappingSize() const;
  void Reserve(size_t n) { if (end_ - pos_ < static_cast<ptrdiff_t>(n)) Drain(); }
  void Drain();
  void U(uint64_t v);
  void Str(std::string_view s);
  // An object payload: gathered when gather_min allows, else copied.
  void Payload(const void* p, size_t n);
  // Bytes of a record: copied into the buffer (or, when large, written
  // through at once), so the caller's memory is free to go on return.
  void Bytes(const void* p, size_t n);
  void Gather(const void* p, size_t n);

  // The pending output is iov_[0, n_iov_) followed by [piece_, pos_) of the
  // buffer; the iovecs name earlier pieces of the buffer and gathered payloads.
  static constexpr int kMaxIov = 512;  // below IOV_MAX (1024)

  Sink& sink_;
  WriterOptions options_;
  uint8_t* buf_;
  uint8_t* pos_;
  uint8_t* end_;
  uint8_t* piece_;
  iovec* iov_;  // in the same mapping as the buffer
  int n_iov_ = 0;
};

}  // namespace libdump::format
