// Fuzz entry point for the hprof reader: any input either reads or raises a
// FormatError; nothing crashes, hangs or allocates beyond the limits. Built as
// a libFuzzer target with clang (-DLIBDUMP_FUZZ=ON) and driven with
// deterministic mutations by hprof_reader_fuzz_test.cc in every build.
#include <cstddef>
#include <cstdint>

#include "libdump/format/hprof_reader.h"

namespace {

// Touches everything it is handed, so ASan sees any span that overruns.
class Touch final : public libdump::format::hprof::HprofVisitor {
 public:
  void Utf8(uint64_t, std::string_view s) override { Sum(s.data(), s.size()); }
  void Instance(uint64_t, uint64_t, uint32_t, uint64_t, std::span<const uint8_t> f) override {
    Sum(f.data(), f.size());
  }
  void ObjArrayElements(std::span<const uint64_t> ids) override {
    for (uint64_t id : ids) sum_ += id;
  }
  void PrimArrayBytes(std::span<const uint8_t> b) override { Sum(b.data(), b.size()); }
  void ClassDump(uint64_t, const libdump::format::hprof::HprofClass& c) override {
    for (const auto& s : c.statics) sum_ += s.value;
    for (const auto& f : c.fields) sum_ += f.name;
  }
  uint64_t sum_ = 0;

 private:
  void Sum(const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) sum_ += static_cast<const uint8_t*>(p)[i];
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    libdump::format::hprof::HprofReader reader({data, size}, {.buffer_size = 256, .max_record = 1 << 16});
    Touch t;
    reader.Read(t);
  } catch (const libdump::format::FormatError&) {
  }
  return 0;
}
