// A writer of Go runtimes' heap dumps in each dialect, go1.3 to go1.7, for
// tests and benchmarks: no Go that installs here writes go1.3 to go1.6, so
// their decoding is checked against dumps this encoder builds. Written from
// the layouts docs/GODUMP.md gives (Go 1.3's and 1.4's runtime/heapdump.c,
// the Go wiki's heapdump13, heapdump14 and heapdump15 pages, Go 1.19's
// heapdump.go), not from any Go code. Fields take the model's kinds
// (record.h) and are written as the dialect numbers them.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/format/record.h"
#include "libdump/format/uvarint.h"

namespace libdump::format::testing {

class GoEncoder {
 public:
  explicit GoEncoder(Dialect d) : d_(d) {
    out_ = d == Dialect::kGo13   ? "go1.3 heap dump\n"
           : d == Dialect::kGo14 ? "go1.4 heap dump\n"
           : d == Dialect::kGo15 ? "go1.5 heap dump\n"
           : d == Dialect::kGo16 ? "go1.6 heap dump\n"
                                 : "go1.7 heap dump\n";
  }
  const std::string& bytes() const { return out_; }
  bool go13() const { return d_ == Dialect::kGo13; }

  // Little-endian words.
  static std::string Words(std::initializer_list<uint64_t> words) {
    std::string s;
    for (uint64_t w : words) s += std::string(reinterpret_cast<const char*>(&w), 8);
    return s;
  }

  // go1.3: bigendian, ptrsize, hchansize, arena, thechar, GOEXPERIMENT, ncpu;
  // go1.4: the same without hchansize; go1.5+: GOARCH as a string.
  void Params(uint64_t arena_start, uint64_t arena_end, uint64_t hchan_size = 88) {
    U(6), U(0), U(8);
    if (go13()) U(hchan_size);
    U(arena_start), U(arena_end);
    if (d_ == Dialect::kGo13 || d_ == Dialect::kGo14) {
      U('6');
    } else {
      S("amd64");
    }
    S(d_ == Dialect::kGo17 ? "go1.19.8" : "");
    U(2);
  }
  // go1.3 types end with their pointer fields; later ones do not have any.
  void Type(uint64_t addr, uint64_t size, const std::string& name, bool eface_ptr,
            const std::vector<Field>& fields = {}) {
    U(3), U(addr), U(size), S(name), U(eface_ptr);
    if (go13()) FieldList(fields);
  }
  // go1.3: whether the data word is a pointer; later: a type's address.
  void Itab(uint64_t addr, uint64_t type, bool ptr) {
    U(8), U(addr);
    if (go13()) {
      U(ptr);
    } else {
      U(type);
    }
  }
  // go1.3: type and kind before the contents; later: the pointer fields after.
  void Object(uint64_t addr, const std::string& contents, const std::vector<Field>& fields,
              uint64_t type13 = 0, uint64_t kind13 = 0) {
    U(1), U(addr);
    if (go13()) U(type13), U(kind13);
    S(contents);
    if (!go13()) FieldList(fields);
  }
  void OtherRoot(const std::string& what, uint64_t ptr) { U(2), S(what), U(ptr); }
  void Goroutine(uint64_t addr, uint64_t sp, uint64_t goid, uint64_t status, const std::string& reason) {
    U(4), U(addr), U(sp), U(goid), U(0x401000), U(status), U(0), U(0), U(0), S(reason);
    U(0), U(0x3000), U(0), U(0);  // ctxt, m, defer, panic
  }
  void Frame(uint64_t sp, uint64_t depth, uint64_t child_sp, const std::string& contents, uint64_t entry,
             const std::string& name, const std::vector<Field>& fields) {
    U(5), U(sp), U(depth), U(child_sp), S(contents), U(entry), U(entry + 0x10), U(entry + 0x10), S(name);
    FieldList(fields);
  }
  void Segment(uint64_t tag, uint64_t addr, const std::string& contents, const std::vector<Field>& fields) {
    U(tag), U(addr), S(contents);
    FieldList(fields);
  }
  void Finalizer(uint64_t tag, uint64_t obj, uint64_t fint, uint64_t ot) {
    U(tag), U(obj), U(0x4a0000), U(0x404000), U(fint), U(ot);
  }
  void OSThread() { U(9), U(0x3000), U(1), U(4242); }
  void Defer() { U(14), U(0x5000), U(0x2000), U(0x8010), U(0x403010), U(0x4a0010), U(0x405000), U(0); }
  void Panic() { U(15), U(0x5100), U(0x2000), U(0x510), U(0x1020), U(0), U(0); }
  // 24 words, PauseNs[256], NumGC: the same in every dialect.
  void MemStats() {
    U(10);
    for (int i = 0; i < 24; ++i) U(100 + i);
    for (int i = 0; i < 256; ++i) U(i == 0 ? 5000 : 0);
    U(3);
  }
  void MemProf() { U(16), U(0x9), U(24), U(1), S("main.main"), S("main.go"), U(10), U(4), U(1); }
  void AllocSample(uint64_t obj) { U(17), U(obj), U(0x9); }
  void Eof() { U(0); }

 private:
  void U(uint64_t v) {
    uint8_t b[kMaxUvarintLen];
    out_.append(reinterpret_cast<const char*>(b), PutUvarint(b, v));
  }
  void S(const std::string& s) { U(s.size()), out_ += s; }
  // go1.3 numbers the model's kinds from 1 (ptr, string, slice, iface,
  // eface); later dialects have ptr 1, iface 2, eface 3 only.
  void FieldList(const std::vector<Field>& fields) {
    for (const Field& f : fields) {
      U(go13() ? f.kind + 1 : f.kind == kFieldIface ? 2 : f.kind == kFieldEface ? 3 : 1);
      U(f.offset);
    }
    U(0);
  }

  Dialect d_;
  std::string out_;
};

// Every record of a dump in memory, through Reader; its dialect and the
// objects' payloads when asked.
inline std::vector<Record> ReadAll(const std::string& bytes, Dialect* dialect = nullptr,
                                   std::vector<std::string>* payloads = nullptr) {
  std::istringstream in(bytes);
  Reader reader(in);
  if (dialect != nullptr) *dialect = reader.dialect();
  std::vector<Record> out;
  Record r;
  while (reader.Next(r)) {
    if (r.kind == Kind::kObject && payloads != nullptr) {
      const auto p = reader.Payload();
      payloads->emplace_back(reinterpret_cast<const char*>(p.data()), p.size());
    }
    out.push_back(r);
  }
  return out;
}

// The FormatError's message (and offset) reading the dump gives, or "".
inline std::string ParseError(const std::string& bytes, uint64_t* offset = nullptr) {
  try {
    ReadAll(bytes);
  } catch (const FormatError& e) {
    if (offset != nullptr) *offset = e.offset();
    return e.what();
  }
  return "";
}

}  // namespace libdump::format::testing
