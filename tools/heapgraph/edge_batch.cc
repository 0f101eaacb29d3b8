#include "edge_batch.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "threads.h"

namespace libdump::heapgraph {

EdgeBatch::EdgeBatch(HeapGraph& g, GraphBuilder& b, Match match)
    : g_(g), builder_(b), match_(match), threads_(Threads()) {}

EdgeBatch::~EdgeBatch() {
  // The loader threw: the batch in flight still uses the graph.
  if (job_.joinable()) job_.join();
}

void EdgeBatch::Begin(Index i) {
  Batch& b = batches_[filling_];
  // Batches end between objects, so that a batch's objects are whole.
  if (b.words.size() >= kBatchWords) {
    Dispatch();
  }
  Batch& f = batches_[filling_];
  f.objects.push_back(i);
  f.start.push_back(static_cast<uint32_t>(f.words.size()));
  current_ = i;
}

void EdgeBatch::Split() {
  Dispatch();
  // GraphBuilder::BeginEdges of an object already begun appends after its
  // references so far.
  Batch& f = batches_[filling_];
  f.objects.push_back(current_);
  f.start.push_back(0);
}

void EdgeBatch::Finish() {
  if (!batches_[filling_].objects.empty()) Dispatch();
  Wait();
}

void EdgeBatch::Wait() {
  if (job_.joinable()) job_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void EdgeBatch::Dispatch() {
  Wait();
  const int k = filling_;
  if (threads_ > 1) {
    try {
      job_ = std::thread([this, k] {
        try {
          Process(batches_[k]);
        } catch (...) {
          error_ = std::current_exception();
        }
      });
      filling_ ^= 1;
      return;
    } catch (const std::system_error&) {
      // No thread to be had: this batch on the loader's thread.
    }
  }
  Process(batches_[k]);
}

void EdgeBatch::Process(Batch& b) {
  const size_t n = b.words.size();
  // `to` keeps its size between batches: only a larger batch writes it first.
  if (b.to.size() < n) b.to.resize(n);
  // Parts of at least 4096 words: a thread for fewer costs more than it saves.
  const unsigned parts = static_cast<unsigned>(std::min<size_t>(threads_, n / 4096 + 1));
  const bool exact = match_ == Match::kExact;
  RunParallel(parts, [&](unsigned k) {
    // The hot loop: a binary search per word, nothing allocated; parts
    // write disjoint ranges of `to`.
    const size_t lo = n * k / parts, hi = n * (k + 1) / parts;
    for (size_t w = lo; w < hi; ++w) {
      big_array::Check();
      b.to[w] = exact ? g_.Find(b.words[w]) : FindContaining(g_, b.words[w]);
    }
  });
  for (size_t j = 0; j < b.objects.size(); ++j) {
    builder_.BeginEdges(b.objects[j]);
    const size_t end = j + 1 < b.objects.size() ? b.start[j + 1] : n;
    for (size_t w = b.start[j]; w < end; ++w) {
      const Index t = b.to[w];
      if (t == kNone) {
        if (exact) ++g_.dangling;
        continue;
      }
      const uint8_t f = exact ? b.flags[w] : 0;
      builder_.Edge(t, f & kWeak);
      if (f & kFinalizer) g_.finalizable.push_back(t);
    }
  }
  b.objects.clear();
  b.start.clear();
  b.words.clear();
  b.flags.clear();
}

}  // namespace libdump::heapgraph
