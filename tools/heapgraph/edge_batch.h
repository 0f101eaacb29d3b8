// A loader's references, resolved to objects on other threads while the
// loader reads on, and appended to the graph in file order.
//
// Resolving a reference (a dump's pointer to the object holding it, an hprof
// id to its object: a binary search over the sorted ids each) is most of the
// CPU of the second pass, and every word resolves on its own. So the loader
// hands each object's raw words here; a full batch is resolved in Threads()
// parts at once while the loader fills the other batch, then appended to the
// graph (GraphBuilder::BeginEdges, Edge) on one thread in order: the CSR is
// the one resolving each word in file order builds, with no count pass over
// the file and no copy of the graph. The two batches (BigArrays, so they
// count against the memory budget) of kBatchWords to 2 kBatchWords words are
// all the pass holds besides the graph. With Threads() == 1 every batch is
// resolved and appended on the loader's thread.
#pragma once

#include <cstdint>
#include <exception>
#include <thread>

#include "big_array.h"
#include "heap_graph.h"

namespace libdump::heapgraph {

class EdgeBatch {
 public:
  // kContaining: FindContaining (dump words, interior pointers count; a
  // miss is no reference). kExact: HeapGraph::Find (hprof ids; a miss is
  // counted in HeapGraph::dangling).
  enum class Match { kContaining, kExact };
  // Word flags (kExact only): a Reference's referent, and one a
  // java.lang.ref.Finalizer holds (its object goes to HeapGraph::finalizable).
  static constexpr uint8_t kWeak = 1, kFinalizer = 2;
  // 1 MiB of words a batch: large enough that a batch's threads live far
  // longer than they take to start, small beside any budget.
  static constexpr size_t kBatchWords = size_t{1} << 17;

  EdgeBatch(HeapGraph& g, GraphBuilder& b, Match match);
  ~EdgeBatch();
  EdgeBatch(const EdgeBatch&) = delete;
  EdgeBatch& operator=(const EdgeBatch&) = delete;

  // Object i's words follow (objects in order, as GraphBuilder::BeginEdges).
  void Begin(Index i);
  // One reference of the current object: a non-zero pointer or id.
  void Word(uint64_t word, uint8_t flags = 0) {
    Batch& b = batches_[filling_];
    b.words.push_back(word);
    if (match_ == Match::kExact) b.flags.push_back(flags);
    // An object of more words (a large array) is split across batches, so
    // that a batch stays bounded whatever the objects.
    if (b.words.size() >= 2 * kBatchWords) Split();
  }
  // Every reference appended; rethrows what resolving or appending threw.
  void Finish();

 private:
  struct Batch {
    BigArray<Index> objects;   // in order
    BigArray<uint32_t> start;  // per object: its first word
    BigArray<uint64_t> words;
    BigArray<uint8_t> flags;   // per word (kExact)
    BigArray<Index> to;        // per word: its object or kNone
  };
  // Hands the filling batch over once the one in flight is done.
  void Dispatch();
  // Dispatches mid-object: the next batch goes on with the same object.
  void Split();
  void Wait();
  void Process(Batch& b);

  HeapGraph& g_;
  GraphBuilder& builder_;
  const Match match_;
  const unsigned threads_;
  Batch batches_[2];
  int filling_ = 0;
  Index current_ = 0;  // the object whose words come in
  std::thread job_;  // Process of the other batch
  std::exception_ptr error_;
};

}  // namespace libdump::heapgraph
