#include "samplers/flight_recorder/flight_recorder_buffer.h"

#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace libdump::samplers::flight {
namespace {

TEST(FlightRecorderBuffer, IndexQueueIsFifoAndBounded) {
  IndexQueue q;
  ASSERT_TRUE(q.Init(4));
  uint32_t v;
  EXPECT_FALSE(q.Pop(&v));
  for (uint32_t i = 0; i < 4; ++i) EXPECT_TRUE(q.Push(i));
  EXPECT_FALSE(q.Push(9));
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(q.Pop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.Pop(&v));
}

// Appends one event carrying n and its complement.
bool Put(Window& w, ThreadWriter& tw, uint64_t n) {
  uint8_t* p = w.Reserve(tw, kHeap, 0, static_cast<int64_t>(n), 16);
  if (p == nullptr) return false;
  const uint64_t v[2] = {n, ~n};
  std::memcpy(p, v, sizeof v);
  w.Commit(tw);
  return true;
}

// Every event of the pinned chunks, checked intact; returns how many.
size_t ReadAll(Window& w, std::vector<uint32_t>& order, uint64_t* smallest) {
  const size_t n = w.Pin(order.data());
  size_t events = 0;
  *smallest = UINT64_MAX;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t used = w.header(order[k]).used.load(std::memory_order_acquire);
    for (uint32_t off = 0; off < used;) {
      const auto* e = reinterpret_cast<const EventHeader*>(w.data(order[k]) + off);
      uint64_t v[2];
      std::memcpy(v, e + 1, sizeof v);
      EXPECT_EQ(e->type, kHeap);
      EXPECT_EQ(v[1], ~v[0]);
      EXPECT_EQ(static_cast<uint64_t>(e->ts), v[0]);
      *smallest = std::min(*smallest, v[0]);
      off += e->size;
      ++events;
    }
  }
  w.Unpin();
  return events;
}

TEST(FlightRecorderBuffer, RecyclesTheOldestChunkWhenThePoolIsFull) {
  Window w;
  ASSERT_TRUE(w.Init(kMinChunks * kChunkBytes, 1));
  ThreadWriter tw{};
  const uint64_t per_chunk = kChunkBytes / 32;
  const uint64_t total = per_chunk * kMinChunks * 3;
  for (uint64_t i = 1; i <= total; ++i) ASSERT_TRUE(Put(w, tw, i));
  std::vector<uint32_t> order(w.chunks());
  uint64_t smallest;
  // The window holds the newest pool's worth: kMinChunks full chunks less
  // the one the writer has just started.
  const size_t events = ReadAll(w, order, &smallest);
  EXPECT_EQ(events, (kMinChunks - 1) * per_chunk + total % per_chunk + (total % per_chunk == 0 ? per_chunk : 0));
  EXPECT_EQ(smallest, total - events + 1);
  EXPECT_EQ(w.stats().recycled.load(), kMinChunks * 3 - kMinChunks);
}

TEST(FlightRecorderBuffer, APinnedChunkIsNotRecycled) {
  Window w;
  ASSERT_TRUE(w.Init(kMinChunks * kChunkBytes, 1));
  ThreadWriter tw{};
  const uint64_t per_chunk = kChunkBytes / 32;
  uint64_t i = 1;
  for (; i <= per_chunk * kMinChunks; ++i) ASSERT_TRUE(Put(w, tw, i));
  std::vector<uint32_t> order(w.chunks());
  w.Pin(order.data());
  // The pool is full and everything is pinned: the next chunk's worth of
  // events is dropped, not written over what the reader reads.
  EXPECT_FALSE(Put(w, tw, i));
  EXPECT_EQ(w.stats().dropped.load(), 1u);
  w.Unpin();
  EXPECT_TRUE(Put(w, tw, i));
}

TEST(FlightRecorderBuffer, AgeFreesChunksOlderThanTheCutoff) {
  Window w;
  ASSERT_TRUE(w.Init(64 * kChunkBytes, 1));
  ThreadWriter tw{};
  const uint64_t per_chunk = kChunkBytes / 32;
  for (uint64_t i = 1; i <= per_chunk * 10; ++i) ASSERT_TRUE(Put(w, tw, i));
  w.Age(static_cast<int64_t>(per_chunk * 5 + 1));  // chunks 1-5 end at or before 5 * per_chunk
  EXPECT_EQ(w.stats().aged.load(), 5u);
  std::vector<uint32_t> order(w.chunks());
  uint64_t smallest;
  EXPECT_EQ(ReadAll(w, order, &smallest), per_chunk * 5);
  EXPECT_EQ(smallest, per_chunk * 5 + 1);
}

// Writers on four threads recycle chunks while a reader pins and reads the
// window over and over: every event read is whole (TSan: no race).
TEST(FlightRecorderBuffer, ConcurrentWritersAndReader) {
  Window w;
  ASSERT_TRUE(w.Init(kMinChunks * kChunkBytes, 1));
  std::atomic<bool> done{false};
  std::atomic<uint64_t> written{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&w, &written] {
      ThreadWriter tw{};
      uint64_t n = 0;
      for (uint64_t i = 1; i <= 200000; ++i) n += Put(w, tw, i);
      written += n;
    });
  }
  std::thread reader([&] {
    std::vector<uint32_t> order(w.chunks());
    uint64_t smallest;
    while (!done.load()) {
      w.snapshotting().store(true);
      ReadAll(w, order, &smallest);
      w.snapshotting().store(false);
    }
  });
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  // Whether the writers recycled while the reader held the window depends on
  // the scheduler (on a loaded machine the reader may hold it throughout, and
  // every full chunk is dropped); with the reader gone, twice the window's
  // events must recycle.
  ThreadWriter tw{};
  const uint64_t more = 2 * kMinChunks * kChunkBytes / 32;
  for (uint64_t i = 1; i <= more; ++i) written += Put(w, tw, 200000 + i);
  EXPECT_GT(w.stats().recycled.load(), 0u);
  // Every event was either written or counted as dropped.
  EXPECT_EQ(written.load() + w.stats().dropped.load(), 4u * 200000 + more);
  EXPECT_GT(written.load(), 0u);
}

}  // namespace
}  // namespace libdump::samplers::flight
