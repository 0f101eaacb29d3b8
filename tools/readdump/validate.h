// readdump --validate: semantic checks of a dump the reader already accepts.
//
// Cross references may point forwards (libdump writes polymorphic types after
// the objects that use them, see docs/FORMAT.md), so validation takes two
// passes: Collect() builds indexes of objects (address, size), types, frames
// and threads; Check() then verifies every record against them, reading the
// pointer words of typed objects straight from the payload stream. Memory grows
// with the number of objects, types, threads and frames, never with payload
// bytes, and problems are reported as they are found, in record order.
//
// Checks: every pointer field of a typed object and every root is null,
// outside the heap range of the params record, or into a dumped object
// (interior pointers count); objects lie in the heap and do not overlap; every
// type an object, finalizer, typefields or typeinfo record uses is defined;
// each thread's frames chain from its top frame through dumped frames without
// loops or sharing, and every frame is on some thread's stack; stack roots
// name a dumped frame; threadinfo, finalizer and allocstack records name a
// dumped thread or object; ids are defined once. Structural errors (bad
// varints, a missing or early eof, ...) are the reader's FormatErrors.
//
// A Go runtime's dump (SetGoRuntime) differs in two ways the checks follow
// (docs/GODUMP.md): goroutine stacks live inside the heap arena but are not
// objects, so a pointer into a goroutine's dumped frames (a stack slot's own
// address, a sudog's elem) is not dangling; and Go writes finalizers' types
// without type records, so their ot is not looked up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/format/record.h"
#include "object_index.h"

namespace libdump::readdump {

struct Problem {
  uint64_t offset = 0;  // of the record the problem concerns
  format::Kind kind = format::Kind::kEof;  // of that record
  std::string message;
};
using ProblemSink = std::function<void(const Problem&)>;

class Validator {
 public:
  explicit Validator(ProblemSink sink) : sink_(std::move(sink)) {}
  // Before pass 1: the dump was written by a Go runtime.
  void SetGoRuntime(bool go) { go_ = go; }

  // Pass 1, every record in order.
  void Collect(const format::Record& r);
  void FinishCollect();
  // Pass 2, the same records in the same order; reads the payload of typed
  // objects from `reader`, which must have just returned r.
  void Check(const format::Record& r, format::Reader& reader);

  uint64_t problems() const { return problems_; }
  const ObjectIndex& objects() const { return objects_; }

 private:
  struct Type {
    uint64_t offset;
    uint64_t size;
    std::string name;
    std::vector<uint64_t> pointer_offsets;  // words that hold a pointer, increasing
    bool scannable = true;  // pointer words lie inside the type and do not overlap
  };
  struct Frame {
    uint64_t offset;
    uint64_t parent;
    uint64_t size;
    std::string name;
    size_t owner = kNoOwner;  // index into threads_
  };
  struct Thread {
    uint64_t addr;
    uint64_t offset;
    uint64_t tos;
  };
  static constexpr size_t kNoOwner = ~size_t{0};

  void Emit(uint64_t offset, format::Kind kind, std::string message);
  void EmitPendingUpTo(uint64_t offset);
  void WalkStacks();
  void FindOverlaps();
  uint64_t word_size() const { return params_ ? params_->ptr_size : 8; }
  // In the heap range but in no dumped object (nor, in a Go dump, in a
  // goroutine's dumped frames): the one kind of bad pointer.
  bool Dangling(uint64_t p) const;
  bool InStack(uint64_t p) const;

  void CheckObject(const format::Record& r, format::Reader& reader);
  void CheckPointerWords(const format::Record& r, const Type& t, format::Reader& reader);
  void CheckType(const format::Record& r);
  void CheckRoot(const format::Record& r, const std::string& what, uint64_t ptr);

  ProblemSink sink_;
  uint64_t problems_ = 0;
  std::vector<Problem> pending_;  // found after pass 1, emitted in order during pass 2
  size_t next_pending_ = 0;

  std::optional<format::ParamsRecord> params_;
  uint64_t params_offset_ = 0;
  ObjectIndex objects_;
  std::unordered_map<uint64_t, Type> types_;
  std::unordered_map<uint64_t, Frame> frames_;
  std::vector<Thread> threads_;
  std::unordered_map<uint64_t, uint64_t> thread_offsets_;  // addr -> first record
  std::unordered_set<uint64_t> itabs_;
  bool go_ = false;
  // Go dumps: each goroutine's [lowest sp, end of its outermost frame), by start.
  std::vector<std::pair<uint64_t, uint64_t>> stacks_;
};

// Throws the FormatError for a dump whose second pass differs from its first.
[[noreturn]] void ThrowChanged(uint64_t offset);

// Reader over a fresh copy of the same dump, for each pass.
using ReaderFactory = std::function<std::shared_ptr<format::Reader>()>;

// Runs both passes and returns the number of problems. `first_pass`, if set,
// also sees every record of pass 1, so a tool can summarise while validating.
// FormatError propagates.
uint64_t ValidateDump(const ReaderFactory& open, const ProblemSink& sink,
                      const std::function<void(const format::Record&, format::Reader&)>& first_pass = {});

}  // namespace libdump::readdump
