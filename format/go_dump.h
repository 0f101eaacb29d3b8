// The decoder of the heap dumps Go runtimes write (runtime/debug.WriteHeapDump:
// go1.3 and go1.4 headers from Go 1.3 and 1.4, go1.5 and go1.6 from theirs,
// "go1.7 heap dump\n" from Go 1.7 to today), mapped onto the record model of
// record.h so that readdump and the other consumers read them as they read
// libdump dumps. docs/GODUMP.md gives each dialect's record layouts and how
// they map. Internal to libdump::format: Reader selects it from the header.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "input.h"
#include "libdump/format/reader.h"
#include "libdump/format/record.h"
#include "libdump/format/uvarint.h"

namespace libdump::format {

// Go's record tags (runtime/heapdump.go, unchanged since Go 1.3).
enum GoTag : uint64_t {
  kGoEof = 0, kGoObject = 1, kGoOtherRoot = 2, kGoType = 3, kGoGoroutine = 4, kGoFrame = 5,
  kGoParams = 6, kGoFinalizer = 7, kGoItab = 8, kGoOSThread = 9, kGoMemStats = 10,
  kGoQueuedFinalizer = 11, kGoData = 12, kGoBss = 13, kGoDefer = 14, kGoPanic = 15,
  kGoMemProf = 16, kGoAllocSample = 17,
};
const char* GoTagName(uint64_t tag);

// Objects of a Go dump carry no type, only their pointer offsets: each
// distinct (size, pointer layout) becomes a synthetic type record with an id
// from here up, emitted before its first object.
inline constexpr uint64_t kGoSyntheticTypeBase = 0xfff0000000000000u;

// Whether the bytes after a "go1.3 heap dump\n" header open with the params
// record of the released Go 1.3 runtime (kind 6; bigendian 0|1, ptrsize 4|8,
// hchansize, heap start <= end, and the architecture's letter '5', '6' or
// '8') rather than a libdump record. Kind 6 is an otherroot in libdump, and
// one may come first, so the kind alone does not decide: a libdump stream
// matches only if an otherroot with an empty or one-byte description is
// followed by fields equal to all of the above.
bool LooksLikeGo13Params(std::span<const uint8_t> bytes);

class GoDecoder {
 public:
  // `in` is positioned after the header.
  GoDecoder(Input& in, Dialect dialect, uint64_t max_string);
  Dialect dialect() const { return dialect_; }

  // One record of the model; a Go record may give several (a frame and its
  // stack roots, an object and its synthetic type) or none (records the model
  // has no place for: osthread, defer, panic, memprof, allocsample).
  bool Next(Record& r);
  // The payload of the object last returned by Next().
  std::span<const uint8_t> payload() const { return {payload_.data(), payload_.size()}; }
  // Drops what is decoded but not yet returned (a held frame, its roots), so
  // that decoding can go on at another record boundary (Reader::Range). The
  // params seen so far (word size, byte order) and the synthetic types stay.
  void Resume();

 private:
  struct Root {  // a stack or data root waiting to be returned
    Kind kind;
    uint64_t addr, ptr, frame;
    uint64_t at;  // offset of the Go record it comes from
    uint64_t before;  // the word before addr (DataRootRecord::before, StackRootRecord::before)
  };

  void DecodeOne();
  void DecodeObject();
  void DecodeFrame(uint64_t at);
  void DecodeSegment();
  void FlushFrame(uint64_t caller_sp, bool caller_known);

  [[noreturn]] void Fail(uint64_t offset, const std::string& reason) const;
  // Hot: a Go object is eight or more numbers, most of them one byte (tags,
  // lengths, field kinds and offsets), decoded here without a call.
  uint64_t U(const char* field) {
    if (in_.Available() >= kMaxUvarintLen) [[likely]] {
      const uint8_t b = *in_.pos;
      if (b < 0x80) {
        ++in_.pos;
        return b;
      }
      const UvarintResult r = GetUvarint(in_.pos, kMaxUvarintLen);
      if (r.status == UvarintStatus::kOk) {
        in_.pos += r.len;
        return r.value;
      }
    }
    return USlow(field);
  }
  uint64_t USlow(const char* field);
  bool Bool(const char* field);
  uint64_t Length(const char* field, uint64_t unit);
  void Str(const char* field, std::string& out);
  void Bytes(const char* field, std::vector<uint8_t>& out);
  // The field list that ends objects, frames and segments: kind, offset pairs
  // up to fieldKindEol, each checked to hold its words inside `size` bytes
  // and, for objects and types, to follow the one before.
  void Fields(uint64_t size, std::vector<Field>& out, bool increasing = false);
  uint64_t Word(const std::vector<uint8_t>& bytes, uint64_t offset) const;
  // The roots of a frame's or segment's pointer fields, into `out`.
  void Roots(Kind kind, uint64_t base, uint64_t frame, uint64_t at, std::vector<Root>& out) const;
  // Object: a synthetic type per size and layout (kind 127 of go1.3: one per
  // size, scanned conservatively), announced before the object.
  void SyntheticType(uint64_t size, bool conservative);

  Input& in_;
  Dialect dialect_;
  uint64_t max_string_;
  uint64_t tag_ = 0;  // of the Go record being decoded, for errors
  bool done_ = false;
  uint64_t ptr_size_ = 8;
  bool big_endian_ = false;

  // What Next() returns next, in order: a flushed frame, then roots, then
  // `ready_` (a whole record decoded into rec_).
  bool frame_ready_ = false;
  FrameRecord frame_out_;
  uint64_t frame_out_offset_ = 0;
  std::vector<Root> roots_;
  size_t roots_next_ = 0;
  bool type_ready_ = false;  // synthetic type of the object in rec_
  bool type_info_ready_ = false;  // and its conservative typeinfo (go1.3)
  bool ready_ = false;
  Record rec_;

  // The last frame is held until the next record says who its caller is.
  bool frame_held_ = false;
  FrameRecord held_;
  uint64_t held_offset_ = 0;
  std::vector<Root> held_roots_;

  std::vector<uint8_t> payload_;  // object contents
  std::vector<uint8_t> scratch_;  // frame and segment contents
  std::vector<Field> fields_;
  std::string key_;
  std::unordered_map<std::string, uint64_t> layouts_;  // size+layout -> synthetic type id
  uint64_t last_size_ = 0, last_type_ = 0;  // the last object's layout and its type
  bool last_conservative_ = false;
  std::vector<Field> last_fields_;
  std::unordered_map<uint64_t, bool> type_is_ptr_;    // type addr -> eface_ptr; Go may repeat a type
  std::unordered_map<uint64_t, bool> itab_is_ptr_;    // go1.3: itab addr -> its data word is a pointer
  std::string skip_;
};

}  // namespace libdump::format
