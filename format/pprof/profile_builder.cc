#include "libdump/format/pprof_profile.h"

#include <errno.h>
#include <unistd.h>
#include <zlib.h>

#include <stdexcept>
#include <tuple>

#include "libdump/format/pprof_protobuf.h"

namespace libdump::pprof {

namespace {

// profile.proto field numbers.
namespace profile {
constexpr int kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
              kStringTable = 6, kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12,
              kComment = 13, kDefaultSampleType = 14;
}
namespace value_type { constexpr int kType = 1, kUnit = 2; }
namespace sample { constexpr int kLocationId = 1, kValue = 2, kLabel = 3; }
namespace label { constexpr int kKey = 1, kStr = 2, kNum = 3, kNumUnit = 4; }
namespace mapping {
constexpr int kId = 1, kStart = 2, kLimit = 3, kOffset = 4, kFilename = 5, kBuildId = 6,
              kHasFunctions = 7, kHasFilenames = 8, kHasLineNumbers = 9;
}
namespace location { constexpr int kId = 1, kMappingId = 2, kAddress = 3, kLine = 4; }
namespace line { constexpr int kFunctionId = 1, kLine = 2; }
namespace function { constexpr int kId = 1, kName = 2, kSystemName = 3, kFilename = 4, kStartLine = 5; }

void EncodeValueType(ProtoEncoder& e, int field, int64_t type, int64_t unit) {
  const size_t start = e.StartMessage();
  e.Int64(value_type::kType, type);
  e.Int64(value_type::kUnit, unit);
  e.EndMessage(field, start);
}

}  // namespace

ProfileBuilder::ProfileBuilder(std::vector<ValueType> sample_types, ValueType period_type, int64_t period)
    : sample_types_(std::move(sample_types)), period_type_(std::move(period_type)), period_(period) {
  // Interned up front so the string table order does not depend on the
  // order in which the caller adds samples.
  for (const ValueType& v : sample_types_) {
    Intern(v.type);
    Intern(v.unit);
  }
  Intern(period_type_.type);
  Intern(period_type_.unit);
}

int64_t ProfileBuilder::Intern(std::string_view s) {
  auto [it, inserted] = string_index_.try_emplace(std::string(s), static_cast<int64_t>(strings_.size()));
  if (inserted) strings_.emplace_back(s);
  return it->second;
}

uint64_t ProfileBuilder::AddMapping(const Mapping& m) {
  mappings_.push_back({m, Intern(m.file), Intern(m.build_id)});
  return mappings_.size();
}

uint64_t ProfileBuilder::AddFunction(std::string_view name, std::string_view system_name,
                                     std::string_view filename, int64_t start_line) {
  std::string key;
  key.reserve(name.size() + system_name.size() + filename.size() + 2);
  key.append(name).push_back('\0');
  key.append(system_name).push_back('\0');
  key.append(filename);
  auto it = function_index_.find(key);
  if (it != function_index_.end()) return it->second;
  functions_.push_back({Intern(name), Intern(system_name), Intern(filename), start_line});
  const uint64_t id = functions_.size();
  function_index_.emplace(std::move(key), id);
  return id;
}

uint64_t ProfileBuilder::AddLocation(uint64_t mapping_id, uint64_t address, std::span<const Line> lines) {
  if (mapping_id > mappings_.size()) throw std::invalid_argument("pprof: unknown mapping id");
  for (const Line& l : lines) {
    if (l.function_id == 0 || l.function_id > functions_.size()) throw std::invalid_argument("pprof: unknown function id");
  }
  auto it = location_index_.find(address);
  if (it != location_index_.end()) return it->second;
  locations_.push_back({mapping_id, address, {lines.begin(), lines.end()}});
  const uint64_t id = locations_.size();
  location_index_.emplace(address, id);
  return id;
}

uint64_t ProfileBuilder::FindLocation(uint64_t address) const {
  auto it = location_index_.find(address);
  return it == location_index_.end() ? 0 : it->second;
}

void ProfileBuilder::AddSample(std::span<const uint64_t> location_ids, std::span<const int64_t> values,
                               std::span<const Label> labels) {
  // pprof rejects a sample whose value count differs from the sample types'.
  if (values.size() != sample_types_.size()) throw std::invalid_argument("pprof: wrong number of sample values");
  for (uint64_t id : location_ids) {
    if (id == 0 || id > locations_.size()) throw std::invalid_argument("pprof: unknown location id");
  }
  SampleRec s{{location_ids.begin(), location_ids.end()}, {values.begin(), values.end()}, {}, {}};
  for (const Label& l : labels) {
    if (l.str.empty()) {
      s.num_labels.emplace_back(Intern(l.key), l.num, Intern(l.num_unit));
    } else {
      s.str_labels.emplace_back(Intern(l.key), Intern(l.str));
    }
  }
  samples_.push_back(std::move(s));
}

std::string ProfileBuilder::Encode() const {
  ProtoEncoder e;
  for (const ValueType& v : sample_types_) {
    EncodeValueType(e, profile::kSampleType, string_index_.at(v.type), string_index_.at(v.unit));
  }
  for (const SampleRec& s : samples_) {
    const size_t start = e.StartMessage();
    e.PackedUint64(sample::kLocationId, s.locations);
    e.PackedInt64(sample::kValue, s.values);
    for (auto [key, str] : s.str_labels) {
      const size_t l = e.StartMessage();
      e.Int64(label::kKey, key);
      e.Int64(label::kStr, str);
      e.EndMessage(sample::kLabel, l);
    }
    for (auto [key, num, unit] : s.num_labels) {
      const size_t l = e.StartMessage();
      e.Int64(label::kKey, key);
      e.Int64(label::kNum, num);
      e.Int64(label::kNumUnit, unit);
      e.EndMessage(sample::kLabel, l);
    }
    e.EndMessage(profile::kSample, start);
  }
  for (size_t i = 0; i < mappings_.size(); ++i) {
    const MappingRec& m = mappings_[i];
    const size_t start = e.StartMessage();
    e.Uint64(mapping::kId, i + 1);
    e.Uint64(mapping::kStart, m.m.start);
    e.Uint64(mapping::kLimit, m.m.limit);
    e.Uint64(mapping::kOffset, m.m.offset);
    e.Int64(mapping::kFilename, m.file);
    e.Int64(mapping::kBuildId, m.build_id);
    e.Bool(mapping::kHasFunctions, m.m.has_functions);
    e.Bool(mapping::kHasFilenames, m.m.has_filenames);
    e.Bool(mapping::kHasLineNumbers, m.m.has_line_numbers);
    e.EndMessage(profile::kMapping, start);
  }
  for (size_t i = 0; i < locations_.size(); ++i) {
    const LocationRec& l = locations_[i];
    const size_t start = e.StartMessage();
    e.Uint64(location::kId, i + 1);
    e.Uint64(location::kMappingId, l.mapping_id);
    e.Uint64(location::kAddress, l.address);
    for (const Line& ln : l.lines) {
      const size_t ls = e.StartMessage();
      e.Uint64(line::kFunctionId, ln.function_id);
      e.Int64(line::kLine, ln.line);
      e.EndMessage(location::kLine, ls);
    }
    e.EndMessage(profile::kLocation, start);
  }
  for (size_t i = 0; i < functions_.size(); ++i) {
    const FunctionRec& f = functions_[i];
    const size_t start = e.StartMessage();
    e.Uint64(function::kId, i + 1);
    e.Int64(function::kName, f.name);
    e.Int64(function::kSystemName, f.system_name);
    e.Int64(function::kFilename, f.filename);
    e.Int64(function::kStartLine, f.start_line);
    e.EndMessage(profile::kFunction, start);
  }
  // Every string, including the mandatory "" at index 0.
  for (const std::string& s : strings_) e.StringAlways(profile::kStringTable, s);
  e.Int64(profile::kTimeNanos, time_nanos_);
  e.Int64(profile::kDurationNanos, duration_nanos_);
  EncodeValueType(e, profile::kPeriodType, string_index_.at(period_type_.type), string_index_.at(period_type_.unit));
  e.Int64(profile::kPeriod, period_);
  for (int64_t c : comments_) e.Int64(profile::kComment, c);
  e.Int64(profile::kDefaultSampleType, default_sample_type_);
  return e.Take();
}

std::string ProfileBuilder::EncodeGzip() const { return Gzip(Encode()); }

bool ProfileBuilder::WriteGzip(int fd) const {
  const std::string data = EncodeGzip();
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t w = write(fd, data.data() + off, data.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

std::string Gzip(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16 selects the gzip wrapper instead of zlib's.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("pprof: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("pprof: deflate failed");
  return out;
}

std::string Gunzip(std::string_view data) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return {};
  std::string out;
  char buf[1 << 14];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return {};
    }
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc != Z_STREAM_END);
  const bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  return trailing ? std::string() : out;
}

}  // namespace libdump::pprof
