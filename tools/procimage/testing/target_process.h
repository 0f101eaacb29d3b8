// The image tests' target (image_target.cc) run as a child: its pipes, the
// addresses and thread ids it printed, and a ping that proves it still runs.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace libdump::procimage::testing {

class TargetProcess {
 public:
  explicit TargetProcess(const char* path) {
    // A ping of a target that died fails the test, not kills it.
    signal(SIGPIPE, SIG_IGN);
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      execl(path, path, static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
    unsigned long long buffer = 0, rodata = 0;
    int t[4] = {};
    if (std::fscanf(from_, "%llx %zu %llx %d %d %d %d", &buffer, &buffer_size, &rodata, &t[0], &t[1], &t[2], &t[3]) == 7) {
      buffer_addr = buffer;
      rodata_addr = rodata;
      tids.assign(t, t + 4);
    }
    char rest[64];
    if (std::fgets(rest, sizeof rest, from_) == nullptr) tids.clear();  // the line's newline
  }
  ~TargetProcess() { Stop(); }
  TargetProcess(const TargetProcess&) = delete;
  TargetProcess& operator=(const TargetProcess&) = delete;

  bool ok() const { return pid_ > 0 && tids.size() == 4; }
  int pid() const { return pid_; }

  // True when the target answers a line: it is running, not stopped.
  bool Ping() {
    if (to_ == nullptr || std::fputs("ping\n", to_) < 0 || std::fflush(to_) != 0) return false;
    char line[64];
    return std::fgets(line, sizeof line, from_) != nullptr && std::string(line) == "pong\n";
  }

  // Closes its stdin (it exits) and reaps it.
  int Stop() {
    if (pid_ <= 0) return -1;
    if (to_ != nullptr) std::fclose(to_);
    to_ = nullptr;
    int status = 0;
    // A target left stopped would never exit: the test's failure shows,
    // then it is killed rather than waited for.
    for (int i = 0; i < 200; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) break;
      if (i == 199) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
      usleep(10000);
    }
    if (from_ != nullptr) std::fclose(from_);
    from_ = nullptr;
    pid_ = -1;
    return status;
  }

  uint64_t buffer_addr = 0;
  size_t buffer_size = 0;
  uint64_t rodata_addr = 0;
  std::vector<int> tids;

 private:
  int pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
};

}  // namespace libdump::procimage::testing
