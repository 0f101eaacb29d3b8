#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include <algorithm>
#include <boost/iostreams/filter/gzip.hpp>
#include <cstring>
#include <ios>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace libdump::format {

namespace io = boost::iostreams;

// The undecoded input: an fd or an istream, read in large blocks.
class RawInput {
 public:
  RawInput(int fd, bool owned) : fd_(fd), owned_(owned) {}
  explicit RawInput(std::istream& in) : in_(&in) {}
  ~RawInput() {
    if (owned_) ::close(fd_);
  }
  RawInput(const RawInput&) = delete;
  RawInput& operator=(const RawInput&) = delete;

  // Fills up to n bytes; returns 0 only at end of input. Throws on I/O errors.
  size_t Read(uint8_t* p, size_t n) {
    if (in_ != nullptr) {
      in_->read(reinterpret_cast<char*>(p), static_cast<std::streamsize>(n));
      if (in_->bad()) throw FormatError(consumed_, "input", "read error");
      const auto got = static_cast<size_t>(in_->gcount());
      consumed_ += got;
      return got;
    }
    for (;;) {
      const ssize_t got = ::read(fd_, p, n);
      if (got >= 0) {
        consumed_ += static_cast<uint64_t>(got);
        return static_cast<size_t>(got);
      }
      if (errno != EINTR) throw FormatError(consumed_, "input", std::strerror(errno));
    }
  }

  // Size of a regular file, when the input is one.
  std::optional<uint64_t> Size() const {
    struct stat st;
    if (in_ == nullptr && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
      return static_cast<uint64_t>(st.st_size);
    }
    return std::nullopt;
  }

  int fd() const { return in_ == nullptr ? fd_ : -1; }

  // Skips n bytes of a regular file without reading them.
  bool Seek(uint64_t n) {
    if (in_ != nullptr || ::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) return false;
    consumed_ += n;
    return true;
  }

 private:
  int fd_ = -1;
  bool owned_ = false;
  std::istream* in_ = nullptr;
  uint64_t consumed_ = 0;
};

namespace {

// Boost.iostreams source over the raw input that first replays the magic
// bytes already read to detect the compression.
class ReplayDevice {
 public:
  using char_type = char;
  using category = io::source_tag;
  ReplayDevice(RawInput* raw, const uint8_t* head, size_t n) : raw_(raw), n_(n) {
    std::memcpy(head_, head, n);
  }
  std::streamsize read(char* s, std::streamsize n) {
    if (pos_ < n_) {
      const size_t k = std::min(n_ - pos_, static_cast<size_t>(n));
      std::memcpy(s, head_ + pos_, k);
      pos_ += k;
      return static_cast<std::streamsize>(k);
    }
    const size_t got = raw_->Read(reinterpret_cast<uint8_t*>(s), static_cast<size_t>(n));
    return got == 0 ? -1 : static_cast<std::streamsize>(got);
  }

 private:
  RawInput* raw_;
  uint8_t head_[8];
  size_t n_;
  size_t pos_ = 0;
};

// zstd decompression as a Boost.iostreams filter. Boost's own
// zstd_decompressor ends the stream quietly when its input ends inside a
// frame, so a truncated file read as a shorter, valid one (up to its eof
// record, often a whole dump less its last block); this one reports it.
class ZstdDecompressor {
 public:
  using char_type = char;
  struct category : io::multichar_input_filter_tag, io::closable_tag {};

  ZstdDecompressor()
      : stream_(ZSTD_createDStream(), ZSTD_freeDStream), in_(std::make_shared<std::vector<char>>(ZSTD_DStreamInSize())) {
    if (!stream_) throw std::bad_alloc();
  }

  // An error is raised only once the output before it is handed over, so
  // the reader reports it at the exact offset where the good data ends.
  template <typename Source>
  std::streamsize read(Source& src, char* s, std::streamsize n) {
    if (!error_.empty()) throw std::runtime_error(error_);
    ZSTD_outBuffer out{s, static_cast<size_t>(n), 0};
    while (out.pos < out.size && error_.empty()) {
      if (in_pos_ == in_size_ && !input_ended_) {
        const std::streamsize got = io::read(src, in_->data(), static_cast<std::streamsize>(in_->size()));
        in_pos_ = 0;
        in_size_ = got > 0 ? static_cast<size_t>(got) : 0;
        input_ended_ = got < 0;
      }
      if (in_pos_ == in_size_ && input_ended_) {
        // Done only at a frame's end; zstd may still hold output of a frame
        // whose input it has all (its hint is 0 once that is flushed).
        if (hint_ == 0) break;
        const size_t before = out.pos;
        ZSTD_inBuffer none{nullptr, 0, 0};
        Step(&out, &none);
        if (out.pos == before && error_.empty()) error_ = "truncated: the input ends inside a zstd frame";
        continue;
      }
      ZSTD_inBuffer in{in_->data(), in_size_, in_pos_};
      Step(&out, &in);
      in_pos_ = in.pos;
    }
    if (out.pos > 0) return static_cast<std::streamsize>(out.pos);
    if (!error_.empty()) throw std::runtime_error(error_);
    return -1;
  }

  template <typename Source>
  void close(Source&) {
    ZSTD_DCtx_reset(stream_.get(), ZSTD_reset_session_only);
    in_pos_ = in_size_ = 0;
    input_ended_ = false;
    hint_ = 0;
    error_.clear();
  }

 private:
  void Step(ZSTD_outBuffer* out, ZSTD_inBuffer* in) {
    const size_t r = ZSTD_decompressStream(stream_.get(), out, in);
    if (ZSTD_isError(r)) {
      error_ = ZSTD_getErrorName(r);
    } else {
      hint_ = r;
    }
  }

  // Shared: Boost copies filters as it pushes them.
  std::shared_ptr<ZSTD_DStream> stream_;
  std::shared_ptr<std::vector<char>> in_;
  size_t in_pos_ = 0, in_size_ = 0;
  bool input_ended_ = false;
  size_t hint_ = 0;  // ZSTD_decompressStream's last result: 0 at a frame's end
  std::string error_;
};

// What went wrong, in place of its what(), which is "gzip error" for all.
std::string DescribeGzipError(const io::gzip_error& e) {
  switch (e.error()) {
    case io::gzip::bad_crc:
      return "the CRC does not match the data";
    case io::gzip::bad_length:
      return "the recorded length does not match the data";
    case io::gzip::bad_header:
      return "malformed header";
    case io::gzip::bad_footer:
      return "truncated or malformed trailer";
    case io::gzip::bad_method:
      return "unsupported compression method";
    case io::gzip::zlib_error:
      return e.zlib_error_code() == io::zlib::data_error
                 ? "invalid deflate data"
                 : "zlib error " + std::to_string(e.zlib_error_code()) + " (truncated or damaged deflate data)";
  }
  return "error " + std::to_string(e.error());
}

constexpr uint8_t kZstdMagic[] = {0x28, 0xB5, 0x2F, 0xFD};
// Decompressed bytes the reader takes per call (Boost's default is 128).
constexpr std::streamsize kStreamBuffer = 64 << 10;
constexpr uint8_t kGzipMagic[] = {0x1F, 0x8B};

}  // namespace

Input::Input(int fd, bool owned, const InputOptions& options)
    : raw_(std::make_unique<RawInput>(fd, owned)) {
  Start(options);
}

Input::Input(std::istream& in, const InputOptions& options) : raw_(std::make_unique<RawInput>(in)) {
  Start(options);
}

Input::~Input() {
  if (map_ != nullptr) ::munmap(map_, map_len_);
}

void Input::Start(const InputOptions& options) {
  buffer_size_ = std::max<size_t>(options.buffer_size, 64);
  // No larger than a regular file (a small dump need not take a megabyte;
  // compressed, its bytes refill this buffer as they are decoded).
  if (const std::optional<uint64_t> size = raw_->Size()) {
    buffer_size_ = std::min<uint64_t>(buffer_size_, std::max<uint64_t>(*size, 4096));
  }
  buf_.reset(new uint8_t[buffer_size_]);
  begin_ = pos = end = buf_.get();
  page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  window_ = (std::max(options.map_window, 2 * page_) + page_ - 1) & ~(page_ - 1);
  DetectCompression();
  if (options.map_file && compression_ == Compression::kNone && file_size_) MapWindow(0);
}

void Input::DetectCompression() {
  // Read the first bytes straight from the raw input; compressed streams get
  // them replayed, uncompressed ones keep them in the buffer.
  uint8_t head[4];
  size_t n = 0;
  while (n < sizeof head) {
    const size_t got = raw_->Read(head + n, sizeof head - n);
    if (got == 0) break;
    n += got;
  }
  if (n >= 4 && std::memcmp(head, kZstdMagic, 4) == 0) {
    compression_ = Compression::kZstd;
  } else if (n >= 2 && std::memcmp(head, kGzipMagic, 2) == 0) {
    compression_ = Compression::kGzip;
  }
  if (compression_ == Compression::kNone) {
    std::memcpy(end, head, n);
    end += n;
    file_size_ = raw_->Size();
    if (file_size_ && raw_->fd() >= 0) ::posix_fadvise(raw_->fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return;
  }
  stream_ = std::make_unique<io::filtering_istream>();
  if (compression_ == Compression::kZstd) {
    stream_->push(ZstdDecompressor(), kStreamBuffer);
  } else {
    stream_->push(io::gzip_decompressor(), kStreamBuffer);
  }
  stream_->push(ReplayDevice(raw_.get(), head, n));
  stream_->exceptions(std::ios::badbit);
}

// Reads from the (decompressed) input into [end, buffer end).
size_t Input::ReadMore() {
  uint8_t* limit = buf_.get() + buffer_size_;
  if (stream_) {
    // One underflow (one decompressor read) at a time: an error then loses
    // none of the output before it, and is reported where the good data
    // ends (to within the stream's buffer for gzip, exactly for zstd).
    try {
      if (stream_->rdbuf()->in_avail() <= 0 &&
          std::char_traits<char>::eq_int_type(stream_->peek(), std::char_traits<char>::eof())) {
        return 0;
      }
      stream_->readsome(reinterpret_cast<char*>(end), limit - end);
    } catch (const FormatError&) {
      throw;
    } catch (const io::gzip_error& e) {
      throw FormatError(Offset() + Available(), "input", "corrupt gzip stream: " + DescribeGzipError(e));
    } catch (const std::exception& e) {
      throw FormatError(Offset() + Available(), "input",
                        std::string("corrupt ") + CompressionName(compression_) +
                            " stream: " + e.what());
    }
    const auto got = static_cast<size_t>(stream_->gcount());
    end += got;
    return got;
  }
  size_t want = static_cast<size_t>(limit - end);
  if (stop_ != 0) {  // uncompressed: end is at input offset base_ + (end - begin_)
    const uint64_t at = base_ + static_cast<uint64_t>(end - begin_);
    want = static_cast<size_t>(std::min<uint64_t>(want, stop_ > at ? stop_ - at : 0));
    if (want == 0) return 0;
  }
  const size_t got = raw_->Read(end, want);
  end += got;
  return got;
}

// Maps the window of the file that starts at the page holding `offset` and
// points pos at offset. The first call may fail (address space limits):
// the reader then keeps reading into its buffer. Later ones throw.
void Input::MapWindow(uint64_t offset) {
  const uint64_t start = offset & ~(uint64_t{page_} - 1);
  const uint64_t len = std::min<uint64_t>(window_, *file_size_ - start);
  if (map_ != nullptr) ::munmap(map_, map_len_);
  map_ = nullptr;
  if (len == 0 && mapped_) {  // at the very end of the file
    map_len_ = 0;
    begin_ = pos = end = buf_.get();
    base_ = offset;
    return;
  }
  void* p = len == 0 ? MAP_FAILED
                     : ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, raw_->fd(), static_cast<off_t>(start));
  if (p == MAP_FAILED) {
    if (mapped_) throw FormatError(offset, "input", std::string("cannot map the file: ") + std::strerror(errno));
    return;
  }
  ::madvise(p, len, MADV_SEQUENTIAL);
  mapped_ = true;
  map_ = static_cast<uint8_t*>(p);
  map_len_ = static_cast<size_t>(len);
  begin_ = map_;
  base_ = start;
  pos = map_ + (offset - start);
  end = map_ + map_len_;
}

void Input::FillSlow(size_t n) {
  if (mapped_) {
    if (base_ + map_len_ < *file_size_) MapWindow(Offset());
    at_end_ = Available() < n;
    return;
  }
  const size_t keep = Available();
  base_ += static_cast<uint64_t>(pos - begin_);
  std::memmove(buf_.get(), pos, keep);
  pos = buf_.get();
  end = pos + keep;
  while (Available() < n) {
    if (ReadMore() == 0) {
      at_end_ = true;
      return;
    }
  }
}

bool Input::SkipUnread(uint64_t n) {
  if (mapped_) {
    MapWindow(Offset() + n);
    return true;
  }
  if (!stream_ && file_size_ && raw_->Seek(n)) {
    base_ += static_cast<uint64_t>(pos - begin_) + n;
    pos = end = begin_;
    return true;
  }
  return false;
}

}  // namespace libdump::format
