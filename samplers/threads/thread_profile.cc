#include "samplers/threads/thread_profile.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <cstdio>
#include <map>
#include <new>
#include <sstream>

#include "libdump/format/pprof_profile.h"
#include "libdump/profiler.h"
#include "platform/capture/memory_map.h"
#include "platform/capture/modules.h"
#include "platform/capture/stopped_thread_unwind.h"
#include "samplers/unwind/frame_pointer_walk.h"
#include "platform/capture/stop_the_world.h"
#include "samplers/symbolize/pprof_symbolizer.h"
#include "samplers/threads/thread_create.h"
#include "platform/proc/thread_list.h"

namespace libdump::samplers {
namespace {

constexpr size_t kMaxThreads = 4096;

// Mappings made before the stop: nothing may allocate while it lasts.
template <typename T>
T* MapArray(size_t n) {
  void* p = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<T*>(p);
}

}  // namespace

bool CaptureThreadStacks(std::vector<ThreadStack>* out) {
  const std::vector<capture::Module> modules = capture::LoadedModules();
  capture::MemoryMap memory;
  if (!memory.Read()) return false;
  capture::StackUnwinder unwinder(modules, memory);
  capture::ThreadSlot* slots = MapArray<capture::ThreadSlot>(kMaxThreads);
  capture::UnwoundFrame* frames = MapArray<capture::UnwoundFrame>(kMaxThreads * kMaxFrames);
  size_t* depths = MapArray<size_t>(kMaxThreads);
  if (slots == nullptr || frames == nullptr || depths == nullptr) {
    if (slots) munmap(slots, kMaxThreads * sizeof(capture::ThreadSlot));
    if (frames) munmap(frames, kMaxThreads * kMaxFrames * sizeof(capture::UnwoundFrame));
    if (depths) munmap(depths, kMaxThreads * sizeof(size_t));
    errno = ENOMEM;
    return false;
  }
  for (size_t i = 0; i < kMaxThreads; ++i) new (&slots[i]) capture::ThreadSlot;
  ThreadStack self{};
  self.tid = static_cast<pid_t>(syscall(SYS_gettid));
  char name[16] = {};
  proc::ReadThreadStat(self.tid, name, sizeof name, &self.state);
  self.name = name;
  self.state = 'R';
  self.syscall = -1;
  self.self = true;
  self.stopped = true;
  uintptr_t self_pcs[kMaxFrames];
  const size_t self_n = CaptureCurrentStack(self_pcs, kMaxFrames, 0);
  self.pcs.assign(self_pcs, self_pcs + self_n);
  bool ok;
  size_t count = 0;
  {
    capture::WorldStop stop(slots, kMaxThreads);
    ok = stop.Stop();
    if (ok) {
      memory.Read();  // stacks of threads started since
      count = stop.count();
      for (size_t i = 0; i < count; ++i) {
        depths[i] = 0;
        if (slots[i].state.load(std::memory_order_acquire) == static_cast<int>(capture::StopState::kStopped)) {
          depths[i] = unwinder.Unwind(slots[i].regs, &frames[i * kMaxFrames], kMaxFrames);
        }
      }
      stop.Resume();
    }
  }
  if (ok) {
    out->push_back(std::move(self));
    for (size_t i = 0; i < count; ++i) {
      const capture::ThreadSlot& s = slots[i];
      const int state = s.state.load(std::memory_order_acquire);
      if (state == static_cast<int>(capture::StopState::kGone)) continue;
      ThreadStack t{};
      t.tid = s.tid;
      t.name.assign(s.name, strnlen(s.name, sizeof s.name));
      t.state = s.sched_state;
      t.syscall = s.syscall_nr;
      t.stopped = state == static_cast<int>(capture::StopState::kStopped);
      for (size_t j = 0; j < depths[i]; ++j) {
        // The top frame's pc is exact: +1 makes every entry a return
        // address, looked up at pc - 1 like the rest.
        t.pcs.push_back(static_cast<uintptr_t>(frames[i * kMaxFrames + j].pc) + (j == 0 ? 1 : 0));
      }
      out->push_back(std::move(t));
    }
  }
  for (size_t i = 0; i < kMaxThreads; ++i) slots[i].~ThreadSlot();
  munmap(slots, kMaxThreads * sizeof(capture::ThreadSlot));
  munmap(frames, kMaxThreads * kMaxFrames * sizeof(capture::UnwoundFrame));
  munmap(depths, kMaxThreads * sizeof(size_t));
  if (!ok) errno = EAGAIN;
  return ok;
}

std::string WaitReason(const ThreadStack& t) {
  if (t.self) return "running";
  if (!t.stopped) return "unresponsive";
  switch (t.syscall) {
    case -1: return t.state == 'R' ? "running" : "runnable";
    case SYS_futex: return "futex";
    case SYS_nanosleep: return "nanosleep";
    case SYS_clock_nanosleep: return "clock_nanosleep";
    case SYS_poll: return "poll";
    case SYS_ppoll: return "ppoll";
    case SYS_select: return "select";
    case SYS_pselect6: return "pselect6";
    case SYS_epoll_wait: return "epoll_wait";
    case SYS_epoll_pwait: return "epoll_pwait";
    case SYS_read: return "read";
    case SYS_write: return "write";
    case SYS_accept: return "accept";
    case SYS_accept4: return "accept4";
    case SYS_recvfrom: return "recvfrom";
    case SYS_recvmsg: return "recvmsg";
    case SYS_wait4: return "wait4";
    case SYS_pause: return "pause";
    default: return "syscall " + std::to_string(t.syscall);
  }
}

}  // namespace libdump::samplers

namespace libdump {

namespace {

const char* StateName(char c) {
  switch (c) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk sleep";
    case 'T': case 't': return "stopped";
    case 'Z': return "zombie";
    default: return "unknown";
  }
}

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Go's count profile forms: debug 0, pprof of sample type NAME/count, one
// sample per distinct stack; debug 1, Go's text, counts by identical stack,
// most first, then a # line per frame with its function.
bool WriteCountProfile(int fd, int debug, const std::string& name, const std::vector<std::vector<uintptr_t>>& stacks) {
  pprof::ProfileBuilder b({{name, "count"}}, {name, "count"}, 1);
  samplers::ProfileSymbolizer sym(b);
  std::map<std::vector<uintptr_t>, int64_t> by_stack;
  for (const auto& pcs : stacks) ++by_stack[pcs];
  if (debug <= 0) {
    for (const auto& [pcs, n] : by_stack) {
      const std::vector<uint64_t> locs = sym.Locations(pcs);
      const int64_t v[] = {n};
      b.AddSample(locs, v);
    }
    return b.WriteGzip(fd);
  }
  std::vector<std::pair<int64_t, const std::vector<uintptr_t>*>> order;
  for (const auto& [pcs, n] : by_stack) order.push_back({n, &pcs});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& c) { return a.first > c.first; });
  std::ostringstream out;
  out << name << " profile: total " << stacks.size() << "\n";
  for (const auto& [n, pcs] : order) {
    out << n << " @";
    for (uintptr_t pc : *pcs) out << " 0x" << std::hex << pc << std::dec;
    out << "\n";
    for (uintptr_t pc : *pcs) {
      const std::string fn = sym.FunctionName(pc);
      out << "#\t0x" << std::hex << pc - 1 << std::dec << "\t" << (fn.empty() ? "?" : fn) << "\n";
    }
    out << "\n";
  }
  return WriteAll(fd, out.str());
}

}  // namespace

bool WriteThreadProfile(int fd, int debug) {
  std::vector<samplers::ThreadStack> threads;
  if (!samplers::CaptureThreadStacks(&threads)) return false;
  if (debug <= 1) {
    // Go's sample type names, so that go tool pprof treats it as its own.
    std::vector<std::vector<uintptr_t>> stacks;
    for (auto& t : threads) stacks.push_back(std::move(t.pcs));
    return WriteCountProfile(fd, debug, debug == 0 ? "goroutine" : "threads", stacks);
  }
  pprof::ProfileBuilder b({{"goroutine", "count"}}, {"goroutine", "count"}, 1);
  samplers::ProfileSymbolizer sym(b);
  std::ostringstream out;
  // One block per thread, as Go's debug=2: id, state and wait reason, name,
  // then the frames.
  for (const auto& t : threads) {
    out << "thread " << t.tid << " [" << StateName(t.state) << ", " << samplers::WaitReason(t) << "]: " << t.name
        << "\n";
    for (uintptr_t pc : t.pcs) {
      const std::string fn = sym.FunctionName(pc);
      out << (fn.empty() ? "?" : fn) << "\n\t0x" << std::hex << pc - 1 << std::dec << "\n";
    }
    out << "\n";
  }
  return WriteAll(fd, out.str());
}

bool WriteThreadCreateProfile(int fd, int debug) {
  std::vector<samplers::ThreadCreation> live = samplers::LiveThreadCreations();
  if (live.empty()) return false;  // /proc unreadable: there is always this thread
  std::vector<std::vector<uintptr_t>> stacks;
  {
    pprof::ProfileBuilder dummy({{"x", "count"}}, {"x", "count"}, 1);
    samplers::ProfileSymbolizer sym(dummy);
    for (samplers::ThreadCreation& c : live) {
      // The recorder's own frames go (the leaf is pthread_create); a thread
      // without a record gets the marker frame, so that it is counted and
      // Go's text form, which wants a frame per sample, stays readable.
      size_t skip = 0;
      while (skip + 1 < c.stack.size()) {
        const std::string fn = sym.FunctionName(c.stack[skip]);
        const size_t ns = fn.find("libdump::samplers::");
        if (ns == std::string::npos || ns > fn.find('(')) break;
        ++skip;
      }
      c.stack.erase(c.stack.begin(), c.stack.begin() + static_cast<std::ptrdiff_t>(skip));
      if (c.stack.empty()) c.stack.push_back(samplers::CreatorNotRecordedMarker());
      stacks.push_back(std::move(c.stack));
    }
  }
  return WriteCountProfile(fd, debug, "threadcreate", stacks);
}

}  // namespace libdump
