// WriteHeapDump over a heap the test lays out itself: exactly the expected
// objects, types, roots, frames and threads come back.
#include "heap_dump_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "libdump/format/reader.h"
#include "root_registry.h"

namespace demo {
struct Widget {
  virtual ~Widget() = default;
  virtual int Id() const { return 7; }
  long payload = 0x5757;
};
}  // namespace demo

namespace libdump::heapdump {
namespace {

using namespace format;

struct Node {
  Node* next;
  int64_t value;
};
constexpr uint64_t kNodeType = 0x1000;

// Objects at fixed offsets of one mapping, so nothing here lives in malloc's heap.
class FakeHeap : public HeapSource {
 public:
  FakeHeap() {
    base_ = static_cast<uint8_t*>(mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (int i = 0; i < 3; ++i) {
      nodes[i] = new (base_ + 64 * i) Node{nullptr, 100 + i};
      objects_.push_back({Addr(nodes[i]), 32, kNodeType, kObjRegular});
    }
    nodes[0]->next = nodes[1];
    nodes[1]->next = nodes[2];
    widget = new (base_ + 512) demo::Widget;
    objects_.push_back({Addr(widget), 32, 0, kObjRegular});
    blob = base_ + 1024;
    std::memset(blob, 0xab, 100);
    objects_.push_back({Addr(blob), 112, 0, kObjRegular});
  }
  ~FakeHeap() override {
    widget->~Widget();
    munmap(base_, kSize);
  }
  static uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

  void Range(uint64_t* start, uint64_t* end) override {
    *start = Addr(base_);
    *end = Addr(base_) + kSize;
  }
  void ForEachObject(void (*fn)(const HeapObject&, void*), void* arg) override {
    for (const HeapObject& o : objects_) fn(o, arg);
  }
  uint64_t FindObject(uint64_t addr) override {
    for (const HeapObject& o : objects_) {
      if (addr >= o.addr && addr < o.addr + o.size) return o.addr;
    }
    return 0;
  }
  void WriteTypes(Writer& w) override {
    w.Type(node_type_);
    w.TypeFields(node_fields_);
  }
  void WriteMemStats(Writer& w) override { w.MemStats(stats_); }

  Node* nodes[3];
  demo::Widget* widget;
  uint8_t* blob;

 private:
  static constexpr size_t kSize = 1 << 16;
  uint8_t* base_;
  std::vector<HeapObject> objects_;
  TypeRecord node_type_{kNodeType, sizeof(Node), "Node", false, {{kFieldPtr, 0}}};
  TypeFieldsRecord node_fields_{kNodeType, {{0, kFieldPtr, 8, "next"}, {8, kFieldInt, 8, "value"}}};
  MemStatsRecord stats_{{{"objects", 5}}};
};

Node* g_root = nullptr;  // a data root

struct Parsed {
  std::map<uint64_t, ObjectRecord> objects;
  std::map<uint64_t, std::string> object_bytes;
  std::map<uint64_t, TypeRecord> types;
  std::vector<ItabRecord> itabs;
  std::vector<GoroutineRecord> goroutines;
  std::map<uint64_t, ThreadInfoRecord> thread_info;  // by goroutine addr
  std::map<uint64_t, FrameRecord> frames;            // by sp
  std::vector<StackRootRecord> stack_roots;
  std::vector<DataRootRecord> data_roots;
  std::vector<OtherRootRecord> other_roots;
  std::vector<FinalizerRecord> finalizers;
  ParamsRecord params;
  size_t extensions = 0;
  Compression compression = Compression::kNone;
};

Parsed ReadDump(int fd) {
  lseek(fd, 0, SEEK_SET);
  Reader reader(fd);
  Parsed p;
  p.compression = reader.compression();
  Record r;
  while (reader.Next(r)) {
    p.extensions += IsExtension(r.kind);
    switch (r.kind) {
      case Kind::kObject: {
        p.objects[r.object.addr] = r.object;
        auto s = reader.Payload();
        p.object_bytes[r.object.addr].assign(s.begin(), s.end());
        break;
      }
      case Kind::kType: p.types[r.type.addr] = r.type; break;
      case Kind::kItab: p.itabs.push_back(r.itab); break;
      case Kind::kGoroutine: p.goroutines.push_back(r.goroutine); break;
      case Kind::kThreadInfo: p.thread_info[r.thread_info.goroutine] = r.thread_info; break;
      case Kind::kFrame: p.frames[r.frame.sp] = r.frame; break;
      case Kind::kStackRoot: p.stack_roots.push_back(r.stack_root); break;
      case Kind::kDataRoot: p.data_roots.push_back(r.data_root); break;
      case Kind::kOtherRoot: p.other_roots.push_back(r.other_root); break;
      case Kind::kFinalizer: p.finalizers.push_back(r.finalizer); break;
      case Kind::kParams: p.params = r.params; break;
      default: break;
    }
  }
  return p;
}

int TempFile() {
  char path[] = "/tmp/libdump_heapdump_XXXXXX";
  const int fd = mkstemp(path);
  unlink(path);
  return fd;
}

void Finalize(void*) {}

// A thread parked on a condition variable with a heap pointer in its frame.
class BlockedWorker {
 public:
  explicit BlockedWorker(Node* keep) {
    t_ = std::thread([this, keep] {
      pthread_setname_np(pthread_self(), "blocked-worker");
      tid_ = static_cast<pid_t>(syscall(SYS_gettid));
      Node* volatile held = keep;  // on this thread's stack while it waits
      std::unique_lock<std::mutex> l(mu_);
      ready_ = true;
      cv_.notify_all();
      cv_.wait(l, [this] { return quit_; });
      (void)held;
    });
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return ready_; });
    }
    // Having released the mutex, the worker may not have reached the futex
    // wait yet: the test expects it blocked there.
    const std::string syscall_file = "/proc/self/task/" + std::to_string(tid_) + "/syscall";
    for (int i = 0; i < 2000 && !InFutexWait(syscall_file); ++i) usleep(1000);
  }
  ~BlockedWorker() {
    {
      std::lock_guard<std::mutex> l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    t_.join();
  }

 private:
  static bool InFutexWait(const std::string& syscall_file) {
    std::ifstream in(syscall_file);
    long nr = -1;
    return (in >> nr) && nr == SYS_futex;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, quit_ = false;
  pid_t tid_ = 0;
  std::thread t_;
};

TEST(WriteHeapDump, KnownGraphComesBackExactly) {
  FakeHeap heap;
  g_root = heap.nodes[0];
  RootRegistry::Instance().AddRoot(&heap.blob, "test: blob slot");
  RootRegistry::Instance().SetFinalizer(heap.widget, &Finalize);
  BlockedWorker worker(heap.nodes[2]);
  Node* volatile local = heap.nodes[1];  // a stack root of this thread
  const int fd = TempFile();
  const DumpResult res = WriteHeapDump(heap, fd, {});
  ASSERT_EQ(res.error, 0) << std::strerror(res.error);
  EXPECT_EQ(res.objects, 5u);
  EXPECT_GE(res.threads, 2u);
  const Parsed p = ReadDump(fd);
  close(fd);
  (void)local;

  uint64_t start, end;
  heap.Range(&start, &end);
  EXPECT_EQ(p.params.heap_start, start);
  EXPECT_EQ(p.params.heap_end, end);
  EXPECT_EQ(p.params.ptr_size, 8u);

  // Objects: exactly the five, with their bytes; the widget typed by its vtable.
  ASSERT_EQ(p.objects.size(), 5u);
  for (int i = 0; i < 3; ++i) {
    const uint64_t a = FakeHeap::Addr(heap.nodes[i]);
    ASSERT_TRUE(p.objects.count(a));
    EXPECT_EQ(p.objects.at(a).type, kNodeType);
    EXPECT_EQ(p.object_bytes.at(a).substr(0, 16), std::string(reinterpret_cast<char*>(heap.nodes[i]), 16));
  }
  uint64_t vptr;
  std::memcpy(&vptr, heap.widget, 8);
  EXPECT_EQ(p.objects.at(FakeHeap::Addr(heap.widget)).type, vptr);
  EXPECT_EQ(p.objects.at(FakeHeap::Addr(heap.blob)).type, 0u);
  ASSERT_TRUE(p.types.count(vptr));
  EXPECT_EQ(p.types.at(vptr).name, "demo::Widget");
  EXPECT_EQ(p.types.at(kNodeType).name, "Node");
  ASSERT_EQ(p.itabs.size(), 1u);
  EXPECT_EQ(p.itabs[0].addr, vptr);

  // Threads: this one running, the worker waiting in a futex, with its name.
  const GoroutineRecord* self = nullptr;
  const GoroutineRecord* blocked = nullptr;
  for (const GoroutineRecord& g : p.goroutines) {
    if (g.goid == static_cast<uint64_t>(gettid())) self = &g;
    if (p.thread_info.count(g.addr) && p.thread_info.at(g.addr).name == "blocked-worker") blocked = &g;
  }
  ASSERT_NE(self, nullptr);
  ASSERT_NE(blocked, nullptr);
  EXPECT_EQ(self->status, kStatusRunning);
  EXPECT_EQ(blocked->status, kStatusWaiting);
  EXPECT_EQ(blocked->wait_reason, "futex");
  // Frames chain from the top of each stack to its bottom.
  for (const GoroutineRecord* g : {self, blocked}) {
    ASSERT_TRUE(p.frames.count(g->tos)) << "no top frame";
    uint64_t sp = g->tos;
    int depth = 0;
    std::set<std::string> names;
    while (sp != 0 && depth < 512) {
      ASSERT_TRUE(p.frames.count(sp)) << "broken frame chain at depth " << depth;
      names.insert(p.frames.at(sp).name);
      sp = p.frames.at(sp).parent;
      ++depth;
    }
    EXPECT_GE(depth, 3);
    if (g == self) {
      EXPECT_TRUE(names.count("libdump::heapdump::WriteHeapDump(libdump::heapdump::HeapSource&, int, "
                              "libdump::heapdump::DumpOptions const&)"));
    } else {
      bool libc_start = false;
      for (const std::string& n : names) libc_start |= n == "start_thread" || n.find("libc.so") != std::string::npos;
      EXPECT_TRUE(libc_start) << "the thread does not start in the C library";
    }
  }

  // Roots: the local and the worker's variable on stacks, the global in data,
  // the registered slot with its description.
  auto has_stack_root = [&](const void* target) {
    for (const StackRootRecord& r : p.stack_roots) {
      if (r.ptr == FakeHeap::Addr(target)) {
        EXPECT_TRUE(p.frames.count(r.frame)) << "stack root names no frame";
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(has_stack_root(heap.nodes[1]));
  EXPECT_TRUE(has_stack_root(heap.nodes[2]));
  bool global = false;
  for (const DataRootRecord& r : p.data_roots) global |= r.addr == FakeHeap::Addr(&g_root) && r.ptr == FakeHeap::Addr(heap.nodes[0]);
  EXPECT_TRUE(global);
  bool registered = false;
  for (const OtherRootRecord& r : p.other_roots) registered |= r.description == "test: blob slot" && r.ptr == FakeHeap::Addr(heap.blob);
  EXPECT_TRUE(registered);
  ASSERT_EQ(p.finalizers.size(), 1u);
  EXPECT_EQ(p.finalizers[0].obj, FakeHeap::Addr(heap.widget));
  EXPECT_EQ(p.finalizers[0].code, reinterpret_cast<uint64_t>(&Finalize));

  RootRegistry::Instance().RemoveRoot(&heap.blob);
  RootRegistry::Instance().SetFinalizer(heap.widget, nullptr);
}

TEST(WriteHeapDump, ZstdSeedOnlyAndForkSnapshot) {
  FakeHeap heap;
  for (DumpOptions o : {DumpOptions{.zstd = true}, DumpOptions{.seed_only = true},
                        DumpOptions{.fork_snapshot = true}, DumpOptions{.zstd = true, .threads = 2},
                        DumpOptions{.zstd = true, .zstd_level = -5, .fork_snapshot = true, .threads = 3}}) {
    const int fd = TempFile();
    const DumpResult res = WriteHeapDump(heap, fd, o);
    ASSERT_EQ(res.error, 0) << std::strerror(res.error);
    const Parsed p = ReadDump(fd);
    close(fd);
    EXPECT_EQ(p.objects.size(), 5u);
    EXPECT_EQ(p.compression, o.zstd ? Compression::kZstd : Compression::kNone);
    if (o.seed_only) EXPECT_EQ(p.extensions, 0u);
    else EXPECT_GT(p.extensions, 0u);
    EXPECT_FALSE(p.goroutines.empty());
  }
}

TEST(WriteHeapDump, WriteFailuresReturnAnErrorAndTheProcessGoesOn) {
  FakeHeap heap;
  std::atomic<bool> quit{false};
  std::atomic<uint64_t> ticks{0};
  std::thread busy([&] { while (!quit) ticks.fetch_add(1); });

  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  close(pipefd[0]);
  EXPECT_EQ(WriteHeapDump(heap, pipefd[1], {}).error, EPIPE);
  close(pipefd[1]);

  EXPECT_EQ(WriteHeapDump(heap, 12345, {}).error, EBADF);
  const int full = open("/dev/full", O_WRONLY);
  ASSERT_GE(full, 0);
  EXPECT_EQ(WriteHeapDump(heap, full, {}).error, ENOSPC);
  EXPECT_EQ(WriteHeapDump(heap, full, {.zstd = true}).error, ENOSPC);
  EXPECT_EQ(WriteHeapDump(heap, full, {.zstd = true, .threads = 2}).error, ENOSPC);
  EXPECT_EQ(WriteHeapDump(heap, full, {.zstd = true, .fork_snapshot = true, .threads = 2}).error, ENOSPC);
  EXPECT_EQ(WriteHeapDump(heap, full, {.fork_snapshot = true}).error, ENOSPC);
  close(full);

  const uint64_t before = ticks.load();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ticks.load() == before && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_GT(ticks.load(), before) << "a thread stayed stopped after a failed dump";
  quit = true;
  busy.join();
}

// A process that may not fork (here a seccomp filter refuses clone) still
// gets its fork-snapshot dump, written stopped on one thread, and is told.
TEST(WriteHeapDump, WithoutForkTheSnapshotIsWrittenStopped) {
  const int fd = TempFile();
  int err_pipe[2];
  ASSERT_EQ(pipe(err_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(err_pipe[1], 2);
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(90);
    FakeHeap heap;
    const DumpResult r = WriteHeapDump(heap, fd, {.zstd = true, .fork_snapshot = true, .threads = 2});
    _exit(r.error != 0 ? 91 : !r.fork_failed ? 92 : r.objects != 5 ? 93 : 0);
  }
  close(err_pipe[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "90: no seccomp, 91: the dump failed, 92: it forked, 93: objects missing";
  EXPECT_EQ(err,
            "libdump: cannot fork the heap dump's snapshot: writing it with the program stopped for the whole dump "
            "(EAGAIN)\n");
  const Parsed p = ReadDump(fd);
  close(fd);
  EXPECT_EQ(p.objects.size(), 5u);
  EXPECT_EQ(p.compression, Compression::kZstd);
}

}  // namespace
}  // namespace libdump::heapdump
