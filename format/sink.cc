#include "libdump/format/sink.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
// The static-context API keeps compression allocation-free once writing starts.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <dlfcn.h>

#include <cstdlib>
#include <new>

namespace libdump::format {

namespace {

struct ZstdApi {
  decltype(&ZSTD_CStreamOutSize) CStreamOutSize;
  decltype(&ZSTD_estimateCStreamSize) estimateCStreamSize;
  decltype(&ZSTD_initStaticCCtx) initStaticCCtx;
  decltype(&ZSTD_CCtx_setParameter) CCtx_setParameter;
  decltype(&ZSTD_compressStream2) compressStream2;
  decltype(&ZSTD_isError) isError;
  decltype(&ZSTD_compressBound) compressBound;
  decltype(&ZSTD_getCParams) getCParams;
  decltype(&ZSTD_estimateCCtxSize_usingCParams) estimateCCtxSize_usingCParams;
  decltype(&ZSTD_compress2) compress2;
};

template <typename F>
bool Bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  return *fn != nullptr;
}

// Opened once and never closed; null if libzstd is missing.
const ZstdApi* Zstd() {
  static const ZstdApi* const api = []() -> const ZstdApi* {
    void* lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    static ZstdApi z;
    const bool ok = lib != nullptr && Bind(lib, "ZSTD_CStreamOutSize", &z.CStreamOutSize) &&
                    Bind(lib, "ZSTD_estimateCStreamSize", &z.estimateCStreamSize) &&
                    Bind(lib, "ZSTD_initStaticCCtx", &z.initStaticCCtx) &&
                    Bind(lib, "ZSTD_CCtx_setParameter", &z.CCtx_setParameter) &&
                    Bind(lib, "ZSTD_compressStream2", &z.compressStream2) && Bind(lib, "ZSTD_isError", &z.isError) &&
                    Bind(lib, "ZSTD_compressBound", &z.compressBound) &&
                    Bind(lib, "ZSTD_getCParams", &z.getCParams) &&
                    Bind(lib, "ZSTD_estimateCCtxSize_usingCParams", &z.estimateCCtxSize_usingCParams) &&
                    Bind(lib, "ZSTD_compress2", &z.compress2);
    return ok ? &z : nullptr;
  }();
  return api;
}

}  // namespace

void FdSink::Write(const void* data, size_t n) {
  if (error_ != 0) return;
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      SetError(errno);
      return;
    }
    if (w == 0) {  // a regular file that cannot grow reports this instead of ENOSPC
      SetError(ENOSPC);
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
    bytes_ += static_cast<uint64_t>(w);
  }
}

void FdSink::Writev(iovec* iov, int n) {
  while (error_ == 0 && n > 0) {
    const ssize_t w = ::writev(fd_, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return SetError(errno);
    }
    if (w == 0) return SetError(ENOSPC);
    bytes_ += static_cast<uint64_t>(w);
    // Skip what went out; a piece written in part is continued from its middle.
    for (size_t left = static_cast<size_t>(w); left > 0;) {
      if (left >= iov->iov_len) {
        left -= iov->iov_len;
        ++iov;
        --n;
      } else {
        iov->iov_base = static_cast<char*>(iov->iov_base) + left;
        iov->iov_len -= left;
        left = 0;
      }
    }
    while (n > 0 && iov->iov_len == 0) {
      ++iov;
      --n;
    }
  }
}

void OstreamSink::Write(const void* data, size_t n) {
  if (error_ != 0) return;
  out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!out_) return SetError(EIO);
  bytes_ += n;
}

void OstreamSink::Flush() {
  if (error_ == 0 && !out_.flush()) SetError(EIO);
}

bool ZstdSink::LoadLibrary() { return Zstd() != nullptr; }

// The context lives in memory sized by ZSTD_estimateCStreamSize and handed to
// ZSTD_initStaticCCtx, so compression never calls malloc once writing starts.
ZstdSink::ZstdSink(Sink& next, int level) : next_(next) {
  const ZstdApi* z = Zstd();
  if (z == nullptr) {
    SetError(ELIBACC);
    return;
  }
  out_size_ = z->CStreamOutSize();
  const size_t ws = (z->estimateCStreamSize(level) + 63) & ~size_t{63};
  memory_size_ = (ws + out_size_ + 4095) & ~size_t{4095};
  void* p = mmap(nullptr, memory_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    memory_ = nullptr;
    SetError(ENOMEM);
    return;
  }
  memory_ = p;
  // The context goes first: a static context must be 8-byte aligned.
  auto* cctx = z->initStaticCCtx(p, ws);
  out_ = static_cast<unsigned char*>(p) + ws;
  cctx_ = cctx;
  if (cctx == nullptr || z->isError(z->CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level))) {
    SetError(EINVAL);
  }
}

ZstdSink::~ZstdSink() {
  if (memory_ != nullptr) munmap(memory_, memory_size_);
}

void ZstdSink::Write(const void* data, size_t n) {
  if (error_ != 0) return;
  const ZstdApi* z = Zstd();  // not null: the constructor would have set error_
  ZSTD_inBuffer in{data, n, 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out{out_, out_size_, 0};
    const size_t rc = z->compressStream2(static_cast<ZSTD_CCtx*>(cctx_), &out, &in, ZSTD_e_continue);
    if (z->isError(rc)) {
      SetError(EIO);
      return;
    }
    next_.Write(out_, out.pos);
  }
  bytes_ += n;
  if (next_.error() != 0) SetError(next_.error());
}

// Runs ZSTD_e_flush or ZSTD_e_end until zstd has handed over everything.
static int EndBlock(ZSTD_CCtx* cctx, unsigned char* buf, size_t size, Sink& next,
                    ZSTD_EndDirective mode) {
  const ZstdApi* z = Zstd();
  size_t remaining;
  do {
    ZSTD_outBuffer out{buf, size, 0};
    ZSTD_inBuffer in{nullptr, 0, 0};
    remaining = z->compressStream2(cctx, &out, &in, mode);
    if (z->isError(remaining)) return EIO;
    next.Write(buf, out.pos);
  } while (remaining != 0);
  next.Flush();
  return next.error();
}

void ZstdSink::Flush() {
  if (error_ == 0) SetError(EndBlock(static_cast<ZSTD_CCtx*>(cctx_), out_, out_size_, next_, ZSTD_e_flush));
}

void ZstdSink::Finish() {
  if (error_ == 0) SetError(EndBlock(static_cast<ZSTD_CCtx*>(cctx_), out_, out_size_, next_, ZSTD_e_end));
}

size_t ZstdFrameCompressor::Bound(size_t n) {
  const ZstdApi* z = Zstd();
  return z != nullptr ? z->compressBound(n) : 0;
}

// Sized by the parameters zstd picks for a block of max_block bytes, not for
// an unknown size: at level 19 that is ~18 MiB for 1 MiB blocks instead of ~90.
size_t ZstdFrameCompressor::MemoryFor(int level, size_t max_block) {
  const ZstdApi* z = Zstd();
  if (z == nullptr) return 0;
  const size_t ws = z->estimateCCtxSize_usingCParams(z->getCParams(level, max_block, 0));
  return (ws + 4095) & ~size_t{4095};
}

ZstdFrameCompressor::ZstdFrameCompressor(int level, size_t max_block) {
  const ZstdApi* z = Zstd();
  if (z == nullptr) {
    error_ = ELIBACC;
    return;
  }
  memory_size_ = MemoryFor(level, max_block);
  void* p = mmap(nullptr, memory_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    error_ = ENOMEM;
    return;
  }
  memory_ = p;
  cctx_ = z->initStaticCCtx(p, memory_size_);
  if (cctx_ == nullptr ||
      z->isError(z->CCtx_setParameter(static_cast<ZSTD_CCtx*>(cctx_), ZSTD_c_compressionLevel, level))) {
    error_ = EINVAL;
  }
}

ZstdFrameCompressor::~ZstdFrameCompressor() {
  if (memory_ != nullptr) munmap(memory_, memory_size_);
}

size_t ZstdFrameCompressor::Compress(const void* src, size_t n, void* dst, size_t capacity) {
  if (error_ != 0) return 0;
  const ZstdApi* z = Zstd();
  const size_t rc = z->compress2(static_cast<ZSTD_CCtx*>(cctx_), dst, capacity, src, n);
  if (z->isError(rc)) {
    error_ = EIO;
    return 0;
  }
  return rc;
}

}  // namespace libdump::format
