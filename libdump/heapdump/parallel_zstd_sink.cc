#include "parallel_zstd_sink.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>

namespace libdump::heapdump {

namespace {

enum : uint32_t { kFree = 0, kFilled = 1, kDone = 2 };

size_t PageAlign(size_t n) { return (n + 4095) & ~size_t{4095}; }

// Shared between processes: the futex is not FUTEX_PRIVATE.
void FutexWait(std::atomic<uint32_t>* word, uint32_t seen) {
  const timespec timeout{0, 100 * 1000 * 1000};  // then look for dead peers
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct ParallelZstdSink::Slot {
  std::atomic<uint32_t> state{kFree};
  std::atomic<uint64_t> block{0};  // which block the slot holds
  uint64_t in_len = 0;
  uint64_t out_len = 0;
};

struct ParallelZstdSink::Shared {
  std::atomic<uint32_t> event{0};  // bumped at every change; the futex all wait on
  std::atomic<int> error{0};       // a worker's first error
  std::atomic<uint64_t> claim{0};  // the next block a worker takes
  std::atomic<uint64_t> end{UINT64_MAX};  // blocks in the stream, once known
  Slot slots[1];                   // slots_ of them

  void Bump() {
    event.fetch_add(1, std::memory_order_acq_rel);
    FutexWakeAll(&event);
  }
};

namespace {

// Two slots per worker keep each busy while the writer fills and writes the
// others; more only cost memory.
size_t SlotsFor(int workers) { return static_cast<size_t>(workers) * 2 + 2; }

size_t HeaderSize(size_t slots) {
  return PageAlign(sizeof(ParallelZstdSink::Shared) + sizeof(ParallelZstdSink::Slot) * slots);
}

// The writer helps (Help) at the fast levels only: there its context is
// small; at the slow ones the workers do all and the memory stays bounded.
bool WriterHelps(int level, size_t block) {
  return format::ZstdFrameCompressor::MemoryFor(level, block) <= (size_t{4} << 20);
}

}  // namespace

size_t ParallelZstdSink::MemoryFor(int level, int workers, size_t block) {
  const size_t slots = SlotsFor(workers);
  const size_t contexts = static_cast<size_t>(workers) + (WriterHelps(level, block) ? 1 : 0);
  return HeaderSize(slots) + slots * (PageAlign(block) + PageAlign(format::ZstdFrameCompressor::Bound(block))) +
         contexts * format::ZstdFrameCompressor::MemoryFor(level, block);
}

ParallelZstdSink::ParallelZstdSink(Sink& next, int level, int workers, size_t block)
    : next_(next), level_(level), workers_(std::clamp(workers, 1, kMaxWorkers)), block_(block) {
  if (!format::ZstdSink::LoadLibrary()) {
    SetError(ELIBACC);
    return;
  }
  bound_ = PageAlign(format::ZstdFrameCompressor::Bound(block_));
  block_ = block;
  slots_ = SlotsFor(workers_);
  mapping_size_ = HeaderSize(slots_) + slots_ * (PageAlign(block_) + bound_);
  void* p = mmap(nullptr, mapping_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    SetError(ENOMEM);
    return;
  }
  shared_ = new (p) Shared;
  for (size_t i = 1; i < slots_; ++i) new (&shared_->slots[i]) Slot;
  ring_ = static_cast<uint8_t*>(p) + HeaderSize(slots_);
  const pid_t parent = getpid();
  for (int i = 0; i < workers_; ++i) {
    // A copy of this process that sends no signal when it exits.
    const long pid = syscall(SYS_clone, 0UL, nullptr, nullptr, nullptr, 0UL);
    if (pid == 0) WorkerMain(shared_, this, parent);
    if (pid < 0) {
      SetError(errno);
      break;
    }
    pids_[started_++] = static_cast<pid_t>(pid);
  }
  if (WriterHelps(level_, block_)) {
    own_.emplace(level_, block_);
    if (own_->error() != 0) own_.reset();  // the workers still do it all
  }
}

ParallelZstdSink::~ParallelZstdSink() {
  if (!finished_) StopWorkers();
  if (shared_ != nullptr) munmap(shared_, mapping_size_);
}

ParallelZstdSink::Slot& ParallelZstdSink::SlotOf(uint64_t block) const {
  return shared_->slots[block % slots_];
}

uint8_t* ParallelZstdSink::InputOf(uint64_t block) const {
  return ring_ + (block % slots_) * (PageAlign(block_) + bound_);
}

uint8_t* ParallelZstdSink::OutputOf(uint64_t block) const { return InputOf(block) + PageAlign(block_); }

[[noreturn]] void ParallelZstdSink::WorkerMain(Shared* s, const ParallelZstdSink* self, pid_t parent) {
  // The program's handlers are copies here and must not run: only the
  // writer's death (SIGKILL) or its own end stops a worker.
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  format::ZstdFrameCompressor zstd(self->level_, self->block_);
  if (zstd.error() != 0) {
    int none = 0;
    s->error.compare_exchange_strong(none, zstd.error());
    s->Bump();
    _exit(1);
  }
  for (;;) {
    const uint64_t j = s->claim.fetch_add(1, std::memory_order_acq_rel);
    Slot& slot = self->SlotOf(j);
    for (;;) {
      const uint32_t seen = s->event.load(std::memory_order_acquire);
      if (j >= s->end.load(std::memory_order_acquire)) _exit(0);
      if (slot.state.load(std::memory_order_acquire) == kFilled &&
          slot.block.load(std::memory_order_acquire) == j) {
        break;
      }
      FutexWait(&s->event, seen);
      if (getppid() != parent) _exit(1);
    }
    const size_t n = zstd.Compress(self->InputOf(j), slot.in_len, self->OutputOf(j), self->bound_);
    if (n == 0) {
      int none = 0;
      s->error.compare_exchange_strong(none, zstd.error() != 0 ? zstd.error() : EIO);
    }
    slot.out_len = n;
    slot.state.store(kDone, std::memory_order_release);
    s->Bump();
  }
}

bool ParallelZstdSink::WaitEvent(uint32_t seen) {
  FutexWait(&shared_->event, seen);
  if (shared_->event.load(std::memory_order_acquire) != seen) return true;
  for (int i = 0; i < started_; ++i) {
    int status;
    if (pids_[i] != 0 && waitpid(pids_[i], &status, WNOHANG | __WALL) == pids_[i]) {
      pids_[i] = 0;
      return false;  // a worker was killed: its block will never be done
    }
  }
  return true;
}

void ParallelZstdSink::WriteOut(uint64_t until, bool wait) {
  while (written_ < next_block_) {
    const uint32_t seen = shared_->event.load(std::memory_order_acquire);
    if (const int err = shared_->error.load(std::memory_order_acquire)) return SetError(err);
    Slot& slot = SlotOf(written_);
    if (slot.state.load(std::memory_order_acquire) == kDone && slot.block.load(std::memory_order_relaxed) == written_) {
      next_.Write(OutputOf(written_), slot.out_len);
      slot.state.store(kFree, std::memory_order_release);
      ++written_;
      if (next_.error() != 0) return SetError(next_.error());
      continue;
    }
    if (!wait || written_ >= until) return;
    if (Help()) continue;
    if (!WaitEvent(seen)) return SetError(EIO);
  }
}

bool ParallelZstdSink::Help() {
  if (!own_) return false;
  uint64_t j = shared_->claim.load(std::memory_order_acquire);
  if (j >= next_block_) return false;  // every submitted block is taken
  if (!shared_->claim.compare_exchange_strong(j, j + 1, std::memory_order_acq_rel)) return true;  // look again
  Slot& slot = SlotOf(j);
  const size_t n = own_->Compress(InputOf(j), slot.in_len, OutputOf(j), bound_);
  if (n == 0) {
    int none = 0;
    shared_->error.compare_exchange_strong(none, own_->error() != 0 ? own_->error() : EIO);
  }
  slot.out_len = n;
  slot.state.store(kDone, std::memory_order_release);
  shared_->Bump();
  return true;
}

void ParallelZstdSink::Submit() {
  if (fill_ == 0) return;
  Slot& slot = SlotOf(next_block_);
  slot.in_len = fill_;
  slot.block.store(next_block_, std::memory_order_relaxed);
  slot.state.store(kFilled, std::memory_order_release);
  shared_->Bump();
  ++next_block_;
  fill_ = 0;
  WriteOut(0, false);
}

void ParallelZstdSink::Write(const void* data, size_t n) {
  if (error_ != 0 || !ok()) return SetError(EIO);
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_ += n;
  while (n > 0 && error_ == 0) {
    // The slot of this block is free once the frame it held is written.
    if (fill_ == 0 && next_block_ - written_ >= slots_) WriteOut(next_block_ - slots_ + 1, true);
    if (error_ != 0) return;
    const size_t k = std::min(n, block_ - fill_);
    std::memcpy(InputOf(next_block_) + fill_, p, k);
    fill_ += k;
    p += k;
    n -= k;
    if (fill_ == block_) Submit();
  }
}

void ParallelZstdSink::Flush() {
  if (error_ != 0 || !ok()) return SetError(EIO);
  Submit();
  WriteOut(next_block_, true);
  next_.Flush();
  if (next_.error() != 0) SetError(next_.error());
}

void ParallelZstdSink::Finish() {
  if (finished_) return;
  Flush();
  StopWorkers();
  finished_ = true;
}

void ParallelZstdSink::StopWorkers() {
  if (shared_ == nullptr) return;
  shared_->end.store(next_block_, std::memory_order_release);
  shared_->Bump();
  for (int i = 0; i < started_; ++i) {
    int status = 0;
    if (pids_[i] == 0) {
      SetError(EIO);  // found dead while waiting
      continue;
    }
    while (waitpid(pids_[i], &status, __WALL) < 0 && errno == EINTR) {
    }
    // A worker killed (the OOM killer, kill -9) may have taken a frame with it.
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) SetError(EIO);
    pids_[i] = 0;
  }
  started_ = 0;
}

}  // namespace libdump::heapdump
