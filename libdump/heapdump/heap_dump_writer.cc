#include "heap_dump_writer.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "platform/capture/loader_fork.h"
#include "platform/capture/loader_lock.h"
#include "platform/capture/memory_map.h"
#include "platform/capture/modules.h"
#include "dump_output.h"
#include "root_registry.h"
#include "scratch_vector.h"
#include "platform/capture/stopped_thread_unwind.h"
#include "platform/capture/stop_the_world.h"
#include "platform/capture/symbol_tables.h"
#include "platform/proc/thread_list.h"
#include "vtable_types.h"

namespace libdump::heapdump {

namespace {

using namespace format;
using capture::StopState;

constexpr size_t kMaxThreads = 4096;
constexpr size_t kMaxFrames = 512;  // per thread
constexpr uint64_t kRedZone = 128;  // x86-64 leaf functions may keep data below sp
constexpr size_t kGatherMin = 256;  // see WriterFor

struct ThreadInfo {
  pid_t tid;
  uint64_t id;  // the goroutine record's addr: the thread pointer, unique while it lives
  char name[16];
  char sched_state;
  long syscall_nr;
  int stop_state;
  bool self;
  uint64_t regs_addr;
  greg_t regs[NGREG];
  uint64_t scan_from;  // lowest stack address to scan
  uint32_t first_frame;
  uint32_t nframes;
};

struct StackRoot { uint64_t addr, ptr, frame; uint32_t thread; };
struct DataRoot { uint64_t addr, ptr; };
struct TlsRoot { uint64_t addr, ptr; pid_t tid; };
struct PolyType { uint64_t vptr, type_info, size; };

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
}

// Conservative scanning reads every word of stacks and data segments,
// including the redzones ASan poisons around locals and globals: those reads
// are the point, not a bug, so this one load is not instrumented.
__attribute__((no_sanitize("address"))) uint64_t Load(uint64_t addr) {
  return *reinterpret_cast<const volatile uint64_t*>(addr);
}

const char* SyscallWaitReason(long nr) {
  switch (nr) {
    case SYS_futex: return "futex";
    case SYS_nanosleep: case SYS_clock_nanosleep: return "sleep";
    case SYS_read: case SYS_readv: case SYS_pread64: return "read";
    case SYS_write: case SYS_writev: case SYS_pwrite64: return "write";
    case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6: return "poll";
    case SYS_epoll_wait: case SYS_epoll_pwait: return "epoll_wait";
    case SYS_accept: case SYS_accept4: return "accept";
    case SYS_recvfrom: case SYS_recvmsg: return "recv";
    case SYS_wait4: case SYS_waitid: return "wait";
    case SYS_pause: case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait: return "signal";
    default: return "syscall";
  }
}

// Static TLS size, from the loader (GLIBC_PRIVATE, looked up before any stop).
size_t StaticTlsSize() {
  using Fn = void (*)(size_t*, size_t*);
  static Fn fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info"));
  size_t size = 0, align = 0;
  if (fn != nullptr) fn(&size, &align);
  return size;
}

using internal::OwnComponent;

// The calling thread's allocations are libdump's own component c's for the
// scope (HeapSource::SetOwnComponent).
class OwnPart {
 public:
  OwnPart(HeapSource& heap, OwnComponent c) : heap_(heap), prev_(heap.SetOwnComponent(c)) {}
  ~OwnPart() { heap_.SetOwnComponent(prev_); }
  OwnPart(const OwnPart&) = delete;
  OwnPart& operator=(const OwnPart&) = delete;

 private:
  HeapSource& heap_;
  OwnComponent prev_;
};

// One dump: what it prepared before the stop, captured during it and writes.
class Dump {
 public:
  Dump(HeapSource& heap, const DumpOptions& options, uint64_t self_scan_from)
      : heap_(heap), options_(options), self_scan_from_(self_scan_from) {}
  ~Dump() {
    if (slots_ != nullptr) munmap(slots_, kMaxThreads * sizeof(capture::ThreadSlot));
  }

  DumpResult Run(int fd);

 private:
  bool Prepare();
  bool ReadModules();  // with the module list held
  void CaptureThreads(capture::WorldStop& stop);
  void WriteFrozen(Writer& w);
  void WriteNamed(Writer& w);

  template <class Emit>
  void ScanWords(uint64_t lo, uint64_t hi, Emit&& emit);
  uint64_t FrameOf(const ThreadInfo& t, uint64_t addr) const;
  void RememberPolymorphic(uint64_t vptr, uint64_t ti, uint64_t size);
  static void OnObject(const HeapObject& o, void* self);

  HeapSource& heap_;
  const DumpOptions& options_;
  uint64_t self_scan_from_;
  DumpResult result_;

  // Prepared before the stop.
  std::vector<capture::Module> modules_;
  std::vector<ModuleRecord> module_records_;
  capture::MemoryMap memory_;
  std::unique_ptr<capture::Symbolizer> symbolizer_;
  std::unique_ptr<capture::StackUnwinder> unwinder_;
  VtableRecognizer vtables_;
  capture::ThreadSlot* slots_ = nullptr;
  size_t tls_size_ = 0;
  const capture::Module* own_module_ = nullptr;  // libdump.so, in modules_

  // Captured while stopped, in mmap'd memory.
  ScratchVector<ThreadInfo> threads_;
  ScratchVector<capture::UnwoundFrame> frames_;
  ScratchVector<StackRoot> stack_roots_;
  ScratchVector<DataRoot> data_roots_;
  ScratchVector<TlsRoot> tls_roots_;
  ScratchVector<uint64_t> own_roots_;  // what this object holds in the heap
  ScratchVector<uint64_t> registered_values_;  // RootRegistry order
  ScratchVector<PolyType> poly_;
  Writer* writer_ = nullptr;  // for OnObject
};

bool Dump::ReadModules() {
  modules_ = capture::LoadedModules();
  for (const capture::Module& m : modules_) {
    for (const capture::Segment& s : m.segments) {
      if (s.executable) module_records_.push_back({s.start, s.end, s.file_offset, m.path, m.build_id});
    }
  }
  // libdump's own module, when it is not the program (a static link).
  const capture::Module* self = capture::FindModule(modules_, reinterpret_cast<uint64_t>(&NowNs));
  const capture::Module* program = capture::FindModule(modules_, getauxval(AT_PHDR));
  own_module_ = self != program ? self : nullptr;
  if (!memory_.Read()) return false;
  const OwnPart own(heap_, OwnComponent::kUnwinder);
  unwinder_ = std::make_unique<capture::StackUnwinder>(modules_, memory_);
  return true;
}

bool Dump::Prepare() {
  // The modules are listed and their unwind tables found with the module
  // list held: a module another thread dlcloses meanwhile is unlinked, then
  // unmapped, only after (the read of a table that was just unmapped
  // crashed the dumper). The one dlopen comes first: dlclose takes the
  // loader's other lock, then this one. A fork waits for this (a few ms).
  // Looks for the loader's lock, with dlopen and dlsym: not inside the hold,
  // where a dlopen of another thread waiting for the lock would hold them.
  capture::InstallLoaderFork();
  {
    const capture::LibraryOpenSection opening;  // a fork waits for it
    const OwnPart own(heap_, OwnComponent::kUnwinder);
    capture::OpenUnwindLibrary();
  }
  struct Call {
    Dump* dump;
    bool ok;
  } call{this, false};
  capture::WithModuleListHeld([](void* c) { static_cast<Call*>(c)->ok = static_cast<Call*>(c)->dump->ReadModules(); },
                              &call);
  if (!call.ok) return false;
  // From the files (and -dbgsym files), not the mapped modules: outside.
  {
    const OwnPart own(heap_, OwnComponent::kSymbolizer);
    symbolizer_ = std::make_unique<capture::Symbolizer>(modules_);
  }
  tls_size_ = StaticTlsSize();
  void* p = mmap(nullptr, kMaxThreads * sizeof(capture::ThreadSlot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  slots_ = static_cast<capture::ThreadSlot*>(p);
  for (size_t i = 0; i < kMaxThreads; ++i) new (&slots_[i]) capture::ThreadSlot;
  return true;
}

// While stopped: registers and frames of every thread, the caller included.
void Dump::CaptureThreads(capture::WorldStop& stop) {
  ucontext_t self_ctx;
  getcontext(&self_ctx);
  ThreadInfo self{};
  self.tid = static_cast<pid_t>(syscall(SYS_gettid));
  self.id = reinterpret_cast<uint64_t>(__builtin_thread_pointer());
  proc::ReadThreadStat(self.tid, self.name, sizeof self.name, &self.sched_state);
  self.sched_state = 'R';
  self.syscall_nr = -1;
  self.stop_state = static_cast<int>(StopState::kStopped);
  self.self = true;
  std::memcpy(self.regs, self_ctx.uc_mcontext.gregs, sizeof self.regs);
  self.regs_addr = 0;  // our own registers hold the dumper's state, not the program's
  self.scan_from = self_scan_from_;
  threads_.push_back(self);
  for (size_t i = 0; i < stop.count(); ++i) {
    capture::ThreadSlot& s = stop.slot(i);
    const int state = s.state.load(std::memory_order_acquire);
    if (state == static_cast<int>(StopState::kGone)) continue;
    ThreadInfo t{};
    t.tid = s.tid;
    std::memcpy(t.name, s.name, sizeof t.name);
    t.sched_state = s.sched_state;
    t.syscall_nr = s.syscall_nr;
    t.stop_state = state;
    if (state == static_cast<int>(StopState::kStopped)) {
      t.id = s.thread_pointer;
      std::memcpy(t.regs, s.regs, sizeof t.regs);
      t.regs_addr = s.regs_addr;
      t.scan_from = static_cast<uint64_t>(t.regs[REG_RSP]) - kRedZone;
    } else {
      t.id = static_cast<uint64_t>(t.tid);  // no thread pointer without its cooperation
      ++result_.unresponsive_threads;
    }
    threads_.push_back(t);
  }
  result_.threads = threads_.size();
  for (ThreadInfo& t : threads_) {
    t.first_frame = static_cast<uint32_t>(frames_.size());
    if (t.stop_state != static_cast<int>(StopState::kStopped)) continue;
    capture::UnwoundFrame buf[kMaxFrames];
    const size_t n = unwinder_->Unwind(t.regs, buf, kMaxFrames);
    for (size_t i = 0; i < n; ++i) frames_.push_back(buf[i]);
    t.nframes = static_cast<uint32_t>(n);
  }
}

template <class Emit>
void Dump::ScanWords(uint64_t lo, uint64_t hi, Emit&& emit) {
  lo = (lo + 7) & ~uint64_t{7};
  while (lo + 8 <= hi) {
    const capture::Mapping* m = memory_.Find(lo);
    if (m == nullptr) return;
    if (!m->readable) {
      lo = m->end;
      continue;
    }
    const uint64_t end = std::min(hi, m->end);
    for (uint64_t a = lo; a + 8 <= end; a += 8) {
      const uint64_t v = Load(a);
      if (v != 0 && heap_.FindObject(v) != 0) emit(a, v);
    }
    lo = m->end;
  }
}

// The frame a stack word belongs to: the innermost frame whose sp is at or
// below it (the red zone belongs to the top frame).
uint64_t Dump::FrameOf(const ThreadInfo& t, uint64_t addr) const {
  if (t.nframes == 0) return 0;
  const capture::UnwoundFrame* f = frames_.begin() + t.first_frame;
  size_t best = 0;
  for (size_t i = 0; i < t.nframes && f[i].sp <= addr; ++i) best = i;
  return f[best].sp;
}

void Dump::RememberPolymorphic(uint64_t vptr, uint64_t ti, uint64_t size) {
  for (PolyType& p : poly_) {
    if (p.vptr == vptr) {
      p.size = std::min(p.size, size);
      return;
    }
  }
  poly_.push_back({vptr, ti, size});
}

void Dump::OnObject(const HeapObject& o, void* arg) {
  auto* d = static_cast<Dump*>(arg);
  uint64_t type = o.type, kind = o.kind;
  // Untyped objects that start with a vtable pointer are typed by it.
  if (type == 0 && o.size >= 8) {
    const uint64_t vptr = Load(o.addr);
    if (const uint64_t ti = d->vtables_.TypeInfoOf(vptr, d->memory_)) {
      // Linear in distinct classes: a handful of vtables per program.
      d->RememberPolymorphic(vptr, ti, o.size);
      type = vptr;
      kind = kObjRegular;
    }
  }
  d->writer_->Object({o.addr, type, kind, o.size}, reinterpret_cast<const void*>(o.addr));
  ++d->result_.objects;
  d->result_.object_bytes += o.size;
}

// Everything that reads the heap or the stacks: runs while the world is
// stopped (or in the forked child). Allocation-free.
void Dump::WriteFrozen(Writer& w) {
  uint64_t start = 0, end = 0;
  heap_.Range(&start, &end);
  w.Header();
  w.Params({0, sizeof(void*), 0, start, end});
  heap_.WriteMemStats(w);
  for (const ModuleRecord& m : module_records_) w.Module(m);
  heap_.WriteTypes(w);
  writer_ = &w;
  heap_.ForEachObject(&Dump::OnObject, this);

  for (uint32_t ti = 0; ti < threads_.size(); ++ti) {
    const ThreadInfo& t = threads_[ti];
    if (t.stop_state != static_cast<int>(StopState::kStopped)) continue;
    const capture::Mapping* stack = memory_.Find(t.scan_from + kRedZone);
    if (stack == nullptr) continue;
    ScanWords(std::max(t.scan_from, stack->start), stack->end,
              [&](uint64_t a, uint64_t v) { stack_roots_.push_back({a, v, FrameOf(t, a), ti}); });
    // Registers, where the kernel saved them on the thread's stack.
    if (t.regs_addr != 0) {
      const uint64_t top = t.nframes ? frames_[t.first_frame].sp : 0;
      for (int r = 0; r < NGREG; ++r) {
        const auto v = static_cast<uint64_t>(t.regs[r]);
        if (r != REG_RSP && r != REG_RIP && v != 0 && heap_.FindObject(v) != 0) {
          stack_roots_.push_back({t.regs_addr + 8 * static_cast<uint64_t>(r), v, top, ti});
        }
      }
    }
    // Static TLS below the thread pointer, unless it sits on the scanned stack.
    const uint64_t tp = t.self ? reinterpret_cast<uint64_t>(__builtin_thread_pointer()) : t.id;
    if (tls_size_ != 0 && tp > tls_size_ && !(tp >= stack->start && tp < stack->end)) {
      ScanWords(tp - tls_size_, tp, [&](uint64_t a, uint64_t v) { tls_roots_.push_back({a, v, t.tid}); });
    }
  }
  uint64_t table_start = 0, table_end = 0;
  heap_.AddressTable(&table_start, &table_end);
  for (const capture::Module& m : modules_) {
    // libdump.so's globals hold libdump's state, and addresses that are not
    // references (arena bounds, the page heap's spans): a word there roots
    // only libdump's own objects, never one of the program's it happens to
    // point at (the first object of an arena, otherwise "held by" the page
    // heap).
    const bool own_module = &m == own_module_;
    for (const capture::Segment& s : m.segments) {
      if (!s.writable) continue;
      auto emit = [&](uint64_t a, uint64_t v) {
        if (a >= table_start && a < table_end) return;
        if (own_module && !heap_.IsOwnObject(heap_.FindObject(v))) return;
        data_roots_.push_back({a, v});
      };
      // RELRO holds relocated pointers to code and constants, never to the heap.
      if (m.relro_end > s.start && m.relro_start < s.end) {
        if (s.start < m.relro_start) ScanWords(s.start, m.relro_start, emit);
        if (m.relro_end < s.end) ScanWords(m.relro_end, s.end, emit);
      } else {
        ScanWords(s.start, s.end, emit);
      }
    }
  }
  // The dump's own state (module list, symbolizer, unwinder and what they
  // allocated, libunwind's caches among it) lies in the heap too, held by
  // this object on the dumper's stack, which is not scanned: it is not the
  // program's. Rooted under its own name, it is not reported as the
  // program's leak, and the roots page says whose it is.
  const auto self = reinterpret_cast<uint64_t>(this);
  ScanWords(self, self + sizeof *this, [&](uint64_t, uint64_t v) { own_roots_.push_back(v); });
  for (const auto& [slot, description] : RootRegistry::Instance().roots()) {
    const auto a = reinterpret_cast<uint64_t>(slot);
    registered_values_.push_back(memory_.Readable(a, 8) ? Load(a) : 0);
  }
  heap_.WriteAllocStacks(w);
}

// Names need the symbolizer's demangling, which allocates: this part runs
// after the world resumed. Everything it writes was captured while stopped.
void Dump::WriteNamed(Writer& w) {
  for (const PolyType& p : poly_) {
    w.Type({p.vptr, p.size, VtableRecognizer::ClassName(p.type_info), false, {}});
    w.TypeInfo({p.vptr, kTypePolymorphic | kTypeConservative, p.vptr, 0, 0});
  }
  for (const PolyType& p : poly_) w.Itab({p.vptr, 1});

  size_t next_root = 0;  // roots were collected thread by thread, in this order
  for (uint32_t ti = 0; ti < threads_.size(); ++ti) {
    const ThreadInfo& t = threads_[ti];
    const capture::UnwoundFrame* f = frames_.begin() + t.first_frame;
    std::vector<std::string> names(t.nframes);
    std::vector<const capture::Module*> modules(t.nframes);
    uint64_t gopc = 0;
    for (size_t i = 0; i < t.nframes; ++i) {
      // Above the top frame pcs are return addresses: look up the call itself.
      const capture::Symbol s = symbolizer_->Lookup(f[i].pc - (i > 0 ? 1 : 0));
      modules[i] = s.module;
      if (!s.name.empty()) {
        names[i] = capture::Demangle(s.name);
      } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, "0x%llx",
                      static_cast<unsigned long long>(s.module ? f[i].pc - s.module->base : f[i].pc));
        names[i] = s.module ? s.module->path + "+" + buf : buf;
      }
      if (i > 0 && (s.name == "start_thread" || s.name == "__libc_start_call_main")) gopc = f[i - 1].entry;
    }
    // Without libc's symbols: the start routine is the first frame above the
    // C library's own frames at the bottom of the stack.
    for (size_t i = t.nframes; gopc == 0 && i-- > 0;) {
      const bool in_libc = modules[i] && modules[i]->path.find("/libc.so") != std::string::npos;
      if (!in_libc) gopc = f[i].entry;
    }
    GoroutineRecord g;
    g.addr = t.id;
    g.tos = t.nframes ? f[0].sp : 0;
    g.goid = static_cast<uint64_t>(t.tid);
    g.gopc = gopc;
    if (t.self) {
      g.status = kStatusRunning;
    } else if (t.stop_state != static_cast<int>(StopState::kStopped)) {
      g.status = kStatusWaiting;
      g.wait_reason = "not stopped (stop signal blocked or thread stuck in the kernel)";
    } else if (t.sched_state == 'R') {
      g.status = kStatusRunnable;
    } else if (t.sched_state == 'D') {
      g.status = kStatusSyscall;
      g.wait_reason = SyscallWaitReason(t.syscall_nr);
    } else {
      g.status = kStatusWaiting;
      g.wait_reason = t.syscall_nr >= 0 ? SyscallWaitReason(t.syscall_nr) : "stopped";
    }
    g.is_system = false;
    g.is_background = false;
    w.Goroutine(g);
    w.ThreadInfo({t.id, static_cast<uint64_t>(t.tid), t.name});
    for (size_t i = 0; i < t.nframes; ++i) {
      w.Frame({f[i].sp, i + 1 < t.nframes ? f[i + 1].sp : 0, f[i].entry, f[i].pc, names[i]});
    }
    for (; next_root < stack_roots_.size() && stack_roots_[next_root].thread == ti; ++next_root) {
      const StackRoot& r = stack_roots_[next_root];
      if (r.frame != 0) {
        w.StackRoot({r.addr, r.ptr, r.frame});
      } else {  // a stack that could not be unwound has no frame to name
        w.OtherRoot("stack of thread " + std::to_string(t.tid), r.ptr);
      }
    }
  }
  for (const DataRoot& r : data_roots_) w.DataRoot({r.addr, r.ptr});
  for (const TlsRoot& r : tls_roots_) {
    w.OtherRoot("thread-local storage of thread " + std::to_string(r.tid), r.ptr);
  }
  for (const uint64_t v : own_roots_) w.OtherRoot("libdump: the heap dump being written", v);
  size_t i = 0;
  for (const auto& [slot, description] : RootRegistry::Instance().roots()) {
    w.OtherRoot(description, registered_values_[i++]);
  }
  for (const auto& [obj, fn] : RootRegistry::Instance().finalizers()) {
    const auto code = reinterpret_cast<uint64_t>(fn);
    w.Finalizer({reinterpret_cast<uint64_t>(obj), code, code, 0, 0});
  }
  w.Eof();
}

// "libdump: ..." on stderr with one write(): stdio's lock may be held by a
// stopped thread.
void Report(const char* what, int err) {
  char line[256];
  const char* name = strerrorname_np(err);
  const int n = std::snprintf(line, sizeof line, "libdump: %s (%s)\n", what, name ? name : "?");
  if (n > 0) (void)!write(2, line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
}

// Object payloads go to the kernel straight from the heap (writev) instead
// of through the buffer: under a third of the copying for 16 B-4 KiB objects.
// Below ~256 B an iovec (16 B, and a piece of the buffer around it) costs more
// in the kernel than a memcpy (docs/HEAPDUMP.md, "Zero-copy").
WriterOptions WriterFor(const DumpOptions& o) {
  return {.seed_only = o.seed_only, .buffer_size = 1 << 20, .gather_min = kGatherMin};
}

DumpResult Dump::Run(int fd) {
  // The sink is made after the stop (or in a forked child), where opening a
  // library could wait forever on a loader lock a stopped thread holds.
  bool loaded = true;
  if (options_.zstd) {
    const capture::LibraryOpenSection opening;  // a fork waits for it
    loaded = ZstdSink::LoadLibrary();
  }
  if (!loaded) {
    result_.error = ELIBACC;
    return result_;
  }
  if (!Prepare()) {
    result_.error = ENOMEM;
    return result_;
  }
  heap_.Prepare();
  capture::WorldStop stop(slots_, kMaxThreads);
  const uint64_t t0 = NowNs();
  if (!stop.Stop(options_.stop_timeout_ms)) {
    heap_.Finish();
    result_.error = stop.needs_more_slots() ? EAGAIN : ENOSYS;
    return result_;
  }
  memory_.Read();  // stacks of threads started since Prepare()
  CaptureThreads(stop);
  if (options_.fork_snapshot) {
    const pid_t parent = getpid();
    const pid_t child = _Fork();
    if (child == 0) {
      // A private copy of the frozen process: write it all and leave without
      // running anything of the parent's (no atexit, no stdio flush). A dump
      // whose process is killed stays PATH.partial: its writer goes too.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(ESRCH);
      DumpOutput out(fd, options_);
      {
        Writer w(out.sink(), WriterFor(options_));
        WriteFrozen(w);
        WriteNamed(w);
      }
      _exit(out.Finish());
    }
    if (child > 0) {
      stop.Resume();
      result_.pause_ns = NowNs() - t0;
      heap_.Finish();
      int status = 0;
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      result_.error = WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
      return result_;
    }
    // No fork (RLIMIT_NPROC, no memory for the page tables, seccomp): the
    // dump is still written, with the world stopped for all of it.
    result_.fork_failed = true;
    Report("cannot fork the heap dump's snapshot: writing it with the program stopped for the whole dump", errno);
  }
  std::optional<DumpOutput> out;
  std::optional<Writer> w;
  {
    const OwnPart own(heap_, OwnComponent::kDumpBuffer);
    out.emplace(fd, options_);
    w.emplace(out->sink(), WriterFor(options_));
  }
  {
    WriteFrozen(*w);
    w->Flush();  // gathered payloads are read from the heap: before it moves again
    stop.Resume();
    result_.pause_ns = NowNs() - t0;
    heap_.Finish();
    WriteNamed(*w);
  }
  w.reset();
  result_.error = out->Finish();
  return result_;
}

// One dump at a time. A pthread mutex, so that a child forked during a dump
// (which stays the parent's: its threads are not in the child) can free it.
pthread_mutex_t g_dump_mutex = PTHREAD_MUTEX_INITIALIZER;

void ForkChild() {
  static const pthread_mutex_t kFree = PTHREAD_MUTEX_INITIALIZER;
  g_dump_mutex = kFree;
  RootRegistry::ResetAfterForkIfCreated();
}

struct DumpLock {
  DumpLock() {
    // Child-only and allocation-free: its place among the process's other
    // fork handlers does not matter.
    static const int registered = pthread_atfork(nullptr, nullptr, ForkChild);
    (void)registered;
    pthread_mutex_lock(&g_dump_mutex);
  }
  ~DumpLock() { pthread_mutex_unlock(&g_dump_mutex); }
};

}  // namespace

__attribute__((noinline)) DumpResult WriteHeapDump(HeapSource& heap, int fd, const DumpOptions& options) {
  // The caller's frames are roots; ours (and the dumper's state) are not.
  const auto scan_from = reinterpret_cast<uint64_t>(__builtin_frame_address(0)) + 16;
  // What the dump allocates (the root registry too, if this creates it) is
  // libdump's own, not the program's.
  const OwnPart own(heap, OwnComponent::kDumpWriter);
  DumpLock one_at_a_time;
  // A reader that went away must cost an EPIPE, not the process.
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  std::lock_guard<std::mutex> registry(RootRegistry::Instance().mutex());
  DumpResult result;
  {
    Dump dump(heap, options, scan_from);
    result = dump.Run(fd);
  }
  const timespec zero{0, 0};
  while (sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return result;
}

}  // namespace libdump::heapdump
