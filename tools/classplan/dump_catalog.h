// Pass 1: everything about a dump except its object payloads — types, thread
// stacks, modules, parameters, allocation stacks, memstats, and the address
// index of every object. Memory
// grows with objects (the index) and types, never with payload bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "address_index.h"
#include "chunk_plan.h"
#include "libdump/format/reader.h"
#include "libdump/format/record.h"

namespace libdump::dumptohprof {

struct DumpType {
  format::TypeRecord type;
  bool has_fields = false;  // a typefields record names every field
  format::TypeFieldsRecord fields;
  format::TypeInfoRecord info;  // flags 0 when no typeinfo record
};

// Allocation stacks of sampled objects (allocstack records), deduplicated.
struct AllocStacks {
  std::vector<std::vector<uint64_t>> stacks;          // pcs, innermost first
  std::unordered_map<uint64_t, uint32_t> of_object;    // object address -> index in stacks
  std::unordered_map<uint64_t, std::string> names;     // pc -> name of a frame record at that pc
};

struct Thread {
  format::GoroutineRecord goroutine;
  std::string name;                  // from threadinfo, else empty
  std::vector<format::FrameRecord> frames;  // top first
};

// Objects larger than this are converted by the main thread, streamed into
// the file, rather than held whole in a thread's fragment.
inline constexpr uint64_t kMaxFragmentObject = uint64_t{256} << 10;

class DumpCatalog {
 public:
  explicit DumpCatalog(uint64_t chunk_bytes = uint64_t{1} << 20) : chunks_(chunk_bytes) {}

  // Reads the whole dump once. `progress` is called now and then with the
  // reader's offset. Throws format::FormatError.
  template <typename Progress>
  void Scan(format::Reader& reader, Progress&& progress) {
    format::Record r;
    uint64_t n = 0;
    while (reader.Next(r)) {
      if (r.kind == format::Kind::kObject && r.object.addr != 0) [[likely]] {
        AddObject(r.object);
      } else {
        Add(r);
      }
      chunks_.Add(r.offset, Serial(r));
      if ((++n & 0xFFFF) == 0) progress(reader.offset());
    }
    chunks_.Finish(reader.offset());
    progress(reader.offset());
    Finish();
  }

  void Add(const format::Record& r);
  // Nearly every record: inline.
  void AddObject(const format::ObjectRecord& o) {
    seen_object_ = true;
    if (!own_types_.empty() && o.type != 0 && IsOwnType(o.type)) [[unlikely]] {
      ++own_objects_;
      own_bytes_ += o.size;
      if (!include_own_) return own_ranges_.emplace_back(o.addr, o.size), void();
    }
    index_.Add(o.addr, o.size);
    ++objects_;
    object_bytes_ += o.size;
  }
  // Sorts the index and links frames to their threads.
  void Finish();

  const format::ParamsRecord& params() const { return params_; }
  const std::map<uint64_t, DumpType>& types() const { return types_; }
  const std::vector<Thread>& threads() const { return threads_; }
  const std::vector<format::ModuleRecord>& modules() const { return modules_; }
  const AddressIndex& index() const { return index_; }
  const AllocStacks& alloc_stacks() const { return alloc_stacks_; }
  // The last memstats record's statistics.
  const std::vector<format::MemStat>& mem_stats() const { return mem_stats_; }
  // Addresses at which more than one object starts.
  const std::unordered_set<uint64_t>& duplicates() const { return duplicates_; }
  // Where pass 2 may split the dump between threads.
  const std::vector<Chunk>& chunks() const { return chunks_.chunks(); }
  uint64_t objects() const { return objects_; }
  uint64_t object_bytes() const { return object_bytes_; }

  // libdump's own memory (docs/FORMAT.md, typeinfo flag 8, counted before
  // the first object): left out of the index, so that nothing refers to it
  // and pass 2 skips it, unless include_own is set before Scan.
  void set_include_own(bool on) { include_own_ = on; }
  bool include_own() const { return include_own_; }
  bool IsOwnType(uint64_t type) const {
    return std::find(own_types_.begin(), own_types_.end(), type) != own_types_.end();
  }
  // Whether p points into an own object that was left out.
  bool InOwnObject(uint64_t p) const;
  uint64_t own_objects() const { return own_objects_; }
  uint64_t own_bytes() const { return own_bytes_; }

 private:
  // Converting r allocates hprof ids (numbered in dump order) or needs more
  // memory than a fragment should hold: only the main thread converts it.
  static bool Serial(const format::Record& r) {
    return r.kind == format::Kind::kOtherRoot || r.kind == format::Kind::kFinalizer ||
           (r.kind == format::Kind::kObject && r.object.size > kMaxFragmentObject);
  }

  format::ParamsRecord params_;
  std::map<uint64_t, DumpType> types_;
  std::unordered_map<uint64_t, format::TypeFieldsRecord> pending_fields_;  // before their type record
  std::unordered_map<uint64_t, format::TypeInfoRecord> pending_info_;
  std::vector<Thread> threads_;
  std::unordered_map<uint64_t, std::string> thread_names_;  // goroutine addr -> name
  std::vector<format::FrameRecord> frames_;
  std::vector<format::ModuleRecord> modules_;
  AddressIndex index_;
  AllocStacks alloc_stacks_;
  std::map<std::vector<uint64_t>, uint32_t> stack_ids_;  // pcs -> index in alloc_stacks_, during pass 1
  std::vector<format::MemStat> mem_stats_;
  std::unordered_set<uint64_t> duplicates_;
  uint64_t objects_ = 0;
  uint64_t object_bytes_ = 0;
  bool include_own_ = false;
  bool seen_object_ = false;
  std::vector<uint64_t> own_types_;  // a handful: searched in line
  std::vector<std::pair<uint64_t, uint64_t>> own_ranges_;  // (addr, size) of own objects left out, sorted by Finish
  uint64_t own_objects_ = 0;
  uint64_t own_bytes_ = 0;
  ChunkPlan chunks_;
};

}  // namespace libdump::dumptohprof
