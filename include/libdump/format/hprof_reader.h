// Streaming reader of Java HPROF heap dumps ("JAVA PROFILE 1.0.1" and
// "1.0.2", 4- or 8-byte ids, one HEAP DUMP or HEAP DUMP SEGMENTs).
//
// Read() walks the file once and hands every record to a visitor. Memory is
// the input buffer plus the largest instance's field bytes: array elements
// arrive in chunks, so no length field sizes an allocation, and in a regular
// file every length is checked against the bytes left before anything is
// read. Errors are libdump::format::FormatError, "OFFSET: CONTEXT: reason", as
// the dump reader's, OFFSET being where the offending record or field starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "libdump/format/reader.h"

namespace libdump::format::hprof {

// Sub-record tags of the heap (those the writer lacks: hprof_writer.h has the rest).
enum ReaderSubTag : uint8_t {
  kSubRootUnknown = 0xFF, kSubRootJniGlobal = 0x01, kSubRootJniLocal = 0x02,
  kSubRootJavaFrame = 0x03, kSubRootNativeStack = 0x04, kSubRootStickyClass = 0x05,
  kSubRootThreadBlock = 0x06, kSubRootMonitorUsed = 0x07, kSubRootThreadObject = 0x08,
  kSubClassDump = 0x20, kSubInstanceDump = 0x21, kSubObjArrayDump = 0x22, kSubPrimArrayDump = 0x23,
};

// Root sub-record names as readers show them ("JNI global", "Java frame", ...).
const char* RootKindName(uint8_t sub_tag);
// Size in bytes of a basic type (2 object, 4 boolean .. 11 long); 0 for an
// unknown type. Objects take id_size.
uint32_t BasicTypeSize(uint8_t type, uint32_t id_size);

struct HprofRoot {
  uint8_t kind = kSubRootUnknown;  // the sub-record tag
  uint64_t object = 0;
  uint64_t extra_id = 0;      // JNI global: the reference's id
  uint32_t thread_serial = 0; // JNI local, Java frame, native stack, thread block, thread object
  uint32_t depth = 0;         // JNI local, Java frame: frame depth; thread object: trace serial
  bool has_thread = false;
};

struct HprofFieldDecl {
  uint64_t name = 0;  // UTF8 id
  uint8_t type = 0;
};

struct HprofStatic {
  uint64_t name = 0;
  uint8_t type = 0;
  uint64_t value = 0;  // the value's bytes, big-endian, in the low bits
};

// A CLASS DUMP; the spans are valid during the call only.
struct HprofClass {
  uint64_t id = 0;
  uint32_t trace = 0;
  uint64_t super = 0;
  uint64_t loader = 0;
  uint32_t instance_size = 0;
  std::span<const HprofStatic> statics;
  std::span<const HprofFieldDecl> fields;  // this class's own, in data order
};

// Receives the records in file order. `offset` is where each record (or heap
// sub-record) starts; ReadSubRecordAt() reads a sub-record again from there.
class HprofVisitor {
 public:
  virtual ~HprofVisitor() = default;
  virtual void Header(std::string_view /*format*/, uint32_t /*id_size*/, uint64_t /*timestamp_ms*/) {}
  virtual void Utf8(uint64_t /*id*/, std::string_view /*text*/) {}
  virtual void LoadClass(uint32_t /*serial*/, uint64_t /*class_id*/, uint32_t /*trace*/, uint64_t /*name*/) {}
  virtual void Frame(uint64_t /*id*/, uint64_t /*method*/, uint64_t /*signature*/, uint64_t /*source*/,
                     uint32_t /*class_serial*/, int32_t /*line*/) {}
  virtual void Trace(uint32_t /*serial*/, uint32_t /*thread_serial*/, std::span<const uint64_t> /*frames*/) {}
  virtual void StartThread(uint32_t /*serial*/, uint64_t /*thread*/, uint32_t /*trace*/, uint64_t /*name*/) {}
  virtual void Root(uint64_t /*offset*/, const HprofRoot&) {}
  virtual void ClassDump(uint64_t /*offset*/, const HprofClass&) {}
  // `fields`: the values of the class's fields then its superclasses', big-endian.
  virtual void Instance(uint64_t /*offset*/, uint64_t /*id*/, uint32_t /*trace*/, uint64_t /*class_id*/,
                        std::span<const uint8_t> /*fields*/) {}
  // An OBJ ARRAY DUMP: then its `length` elements through ObjArrayElements,
  // in order, in chunks.
  virtual void ObjArray(uint64_t /*offset*/, uint64_t /*id*/, uint32_t /*trace*/, uint64_t /*class_id*/,
                        uint32_t /*length*/) {}
  virtual void ObjArrayElements(std::span<const uint64_t> /*ids*/) {}
  // A PRIM ARRAY DUMP: then its bytes (big-endian elements) through
  // PrimArrayBytes, in chunks that may split an element.
  virtual void PrimArray(uint64_t /*offset*/, uint64_t /*id*/, uint32_t /*trace*/, uint8_t /*type*/,
                         uint32_t /*length*/) {}
  virtual void PrimArrayBytes(std::span<const uint8_t> /*bytes*/) {}
  virtual void HeapDumpEnd(uint64_t /*offset*/) {}
};

struct HprofReaderOptions {
  size_t buffer_size = 1 << 20;
  size_t max_record = 256 << 20;  // largest UTF8, TRACE body or instance field block, in bytes
};

class HprofReader {
 public:
  // Reads from an fd the caller keeps open; a regular file's size bounds every
  // length up front, other input is bounded as its bytes arrive.
  explicit HprofReader(int fd, HprofReaderOptions options = {});
  // Reads bytes in memory (tests, fuzzing); they must outlive the reader.
  explicit HprofReader(std::span<const uint8_t> data, HprofReaderOptions options = {});
  ~HprofReader();
  HprofReader(const HprofReader&) = delete;
  HprofReader& operator=(const HprofReader&) = delete;

  // Reads the whole file. Throws FormatError.
  void Read(HprofVisitor& v);
  // Reads the one heap sub-record at `offset` (from an earlier Read() of this
  // regular file; a new reader reads the header first). Throws FormatError.
  void ReadSubRecordAt(uint64_t offset, HprofVisitor& v);

  uint32_t id_size() const;
  // Bytes consumed so far.
  uint64_t offset() const;

 private:
  class Impl;
  Impl* impl_;
};

// Whether the first bytes of a file are an hprof header.
bool LooksLikeHprof(std::span<const uint8_t> head);

}  // namespace libdump::format::hprof
