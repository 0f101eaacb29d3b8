// A program that forks while heap dumps are requested, for the preload's
// fork tests (tests/heapdump/fork_dump_stress.sh, bench/fork/run.sh).
//
//   fork_dump_program SECONDS DLOPEN_LIB DUMP_DIR [SIGNAL [MAX_FORKS]]
//
// Four threads mutate a shared heap, and three more hold the dynamic
// loader's module-list lock often, as programs do: one reads the module
// list (dl_iterate_phdr, as libunwind and profilers do) pausing inside it,
// one throws and catches C++ exceptions, one dlopens and dlcloses a library
// the process has not loaded (libutil.so.1, glibc's stub). The main thread
// forks a child every 20 ms (for SECONDS, or until MAX_FORKS forks), and the
// child allocates, dlopens and dlcloses DLOPEN_LIB, and exits;
// another thread sends SIGNAL (default SIGUSR2, the dump signal) to the
// process every 50 ms. Every fifth child is sent SIGNAL as soon as it is
// forked and must dump itself: it waits (up to 10 s, then it stays, to be
// found hung) for a complete dump named with its own pid in DUMP_DIR. A child that does not exit within 20 s
// is a hang: the program prints where it is (gdb's backtrace when gdb is
// installed, the kernel's wait channel and system call otherwise), kills it
// and fails; a fork() that has not returned after 60 s is reported the same
// way for the parent. Prints `forks N signals M child_dumps K fork_max_us X
// fork_median_us Y` (how long each fork() call took in the parent; each one
// is also appended to the file FORK_DUMP_LATENCIES names, if set) and exits
// 0 if every child exited 0.
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};

struct Shared {
  std::mutex mu;
  std::map<int, std::unique_ptr<std::string>> objects;
};

void Mutate(Shared* s, unsigned seed) {
  while (!g_stop.load(std::memory_order_relaxed)) {
    seed = seed * 1103515245 + 12345;
    const int key = static_cast<int>(seed >> 20) % 4096;
    auto value = std::make_unique<std::string>(16 + (seed >> 8) % 300, 'x');
    std::vector<int> scratch(1 + (seed >> 4) % 64, key);
    std::lock_guard<std::mutex> g(s->mu);
    s->objects[key] = std::move(value);
  }
}

// Holds the module-list lock ~100 us in every ~1 ms.
void ReadModules() {
  while (!g_stop.load(std::memory_order_relaxed)) {
    dl_iterate_phdr(
        [](dl_phdr_info*, size_t, void*) {
          usleep(100);
          return 1;
        },
        nullptr);
    usleep(1000);
  }
}

void Throw() {
  long caught = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    try {
      throw std::runtime_error("fork_dump_program");
    } catch (const std::runtime_error&) {
      ++caught;
    }
    usleep(500);
  }
}

void LoadAndUnload() {
  while (!g_stop.load(std::memory_order_relaxed)) {
    if (void* h = dlopen("libutil.so.1", RTLD_NOW | RTLD_LOCAL)) dlclose(h);
    usleep(2000);
  }
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Whether dir holds a complete file whose name has .PID. in it.
bool HasDumpOf(const char* dir, pid_t pid) {
  const std::string tag = "." + std::to_string(pid) + ".";
  DIR* d = opendir(dir);
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const bool partial = name.size() > 8 && name.compare(name.size() - 8, 8, ".partial") == 0;
    if (!partial && name.find(tag) != std::string::npos) found = true;
  }
  closedir(d);
  return found;
}

std::string ReadSmall(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s, '\0');
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Where process pid (a hung child, or this process) is, on stderr.
void ReportWhere(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::fprintf(stderr, "  wchan %s, syscall %s\n", ReadSmall(proc + "/wchan").c_str(),
               ReadSmall(proc + "/syscall").c_str());
  if (std::system("command -v gdb > /dev/null 2>&1") == 0) {
    const std::string cmd = "timeout -k 10 60 gdb -p " + std::to_string(pid) +
                            " -batch -nx -ex 'thread apply all bt 40' 2>/dev/null | grep -E '^(#|Thread)' >&2";
    (void)!std::system(cmd.c_str());
  } else {
    std::fprintf(stderr, "  (install gdb for the stack)\n");
  }
}

[[noreturn]] void Child(const char* lib, const char* dump_dir, bool wait_for_dump) {
  std::vector<std::unique_ptr<std::string>> kept;
  for (int i = 0; i < 200; ++i) kept.push_back(std::make_unique<std::string>(40 + i, 'c'));
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "child: dlopen %s: %s\n", lib, dlerror());
    _exit(2);
  }
  for (int i = 0; i < 200; ++i) kept[static_cast<size_t>(i)]->append(100, 'd');
  dlclose(h);
  if (wait_for_dump) {
    const int64_t deadline = NowMs() + 10000;
    while (!HasDumpOf(dump_dir, getpid())) {
      if (NowMs() > deadline) {
        // Left for the parent to find hung, so that it reports where this
        // child's dumper is.
        std::fprintf(stderr, "child %d: no dump of its own 10 s after its signal\n", getpid());
        for (;;) pause();
      }
      usleep(2000);
    }
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SECONDS DLOPEN_LIB DUMP_DIR [SIGNAL [MAX_FORKS]]\n", argv[0]);
    return 2;
  }
  const int64_t duration_ms = static_cast<int64_t>(std::atof(argv[1]) * 1000);
  const char* lib = argv[2];
  const char* dump_dir = argv[3];
  const int sig = argc > 4 && std::atoi(argv[4]) > 0 ? std::atoi(argv[4]) : SIGUSR2;
  const long max_forks = argc > 5 ? std::atol(argv[5]) : 0;  // 0: until SECONDS have passed
  Shared shared;
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 4; ++i) threads.emplace_back(Mutate, &shared, 17 + i);
  threads.emplace_back(ReadModules);
  threads.emplace_back(Throw);
  threads.emplace_back(LoadAndUnload);
  std::atomic<long> signals{0};
  std::thread signaller([&] {
    while (!g_stop.load(std::memory_order_relaxed)) {
      usleep(50000);
      kill(getpid(), sig);
      signals.fetch_add(1, std::memory_order_relaxed);
    }
  });
  long forks = 0, child_dumps = 0;
  int failures = 0;
  std::vector<int64_t> fork_us;
  fork_us.reserve(1 << 16);
  // A fork() that never returns: say where this process is, and fail.
  std::atomic<int64_t> fork_started{0};
  std::thread watchdog([&] {
    while (!g_stop.load(std::memory_order_relaxed)) {
      usleep(200000);
      const int64_t t = fork_started.load();
      if (t != 0 && NowMs() - t > 60000) {
        std::fprintf(stderr, "parent %d: fork %ld has not returned after 60 s\n", getpid(), forks + 1);
        ReportWhere(getpid());
        _exit(1);
      }
    }
  });
  const int64_t end = NowMs() + duration_ms;
  while (NowMs() < end && failures == 0 && (max_forks == 0 || forks < max_forks)) {
    const bool dumps = forks % 5 == 4;
    timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fork_started.store(NowMs());
    const pid_t pid = fork();
    if (pid == 0) Child(lib, dump_dir, dumps);
    fork_started.store(0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fork_us.push_back((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
    if (pid < 0) {
      std::perror("fork");
      failures = 1;
      break;
    }
    ++forks;
    if (dumps) {
      kill(pid, sig);  // at once: the child must take it even before it is set up
      ++child_dumps;
    }
    int status = 0;
    const int64_t deadline = NowMs() + 20000;
    pid_t r;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && NowMs() < deadline) usleep(1000);
    if (r == 0) {
      std::fprintf(stderr, "child %d hung after fork %ld; where it is:\n", pid, forks);
      ReportWhere(pid);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      failures = 1;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "child %d ended with status 0x%x after fork %ld\n", pid, status, forks);
      failures = 1;
    }
    usleep(20000);
  }
  g_stop.store(true);
  signaller.join();
  watchdog.join();
  for (auto& t : threads) t.join();
  // Every fork's time, one a line, for bench/fork/run.sh.
  if (const char* path = std::getenv("FORK_DUMP_LATENCIES")) {
    if (std::FILE* f = std::fopen(path, "a")) {
      for (int64_t us : fork_us) std::fprintf(f, "%lld\n", static_cast<long long>(us));
      std::fclose(f);
    }
  }
  int64_t max_us = 0, median_us = 0;
  if (!fork_us.empty()) {
    std::sort(fork_us.begin(), fork_us.end());
    max_us = fork_us.back();
    median_us = fork_us[fork_us.size() / 2];
  }
  std::printf("forks %ld signals %ld child_dumps %ld fork_max_us %lld fork_median_us %lld\n", forks,
              signals.load(), child_dumps, static_cast<long long>(max_us), static_cast<long long>(median_us));
  return failures;
}
