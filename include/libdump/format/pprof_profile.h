// Builds a profile.proto message (github.com/google/pprof/proto/profile.proto)
// and writes it gzip-compressed, as `go tool pprof` expects.
//
// The builder only knows the wire format: the caller supplies mappings,
// functions and locations already symbolized (see libdump::samplers).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace libdump::pprof {

struct ValueType {
  std::string type;  // "cpu", "alloc_space", ...
  std::string unit;  // "nanoseconds", "bytes", "count"
};

struct Mapping {
  uint64_t start = 0;  // memory_start
  uint64_t limit = 0;  // memory_limit (exclusive)
  uint64_t offset = 0; // file offset of `start`
  std::string file;
  std::string build_id;  // hex, as `go tool pprof` and symbol servers key on
  bool has_functions = false;
  bool has_filenames = false;
  bool has_line_numbers = false;
};

struct Line {
  uint64_t function_id = 0;
  int64_t line = 0;  // 0 when unknown
};

struct Label {
  std::string key;
  std::string str;  // either str or num
  int64_t num = 0;
  std::string num_unit;
};

class ProfileBuilder {
 public:
  ProfileBuilder(std::vector<ValueType> sample_types, ValueType period_type, int64_t period);

  void set_time_nanos(int64_t t) { time_nanos_ = t; }
  void set_duration_nanos(int64_t d) { duration_nanos_ = d; }
  // The sample type pprof shows when no -sample_index is given; must be one
  // of the sample types.
  void set_default_sample_type(std::string_view type) { default_sample_type_ = Intern(type); }
  void AddComment(std::string_view c) { comments_.push_back(Intern(c)); }

  // Ids start at 1 (0 means "none" in profile.proto).
  uint64_t AddMapping(const Mapping& m);
  // Deduplicated by (name, system_name, filename).
  uint64_t AddFunction(std::string_view name, std::string_view system_name, std::string_view filename,
                       int64_t start_line = 0);
  // Deduplicated by address: the caller may ask for the same pc repeatedly.
  // lines: innermost first (inlined frames), may be empty for a bare address.
  uint64_t AddLocation(uint64_t mapping_id, uint64_t address, std::span<const Line> lines);
  // 0 if AddLocation has not seen the address.
  uint64_t FindLocation(uint64_t address) const;

  // location_ids: leaf first. values: one per sample type.
  void AddSample(std::span<const uint64_t> location_ids, std::span<const int64_t> values,
                 std::span<const Label> labels = {});

  size_t sample_count() const { return samples_.size(); }
  size_t sample_type_count() const { return sample_types_.size(); }

  std::string Encode() const;  // uncompressed profile.proto
  std::string EncodeGzip() const;
  // Writes EncodeGzip() to fd; false with errno set on a write error.
  bool WriteGzip(int fd) const;

 private:
  int64_t Intern(std::string_view s);

  struct SampleRec {
    std::vector<uint64_t> locations;
    std::vector<int64_t> values;
    std::vector<std::pair<int64_t, int64_t>> str_labels;  // key, str
    std::vector<std::tuple<int64_t, int64_t, int64_t>> num_labels;  // key, num, unit
  };
  struct MappingRec {
    Mapping m;
    int64_t file, build_id;
  };
  struct FunctionRec {
    int64_t name, system_name, filename, start_line;
  };
  struct LocationRec {
    uint64_t mapping_id, address;
    std::vector<Line> lines;
  };

  std::vector<std::string> strings_{""};
  std::unordered_map<std::string, int64_t> string_index_{{"", 0}};
  std::vector<ValueType> sample_types_;
  ValueType period_type_;
  int64_t period_;
  int64_t time_nanos_ = 0;
  int64_t duration_nanos_ = 0;
  int64_t default_sample_type_ = 0;
  std::vector<int64_t> comments_;
  std::vector<MappingRec> mappings_;
  std::vector<FunctionRec> functions_;
  std::unordered_map<std::string, uint64_t> function_index_;
  std::vector<LocationRec> locations_;
  std::unordered_map<uint64_t, uint64_t> location_index_;
  std::vector<SampleRec> samples_;
};

// gzip (RFC 1952) of data, as `go tool pprof` detects by its magic bytes.
std::string Gzip(std::string_view data);
// Inverse of Gzip, for tests and tools; empty on malformed input.
std::string Gunzip(std::string_view data);

}  // namespace libdump::pprof
