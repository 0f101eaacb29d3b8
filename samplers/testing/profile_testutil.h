// Decodes a gzipped profile.proto far enough for tests to check what the
// profilers wrote: sample types, samples with their function names, labels.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "libdump/format/pprof_profile.h"

namespace libdump::samplers::testing {

struct DecodedSample {
  std::vector<std::string> functions;  // leaf first, "" for unsymbolized frames
  std::vector<int64_t> values;
  std::map<std::string, int64_t> num_labels;
  bool Contains(std::string_view f) const {
    for (const std::string& s : functions) {
      if (s.find(f) != std::string::npos) return true;
    }
    return false;
  }
};

struct DecodedProfile {
  std::vector<std::string> sample_types;
  std::string period_type;
  int64_t period = 0;
  std::string default_sample_type;
  std::vector<DecodedSample> samples;
  std::vector<std::string> mapping_files;
  std::vector<std::string> build_ids;
  int Index(std::string_view type) const {
    for (size_t i = 0; i < sample_types.size(); ++i) {
      if (sample_types[i] == type) return static_cast<int>(i);
    }
    throw std::runtime_error("no such sample type");
  }
  // Sum of a sample type over samples whose stack mentions f ("" = all).
  int64_t Total(std::string_view type, std::string_view f = "") const {
    const int i = Index(type);
    int64_t t = 0;
    for (const DecodedSample& s : samples) {
      if (f.empty() || s.Contains(f)) t += s.values[i];
    }
    return t;
  }
};

namespace detail {
inline uint64_t Varint(std::string_view& s) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (s.empty()) throw std::runtime_error("truncated varint");
    const uint8_t b = static_cast<uint8_t>(s[0]);
    s.remove_prefix(1);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("bad varint");
}
// Calls f(field, varint, bytes) for each field of a message.
template <class F>
void Fields(std::string_view s, F f) {
  while (!s.empty()) {
    const uint64_t key = Varint(s);
    if ((key & 7) == 0) {
      f(static_cast<int>(key >> 3), Varint(s), std::string_view());
    } else if ((key & 7) == 2) {
      const uint64_t n = Varint(s);
      if (n > s.size()) throw std::runtime_error("truncated field");
      f(static_cast<int>(key >> 3), 0, s.substr(0, n));
      s.remove_prefix(n);
    } else {
      throw std::runtime_error("wire type");
    }
  }
}
inline std::vector<uint64_t> Packed(std::string_view s, uint64_t v) {
  std::vector<uint64_t> out;
  if (s.empty()) {
    out.push_back(v);  // unpacked single value
  } else {
    while (!s.empty()) out.push_back(Varint(s));
  }
  return out;
}
}  // namespace detail

inline DecodedProfile Decode(std::string_view gz) {
  using namespace detail;
  const std::string raw = pprof::Gunzip(gz);
  if (raw.empty()) throw std::runtime_error("not gzip");
  std::vector<std::string> strings;
  std::vector<std::pair<uint64_t, uint64_t>> types;
  std::pair<uint64_t, uint64_t> period_type{};
  uint64_t default_type = 0;
  std::map<uint64_t, uint64_t> function_name;
  std::map<uint64_t, std::vector<uint64_t>> location_functions;
  struct RawSample {
    std::vector<uint64_t> locs;
    std::vector<uint64_t> values;
    std::vector<std::pair<uint64_t, int64_t>> labels;
  };
  std::vector<RawSample> raw_samples;
  std::vector<std::pair<uint64_t, uint64_t>> mappings;
  DecodedProfile p;
  Fields(raw, [&](int field, uint64_t v, std::string_view b) {
    switch (field) {
      case 1:
      case 11: {
        std::pair<uint64_t, uint64_t> t{};
        Fields(b, [&](int f, uint64_t x, std::string_view) { (f == 1 ? t.first : t.second) = x; });
        (field == 1 ? types.push_back(t) : void(period_type = t));
        break;
      }
      case 2: {
        RawSample s;
        Fields(b, [&](int f, uint64_t x, std::string_view y) {
          if (f == 1) for (uint64_t l : Packed(y, x)) s.locs.push_back(l);
          if (f == 2) for (uint64_t l : Packed(y, x)) s.values.push_back(l);
          if (f == 3) {
            uint64_t key = 0;
            int64_t num = 0;
            Fields(y, [&](int g, uint64_t z, std::string_view) {
              if (g == 1) key = z;
              if (g == 3) num = static_cast<int64_t>(z);
            });
            s.labels.emplace_back(key, num);
          }
        });
        raw_samples.push_back(std::move(s));
        break;
      }
      case 3: {
        std::pair<uint64_t, uint64_t> m{};
        Fields(b, [&](int f, uint64_t x, std::string_view) {
          if (f == 5) m.first = x;
          if (f == 6) m.second = x;
        });
        mappings.push_back(m);
        break;
      }
      case 4: {
        uint64_t id = 0;
        std::vector<uint64_t> fns;
        Fields(b, [&](int f, uint64_t x, std::string_view y) {
          if (f == 1) id = x;
          if (f == 4) Fields(y, [&](int g, uint64_t z, std::string_view) { if (g == 1) fns.push_back(z); });
        });
        location_functions[id] = fns;
        break;
      }
      case 5: {
        uint64_t id = 0, name = 0;
        Fields(b, [&](int f, uint64_t x, std::string_view) {
          if (f == 1) id = x;
          if (f == 2) name = x;
        });
        function_name[id] = name;
        break;
      }
      case 6: strings.emplace_back(b); break;
      case 12: p.period = static_cast<int64_t>(v); break;
      case 14: default_type = v; break;
      default: break;
    }
  });
  auto str = [&](uint64_t i) -> std::string {
    if (i >= strings.size()) throw std::runtime_error("string index out of range");
    return strings[i];
  };
  for (auto [t, u] : types) p.sample_types.push_back(str(t));
  p.period_type = str(period_type.first);
  p.default_sample_type = str(default_type);
  for (auto [f, b] : mappings) {
    p.mapping_files.push_back(str(f));
    p.build_ids.push_back(str(b));
  }
  for (const RawSample& r : raw_samples) {
    DecodedSample s;
    for (uint64_t l : r.locs) {
      auto it = location_functions.find(l);
      if (it == location_functions.end()) throw std::runtime_error("unknown location");
      if (it->second.empty()) s.functions.emplace_back();
      for (uint64_t f : it->second) s.functions.push_back(str(function_name.at(f)));
    }
    for (uint64_t v : r.values) s.values.push_back(static_cast<int64_t>(v));
    for (auto [k, n] : r.labels) s.num_labels[str(k)] = n;
    if (s.values.size() != p.sample_types.size()) throw std::runtime_error("value count");
    p.samples.push_back(std::move(s));
  }
  return p;
}

// A temporary file for a profiler to write into.
class TempFile {
 public:
  TempFile() {
    char path[] = "/tmp/libdump_prof_XXXXXX";
    fd_ = mkstemp(path);
    if (fd_ < 0) throw std::runtime_error("mkstemp");
    path_ = path;
  }
  ~TempFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  std::string Contents() const {
    std::string s(static_cast<size_t>(lseek(fd_, 0, SEEK_END)), '\0');
    if (pread(fd_, s.data(), s.size(), 0) != static_cast<ssize_t>(s.size())) throw std::runtime_error("pread");
    return s;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace libdump::samplers::testing
