// Byte sinks for the dump writer.
//
// Sinks never throw and never allocate after construction: the runtime writes
// dumps while other threads are stopped and may hold the allocator's or the
// loader's locks. The first error sticks (error() returns its errno) and later
// writes are dropped, so a producer can write the whole dump and check once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>

#include <sys/uio.h>

namespace libdump::format {

class Sink {
 public:
  virtual ~Sink() = default;
  // Writes all n bytes or records an error.
  virtual void Write(const void* data, size_t n) = 0;
  // Writes the n pieces in order, as Write would one after the other. May
  // change the array (a sink advances it over short writes).
  virtual void Writev(iovec* iov, int n) {
    for (int i = 0; i < n; ++i) Write(iov[i].iov_base, iov[i].iov_len);
  }
  // Pushes everything written so far to the underlying fd/stream.
  virtual void Flush() {}
  int error() const { return error_; }
  uint64_t bytes_written() const { return bytes_; }

 protected:
  void SetError(int err) { if (error_ == 0) error_ = err; }
  int error_ = 0;
  uint64_t bytes_ = 0;  // bytes accepted by Write()
};

// Unbuffered: every Write is a write(2) loop and every Writev a writev(2)
// loop (EINTR retried, short writes continued). The Writer buffers in front.
class FdSink final : public Sink {
 public:
  explicit FdSink(int fd) : fd_(fd) {}
  void Write(const void* data, size_t n) override;
  void Writev(iovec* iov, int n) override;

 private:
  int fd_;
};

// Writes into a std::ostream (tests, tools that build dumps in memory).
// Unlike FdSink it may allocate, as the stream does: not for the runtime.
class OstreamSink final : public Sink {
 public:
  explicit OstreamSink(std::ostream& out) : out_(out) {}
  void Write(const void* data, size_t n) override;
  void Flush() override;

 private:
  std::ostream& out_;
};

// Streaming zstd compression in front of another sink. All memory (the
// compression context and the output buffer) is mapped in the constructor, so
// compressing neither allocates nor adds objects to the heap being dumped;
// Finish() ends the frame and must be called before the dump is complete.
//
// libzstd is opened (dlopen) the first time it is needed rather than linked:
// a process that preloads libdump.so and never compresses a dump, nearly
// every one, does not load it at each exec. A sink made while libzstd cannot
// be opened reports ELIBACC.
class ZstdSink final : public Sink {
 public:
  // Opens libzstd now, where opening it later would be unsafe (after
  // threads are stopped, in a child forked from them). False if it cannot be.
  static bool LoadLibrary();

  ZstdSink(Sink& next, int level);
  ~ZstdSink() override;
  ZstdSink(const ZstdSink&) = delete;
  ZstdSink& operator=(const ZstdSink&) = delete;

  void Write(const void* data, size_t n) override;
  void Flush() override;
  void Finish();

 private:
  Sink& next_;
  void* memory_ = nullptr;  // one mapping: the static ZSTD_CCtx, then the output buffer
  size_t memory_size_ = 0;
  void* cctx_ = nullptr;    // ZSTD_CCtx*, kept opaque so zstd.h stays out of this header
  unsigned char* out_ = nullptr;
  size_t out_size_ = 0;
};

// One-shot zstd compression of whole blocks, each an independent frame (a
// file of several frames is one valid zstd stream). The context is static,
// in memory mapped by the constructor and sized for blocks of at most
// max_block bytes at `level`, so compressing never allocates: zstd cannot
// call malloc on a static context. For compressors in other processes that
// share nothing but the blocks (libdump/heapdump/parallel_zstd_sink.h).
class ZstdFrameCompressor {
 public:
  // Largest output of one block of n bytes.
  static size_t Bound(size_t n);
  // Bytes the constructor maps for `level` and blocks of max_block bytes.
  static size_t MemoryFor(int level, size_t max_block);

  ZstdFrameCompressor(int level, size_t max_block);
  ~ZstdFrameCompressor();
  ZstdFrameCompressor(const ZstdFrameCompressor&) = delete;
  ZstdFrameCompressor& operator=(const ZstdFrameCompressor&) = delete;

  int error() const { return error_; }  // ELIBACC, ENOMEM, EINVAL or 0
  // The frame's size in dst, or 0 with an error (dst too small, a zstd error).
  size_t Compress(const void* src, size_t n, void* dst, size_t capacity);

 private:
  int error_ = 0;
  void* memory_ = nullptr;
  size_t memory_size_ = 0;
  void* cctx_ = nullptr;
};

}  // namespace libdump::format
