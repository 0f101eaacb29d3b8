// The statistics of heap sampling, on the experiment of the seed document
// (Go's allocate_large_small + allocate_small) driven through the same
// countdown rule as libdump's allocator: charge each allocation's size to a
// countdown drawn from NextSampleDistance; sample when it would go negative.
//
// Theory. With exponential distances the sampling process over allocated
// bytes is Poisson, so (memorylessness) each allocation of s bytes is sampled
// independently with p = 1 - exp(-s/R). A line doing N such allocations is
// sampled K ~ Binomial(N, p) times; the profile reports K/p objects and
// K*s/p bytes, unbiased, with standard deviation
//     sigma_objects = sqrt(N (1-p) / p),  sigma_space = s * sigma_objects.
// Tests allow 4 sigma per line: a 6e-5 chance of failure per line under the
// normal approximation (Chebyshev bounds it by 1/16 for the lines where K is
// tiny); seeds are fixed, so a result is reproducible either way.
// Over M independent seeds the mean relative error has standard deviation
// sigma_rel / sqrt(M): the unbiasedness test bounds it by 4 sigma_rel/sqrt(M).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "samplers/heap/heap_bucket_table.h"
#include "libdump/profiler.h"

namespace libdump::samplers {
namespace {

struct Line {
  int line;        // the seed's heap.go line number, used as the fake pc
  uint64_t size;
  uint64_t count;  // allocations the line really makes
};

// heap.go from the seed: lines 34-42 run 100,000 times, 49-52 a million.
std::vector<Line> SeedLines(uint64_t scale_down = 1) {
  const uint64_t big = 100000 / scale_down, small = 1000000 / scale_down;
  return {{34, 512 * 1024, big}, {35, 256 * 1024, big}, {36, 1024, big}, {37, 256 * 1024, big},
          {38, 512, big},        {39, 256 * 1024, big}, {40, 256, big},  {41, 256 * 1024, big},
          {42, 16, big},         {49, 1024, small},     {50, 512, small}, {51, 256, small},
          {52, 16, small}};
}

using Distance = int64_t (*)(uint64_t* state, int64_t mean);

// Replays the seed's program: allocate_large_small, then allocate_small.
void Replay(const std::vector<Line>& lines, uint64_t seed, int64_t rate, HeapProfileTable& t,
            Distance next = NextSampleDistance) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL | 1;
  int64_t left = next(&state, rate);
  auto alloc = [&](const Line& l) {
    left -= static_cast<int64_t>(l.size);
    if (left < 0) {
      const uintptr_t pc = static_cast<uintptr_t>(l.line);
      t.RecordAlloc(nullptr, l.size, rate, &pc, 1);
      left = next(&state, rate);
    }
  };
  const size_t nbig = 9;
  for (uint64_t i = 0; i < lines[0].count; ++i) {
    for (size_t j = 0; j < nbig; ++j) alloc(lines[j]);
  }
  for (uint64_t i = 0; i < lines[nbig].count; ++i) {
    for (size_t j = nbig; j < lines.size(); ++j) alloc(lines[j]);
  }
}

std::map<int, HeapEstimate> Estimates(HeapProfileTable& t) {
  std::map<int, HeapEstimate> m;
  for (const HeapBucketSnapshot& b : t.Snapshot()) m[static_cast<int>(b.stack.at(0))] = Unbias(b);
  return m;
}

double SigmaObjects(const Line& l, int64_t rate) {
  const double p = -std::expm1(-static_cast<double>(l.size) / static_cast<double>(rate));
  return std::sqrt(static_cast<double>(l.count) * (1 - p) / p);
}

constexpr int64_t kRate = 512 * 1024;

TEST(HeapSampling, SeedExperimentEveryLineWithinTheoryBound) {
  HeapProfileTable t;
  const auto lines = SeedLines();
  Replay(lines, 42, kRate, t);
  const auto est = Estimates(t);
  for (const Line& l : lines) {
    SCOPED_TRACE(l.line);
    const double sigma = SigmaObjects(l, kRate);
    const HeapEstimate e = est.count(l.line) ? est.at(l.line) : HeapEstimate{0, 0, 0, 0};
    EXPECT_NEAR(e.alloc_objects, static_cast<double>(l.count), 4 * sigma);
    EXPECT_NEAR(e.alloc_space, static_cast<double>(l.count * l.size), 4 * sigma * static_cast<double>(l.size));
    // Nothing was freed: in-use equals allocated.
    EXPECT_EQ(e.inuse_objects, e.alloc_objects);
  }
}

TEST(HeapSampling, MeanErrorOverManySeedsTendsToZero) {
  // A tenth of the seed's loop counts keeps 200 replays within a second or
  // two; the bound scales with the same sigma.
  const auto lines = SeedLines(10);
  constexpr int kSeeds = 200;
  std::map<int, double> sum_rel;
  for (int s = 0; s < kSeeds; ++s) {
    HeapProfileTable t;
    Replay(lines, 1000 + s, kRate, t);
    const auto est = Estimates(t);
    for (const Line& l : lines) {
      const double got = est.count(l.line) ? est.at(l.line).alloc_space : 0;
      sum_rel[l.line] += got / static_cast<double>(l.count * l.size) - 1;
    }
  }
  for (const Line& l : lines) {
    SCOPED_TRACE(l.line);
    const double sigma_rel = SigmaObjects(l, kRate) / static_cast<double>(l.count);
    EXPECT_LT(std::fabs(sum_rel[l.line] / kSeeds), 4 * sigma_rel / std::sqrt(double{kSeeds}));
  }
}

// The tests above can fail: the same bound rejects estimators that are off.
TEST(HeapSampling, BoundRejectsBiasedEstimators) {
  HeapProfileTable t;
  const auto lines = SeedLines();
  Replay(lines, 42, kRate, t);
  int rejected_naive = 0;
  for (const HeapBucketSnapshot& b : t.Snapshot()) {
    const Line& l = *std::find_if(lines.begin(), lines.end(), [&](const Line& x) { return x.line == int(b.stack[0]); });
    // Pre-Go-1.? scaling: count * rate / size, right only for s << rate.
    const double naive = static_cast<double>(b.allocs) * static_cast<double>(kRate) / static_cast<double>(b.size);
    if (std::fabs(naive - static_cast<double>(l.count)) > 4 * SigmaObjects(l, kRate)) ++rejected_naive;
  }
  EXPECT_GE(rejected_naive, 5);  // every 256 KiB and 512 KiB line
}

// A countdown that is not exponential (uniform in [R/2, 3R/2), say) breaks
// the independence the unbiasing relies on: large allocations are then
// sampled with the wrong probability and the profile is off by far more
// than sampling noise.
int64_t UniformDistance(uint64_t* state, int64_t mean) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return mean / 2 + static_cast<int64_t>(x % static_cast<uint64_t>(mean));
}

TEST(HeapSampling, UniformCountdownIsBiased) {
  HeapProfileTable t;
  const auto lines = SeedLines();
  Replay(lines, 42, kRate, t, UniformDistance);
  const auto est = Estimates(t);
  int outside = 0;
  for (const Line& l : lines) {
    const double got = est.count(l.line) ? est.at(l.line).alloc_objects : 0;
    if (std::fabs(got - static_cast<double>(l.count)) > 4 * SigmaObjects(l, kRate)) ++outside;
  }
  EXPECT_GE(outside, 1);
}

TEST(HeapSampling, RateOneRecordsEveryAllocationExactly) {
  HeapProfileTable t;
  const auto lines = SeedLines(1000);
  Replay(lines, 7, 1, t);
  const auto est = Estimates(t);
  for (const Line& l : lines) {
    EXPECT_EQ(est.at(l.line).alloc_objects, static_cast<double>(l.count));
    EXPECT_EQ(est.at(l.line).alloc_space, static_cast<double>(l.count * l.size));
  }
}

TEST(HeapSampling, NegativeLogMatchesLibm) {
  // Every binade the sampler can produce (u >= 2^-53), and the edges of the
  // range reduction, against libm to a few ulps.
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < 1000000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double u = std::ldexp(static_cast<double>((x >> 11) + 1) * 0x1.0p-53, -static_cast<int>(x % 54));
    const double want = -std::log(u);
    ASSERT_NEAR(NegativeLog(u), want, 4e-16 * std::max(want, 1.0)) << u;
  }
  EXPECT_EQ(NegativeLog(1.0), 0.0);
  for (double u : {0x1.0p-53, 0.5, std::sqrt(0.5), std::nextafter(std::sqrt(2.0) / 2, 1.0), 0.75, 1 - 0x1.0p-53}) {
    EXPECT_NEAR(NegativeLog(u), -std::log(u), 4e-16 * std::max(-std::log(u), 1.0)) << u;
  }
}

TEST(HeapSampling, DistanceIsExponentialWithTheRequestedMean) {
  // Mean of n draws: sigma = R / sqrt(n) for an exponential; P(X > R) = 1/e.
  uint64_t state = 12345;
  constexpr int n = 200000;
  double sum = 0;
  int above = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t d = NextSampleDistance(&state, kRate);
    ASSERT_GE(d, 0);
    sum += static_cast<double>(d);
    above += d > kRate;
  }
  EXPECT_NEAR(sum / n, kRate, 4.0 * kRate / std::sqrt(double{n}));
  const double p = std::exp(-1.0);
  EXPECT_NEAR(above / double{n}, p, 4 * std::sqrt(p * (1 - p) / n));
  EXPECT_EQ(NextSampleDistance(&state, 1), 0);
  EXPECT_EQ(NextSampleDistance(&state, 0), INT64_MAX);
}

TEST(HeapProfileTable, FreesMoveObjectsOutOfInUse) {
  HeapProfileTable t;
  std::vector<char> objects(5000);
  const uintptr_t pc[] = {0x1234, 0x5678};
  for (char& c : objects) t.RecordAlloc(&c, 64, 1, pc, 2);
  for (size_t i = 0; i < objects.size(); i += 2) t.RecordFree(&objects[i]);
  t.RecordFree(&objects[0]);          // twice: ignored
  t.RecordFree(objects.data() - 1);   // never recorded: ignored
  EXPECT_EQ(t.live_sampled(), 2500u);
  const auto snap = t.Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].allocs, 5000u);
  EXPECT_EQ(snap[0].frees, 2500u);
  EXPECT_EQ(snap[0].stack, (std::vector<uintptr_t>{0x1234, 0x5678}));
  const HeapEstimate e = Unbias(snap[0]);
  EXPECT_EQ(e.inuse_objects, 2500);
  EXPECT_EQ(e.inuse_space, 2500 * 64);
  uintptr_t out[4];
  EXPECT_EQ(t.StackOf(&objects[1], out, 4), 2u);
  EXPECT_EQ(out[1], 0x5678u);
  EXPECT_EQ(t.StackOf(&objects[0], out, 4), 0u);
}

// Sampled objects mostly die young: tombstones fill the live table and force
// same-size rehashes, which reuse the previous array. Nothing of what that
// array held may survive into the next round, and no live object may be lost.
TEST(HeapProfileTable, ChurnThroughManyRehashesKeepsExactlyTheLiveObjects) {
  HeapProfileTable t;
  std::vector<char> objects(200000);
  const uintptr_t young[] = {0x1000}, old[] = {0x2000};
  for (size_t i = 0; i < 100; ++i) t.RecordAlloc(&objects[i], 64, 1, old, 1);
  for (size_t i = 100; i < objects.size(); ++i) {
    t.RecordAlloc(&objects[i], 64, 1, young, 1);
    if (i % 1000 != 0) t.RecordFree(&objects[i]);  // one in 1000 lives on
  }
  const size_t survivors = (objects.size() - 1) / 1000;  // i = 1000, 2000, ..., 199000
  EXPECT_EQ(t.live_sampled(), 100 + survivors);
  size_t visited = 0, visited_old = 0;
  std::pair<size_t*, size_t*> counts{&visited, &visited_old};
  t.ForEachLive(
      [](void* ctx, uintptr_t, size_t, const uintptr_t* pcs, size_t) {
        auto* c = static_cast<std::pair<size_t*, size_t*>*>(ctx);
        ++*c->first;
        if (pcs[0] == 0x2000) ++*c->second;
      },
      &counts);
  EXPECT_EQ(visited, 100 + survivors);
  EXPECT_EQ(visited_old, 100u);
  uintptr_t out[1];
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(t.StackOf(&objects[i], out, 1), 1u) << i;
  EXPECT_EQ(t.StackOf(&objects[5000], out, 1), 1u);
  EXPECT_EQ(out[0], 0x1000u);
  EXPECT_EQ(t.StackOf(&objects[5001], out, 1), 0u);
}

}  // namespace
}  // namespace libdump::samplers
