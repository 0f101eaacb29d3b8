// The threadcreate profile: each live thread counted under the stack that
// created it; a thread that exits leaves it; a fork child keeps only the
// forking thread.
#include "samplers/threads/thread_create.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"
#include "samplers/symbolize/pprof_symbolizer.h"

namespace libdump::samplers {
namespace {

using testing::Decode;
using testing::TempFile;

// The profile is recorded once enabled.
const bool g_enabled = [] {
  EnableThreadCreateProfile();
  return true;
}();

std::atomic<bool> g_release{false};

void* Park(void*) {
  while (!g_release.load()) usleep(1000);
  return nullptr;
}

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// The record's path without the interposition (which sanitizer builds do
// not have): a record taken in a known function, the thread started by
// glibc's pthread_create directly on the trampoline.
using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

// glibc's (or the sanitizer runtime's) pthread_create, past this program's.
CreateFn NextPthreadCreate() {
  void* f = dlsym(RTLD_NEXT, "pthread_create");
  return f != nullptr ? reinterpret_cast<CreateFn>(f) : &pthread_create;
}

__attribute__((noinline)) pthread_t RecordedCreatorOne() {
  ThreadCreateRecord* r = BeginThreadCreate(Park, nullptr);
  pthread_t t;
  EXPECT_EQ(NextPthreadCreate()(&t, nullptr, RunCreatedThread, r), 0);
  asm volatile("" ::: "memory");  // not a tail call: this frame stays on the recorded stack
  return t;
}

__attribute__((noinline)) pthread_t RecordedCreatorTwo() {
  ThreadCreateRecord* r = BeginThreadCreate(Park, nullptr);
  pthread_t t;
  EXPECT_EQ(NextPthreadCreate()(&t, nullptr, RunCreatedThread, r), 0);
  asm volatile("" ::: "memory");
  return t;
}

// Live threads whose recorded stack reaches f.
int CreatedBy(const std::vector<ThreadCreation>& live, const ProfileSymbolizer& sym, const std::string& f) {
  int n = 0;
  for (const ThreadCreation& c : live) {
    for (uintptr_t pc : c.stack) {
      if (sym.FunctionName(pc).find(f) != std::string::npos) {
        ++n;
        break;
      }
    }
  }
  return n;
}

TEST(ThreadCreate, RecordsLiveThreadsAndForgetsExitedOnes) {
  g_release = false;
  const size_t in_use = ThreadCreateRecordsInUse();
  const pthread_t a1 = RecordedCreatorOne(), a2 = RecordedCreatorOne(), b = RecordedCreatorTwo();
  usleep(20000);  // the threads claim their records as they start
  pprof::ProfileBuilder dummy({{"x", "count"}}, {"x", "count"}, 1);
  ProfileSymbolizer sym(dummy);
  std::vector<ThreadCreation> live = LiveThreadCreations();
  EXPECT_EQ(CreatedBy(live, sym, "RecordedCreatorOne"), 2);
  EXPECT_EQ(CreatedBy(live, sym, "RecordedCreatorTwo"), 1);
  // The test's own thread is listed, without a record (nothing created it
  // through pthread_create).
  bool self = false;
  for (const ThreadCreation& c : live) self |= c.tid == Tid() && c.stack.empty();
  EXPECT_TRUE(self);
  g_release = true;
  pthread_join(a1, nullptr);
  pthread_join(a2, nullptr);
  pthread_join(b, nullptr);
  live = LiveThreadCreations();
  EXPECT_EQ(CreatedBy(live, sym, "RecordedCreatorOne"), 0);
  EXPECT_EQ(CreatedBy(live, sym, "RecordedCreatorTwo"), 0);
  EXPECT_EQ(ThreadCreateRecordsInUse(), in_use) << "an exited thread kept its record";
}

__attribute__((noinline)) void* ExitHere(void*) {
  pthread_exit(nullptr);
}

__attribute__((noinline)) void* PauseHere(void*) {
  for (;;) pause();  // a cancellation point
}

// pthread_exit and cancellation unwind the trampoline: the record goes
// back as when the routine returns.
TEST(ThreadCreate, ExitAndCancellationGiveTheRecordBack) {
  const size_t in_use = ThreadCreateRecordsInUse();
  pthread_t t;
  ThreadCreateRecord* r = BeginThreadCreate(ExitHere, nullptr);
  ASSERT_EQ(NextPthreadCreate()(&t, nullptr, RunCreatedThread, r), 0);
  pthread_join(t, nullptr);
  EXPECT_EQ(ThreadCreateRecordsInUse(), in_use) << "pthread_exit kept the record";
  r = BeginThreadCreate(PauseHere, nullptr);
  ASSERT_EQ(NextPthreadCreate()(&t, nullptr, RunCreatedThread, r), 0);
  usleep(10000);
  pthread_cancel(t);
  void* rc = nullptr;
  pthread_join(t, &rc);
  EXPECT_EQ(rc, PTHREAD_CANCELED);
  EXPECT_EQ(ThreadCreateRecordsInUse(), in_use) << "cancellation kept the record";
}

TEST(ThreadCreate, ForkChildKeepsOnlyTheForkingThread) {
  g_release = false;
  const pthread_t other = RecordedCreatorTwo();
  ThreadCreateRecord* r = BeginThreadCreate(
      [](void*) -> void* {
        pprof::ProfileBuilder dummy({{"x", "count"}}, {"x", "count"}, 1);
        ProfileSymbolizer sym(dummy);  // before the fork: it allocates and reads files
        const pid_t child = fork();
        if (child == 0) {
          const std::vector<ThreadCreation> live = LiveThreadCreations();
          // One thread, this one, under its creator's stack in the parent.
          const bool ok = ThreadCreateRecordsInUse() == 1 && live.size() == 1 && live[0].tid == Tid() && CreatedBy(live, sym, "RecordedCreatorOne") == 0 &&
                          CreatedBy(live, sym, "ThreadCreate_ForkChild") == 1;
          _exit(ok ? 0 : 1);
        }
        int status = -1;
        waitpid(child, &status, 0);
        return reinterpret_cast<void*>(static_cast<intptr_t>(WIFEXITED(status) ? WEXITSTATUS(status) : 2));
      },
      nullptr);
  pthread_t t;
  ASSERT_EQ(NextPthreadCreate()(&t, nullptr, RunCreatedThread, r), 0);
  void* rc = nullptr;
  pthread_join(t, &rc);
  EXPECT_EQ(rc, nullptr) << "the child saw other threads' records, or lost its own";
  g_release = true;
  pthread_join(other, nullptr);
}

// What pthread_create's interposition records (not in sanitizer builds,
// whose runtimes interpose pthread_create themselves).
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((noinline)) void CreatorA(std::vector<pthread_t>* out) {
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, Park, nullptr), 0);
  out->push_back(t);
  asm volatile("" ::: "memory");
}

// One call site, so that both threads have one stack (noipa: the loop is
// not unrolled into two sites for a known count).
__attribute__((noipa)) void CreateFromA(int n, std::vector<pthread_t>* out) {
  for (int i = 0; i < n; ++i) CreatorA(out);
}

__attribute__((noinline)) void CreatorB(std::vector<std::thread>* out) {
  out->emplace_back([] { Park(nullptr); });
  asm volatile("" ::: "memory");
}

TEST(ThreadCreateProfile, EachLiveThreadUnderItsCreator) {
  g_release = false;
  std::vector<pthread_t> a;
  std::vector<std::thread> b;
  CreateFromA(2, &a);
  CreatorB(&b);
  usleep(20000);
  TempFile pb, text;
  ASSERT_TRUE(WriteThreadCreateProfile(pb.fd(), 0));
  ASSERT_TRUE(WriteThreadCreateProfile(text.fd(), 1));
  const testing::DecodedProfile p = Decode(pb.Contents());
  ASSERT_EQ(p.sample_types, std::vector<std::string>{"threadcreate"});
  EXPECT_EQ(p.period_type, "threadcreate");
  EXPECT_EQ(p.Total("threadcreate", "CreatorA"), 2);
  EXPECT_EQ(p.Total("threadcreate", "CreatorB"), 1);
  // Every sample's leaf is the call to pthread_create, the recorder's own
  // frames cut, or the marker of a thread without a record (this one).
  for (const testing::DecodedSample& s : p.samples) {
    ASSERT_FALSE(s.functions.empty());
    EXPECT_TRUE(s.functions[0] == "pthread_create" || s.functions[0] == "libdump::samplers::CreatorNotRecorded()")
        << s.functions[0];
  }
  EXPECT_EQ(p.Total("threadcreate", "CreatorNotRecorded"), 1);  // the test's main thread
  const std::string t = text.Contents();
  EXPECT_EQ(t.rfind("threadcreate profile: total 4\n", 0), 0u) << t;
  EXPECT_NE(t.find("\n2 @ 0x"), std::string::npos) << t;
  EXPECT_NE(t.find("CreatorA"), std::string::npos) << t;

  g_release = true;
  for (pthread_t x : a) pthread_join(x, nullptr);
  for (std::thread& x : b) x.join();
  TempFile after;
  ASSERT_TRUE(WriteThreadCreateProfile(after.fd(), 0));
  const testing::DecodedProfile q = Decode(after.Contents());
  EXPECT_EQ(q.Total("threadcreate", "CreatorA"), 0);
  EXPECT_EQ(q.Total("threadcreate", "CreatorB"), 0);
  EXPECT_EQ(q.Total("threadcreate"), 1);
}
#endif

}  // namespace
}  // namespace libdump::samplers
