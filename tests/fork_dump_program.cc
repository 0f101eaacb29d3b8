// A program that forks while heap dumps are requested, for the preload's
// fork tests (tests/fork_dump_stress.sh, scripts/fork_dump_stress.sh).
//
//   fork_dump_program SECONDS DLOPEN_LIB DUMP_DIR [SIGNAL]
//
// Four threads mutate a shared heap; the main thread forks a child every
// 20 ms, and the child allocates, dlopens and dlcloses DLOPEN_LIB, and exits;
// another thread sends SIGNAL (default SIGUSR2, the dump signal) to the
// process every 50 ms. Every fifth child is sent SIGNAL as soon as it is
// forked and must dump itself: it waits (up to 10 s) for a complete dump
// named with its own pid in DUMP_DIR. A child that does not exit within 20 s
// is a hang: the program kills it and fails. Prints `forks N signals M
// child_dumps K` and exits 0 if every child exited 0.
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
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
        std::fprintf(stderr, "child %d: no dump of its own after its signal\n", getpid());
        _exit(3);
      }
      usleep(2000);
    }
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s SECONDS DLOPEN_LIB DUMP_DIR [SIGNAL]\n", argv[0]);
    return 2;
  }
  const int64_t duration_ms = static_cast<int64_t>(std::atof(argv[1]) * 1000);
  const char* lib = argv[2];
  const char* dump_dir = argv[3];
  const int sig = argc > 4 ? std::atoi(argv[4]) : SIGUSR2;
  Shared shared;
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 4; ++i) threads.emplace_back(Mutate, &shared, 17 + i);
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
  const int64_t end = NowMs() + duration_ms;
  while (NowMs() < end && failures == 0) {
    const bool dumps = forks % 5 == 4;
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      failures = 1;
      break;
    }
    if (pid == 0) Child(lib, dump_dir, dumps);
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
      std::fprintf(stderr, "child %d hung after fork %ld\n", pid, forks);
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
  for (auto& t : threads) t.join();
  std::printf("forks %ld signals %ld child_dumps %ld\n", forks, signals.load(), child_dumps);
  return failures;
}
