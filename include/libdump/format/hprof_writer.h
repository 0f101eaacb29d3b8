// Writes Java HPROF heap dumps ("JAVA PROFILE 1.0.2", 8-byte ids, big-endian).
//
// The writer enforces the layout every real reader accepts: top-level records
// (UTF8, LOAD CLASS, FRAME, TRACE, START THREAD) come first, then one heap made
// of HEAP DUMP SEGMENTs, closed by HEAP DUMP END. A segment is opened by the
// first sub-record written into it, so none is empty, and is split only
// between sub-records once it would exceed `max_segment` bytes; its length is
// patched in when it closes, which is why the output must be seekable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace libdump::format::hprof {

using Id = uint64_t;
inline constexpr uint32_t kIdSize = 8;
// The writer starts every file with this TRACE, empty, like HotSpot does: the
// trace serial of objects and classes with no allocation site (jhat warns
// about every serial it cannot find). Other traces need other serials.
inline constexpr uint32_t kEmptyTrace = 1;

// HPROF basic types, as in CLASS DUMP field lists and PRIM ARRAY DUMP.
enum class Type : uint8_t {
  kObject = 2, kBoolean = 4, kChar = 5, kFloat = 6, kDouble = 7,
  kByte = 8, kShort = 9, kInt = 10, kLong = 11,
};
uint32_t TypeSize(Type t);
// "[B", "[J", ...: the class name readers expect for primitive arrays of t.
const char* PrimitiveArrayClassName(Type t);

// Top-level record tags.
enum Tag : uint8_t {
  kTagUtf8 = 0x01, kTagLoadClass = 0x02, kTagFrame = 0x04, kTagTrace = 0x05,
  kTagStartThread = 0x0A, kTagHeapDumpSegment = 0x1C, kTagHeapDumpEnd = 0x2C,
};
// Heap dump sub-record tags.
enum SubTag : uint8_t {
  kRootUnknown = 0xFF, kRootJniGlobal = 0x01, kRootJavaFrame = 0x03, kRootThreadObject = 0x08,
  kClassDump = 0x20, kInstanceDump = 0x21, kObjectArrayDump = 0x22, kPrimitiveArrayDump = 0x23,
};

// Where the bytes go. WriteAt rewrites bytes already written (segment lengths).
// An output may go on reading `data` after Write returns, until its next call
// (a background writer): callers keep it unchanged until then, or Sync().
class Output {
 public:
  virtual ~Output() = default;
  virtual void Write(const uint8_t* data, size_t n) = 0;
  virtual void WriteAt(uint64_t offset, const uint8_t* data, size_t n) = 0;
  // Returns once every byte handed over is written; throws what writing threw.
  virtual void Sync() {}
};

// A file descriptor the caller keeps open; throws std::system_error on failure.
class FdOutput final : public Output {
 public:
  explicit FdOutput(int fd) : fd_(fd) {}
  void Write(const uint8_t* data, size_t n) override;
  void WriteAt(uint64_t offset, const uint8_t* data, size_t n) override;

 private:
  int fd_;
};

// In memory (tests).
class StringOutput final : public Output {
 public:
  void Write(const uint8_t* data, size_t n) override { data_.append(reinterpret_cast<const char*>(data), n); }
  void WriteAt(uint64_t offset, const uint8_t* data, size_t n) override;
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

struct FieldDecl {
  Id name = 0;  // UTF8 id
  Type type = Type::kInt;
};

struct StaticField {
  Id name = 0;
  Type type = Type::kInt;
  uint64_t value = 0;  // low TypeSize(type) bytes are written
};

struct ClassDumpRecord {
  Id id = 0;
  uint32_t trace = 0;
  Id super = 0;
  Id loader = 0;
  uint32_t instance_size = 0;
  std::vector<StaticField> statics;
  std::vector<FieldDecl> fields;  // this class's own instance fields, in data order
};

struct WriterOptions {
  uint64_t max_segment = uint64_t{1} << 30;  // bytes of sub-records per segment
  uint64_t timestamp_ms = 0;
  size_t buffer_size = size_t{1} << 20;
};

class Writer {
 public:
  // Writes the file header and the kEmptyTrace TRACE.
  Writer(Output& out, WriterOptions options = {});
  // A fragment of a heap: sub-records only, kept in memory (no file header,
  // no segments) for the Writer of the file to Append() in order, so that
  // threads can encode the parts of one heap side by side. Its buffer grows
  // to hold everything written into it.
  struct Fragment {};
  Writer(Fragment, size_t buffer_size);
  // Waits until the output no longer reads the buffers (a failed or abandoned
  // file: errors are dropped; HeapDumpEnd() and Flush() report them).
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // --- Top-level records: only before the first heap sub-record. ---------
  void Utf8(Id id, std::string_view text);
  void LoadClass(uint32_t class_serial, Id class_id, uint32_t trace, Id name);
  // line: > 0 a line, -1 unknown, -2 compiled, -3 native.
  void Frame(Id frame, Id method, Id signature, Id source_file, uint32_t class_serial, int32_t line);
  void Trace(uint32_t serial, uint32_t thread_serial, std::span<const Id> frames);
  void StartThread(uint32_t thread_serial, Id thread, uint32_t trace, Id name, Id group, Id parent_group);

  // --- Heap sub-records. --------------------------------------------------
  void RootUnknown(Id object);
  void RootJniGlobal(Id object, Id ref);
  void RootJavaFrame(Id object, uint32_t thread_serial, uint32_t depth);
  void RootThreadObject(Id thread, uint32_t thread_serial, uint32_t trace);
  void ClassDump(const ClassDumpRecord& c);
  // `data`: the field values, big-endian, in the order of the class's fields
  // then its superclasses'.
  void Instance(Id id, uint32_t trace, Id class_id, std::span<const uint8_t> data);
  // The same record, its `size` bytes of data to be written by the caller at
  // the returned address before any other call: no copy of them is built.
  uint8_t* InstanceData(Id id, uint32_t trace, Id class_id, uint32_t size);
  void ObjectArray(Id id, uint32_t trace, Id array_class, std::span<const Id> elements);
  // Streamed forms for large objects: Begin, then exactly the announced
  // elements through Ids()/Raw() before any other call.
  void BeginObjectArray(Id id, uint32_t trace, Id array_class, uint32_t length);
  void BeginPrimitiveArray(Id id, uint32_t trace, Type type, uint32_t length);
  void Ids(std::span<const Id> ids);
  void Raw(std::span<const uint8_t> big_endian_bytes);

  // Writes a fragment's sub-records, splitting segments between them exactly
  // as writing them here one by one would. The fragment stays as it was.
  void Append(const Writer& fragment);
  // A fragment's bytes so far; Clear() empties it for reuse.
  std::span<const uint8_t> fragment_bytes() const { return {buf_.data(), pos_}; }
  void Clear();

  // Closes the last segment and writes HEAP DUMP END; nothing may follow.
  void HeapDumpEnd();
  // Pushes the buffer to the output (also done by HeapDumpEnd).
  void Flush();

  uint64_t bytes_written() const { return flushed_ + pos_; }
  uint64_t segments() const { return segments_; }

 private:
  enum class State { kTop, kHeap, kEnded };
  void Top(Tag tag, uint64_t length);
  void Sub(uint64_t length);
  void CloseSegment();
  void Need(size_t n) { if (buf_.size() - pos_ < n) Drain(n); }
  uint8_t* Reserve(size_t n);  // n bytes at the end of the buffer, to fill now
  void Drain(size_t n);
  void U1(uint8_t v) { Need(1); buf_[pos_++] = v; }
  void U2(uint16_t v);
  void U4(uint32_t v);
  void U8(uint64_t v);
  void IdV(Id v) { U8(v); }
  void Bytes(const uint8_t* p, size_t n);

  // Whether a sub-record of `length` bytes starts a new segment (or is the
  // first): a segment's length must fit its 32-bit field.
  bool Opens(uint64_t length) const {
    return !segment_open_ || segment_bytes_ + length > options_.max_segment || segment_bytes_ + length > UINT32_MAX;
  }

  Output* out_;  // null for a fragment
  WriterOptions options_;
  bool fragment_ = false;
  std::vector<uint32_t> lengths_;  // a fragment's sub-records
  std::vector<uint8_t> buf_;
  std::vector<uint8_t> spare_;  // the buffer last handed to out_, maybe still being written
  size_t pos_ = 0;
  uint64_t flushed_ = 0;
  State state_ = State::kTop;
  bool segment_open_ = false;
  uint64_t segment_start_ = 0;  // file offset of the open segment's tag
  uint64_t segment_bytes_ = 0;  // sub-record bytes in it
  uint64_t segments_ = 0;
  uint64_t pending_ = 0;        // bytes still owed to a Begin*() sub-record
};

}  // namespace libdump::format::hprof
