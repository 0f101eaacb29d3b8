#include "parallel_pass.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "libdump/format/reader.h"

namespace libdump::dumptohprof {
namespace {

namespace hp = format::hprof;

// A chunk's fragment and the writer that fills it; `ready` hands it from the
// worker to the appending thread and back.
struct Slot {
  Slot(const HeapPlan& plan, size_t buffer) : fragment(hp::Writer::Fragment{}, buffer), objects(plan, fragment) {}
  hp::Writer fragment;
  ObjectWriter objects;
  bool ready = false;
  std::exception_ptr error;
};

class Pass {
 public:
  Pass(const std::string& path, const format::ReaderOptions& reader, const std::vector<Chunk>& chunks,
       const HeapPlan& plan, unsigned workers)
      : path_(path), reader_options_(reader), chunks_(chunks), workers_(workers) {
    // Fragments start a little larger than a chunk: hprof records are a bit
    // longer than the dump's, and a buffer that need not grow is copied never.
    uint64_t largest = 0;
    for (const Chunk& c : chunks) {
      if (!c.serial) largest = std::max(largest, c.end - c.start);
    }
    const size_t buffer = static_cast<size_t>(std::min<uint64_t>(largest + largest / 2, uint64_t{4} << 20));
    slots_.resize(workers);
    for (auto& w : slots_) {
      for (size_t k = 0; k < kFragmentSlots; ++k) w.push_back(std::make_unique<Slot>(plan, buffer));
    }
  }

  ~Pass() {
    {
      std::lock_guard lock(mu_);
      abort_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void Run(hp::Writer& file, const std::function<void(const Chunk&)>& serial,
           const std::function<void(uint64_t)>& progress, ObjectCounts& counts) {
    for (unsigned w = 0; w < workers_; ++w) threads_.emplace_back([this, w] { Work(w); });
    for (size_t c = 0; c < chunks_.size(); ++c) {
      Slot& s = SlotOf(c);
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return s.ready; });
      }
      if (s.error) std::rethrow_exception(s.error);
      if (chunks_[c].serial) {
        serial(chunks_[c]);
      } else {
        file.Append(s.fragment);
      }
      {
        std::lock_guard lock(mu_);
        s.ready = false;
      }
      cv_.notify_all();
      progress(chunks_[c].end);
    }
    for (auto& w : slots_) {
      for (auto& s : w) counts.Add(s->objects.counts());
    }
  }

 private:
  Slot& SlotOf(size_t chunk) { return *slots_[chunk % workers_][(chunk / workers_) % kFragmentSlots]; }

  void Work(unsigned w) {
    std::unique_ptr<format::Reader> reader;
    format::Record r;
    for (size_t c = w; c < chunks_.size(); c += workers_) {
      Slot& s = SlotOf(c);
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !s.ready || abort_; });
        if (abort_) break;
      }
      if (!chunks_[c].serial) {
        try {
          if (!reader) reader = format::Reader::Open(path_, reader_options_);
          s.fragment.Clear();
          reader->Range(chunks_[c].start, chunks_[c].end);
          while (reader->Next(r)) s.objects.Convert(*reader, r);
        } catch (...) {
          s.error = std::current_exception();
        }
      }
      const bool failed = s.error != nullptr;
      {
        std::lock_guard lock(mu_);
        s.ready = true;
      }
      cv_.notify_all();
      if (failed) break;  // the appending thread stops at this chunk
    }
  }

  const std::string& path_;
  const format::ReaderOptions& reader_options_;
  const std::vector<Chunk>& chunks_;
  const unsigned workers_;
  std::vector<std::vector<std::unique_ptr<Slot>>> slots_;  // [worker][chunk / workers % kFragmentSlots]
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool abort_ = false;
};

}  // namespace

void ParallelPass(const std::string& dump_path, const format::ReaderOptions& reader,
                  const std::vector<Chunk>& chunks, const HeapPlan& plan,
                  unsigned workers, hp::Writer& file, const std::function<void(const Chunk&)>& serial,
                  const std::function<void(uint64_t offset)>& progress, ObjectCounts& counts) {
  Pass pass(dump_path, reader, chunks, plan, std::max(workers, 1u));
  pass.Run(file, serial, progress, counts);
}

}  // namespace libdump::dumptohprof
