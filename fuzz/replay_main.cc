// Replays a fuzz harness without libFuzzer, so every build (ASan+UBSan
// included) runs each harness: every file named on the command line, then
// MUTATIONS deterministic mutations of each (fixed seed: a failure is
// reproduced by running the same command). A crash, a sanitizer report or a
// harness's own trap fails the test; libFuzzer's long runs (scripts/fuzz.sh)
// explore further from the same seeds.
//   replay MUTATIONS FILE...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Run(const std::string& s) { LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

// The edits that matter to uvarint and length-prefixed formats: a random
// byte, a continued varint, a cut, a run of 0xff (huge lengths).
std::string Mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0: s[at] = static_cast<char>(rng()); break;
      case 1: s[at] = static_cast<char>(0x80 | rng()); break;
      case 2: s.erase(at, 1 + rng() % 8); break;
      case 3: s.insert(at, std::string(1 + rng() % 8, static_cast<char>(0xff))); break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MUTATIONS FILE...\n", argv[0]);
    return 2;
  }
  const long mutations = std::strtol(argv[1], nullptr, 10);
  std::mt19937_64 rng(20261126);
  for (int a = 2; a < argc; ++a) {
    std::ifstream in(argv[a], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot open\n", argv[a]);
      return 1;
    }
    const std::string seed{std::istreambuf_iterator<char>(in), {}};
    Run(seed);
    for (long i = 0; i < mutations; ++i) Run(Mutate(seed, rng));
  }
  std::printf("%d inputs, %ld mutations each: no crash\n", argc - 2, mutations);
  return 0;
}
