// The reader's input: the bytes of a dump after decompression, at hand in a
// buffer (or a mapped window of the file) for the record decoder to walk.
//
// The container (plain, zstd or gzip) is detected here, once, from the first
// bytes; compressed input is decompressed through Boost.iostreams. Errors of
// the input itself (read errors, corrupt compressed streams) are FormatErrors
// with context "input". Internal to libdump::format.
#pragma once

#include <algorithm>
#include <boost/iostreams/filtering_stream.hpp>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>

#include "libdump/format/compression.h"
#include "libdump/format/format_error.h"

namespace libdump::format {

class RawInput;

struct InputOptions {
  size_t buffer_size;
  bool map_file;     // map a plain regular file instead of reading it
  size_t map_window;
};

class Input {
 public:
  // Reads from an fd (closed on destruction when owned) or a stream.
  Input(int fd, bool owned, const InputOptions& options);
  Input(std::istream& in, const InputOptions& options);
  ~Input();
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  Compression compression() const { return compression_; }

  // The bytes at hand are [pos, end); the decoder advances pos over what it
  // has decoded. Fill() moves them and may change both.
  uint8_t* pos;
  uint8_t* end;

  size_t Available() const { return static_cast<size_t>(end - pos); }
  // Input offset of pos, and of any p in [begin, end].
  uint64_t Offset() const { return OffsetOf(pos); }
  uint64_t OffsetOf(const uint8_t* p) const { return base_ + static_cast<uint64_t>(p - begin_); }
  // The most bytes Fill() can make available at once.
  size_t Capacity() const { return mapped_ ? window_ - page_ : buffer_size_; }

  // Makes at least min(n, what is left of the input) bytes available; n must
  // fit Capacity(). Inline for the usual case of bytes already at hand.
  void Fill(size_t n) {
    if (Available() >= n || at_end_) return;
    FillSlow(n);
  }
  // Set once Fill() found the input (or the range) ended.
  bool at_end() const { return at_end_; }

  // A regular uncompressed file's size, which bounds every length up front.
  const std::optional<uint64_t>& file_size() const { return file_size_; }
  // Bytes known to remain in a regular uncompressed file, else nullopt.
  std::optional<uint64_t> Remaining() const {
    if (!file_size_) return std::nullopt;
    return *file_size_ - std::min(*file_size_, Offset());
  }

  // With nothing at hand, skips n bytes without reading them (remapping, or
  // seeking a plain file whose size was checked against n); false when the
  // input cannot skip, and the caller reads through.
  bool SkipUnread(uint64_t n);

  // Input ends at `stop` (0: at its real end); the uncompressed input is read
  // no further. The caller checks Offset() against it between records.
  void set_stop(uint64_t stop) { stop_ = stop; }
  uint64_t stop() const { return stop_; }
  void clear_at_end() { at_end_ = false; }

 private:
  void Start(const InputOptions& options);
  void DetectCompression();
  void FillSlow(size_t n);
  size_t ReadMore();
  void MapWindow(uint64_t offset);

  std::unique_ptr<RawInput> raw_;
  size_t buffer_size_;
  bool map_file_;
  size_t map_window_;
  std::unique_ptr<boost::iostreams::filtering_istream> stream_;
  Compression compression_ = Compression::kNone;
  std::optional<uint64_t> file_size_;

  std::unique_ptr<uint8_t[]> buf_;
  uint8_t* begin_;     // start of the bytes at hand: buf_, or the mapped window
  uint64_t base_ = 0;  // input offset of begin_[0]
  size_t page_ = 0;
  size_t window_ = 0;
  bool mapped_ = false;  // the file is read through map_, not into buf_
  uint8_t* map_ = nullptr;
  size_t map_len_ = 0;
  bool at_end_ = false;
  uint64_t stop_ = 0;  // the range's end; 0: none
};

}  // namespace libdump::format
