// The process /debug/pprof serves in debug_server_safety.sh.
//   server_host_program hold MB SECONDS   MB of live 1 KiB blocks, then sleeps
//   server_host_program fork SECONDS      forks a child that sleeps (no exec);
//                                         prints "child PID", sleeps
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

// All of it: a heap dump's stop signal interrupts sleep().
void SleepFor(unsigned seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) sleep(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "hold") == 0) {
    std::vector<std::unique_ptr<char[]>> blocks;
    const long n = std::atol(argv[2]) * 1024;
    for (long i = 0; i < n; ++i) {
      blocks.emplace_back(new char[1024]);
      std::memset(blocks.back().get(), static_cast<int>(i), 1024);
    }
    std::printf("ready\n");
    std::fflush(stdout);
    SleepFor(static_cast<unsigned>(std::atoi(argv[3])));
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "fork") == 0) {
    const unsigned seconds = static_cast<unsigned>(std::atoi(argv[2]));
    const pid_t child = fork();
    if (child == 0) {
      SleepFor(seconds);
      _exit(0);
    }
    std::printf("child %d\n", static_cast<int>(child));
    std::fflush(stdout);
    SleepFor(seconds);
    kill(child, SIGKILL);
    return 0;
  }
  std::fprintf(stderr, "usage: server_host_program hold MB SECONDS | fork SECONDS\n");
  return 2;
}
