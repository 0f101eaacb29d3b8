#include "libdump/format/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include <algorithm>
#include <bit>
#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>
#include <cstring>
#include <ios>
#include <memory>
#include <optional>
#include <vector>

#include "libdump/format/uvarint.h"

namespace libdump::format {

namespace io = boost::iostreams;

FormatError::FormatError(uint64_t offset, std::string context, std::string reason)
    : std::runtime_error(std::to_string(offset) + ": " + context + ": " + reason),
      offset_(offset), context_(std::move(context)), reason_(std::move(reason)) {}

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kZstd: return "zstd";
    case Compression::kGzip: return "gzip";
  }
  return "?";
}

const char* DialectName(Dialect d) {
  switch (d) {
    case Dialect::kLibdump: return "go1.3 heap dump (libdump)";
  }
  return "?";
}

namespace {

// The undecoded input: an fd or an istream, read in large blocks.
class RawInput {
 public:
  explicit RawInput(int fd) : fd_(fd) {}
  explicit RawInput(std::istream& in) : in_(&in) {}

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
  std::istream* in_ = nullptr;
  uint64_t consumed_ = 0;
};

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

std::string Printable(const uint8_t* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = p[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char esc[8];
      std::snprintf(esc, sizeof esc, c == '\n' ? "\\n" : "\\x%02x", c);
      out += esc;
    }
  }
  return out;
}

}  // namespace

class Reader::Impl {
 public:
  Impl(std::unique_ptr<RawInput> raw, ReaderOptions options)
      : raw_(std::move(raw)), options_(options) {
    options_.buffer_size = std::max<size_t>(options_.buffer_size, 64);
    buf_.reset(new uint8_t[options_.buffer_size]);
    begin_ = pos_ = end_ = buf_.get();
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    window_ = (std::max(options_.map_window, 2 * page_) + page_ - 1) & ~(page_ - 1);
    DetectCompression();
    if (options_.map_file && compression_ == Compression::kNone && file_size_) MapWindow(0);
    ReadHeader();
  }
  ~Impl() {
    if (map_ != nullptr) ::munmap(map_, map_len_);
  }

  Compression compression() const { return compression_; }
  Dialect dialect() const { return Dialect::kLibdump; }
  uint64_t Offset() const { return base_ + static_cast<uint64_t>(pos_ - begin_); }

  bool Next(Record& r);
  void ReadPayload(const std::function<void(std::span<const uint8_t>)>& chunk);
  std::span<const uint8_t> Payload(size_t max);
  void Range(uint64_t start, uint64_t end);

 private:
  // --- input -------------------------------------------------------------
  size_t Available() const { return static_cast<size_t>(end_ - pos_); }
  // The most bytes Fill() can make available at once.
  size_t Capacity() const { return mapped_ ? window_ - page_ : options_.buffer_size; }

  // Reads from the (decompressed) input into [end_, buffer end).
  size_t ReadMore() {
    uint8_t* limit = buf_.get() + options_.buffer_size;
    if (stream_) {
      // One underflow (one decompressor read) at a time: an error then loses
      // none of the output before it, and is reported where the good data
      // ends (to within the stream's buffer for gzip, exactly for zstd).
      try {
        if (stream_->rdbuf()->in_avail() <= 0 &&
            std::char_traits<char>::eq_int_type(stream_->peek(), std::char_traits<char>::eof())) {
          return 0;
        }
        stream_->readsome(reinterpret_cast<char*>(end_), limit - end_);
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
      end_ += got;
      return got;
    }
    size_t want = static_cast<size_t>(limit - end_);
    if (stop_ != 0) {  // uncompressed: end_ is at input offset base_ + (end_ - begin_)
      const uint64_t at = base_ + static_cast<uint64_t>(end_ - begin_);
      want = static_cast<size_t>(std::min<uint64_t>(want, stop_ > at ? stop_ - at : 0));
      if (want == 0) return 0;
    }
    const size_t got = raw_->Read(end_, want);
    end_ += got;
    return got;
  }

  // Maps the window of the file that starts at the page holding `offset` and
  // points pos_ at offset. The first call may fail (address space limits):
  // the reader then keeps reading into its buffer. Later ones throw.
  void MapWindow(uint64_t offset) {
    const uint64_t start = offset & ~(uint64_t{page_} - 1);
    const uint64_t len = std::min<uint64_t>(window_, *file_size_ - start);
    if (map_ != nullptr) ::munmap(map_, map_len_);
    map_ = nullptr;
    if (len == 0 && mapped_) {  // at the very end of the file
      map_len_ = 0;
      begin_ = pos_ = end_ = buf_.get();
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
    pos_ = map_ + (offset - start);
    end_ = map_ + map_len_;
  }

  // Makes at least min(n, what is left of the input) bytes available; n must
  // fit the buffer (mapped: the window less a page).
  void Fill(size_t n) {
    if (Available() >= n || at_end_) return;
    if (mapped_) {
      if (base_ + map_len_ < *file_size_) MapWindow(Offset());
      at_end_ = Available() < n;
      return;
    }
    const size_t keep = Available();
    base_ += static_cast<uint64_t>(pos_ - begin_);
    std::memmove(buf_.get(), pos_, keep);
    pos_ = buf_.get();
    end_ = pos_ + keep;
    while (Available() < n) {
      if (ReadMore() == 0) {
        at_end_ = true;
        return;
      }
    }
  }

  // Bytes known to remain in a regular uncompressed file, else nullopt.
  std::optional<uint64_t> Remaining() const {
    if (!file_size_) return std::nullopt;
    return *file_size_ - std::min(*file_size_, Offset());
  }

  [[noreturn]] void Fail(uint64_t offset, const std::string& reason) const {
    throw FormatError(offset, Context(), reason);
  }
  std::string Context() const {
    return "kind " + std::to_string(kind_) + " (" + KindName(static_cast<Kind>(kind_)) + ")";
  }

  // --- fields ------------------------------------------------------------
  // Decodes the uvarint at p, which must have kMaxUvarintLen bytes after it,
  // and advances p; false (p unchanged) for what USlow must look at: values
  // of 9 or 10 bytes, overlong encodings. Most fields take one or two bytes;
  // addresses take 5-7, and a loop over their bytes was the reader's hottest
  // code, so longer values are gathered from one 8-byte load (28
  // instructions for any length up to 8 instead of ~8 a byte).
  [[gnu::always_inline]] static bool UFast(uint8_t*& p, uint64_t& v) {
    if (p[0] < 0x80) {
      v = *p++;
      return true;
    }
    if (p[1] < 0x80) {
      if (p[1] == 0) return false;  // overlong
      v = (p[0] & 0x7fu) | (uint64_t{p[1]} << 7);
      p += 2;
      return true;
    }
    uint64_t w;
    std::memcpy(&w, p, 8);
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    const uint64_t stops = ~w & 0x8080808080808080u;  // a clear top bit ends the value
    if (stops == 0) return false;
    const unsigned last = static_cast<unsigned>(__builtin_ctzll(stops));  // 8 * length - 1
    if (((w >> (last - 7)) & 0x7f) == 0) return false;  // overlong
    uint64_t x = w & 0x7f7f7f7f7f7f7f7fu & (~uint64_t{0} >> (63 - last));
    x = (x & 0x007f007f007f007fu) | ((x & 0x7f007f007f007f00u) >> 1);
    x = (x & 0x00003fff00003fffu) | ((x & 0x3fff00003fff0000u) >> 2);
    x = (x & 0x000000000fffffffu) | ((x & 0x0fffffff00000000u) >> 4);
    v = x;
    p += (last >> 3) + 1;
    return true;
  }

  [[gnu::always_inline]] uint64_t U(const char* field) {
    if (Available() >= kMaxUvarintLen) [[likely]] {  // not near the end: no bounds to check
      uint8_t* p = pos_;
      uint64_t v;
      if (UFast(p, v)) {
        pos_ = p;
        return v;
      }
    }
    return USlow(field);
  }

  // Near the end of the bytes at hand, or malformed; kept out of line so that
  // U() inlines.
  [[gnu::noinline]] uint64_t USlow(const char* field) {
    if (Available() < kMaxUvarintLen) Fill(kMaxUvarintLen);
    if (pos_ < end_ && *pos_ < 0x80) return *pos_++;
    const UvarintResult r = GetUvarint(pos_, Available());
    if (r.status != UvarintStatus::kOk) {
      Fail(Offset(), std::string(field) + ": " +
                         (r.status == UvarintStatus::kTruncated && at_end_
                              ? "unexpected end of input"
                              : UvarintStatusString(r.status)));
    }
    pos_ += r.len;
    return r.value;
  }

  bool Bool(const char* field) {
    const uint64_t at = Offset();
    const uint64_t v = U(field);
    if (v > 1) Fail(at, std::string(field) + ": expected 0 or 1, got " + std::to_string(v));
    return v == 1;
  }

  // Checks a count or length read at `at` against the limits before anything
  // is sized from it: `unit` is the fewest bytes one element occupies.
  void CheckLength(uint64_t at, const char* field, uint64_t n, uint64_t unit, uint64_t limit) {
    if (n > limit / unit) {
      Fail(at, std::string(field) + ": length " + std::to_string(n) + " exceeds the limit of " +
                   std::to_string(limit / unit));
    }
    if (auto rem = Remaining(); rem && n > *rem / unit) {
      Fail(at, std::string(field) + ": length " + std::to_string(n) + " exceeds the " +
                   std::to_string(*rem) + " bytes left in the file");
    }
  }

  // Strings grow only as their bytes arrive, so a lying length field cannot
  // make us allocate more than the input holds.
  void Str(const char* field, std::string& out) {
    const uint64_t at = Offset();
    const uint64_t n = U(field);
    CheckLength(at, field, n, 1, options_.max_string);
    out.clear();
    uint64_t left = n;
    while (left > 0) {
      if (Available() == 0) {
        Fill(1);
        if (Available() == 0) Fail(at, std::string(field) + ": unexpected end of input in a " +
                                           std::to_string(n) + "-byte string");
      }
      const size_t k = static_cast<size_t>(std::min<uint64_t>(left, Available()));
      out.append(reinterpret_cast<const char*>(pos_), k);
      pos_ += k;
      left -= k;
    }
  }

  uint64_t Count(const char* field, uint64_t unit) {
    const uint64_t at = Offset();
    const uint64_t n = U(field);
    CheckLength(at, field, n, unit, options_.max_string);
    return n;
  }

  // --- records -----------------------------------------------------------
  void ReadHeader();
  void DetectCompression();
  // Skips what is left of the last object's payload. Inline for the usual
  // case, a payload already in the buffer (pass 1 skips every payload).
  void SkipPayload() {
    if (payload_left_ <= Available()) {
      pos_ += payload_left_;
      payload_left_ = 0;
      return;
    }
    SkipPayloadSlow();
  }
  [[gnu::noinline]] void SkipPayloadSlow();
  // The next buffered piece of the pending payload; fails at end of input.
  std::span<const uint8_t> NextPayloadChunk();
  void DecodeBody(Record& r);
  // Objects are nearly every record: decoded inline in Next(), with their
  // errors built out of line, so that the common record pays neither the
  // big switch's register saves nor its jump.
  [[gnu::always_inline]] void DecodeObject(ObjectRecord& o) {
    // Away from the end, the four fields with one bounds check; anything
    // unusual goes the field-by-field way below, which names the error.
    if (Available() >= 4 * kMaxUvarintLen) [[likely]] {
      uint8_t* p = pos_;
      uint64_t addr, type, kind, size;
      if (UFast(p, addr) && UFast(p, type) && UFast(p, kind) && kind <= kObjChan && UFast(p, size)) {
        const uint64_t at = base_ + static_cast<uint64_t>(p - begin_);
        if (!file_size_ || size <= *file_size_ - std::min(*file_size_, at)) [[likely]] {
          o = {addr, type, kind, size};
          pos_ = p;
          payload_offset_ = at;
          payload_left_ = size;
          payload_taken_ = false;
          return;
        }
      }
    }
    o.addr = U("addr");
    o.type = U("type");
    const uint64_t kind_at = Offset();
    o.kind = U("kind");
    if (o.kind > kObjChan) [[unlikely]] BadObjectKind(kind_at, o.kind);
    const uint64_t size_at = Offset();
    o.size = U("size");
    if (file_size_ && o.size > *file_size_ - std::min(*file_size_, Offset())) [[unlikely]] {
      ObjectPastTheEnd(size_at, o.size);
    }
    payload_offset_ = Offset();
    payload_left_ = o.size;
    payload_taken_ = false;
  }
  [[noreturn, gnu::noinline, gnu::cold]] void BadObjectKind(uint64_t at, uint64_t kind) const {
    Fail(at, "kind: expected 0, 1 or 2, got " + std::to_string(kind));
  }
  [[noreturn, gnu::noinline, gnu::cold]] void ObjectPastTheEnd(uint64_t at, uint64_t size) const {
    Fail(at, "size: object of " + std::to_string(size) + " bytes exceeds the " + std::to_string(*Remaining()) +
                 " bytes left in the file");
  }

  std::unique_ptr<RawInput> raw_;
  ReaderOptions options_;
  std::unique_ptr<io::filtering_istream> stream_;
  Compression compression_ = Compression::kNone;
  std::optional<uint64_t> file_size_;

  std::unique_ptr<uint8_t[]> buf_;
  uint8_t* begin_;  // start of the bytes at hand: buf_, or the mapped window
  uint8_t* pos_;
  uint8_t* end_;
  uint64_t base_ = 0;  // input offset of begin_[0]
  size_t page_ = 0;
  size_t window_ = 0;
  bool mapped_ = false;  // the file is read through map_, not into buf_
  uint8_t* map_ = nullptr;
  size_t map_len_ = 0;
  bool at_end_ = false;
  uint64_t stop_ = 0;  // Range()'s end; 0: none

  uint64_t kind_ = 0;            // kind of the record being decoded, for errors
  uint64_t payload_left_ = 0;    // unread payload bytes of the last object
  uint64_t payload_offset_ = 0;  // where that payload starts
  bool payload_taken_ = true;
  bool done_ = false;
  std::vector<uint8_t> scratch_;  // Payload() of an object that straddles the buffer
};

void Reader::Impl::DetectCompression() {
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
    std::memcpy(end_, head, n);
    end_ += n;
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

void Reader::Impl::ReadHeader() {
  Fill(kHeader.size());
  const size_t n = std::min(Available(), kHeader.size());
  if (n < kHeader.size() || std::memcmp(pos_, kHeader.data(), n) != 0) {
    std::string got = Printable(pos_, n);
    if (std::string_view(reinterpret_cast<const char*>(pos_), std::min<size_t>(n, 4)) == "go1." &&
        n == kHeader.size()) {
      throw FormatError(0, "header", "unsupported dialect \"" + got + "\"");
    }
    throw FormatError(0, "header", "expected \"go1.3 heap dump\\n\", got \"" + got + "\"" +
                                       (n < kHeader.size() ? " (end of input)" : ""));
  }
  pos_ += kHeader.size();
}

void Reader::Impl::SkipPayloadSlow() {
  if (payload_left_ == 0) return;
  const size_t in_buf = static_cast<size_t>(std::min<uint64_t>(payload_left_, Available()));
  pos_ += in_buf;
  payload_left_ -= in_buf;
  if (payload_left_ == 0) return;
  // The buffer is empty here. A regular file's length was checked when the
  // object header was read, so seeking cannot overshoot.
  if (mapped_) {
    MapWindow(Offset() + payload_left_);
    payload_left_ = 0;
    return;
  }
  if (!stream_ && file_size_ && raw_->Seek(payload_left_)) {
    base_ += static_cast<uint64_t>(pos_ - begin_) + payload_left_;
    pos_ = end_ = begin_;
    payload_left_ = 0;
    return;
  }
  while (payload_left_ > 0) NextPayloadChunk();
}

std::span<const uint8_t> Reader::Impl::NextPayloadChunk() {
  if (Available() == 0) {
    Fill(1);
    if (Available() == 0) {
      Fail(payload_offset_, "data: unexpected end of input in a payload of " +
                                std::to_string(payload_left_) + " more bytes");
    }
  }
  const size_t k = static_cast<size_t>(std::min<uint64_t>(payload_left_, Available()));
  const std::span<const uint8_t> s(pos_, k);
  pos_ += k;
  payload_left_ -= k;
  return s;
}

void Reader::Impl::ReadPayload(const std::function<void(std::span<const uint8_t>)>& chunk) {
  if (payload_taken_) throw std::logic_error("ReadPayload: no object payload pending");
  payload_taken_ = true;
  while (payload_left_ > 0) chunk(NextPayloadChunk());
}

std::span<const uint8_t> Reader::Impl::Payload(size_t max) {
  if (payload_taken_) throw std::logic_error("Payload: no object payload pending");
  if (payload_left_ > max) {
    Fail(payload_offset_, "data: payload of " + std::to_string(payload_left_) +
                              " bytes is larger than the " + std::to_string(max) +
                              " bytes a caller accepts in one piece");
  }
  const size_t n = static_cast<size_t>(payload_left_);
  if (n <= Capacity()) {
    Fill(n);
    if (Available() < n) {
      Fail(payload_offset_, "data: unexpected end of input in a payload of " +
                                std::to_string(n) + " bytes");
    }
    payload_taken_ = true;
    const std::span<const uint8_t> s(pos_, n);
    pos_ += n;
    payload_left_ = 0;
    return s;
  }
  scratch_.clear();
  ReadPayload([this](std::span<const uint8_t> c) { scratch_.insert(scratch_.end(), c.begin(), c.end()); });
  return {scratch_.data(), scratch_.size()};
}

void Reader::Impl::Range(uint64_t start, uint64_t end) {
  SkipPayload();
  payload_taken_ = true;
  if (start < Offset() || (end != 0 && end < start)) throw std::logic_error("Reader::Range: range behind the reader");
  stop_ = 0;
  at_end_ = false;
  payload_left_ = start - Offset();
  payload_offset_ = Offset();
  SkipPayload();
  stop_ = end;
}

bool Reader::Impl::Next(Record& r) {
  SkipPayload();
  payload_taken_ = true;
  if (done_ || (stop_ != 0 && Offset() >= stop_)) return false;
  r.offset = Offset();
  kind_ = 0;
  Fill(1);
  if (Available() == 0) {
    throw FormatError(r.offset, "record", "unexpected end of input: expected a record (no eof record)");
  }
  const uint64_t kind = U("kind");
  kind_ = kind;
  if (kind == 0 || kind == 2 || kind > kLastKind) {
    Fail(r.offset, "unknown record kind");
  }
  r.kind = static_cast<Kind>(kind);
  if (r.kind == Kind::kObject) [[likely]] {
    DecodeObject(r.object);
  } else {
    DecodeBody(r);
  }
  return true;
}

void Reader::Impl::DecodeBody(Record& r) {
  switch (r.kind) {
    case Kind::kObject:
      DecodeObject(r.object);
      return;
    case Kind::kEof: {
      Fill(1);
      if (Available() != 0) Fail(Offset(), "unexpected data after the eof record");
      done_ = true;
      return;
    }
    case Kind::kStackRoot:
      r.stack_root.addr = U("addr");
      r.stack_root.ptr = U("rootptr");
      r.stack_root.frame = U("frame");
      return;
    case Kind::kDataRoot:
      r.data_root.addr = U("addr");
      r.data_root.ptr = U("rootptr");
      return;
    case Kind::kOtherRoot:
      Str("description", r.other_root.description);
      r.other_root.ptr = U("rootptr");
      return;
    case Kind::kType: {
      TypeRecord& t = r.type;
      t.addr = U("addr");
      t.size = U("size");
      Str("name", t.name);
      t.eface_ptr = Bool("efaceptr");
      const uint64_t n = Count("nfields", 2);
      t.fields.clear();
      uint64_t last = 0;
      for (uint64_t i = 0; i < n; ++i) {
        Field f;
        f.kind = U("field kind");
        const uint64_t at = Offset();
        f.offset = U("field offset");
        if (i > 0 && f.offset <= last) {
          Fail(at, "field offset " + std::to_string(f.offset) + " does not increase");
        }
        last = f.offset;
        t.fields.push_back(f);
      }
      return;
    }
    case Kind::kGoroutine: {
      GoroutineRecord& g = r.goroutine;
      g.addr = U("addr");
      g.tos = U("tos");
      g.goid = U("goid");
      g.gopc = U("gopc");
      g.status = U("status");
      g.is_system = Bool("issystem");
      g.is_background = Bool("isbackground");
      g.wait_since = U("waitsince");
      Str("waitreason", g.wait_reason);
      return;
    }
    case Kind::kFrame:
      r.frame.sp = U("sp");
      r.frame.parent = U("parent");
      r.frame.entry = U("entry");
      r.frame.pc = U("pc");
      Str("name", r.frame.name);
      return;
    case Kind::kParams: {
      ParamsRecord& p = r.params;
      const uint64_t endian_at = Offset();
      p.big_endian = U("endian");
      if (p.big_endian > 1) Fail(endian_at, "endian: expected 0 or 1");
      const uint64_t ptr_at = Offset();
      p.ptr_size = U("ptrsize");
      if (p.ptr_size != 4 && p.ptr_size != 8) Fail(ptr_at, "ptrsize: expected 4 or 8, got " + std::to_string(p.ptr_size));
      p.hchan_size = U("hchansize");
      p.heap_start = U("heapstart");
      const uint64_t end_at = Offset();
      p.heap_end = U("heapend");
      if (p.heap_end < p.heap_start) Fail(end_at, "heapend: below heapstart");
      return;
    }
    case Kind::kFinalizer:
      r.finalizer.obj = U("obj");
      r.finalizer.funcval = U("funcval");
      r.finalizer.code = U("code");
      r.finalizer.fint = U("fint");
      r.finalizer.ot = U("ot");
      return;
    case Kind::kItab:
      r.itab.addr = U("addr");
      r.itab.ptr = U("ptr");
      return;
    case Kind::kTypeFields: {
      TypeFieldsRecord& t = r.type_fields;
      t.type = U("type");
      const uint64_t n = Count("nfields", 4);
      t.fields.resize(std::min<uint64_t>(t.fields.size(), n));
      for (uint64_t i = 0; i < n; ++i) {
        if (i == t.fields.size()) t.fields.emplace_back();
        NamedField& f = t.fields[i];
        f.offset = U("field offset");
        f.kind = U("field kind");
        f.size = U("field size");
        Str("field name", f.name);
      }
      return;
    }
    case Kind::kTypeInfo:
      r.type_info.type = U("type");
      r.type_info.flags = U("flags");
      r.type_info.vtable = U("vtable");
      r.type_info.elem_type = U("elemtype");
      r.type_info.elem_size = U("elemsize");
      return;
    case Kind::kThreadInfo:
      r.thread_info.goroutine = U("goroutine");
      r.thread_info.tid = U("tid");
      Str("name", r.thread_info.name);
      return;
    case Kind::kMemStats: {
      auto& stats = r.mem_stats.stats;
      const uint64_t n = Count("nstats", 2);
      stats.resize(std::min<uint64_t>(stats.size(), n));
      for (uint64_t i = 0; i < n; ++i) {
        if (i == stats.size()) stats.emplace_back();
        Str("stat name", stats[i].name);
        stats[i].value = U("stat value");
      }
      return;
    }
    case Kind::kModule:
      r.module.start = U("start");
      r.module.end = U("end");
      r.module.file_offset = U("offset");
      Str("path", r.module.path);
      Str("buildid", r.module.build_id);
      return;
    case Kind::kAllocStack: {
      AllocStackRecord& a = r.alloc_stack;
      a.obj = U("obj");
      a.size = U("size");
      const uint64_t n = Count("npcs", 1);
      a.pcs.clear();
      for (uint64_t i = 0; i < n; ++i) a.pcs.push_back(U("pc"));
      return;
    }
  }
}

Reader::Reader(int fd, ReaderOptions options)
    : impl_(std::make_unique<Impl>(std::make_unique<RawInput>(fd), options)) {}
Reader::Reader(std::istream& in, ReaderOptions options)
    : impl_(std::make_unique<Impl>(std::make_unique<RawInput>(in), options)) {}
Reader::~Reader() = default;

Compression Reader::compression() const { return impl_->compression(); }
Dialect Reader::dialect() const { return impl_->dialect(); }
bool Reader::Next(Record& r) { return impl_->Next(r); }
void Reader::ReadPayload(const std::function<void(std::span<const uint8_t>)>& chunk) {
  impl_->ReadPayload(chunk);
}
std::span<const uint8_t> Reader::Payload(size_t max) { return impl_->Payload(max); }
void Reader::Range(uint64_t start, uint64_t end) { impl_->Range(start, end); }
uint64_t Reader::offset() const { return impl_->Offset(); }

}  // namespace libdump::format
