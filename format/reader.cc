// The record decoder: varints, strings and lists as record.h lists
// them, over the bytes Input (input.h) has at hand.
#include "libdump/format/reader.h"

#include <fcntl.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <system_error>
#include <type_traits>
#include <vector>

#include "go_dump.h"
#include "input.h"
#include "libdump/format/uvarint.h"

namespace libdump::format {

const char* DialectName(Dialect d) {
  switch (d) {
    case Dialect::kLibdump: return "go1.3 heap dump (libdump)";
    case Dialect::kGo13: return "go1.3 heap dump (Go runtime)";
    case Dialect::kGo14: return "go1.4 heap dump (Go runtime)";
    case Dialect::kGo15: return "go1.5 heap dump (Go runtime)";
    case Dialect::kGo16: return "go1.6 heap dump (Go runtime)";
    case Dialect::kGo17: return "go1.7 heap dump (Go runtime)";
  }
  return "?";
}

namespace {

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
  Impl(std::istream& in, const ReaderOptions& options) : in_(in, Of(options)), max_string_(options.max_string) {
    ReadHeader();
  }
  // owned: the input closes the fd (Reader::Open).
  Impl(int fd, bool owned, const ReaderOptions& options)
      : in_(fd, owned, Of(options)), max_string_(options.max_string) {
    ReadHeader();
  }

  Compression compression() const { return in_.compression(); }
  Dialect dialect() const { return go_ ? go_->dialect() : Dialect::kLibdump; }
  uint64_t Offset() const { return in_.Offset(); }

  bool Next(Record& r);
  void ReadPayload(const std::function<void(std::span<const uint8_t>)>& chunk);
  std::span<const uint8_t> Payload(size_t max);
  void Range(uint64_t start, uint64_t end);

 private:
  class Fields;

  static InputOptions Of(const ReaderOptions& o) { return {o.buffer_size, o.map_file, o.map_window}; }

  size_t Available() const { return in_.Available(); }
  void Fill(size_t n) { in_.Fill(n); }

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
      uint8_t* p = in_.pos;
      uint64_t v;
      if (UFast(p, v)) {
        in_.pos = p;
        return v;
      }
    }
    return USlow(field);
  }

  // Near the end of the bytes at hand, or malformed; kept out of line so that
  // U() inlines.
  [[gnu::noinline]] uint64_t USlow(const char* field) {
    if (Available() < kMaxUvarintLen) Fill(kMaxUvarintLen);
    if (in_.pos < in_.end && *in_.pos < 0x80) return *in_.pos++;
    const UvarintResult r = GetUvarint(in_.pos, Available());
    if (r.status != UvarintStatus::kOk) {
      Fail(Offset(), std::string(field) + ": " +
                         (r.status == UvarintStatus::kTruncated && in_.at_end()
                              ? "unexpected end of input"
                              : UvarintStatusString(r.status)));
    }
    in_.pos += r.len;
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
    if (auto rem = in_.Remaining(); rem && n > *rem / unit) {
      Fail(at, std::string(field) + ": length " + std::to_string(n) + " exceeds the " +
                   std::to_string(*rem) + " bytes left in the file");
    }
  }

  // Strings grow only as their bytes arrive, so a lying length field cannot
  // make us allocate more than the input holds.
  void Str(const char* field, std::string& out) {
    const uint64_t at = Offset();
    const uint64_t n = U(field);
    CheckLength(at, field, n, 1, max_string_);
    out.clear();
    uint64_t left = n;
    while (left > 0) {
      if (Available() == 0) {
        Fill(1);
        if (Available() == 0) Fail(at, std::string(field) + ": unexpected end of input in a " +
                                           std::to_string(n) + "-byte string");
      }
      const size_t k = static_cast<size_t>(std::min<uint64_t>(left, Available()));
      out.append(reinterpret_cast<const char*>(in_.pos), k);
      in_.pos += k;
      left -= k;
    }
  }

  uint64_t Count(const char* field, uint64_t unit) {
    const uint64_t at = Offset();
    const uint64_t n = U(field);
    CheckLength(at, field, n, unit, max_string_);
    return n;
  }

  // --- records -----------------------------------------------------------
  void ReadHeader();
  // Skips what is left of the last object's payload. Inline for the usual
  // case, a payload already in the buffer (pass 1 skips every payload).
  void SkipPayload() {
    if (payload_left_ <= Available()) {
      in_.pos += payload_left_;
      payload_left_ = 0;
      return;
    }
    SkipPayloadSlow();
  }
  [[gnu::noinline]] void SkipPayloadSlow();
  // The next buffered piece of the pending payload; fails at end of input.
  std::span<const uint8_t> NextPayloadChunk();
  void DecodeBody(Record& r);
  void StartPayload(uint64_t at, uint64_t size) {
    payload_offset_ = at;
    payload_left_ = size;
    payload_taken_ = false;
  }
  // Objects are nearly every record: decoded inline in Next(), with their
  // errors built out of line, so that the common record pays neither the
  // big switch's register saves nor its jump.
  [[gnu::always_inline]] void DecodeObject(ObjectRecord& o) {
    // Away from the end, the four fields of Layout<Kind::kObject> with one
    // bounds check; anything unusual goes the field-by-field way of the
    // layout, which names the error.
    if (Available() >= 4 * kMaxUvarintLen) [[likely]] {
      uint8_t* p = in_.pos;
      uint64_t addr, type, kind, size;
      if (UFast(p, addr) && UFast(p, type) && UFast(p, kind) && kind <= kObjChan && UFast(p, size)) {
        const uint64_t at = in_.OffsetOf(p);
        const auto& file_size = in_.file_size();
        if (!file_size || size <= *file_size - std::min(*file_size, at)) [[likely]] {
          o = {addr, type, kind, size};
          in_.pos = p;
          StartPayload(at, size);
          return;
        }
      }
    }
    DecodeObjectSlow(o);
  }
  [[gnu::noinline]] void DecodeObjectSlow(ObjectRecord& o);
  [[noreturn, gnu::noinline, gnu::cold]] void ObjectPastTheEnd(uint64_t at, uint64_t size) const {
    Fail(at, "size: object of " + std::to_string(size) + " bytes exceeds the " +
                 std::to_string(*in_.Remaining()) + " bytes left in the file");
  }

  Input in_;
  uint64_t max_string_;

  uint64_t kind_ = 0;            // kind of the record being decoded, for errors
  uint64_t payload_left_ = 0;    // unread payload bytes of the last object
  uint64_t payload_offset_ = 0;  // where that payload starts
  bool payload_taken_ = true;
  bool done_ = false;
  std::vector<uint8_t> scratch_;  // Payload() of an object that straddles the buffer
  std::unique_ptr<GoDecoder> go_;  // a Go runtime's dump: records come from here
};

// The visitor of record.h that decodes: each field as its layout says.
class Reader::Impl::Fields {
 public:
  explicit Fields(Impl& d) : d_(d) {}

  template <class... Check>
  void U(const char* name, uint64_t& v, Show show, Check&&... check) {
    if constexpr (sizeof...(Check) == 0) {
      if (show != Show::kPayloadSize) {
        v = d_.U(name);
        return;
      }
    }
    const uint64_t at = d_.Offset();
    v = d_.U(name);
    if (show == Show::kPayloadSize) {
      if (const auto rem = d_.in_.Remaining(); rem && v > *rem) [[unlikely]] d_.ObjectPastTheEnd(at, v);
    }
    if constexpr (sizeof...(Check) != 0) {
      if (std::string error = (check(v), ...); !error.empty()) [[unlikely]] d_.Fail(at, error);
    }
  }
  void Bool(const char* name, bool& v) { v = d_.Bool(name); }
  void Str(const char* name, std::string& v) { d_.Str(name, v); }

  // Elements are reused (with their strings' capacity) and added only as
  // they arrive, so a lying count allocates nothing.
  template <class Items, class Item>
  void List(const char* count, const char*, const char*, Items& items, Item&& item) {
    const uint64_t n = d_.Count(count, MinBytes<typename Items::value_type>(item));
    items.resize(std::min<uint64_t>(items.size(), n));
    for (uint64_t i = 0; i < n; ++i) {
      if (i == items.size()) items.emplace_back();
      item(*this, items[i], i == 0 ? nullptr : &items[i - 1]);
    }
  }

 private:
  // The fewest bytes an element takes on the wire: one per field.
  struct FieldCounter {
    unsigned n = 0;
    template <class V, class... Rest>
    void U(const char*, V&, Show, Rest&&...) { ++n; }
    template <class V>
    void Bool(const char*, V&) { ++n; }
    template <class V>
    void Str(const char*, V&) { ++n; }
  };
  template <class T, class Item>
  static uint64_t MinBytes(const Item& item) {
    static const unsigned n = [&] {
      FieldCounter c;
      T t{};
      item(c, t, static_cast<const T*>(nullptr));
      return c.n;
    }();
    return n;
  }

  Impl& d_;
};

void Reader::Impl::DecodeObjectSlow(ObjectRecord& o) {
  Fields f(*this);
  Layout<Kind::kObject>::Fields(o, f);
  StartPayload(Offset(), o.size);
}

void Reader::Impl::ReadHeader() {
  // Enough for the header and a Go 1.3 params record, within what the
  // buffer holds (Fill's bound: more would read as the end of input).
  Fill(std::min(kHeader.size() + 7 * kMaxUvarintLen, in_.Capacity()));
  const size_t n = std::min(Available(), kHeader.size());
  const std::string_view got_view(reinterpret_cast<const char*>(in_.pos), n);
  for (const auto& [header, dialect] : {std::pair{"go1.7 heap dump\n", Dialect::kGo17},
                                        std::pair{"go1.6 heap dump\n", Dialect::kGo16},
                                        std::pair{"go1.5 heap dump\n", Dialect::kGo15},
                                        std::pair{"go1.4 heap dump\n", Dialect::kGo14}}) {
    if (got_view == header) {
      in_.pos += n;
      go_ = std::make_unique<GoDecoder>(in_, dialect, max_string_);
      return;
    }
  }
  if (n < kHeader.size() || std::memcmp(in_.pos, kHeader.data(), n) != 0) {
    std::string got = Printable(in_.pos, n);
    if (got_view.substr(0, std::min<size_t>(n, 4)) == "go1." && n == kHeader.size()) {
      throw FormatError(0, "header", "unsupported dialect \"" + got + "\"");
    }
    throw FormatError(0, "header", "expected \"go1.3 heap dump\\n\", got \"" + got + "\"" +
                                       (n < kHeader.size() ? " (end of input)" : ""));
  }
  // The released Go 1.3 runtime wrote the same header as the 2013 draft that
  // is libdump's format, with other record numbers: its first record is
  // params, kind 6, where libdump writes params as kind 10.
  const bool go13 = LooksLikeGo13Params({in_.pos + kHeader.size(), Available() - kHeader.size()});
  in_.pos += kHeader.size();
  if (go13) go_ = std::make_unique<GoDecoder>(in_, Dialect::kGo13, max_string_);
}

void Reader::Impl::SkipPayloadSlow() {
  if (payload_left_ == 0) return;
  const size_t in_buf = static_cast<size_t>(std::min<uint64_t>(payload_left_, Available()));
  in_.pos += in_buf;
  payload_left_ -= in_buf;
  if (payload_left_ == 0) return;
  // Nothing is at hand here. A regular file's length was checked when the
  // object header was read, so skipping cannot overshoot.
  if (in_.SkipUnread(payload_left_)) {
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
  const std::span<const uint8_t> s(in_.pos, k);
  in_.pos += k;
  payload_left_ -= k;
  return s;
}

void Reader::Impl::ReadPayload(const std::function<void(std::span<const uint8_t>)>& chunk) {
  if (payload_taken_) throw std::logic_error("ReadPayload: no object payload pending");
  payload_taken_ = true;
  if (go_) {
    if (!go_->payload().empty()) chunk(go_->payload());
    return;
  }
  while (payload_left_ > 0) chunk(NextPayloadChunk());
}

std::span<const uint8_t> Reader::Impl::Payload(size_t max) {
  if (payload_taken_) throw std::logic_error("Payload: no object payload pending");
  if (go_) {  // buffered whole by the decoder: Go writes an object's fields after its bytes
    if (go_->payload().size() > max) {
      Fail(payload_offset_, "data: payload of " + std::to_string(go_->payload().size()) +
                                " bytes is larger than the " + std::to_string(max) +
                                " bytes a caller accepts in one piece");
    }
    payload_taken_ = true;
    return go_->payload();
  }
  if (payload_left_ > max) {
    Fail(payload_offset_, "data: payload of " + std::to_string(payload_left_) +
                              " bytes is larger than the " + std::to_string(max) +
                              " bytes a caller accepts in one piece");
  }
  const size_t n = static_cast<size_t>(payload_left_);
  if (n <= in_.Capacity()) {
    Fill(n);
    if (Available() < n) {
      Fail(payload_offset_, "data: unexpected end of input in a payload of " +
                                std::to_string(n) + " bytes");
    }
    payload_taken_ = true;
    const std::span<const uint8_t> s(in_.pos, n);
    in_.pos += n;
    payload_left_ = 0;
    return s;
  }
  scratch_.clear();
  ReadPayload([this](std::span<const uint8_t> c) { scratch_.insert(scratch_.end(), c.begin(), c.end()); });
  return {scratch_.data(), scratch_.size()};
}

void Reader::Impl::Range(uint64_t start, uint64_t end) {
  // A Go dump goes on to its end: its decoder reads ahead, past any stop.
  if (go_ && end != 0) throw std::logic_error("Reader::Range: a Go dump's range has no end");
  if (!go_) SkipPayload();
  payload_taken_ = true;
  if (start < Offset() || (end != 0 && end < start)) throw std::logic_error("Reader::Range: range behind the reader");
  in_.set_stop(0);
  in_.clear_at_end();
  payload_left_ = start - Offset();
  payload_offset_ = Offset();
  SkipPayload();
  in_.set_stop(end);
  if (go_) go_->Resume();
}

bool Reader::Impl::Next(Record& r) {
  if (go_) {
    payload_taken_ = true;
    if (!go_->Next(r)) return false;
    if (r.kind == Kind::kObject) {
      payload_taken_ = false;
      payload_offset_ = r.offset;
    }
    return true;
  }
  SkipPayload();
  payload_taken_ = true;
  if (done_ || (in_.stop() != 0 && Offset() >= in_.stop())) return false;
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
  VisitRecord(r, [this](auto kind, auto& record) {
    if constexpr (kind() == Kind::kObject) {
      DecodeObject(record);
    } else {
      Fields f(*this);
      Layout<kind()>::Fields(record, f);
      if constexpr (kind() == Kind::kFrame) record.size = 0;  // not on this wire
      if constexpr (kind() == Kind::kEof) {
        Fill(1);
        if (Available() != 0) Fail(Offset(), "unexpected data after the eof record");
        done_ = true;
      }
    }
  });
}

Reader::Reader(int fd, ReaderOptions options) : impl_(std::make_unique<Impl>(fd, false, options)) {}
Reader::Reader(std::istream& in, ReaderOptions options) : impl_(std::make_unique<Impl>(in, options)) {}
Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

std::unique_ptr<Reader> Reader::Open(const std::string& path, ReaderOptions options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path);
  // From here the input owns the fd and closes it, also when the header is bad.
  return std::unique_ptr<Reader>(new Reader(std::make_unique<Impl>(fd, true, options)));
}

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
