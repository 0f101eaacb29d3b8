#include "libdump/format/hprof_writer.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace libdump::format::hprof {

// Numbers are byte-swapped into the big-endian file.
static_assert(std::endian::native == std::endian::little);

uint32_t TypeSize(Type t) {
  switch (t) {
    case Type::kObject: return kIdSize;
    case Type::kBoolean: case Type::kByte: return 1;
    case Type::kChar: case Type::kShort: return 2;
    case Type::kFloat: case Type::kInt: return 4;
    case Type::kDouble: case Type::kLong: return 8;
  }
  throw std::invalid_argument("hprof: bad basic type");
}

const char* PrimitiveArrayClassName(Type t) {
  switch (t) {
    case Type::kBoolean: return "[Z";
    case Type::kChar: return "[C";
    case Type::kFloat: return "[F";
    case Type::kDouble: return "[D";
    case Type::kByte: return "[B";
    case Type::kShort: return "[S";
    case Type::kInt: return "[I";
    case Type::kLong: return "[J";
    case Type::kObject: break;
  }
  throw std::invalid_argument("hprof: not a primitive type");
}

void FdOutput::Write(const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "write");
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void FdOutput::WriteAt(uint64_t offset, const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "pwrite");
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void StringOutput::WriteAt(uint64_t offset, const uint8_t* data, size_t n) {
  if (offset > data_.size() || data_.size() - offset < n) throw std::out_of_range("StringOutput::WriteAt");
  std::memcpy(data_.data() + offset, data, n);
}

namespace {
constexpr uint32_t kMaxRecord = UINT32_MAX;
}  // namespace

Writer::Writer(Output& out, WriterOptions options)
    : out_(&out), options_(options), buf_(std::max<size_t>(options.buffer_size, 64)) {
  if (options_.max_segment == 0) throw std::invalid_argument("hprof: max_segment 0");
  static constexpr char kHeader[] = "JAVA PROFILE 1.0.2";
  Bytes(reinterpret_cast<const uint8_t*>(kHeader), sizeof kHeader);  // with its NUL
  U4(kIdSize);
  U8(options_.timestamp_ms);
  Trace(kEmptyTrace, 0, {});
}

// Two buffers take turns, so that an output writing in the background reads
// one while the other fills.
Writer::Writer(Fragment, size_t buffer_size)
    : out_(nullptr), fragment_(true), buf_(std::max<size_t>(buffer_size, 64)) {}

Writer::~Writer() {
  if (out_ == nullptr) return;
  try {
    out_->Sync();
  } catch (...) {
  }
}

void Writer::Drain(size_t n) {
  if (fragment_) {  // keeps everything
    buf_.resize(std::max(buf_.size() * 2, pos_ + n));
    return;
  }
  if (pos_ > 0) {
    out_->Write(buf_.data(), pos_);
    flushed_ += pos_;
    pos_ = 0;
    if (spare_.empty()) spare_.resize(buf_.size());
    buf_.swap(spare_);
  }
  if (buf_.size() < n) buf_.resize(n);
}

void Writer::Flush() {
  if (fragment_) return;
  Drain(0);
  out_->Sync();
}

void Writer::U2(uint16_t v) {
  Need(2);
  v = __builtin_bswap16(v);
  std::memcpy(buf_.data() + pos_, &v, 2);
  pos_ += 2;
}

void Writer::U4(uint32_t v) {
  Need(4);
  v = __builtin_bswap32(v);
  std::memcpy(buf_.data() + pos_, &v, 4);
  pos_ += 4;
}

void Writer::U8(uint64_t v) {
  Need(8);
  v = __builtin_bswap64(v);
  std::memcpy(buf_.data() + pos_, &v, 8);
  pos_ += 8;
}

void Writer::Bytes(const uint8_t* p, size_t n) {
  if (n == 0) return;  // an empty span may have no data pointer
  if (n >= buf_.size() && !fragment_) {
    Drain(0);
    out_->Write(p, n);
    out_->Sync();  // p is the caller's
    flushed_ += n;
    return;
  }
  Need(n);
  std::memcpy(buf_.data() + pos_, p, n);
  pos_ += n;
}

void Writer::Top(Tag tag, uint64_t length) {
  if (state_ != State::kTop || fragment_) throw std::logic_error("hprof: top-level record after the heap dump began");
  if (pending_ != 0) throw std::logic_error("hprof: record inside an unfinished array");
  if (length > kMaxRecord) throw std::length_error("hprof: record longer than 4 GiB");
  U1(tag);
  U4(0);
  U4(static_cast<uint32_t>(length));
}

void Writer::Sub(uint64_t length) {
  if (state_ == State::kEnded) throw std::logic_error("hprof: sub-record after HEAP DUMP END");
  if (pending_ != 0) throw std::logic_error("hprof: record inside an unfinished array");
  if (length > kMaxRecord) throw std::length_error("hprof: sub-record longer than 4 GiB");
  state_ = State::kHeap;
  if (fragment_) {
    lengths_.push_back(static_cast<uint32_t>(length));
    return;
  }
  const bool opens = Opens(length);
  if (opens && segment_open_) CloseSegment();
  if (opens) {
    segment_start_ = bytes_written();
    U1(kTagHeapDumpSegment);
    U4(0);
    U4(0);  // patched by CloseSegment
    segment_open_ = true;
    segment_bytes_ = 0;
    ++segments_;
  }
  segment_bytes_ += length;
}

void Writer::Append(const Writer& f) {
  if (fragment_ || !f.fragment_) throw std::logic_error("hprof: Append takes a fragment into a file's writer");
  if (f.pending_ != 0) throw std::logic_error("hprof: fragment ends inside an unfinished array");
  // Runs of sub-records that share a segment go out in one piece.
  const uint8_t* p = f.buf_.data();
  size_t run = 0;
  for (const uint32_t length : f.lengths_) {
    if (Opens(length)) {
      Bytes(p, run);
      p += run;
      run = 0;
    }
    Sub(length);
    run += length;
  }
  Bytes(p, run);
}

void Writer::Clear() {
  if (!fragment_) throw std::logic_error("hprof: Clear is for fragments");
  pos_ = 0;
  pending_ = 0;
  lengths_.clear();
}

void Writer::CloseSegment() {
  const uint32_t n = static_cast<uint32_t>(segment_bytes_);
  const uint8_t be[4] = {static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 8),
                         static_cast<uint8_t>(n)};
  const uint64_t at = segment_start_ + 5;
  if (at >= flushed_) {
    std::memcpy(buf_.data() + (at - flushed_), be, 4);
  } else {
    out_->WriteAt(at, be, 4);
  }
  segment_open_ = false;
}

void Writer::Utf8(Id id, std::string_view text) {
  Top(kTagUtf8, kIdSize + text.size());
  IdV(id);
  Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

void Writer::LoadClass(uint32_t class_serial, Id class_id, uint32_t trace, Id name) {
  Top(kTagLoadClass, 4 + kIdSize + 4 + kIdSize);
  U4(class_serial);
  IdV(class_id);
  U4(trace);
  IdV(name);
}

void Writer::Frame(Id frame, Id method, Id signature, Id source_file, uint32_t class_serial, int32_t line) {
  Top(kTagFrame, 4 * kIdSize + 8);
  IdV(frame);
  IdV(method);
  IdV(signature);
  IdV(source_file);
  U4(class_serial);
  U4(static_cast<uint32_t>(line));
}

void Writer::Trace(uint32_t serial, uint32_t thread_serial, std::span<const Id> frames) {
  Top(kTagTrace, 12 + uint64_t{kIdSize} * frames.size());
  U4(serial);
  U4(thread_serial);
  U4(static_cast<uint32_t>(frames.size()));
  for (Id f : frames) IdV(f);
}

void Writer::StartThread(uint32_t thread_serial, Id thread, uint32_t trace, Id name, Id group, Id parent_group) {
  Top(kTagStartThread, 8 + 4 * kIdSize);
  U4(thread_serial);
  IdV(thread);
  U4(trace);
  IdV(name);
  IdV(group);
  IdV(parent_group);
}

void Writer::RootUnknown(Id object) {
  Sub(1 + kIdSize);
  U1(kRootUnknown);
  IdV(object);
}

void Writer::RootJniGlobal(Id object, Id ref) {
  Sub(1 + 2 * kIdSize);
  U1(kRootJniGlobal);
  IdV(object);
  IdV(ref);
}

void Writer::RootJavaFrame(Id object, uint32_t thread_serial, uint32_t depth) {
  Sub(1 + kIdSize + 8);
  U1(kRootJavaFrame);
  IdV(object);
  U4(thread_serial);
  U4(depth);
}

void Writer::RootThreadObject(Id thread, uint32_t thread_serial, uint32_t trace) {
  Sub(1 + kIdSize + 8);
  U1(kRootThreadObject);
  IdV(thread);
  U4(thread_serial);
  U4(trace);
}

void Writer::ClassDump(const ClassDumpRecord& c) {
  if (c.statics.size() > UINT16_MAX || c.fields.size() > UINT16_MAX) {
    throw std::length_error("hprof: more than 65535 fields in a class");
  }
  uint64_t n = 1 + kIdSize + 4 + 6 * kIdSize + 4 + 2 + 2 + 2;
  for (const StaticField& s : c.statics) n += kIdSize + 1 + TypeSize(s.type);
  n += c.fields.size() * (kIdSize + 1);
  Sub(n);
  U1(kClassDump);
  IdV(c.id);
  U4(c.trace);
  IdV(c.super);
  IdV(c.loader);
  IdV(0);  // signers
  IdV(0);  // protection domain
  IdV(0);  // reserved
  IdV(0);  // reserved
  U4(c.instance_size);
  U2(0);  // constant pool
  U2(static_cast<uint16_t>(c.statics.size()));
  for (const StaticField& s : c.statics) {
    IdV(s.name);
    U1(static_cast<uint8_t>(s.type));
    const uint32_t size = TypeSize(s.type);
    for (int b = static_cast<int>(size) - 1; b >= 0; --b) U1(static_cast<uint8_t>(s.value >> (8 * b)));
  }
  U2(static_cast<uint16_t>(c.fields.size()));
  for (const FieldDecl& f : c.fields) {
    IdV(f.name);
    U1(static_cast<uint8_t>(f.type));
  }
}

namespace {
// Big-endian stores into a reserved stretch of the buffer: the per-object
// sub-records take one bounds check for their whole header.
uint8_t* Put4(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
  return p + 4;
}
uint8_t* Put8(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
  return p + 8;
}
}  // namespace

uint8_t* Writer::Reserve(size_t n) {
  Need(n);
  uint8_t* p = buf_.data() + pos_;
  pos_ += n;
  return p;
}

void Writer::Instance(Id id, uint32_t trace, Id class_id, std::span<const uint8_t> data) {
  if (data.size() > kMaxRecord) throw std::length_error("hprof: sub-record longer than 4 GiB");
  uint8_t* p = InstanceData(id, trace, class_id, static_cast<uint32_t>(data.size()));
  if (!data.empty()) std::memcpy(p, data.data(), data.size());
}

uint8_t* Writer::InstanceData(Id id, uint32_t trace, Id class_id, uint32_t size) {
  Sub(1 + 2 * kIdSize + 8 + uint64_t{size});
  uint8_t* p = Reserve(1 + 2 * kIdSize + 8 + size_t{size});
  *p++ = kInstanceDump;
  p = Put4(Put8(p, id), trace);
  return Put4(Put8(p, class_id), size);
}

void Writer::ObjectArray(Id id, uint32_t trace, Id array_class, std::span<const Id> elements) {
  if (elements.size() > UINT32_MAX) throw std::length_error("hprof: array longer than 2^32");
  BeginObjectArray(id, trace, array_class, static_cast<uint32_t>(elements.size()));
  Ids(elements);
}

void Writer::BeginObjectArray(Id id, uint32_t trace, Id array_class, uint32_t length) {
  const uint64_t body = uint64_t{kIdSize} * length;
  Sub(1 + 2 * kIdSize + 8 + body);
  uint8_t* p = Reserve(1 + 2 * kIdSize + 8);
  *p++ = kObjectArrayDump;
  Put8(Put4(Put4(Put8(p, id), trace), length), array_class);
  pending_ = body;
}

void Writer::BeginPrimitiveArray(Id id, uint32_t trace, Type type, uint32_t length) {
  if (type == Type::kObject) throw std::invalid_argument("hprof: primitive array of objects");
  const uint64_t body = uint64_t{TypeSize(type)} * length;
  Sub(1 + kIdSize + 9 + body);
  uint8_t* p = Reserve(1 + kIdSize + 9);
  *p++ = kPrimitiveArrayDump;
  *Put4(Put4(Put8(p, id), trace), length) = static_cast<uint8_t>(type);
  pending_ = body;
}

void Writer::Ids(std::span<const Id> ids) {
  if (uint64_t{kIdSize} * ids.size() > pending_) throw std::logic_error("hprof: more elements than announced");
  pending_ -= uint64_t{kIdSize} * ids.size();
  while (!ids.empty()) {
    Need(kIdSize);
    const size_t n = std::min(ids.size(), (buf_.size() - pos_) / kIdSize);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t be = __builtin_bswap64(ids[i]);
      std::memcpy(buf_.data() + pos_ + i * kIdSize, &be, kIdSize);
    }
    pos_ += n * kIdSize;
    ids = ids.subspan(n);
  }
}

void Writer::Raw(std::span<const uint8_t> bytes) {
  if (bytes.size() > pending_) throw std::logic_error("hprof: more elements than announced");
  pending_ -= bytes.size();
  Bytes(bytes.data(), bytes.size());
}

void Writer::HeapDumpEnd() {
  if (state_ == State::kEnded || fragment_) throw std::logic_error("hprof: HEAP DUMP END twice, or in a fragment");
  if (pending_ != 0) throw std::logic_error("hprof: HEAP DUMP END inside an unfinished array");
  if (segment_open_) CloseSegment();
  U1(kTagHeapDumpEnd);
  U4(0);
  U4(0);
  state_ = State::kEnded;
  Flush();
}

}  // namespace libdump::format::hprof
