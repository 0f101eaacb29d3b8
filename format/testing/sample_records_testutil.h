// A dump holding every record kind at least once, as records plus payloads,
// for the format tests.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/record.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace libdump::format::testing {

struct SampleRecord {
  Record record;
  std::string payload;  // objects only
};

inline std::vector<SampleRecord> SampleRecords() {
  std::vector<SampleRecord> out;
  auto add = [&](Kind k) -> Record& {
    out.emplace_back();
    out.back().record.kind = k;
    return out.back().record;
  };
  add(Kind::kParams).params = {0, 8, 0, 0x10000, 0x90000};
  add(Kind::kMemStats).mem_stats.stats = {{"heap_inuse", 4096}, {"mallocs", 1ull << 40}};
  add(Kind::kModule).module = {0x400000, 0x401000, 0x1000, "/usr/bin/example", "0badc0de"};
  add(Kind::kType).type = {0x5000, 24, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 16}}};
  add(Kind::kTypeFields).type_fields = {
      0x5000, {{0, kFieldPtr, 8, "next"}, {8, kFieldInt, 8, "value"}, {16, kFieldPtr, 8, "peer"}}};
  add(Kind::kTypeInfo).type_info = {0x5000, kTypePolymorphic, 0x6000, 0, 0};
  add(Kind::kItab).itab = {0x6000, 1};
  add(Kind::kType).type = {0x5100, 8, std::string("bytes\0with nul", 14), true, {}};
  add(Kind::kTypeInfo).type_info = {0x5100, kTypeConservative | kTypeArray, 0, 0, 1};
  add(Kind::kGoroutine).goroutine = {0x7000, 0x7ff0, 42, 0x401234, kStatusWaiting, false, true,
                                     12345, "futex"};
  add(Kind::kThreadInfo).thread_info = {0x7000, 4242, "worker-1"};
  add(Kind::kFrame).frame = {0x7ff0, 0x8000, 0x401000, 0x401010, "leaf()"};
  add(Kind::kFrame).frame = {0x8000, 0, 0x401100, 0x401180, "main"};
  add(Kind::kStackRoot).stack_root = {0x7ff8, 0x10000, 0x7ff0};
  add(Kind::kDataRoot).data_root = {0x600000, 0x10018};
  add(Kind::kOtherRoot).other_root = {"registered: config", 0x10000};
  add(Kind::kFinalizer).finalizer = {0x10000, 0x1, 0x401300, 0, 0x5000};
  add(Kind::kAllocStack).alloc_stack = {0x10000, 24, {0x401010, 0x401180, ~0ull}};
  Record& o1 = add(Kind::kObject);
  o1.object = {0x10000, 0x5000, kObjRegular, 24};
  out.back().payload = std::string("\x18\x00\x01\x00\x00\x00\x00\x00", 8) + std::string(16, 'x');
  Record& o2 = add(Kind::kObject);
  o2.object = {0x10018, 0, kObjRegular, 0};
  Record& o3 = add(Kind::kObject);
  o3.object = {0x10020, 0x5100, kObjArray, 3000};
  std::string big(3000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  out.back().payload = big;
  add(Kind::kEof);
  return out;
}

inline void WriteSample(Writer& w, const std::vector<SampleRecord>& records) {
  w.Header();
  for (const SampleRecord& s : records) w.Write(s.record, s.payload.data());
}

// The sample dump as bytes.
inline std::string SampleDump(bool seed_only = false) {
  std::ostringstream os;
  OstreamSink sink(os);
  Writer w(sink, {.seed_only = seed_only});
  WriteSample(w, SampleRecords());
  return os.str();
}

// Objects i = 0 .. count-1 of (i * 977) % max_size bytes with a patterned
// payload, 16 bytes apart, each followed by the record between(i, address,
// size) returns, then an eof: records and payloads that straddle any small
// buffer, window or range boundary somewhere.
template <typename Between>
std::string StraddlingDump(size_t count, size_t max_size, Between between) {
  std::ostringstream os;
  OstreamSink sink(os);
  Writer w(sink);
  w.Header();
  std::string payload;
  uint64_t addr = 0x100000;
  for (size_t i = 0; i < count; ++i) {
    const size_t size = (i * 977) % max_size;
    payload.resize(size);
    for (size_t k = 0; k < size; ++k) payload[k] = static_cast<char>(i + k * 13);
    Record o;
    o.kind = Kind::kObject;
    o.object = {addr, 0, kObjRegular, size};
    w.Write(o, payload.data());
    w.Write(between(i, addr, size), nullptr);
    addr += size + 16;
  }
  Record eof;
  eof.kind = Kind::kEof;
  w.Write(eof, nullptr);
  w.Flush();
  return os.str();
}

}  // namespace libdump::format::testing
