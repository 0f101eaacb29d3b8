// Drives the hprof reader's fuzz entry point with deterministic mutations of
// a file holding every record kind, so every build (ASan included) runs it.
#include <gtest/gtest.h>

#include <random>

#include "testing/hprof_reader_testutil.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace libdump::format::hprof {
namespace {

TEST(HprofReaderFuzz, MutatedFilesNeverCrash) {
  const std::string seed = testing::SampleHprof(64);
  std::mt19937_64 rng(20261126);
  for (int iter = 0; iter < 100000; ++iter) {
    std::string s = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % s.size();
      switch (rng() % 4) {
        case 0: s[at] = static_cast<char>(rng()); break;
        case 1: s[at] = static_cast<char>(0xff); break;  // huge lengths and counts
        case 2: s.erase(at, 1 + rng() % 8); break;
        case 3: s.insert(at, std::string(1 + rng() % 8, static_cast<char>(rng()))); break;
      }
      if (s.empty()) s = seed;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
}

}  // namespace
}  // namespace libdump::format::hprof
