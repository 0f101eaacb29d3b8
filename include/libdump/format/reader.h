// Streaming pull parser for heap dumps.
//
// Next() decodes one record into a reused Record; memory is bounded by the
// largest string or list of that record, and grows only as its bytes actually
// arrive, so no length field can size an allocation. Object payloads are never
// buffered whole: after Next() returns an object, ReadPayload() streams it in
// chunks, and a payload nobody reads is skipped. zstd and gzip input is
// detected once, from its magic bytes, and decompressed through
// Boost.iostreams (format/input.h); the record decoder (format/reader.cc)
// reads each kind's fields as record.h lists them.
// ReaderOptions::map_file reads an uncompressed file in place instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "libdump/format/compression.h"
#include "libdump/format/format_error.h"
#include "libdump/format/record.h"

namespace libdump::format {


enum class Dialect {
  kLibdump,  // "go1.3 heap dump\n": the seed format plus libdump's extensions
  kGo13,     // "go1.3 heap dump\n" as the Go 1.3 runtime wrote it (params first)
  kGo14,     // "go1.4 heap dump\n": Go 1.4
  kGo15,     // "go1.5 heap dump\n": Go 1.5 (docs/GODUMP.md)
  kGo16,     // "go1.6 heap dump\n": Go 1.6, the go1.5 layout
  kGo17,     // "go1.7 heap dump\n": Go 1.7 and every later Go runtime
};
const char* DialectName(Dialect d);

struct ReaderOptions {
  size_t buffer_size = 1 << 20;
  size_t max_string = 64 << 20;  // longest string or list accepted, in bytes
  // Zero-copy input: an uncompressed regular file is read in place through a
  // sliding read-only mapping of map_window bytes instead of being copied
  // into the buffer, so Payload() of an object up to map_window less a page
  // never copies. Falls back to reading when the file cannot be mapped
  // (address-space limits); compressed input and streams always read. The
  // file must not shrink while it is read.
  bool map_file = false;
  size_t map_window = size_t{8} << 20;  // mapped pages count in RSS
};

class Reader {
 public:
  // Reads from an fd the caller keeps open. A regular file's size bounds every
  // length field up front; pipes and compressed input are bounded as they go.
  explicit Reader(int fd, ReaderOptions options = {});
  // Reads from a stream (tests, pipes).
  explicit Reader(std::istream& in, ReaderOptions options = {});
  // Opens a dump file into a reader that owns (and closes) its fd. Throws
  // std::system_error "cannot open PATH" (code(): errno) when the file cannot
  // be opened, FormatError when its header is bad.
  static std::unique_ptr<Reader> Open(const std::string& path, ReaderOptions options = {});
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  Compression compression() const;
  Dialect dialect() const;

  // Decodes the next record. The eof record is returned only once it is known
  // that nothing follows it; the call after it returns false. Throws
  // FormatError whose offset is where the offending field (or record) starts.
  bool Next(Record& r);

  // Streams the payload of the object last returned by Next(), in order, as
  // chunks valid only during the call. At most once per object.
  void ReadPayload(const std::function<void(std::span<const uint8_t>)>& chunk);

  // The payload of the last object as one span valid until the next call;
  // copies only when it straddles the input buffer. Throws FormatError when the
  // object is larger than `max`.
  std::span<const uint8_t> Payload(size_t max = 64 << 20);

  // Continues at `start` and stops before `end`: Next() then returns false at
  // `end` (0: the end of the input). For a later pass over a dump split
  // between threads: both must be record boundaries an earlier pass saw, and
  // start at or after offset(). An uncompressed file is read no further than
  // `end`; other input is read through up to `start`. A Go runtime's dump
  // takes no `end` (0 only) and must have returned its params record first;
  // an object whose layout the reader has not met yet comes with a synthetic
  // type numbered afresh, so match its objects by address, not type.
  void Range(uint64_t start, uint64_t end);

  // Decompressed bytes consumed so far.
  uint64_t offset() const;

 private:
  class Impl;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace libdump::format
