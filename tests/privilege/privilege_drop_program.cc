// A program that drops root's privileges while libdump's threads run, the
// ways daemons do, then checks that every thread of the process has the new
// credentials and (with LIBDUMP_HEAPDUMP_SIGNAL=USR2) that a heap dump on the
// signal is still written.
//   privilege_drop_program setpriv|su|seteuid DUMPDIR
// setpriv: PR_SET_KEEPCAPS, setresuid, its capabilities back on this thread
// alone, setresgid, setgroups (util-linux setpriv's order); su: setgroups,
// setgid, setuid; seteuid: a temporary drop and back, then setuid.
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

constexpr uid_t kNobody = 65534;

int Fail(const char* what) {
  std::fprintf(stderr, "FAIL: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// The Uid: and Gid: lines' four ids must all be kNobody on every live thread.
// A thread libdump stopped around an earlier call may still be listed for a
// moment after it was joined (exiting, state Z or X): it runs nothing and is
// passed over; one that is alive with other ids is the failure.
bool AllThreadsDropped(std::string* bad) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return false;
  bool ok = true;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream status(std::string("/proc/self/task/") + e->d_name + "/status");
    std::string line, name, wrong;
    bool exiting = false;
    while (std::getline(status, line)) {
      if (line.rfind("Name:", 0) == 0) name = line.substr(6);
      if (line.rfind("State:", 0) == 0) exiting = line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
      if (line.rfind("Uid:", 0) == 0 || line.rfind("Gid:", 0) == 0) {
        const std::string want = "\t65534\t65534\t65534\t65534";
        if (line.substr(4) != want) wrong += std::string(e->d_name) + " (" + name + "): " + line + "\n";
      }
    }
    if (!exiting && !wrong.empty()) {
      ok = false;
      *bad += wrong;
    }
  }
  closedir(d);
  return ok;
}

// AllThreadsDropped, asked again for up to 2 s: a thread that was joined but
// not yet reaped leaves the list by then, a live one with root's ids does not.
bool AllThreadsDroppedSoon(std::string* bad) {
  for (int i = 0; i < 200; ++i) {
    bad->clear();
    if (AllThreadsDropped(bad)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int CountFiles(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: privilege_drop_program setpriv|su|seteuid DUMPDIR\n");
    return 2;
  }
  const std::string mode = argv[1];
  // One thread of the program's own, parked, as a daemon's workers are. Not
  // in the setpriv order: PR_SET_KEEPCAPS is per thread, so a second thread
  // of the program loses CAP_SETGID at setresuid and glibc aborts the
  // setresgid broadcast with or without libdump (util-linux setpriv is
  // single-threaded); there only libdump's threads are alongside.
  if (mode != "setpriv") {
    std::thread parked([] { pause(); });
    parked.detach();
  }
  if (mode == "setpriv") {
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return Fail("PR_SET_KEEPCAPS");
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2];
    if (syscall(SYS_capget, &hdr, caps) != 0) return Fail("capget");
    if (setresuid(kNobody, kNobody, kNobody) != 0) return Fail("setresuid");
    // setresuid cleared the effective set; the permitted one was kept.
    if (syscall(SYS_capset, &hdr, caps) != 0) return Fail("capset");
    if (setresgid(kNobody, kNobody, kNobody) != 0) return Fail("setresgid");
    if (setgroups(0, nullptr) != 0) return Fail("setgroups");
  } else if (mode == "su") {
    if (setgroups(0, nullptr) != 0) return Fail("setgroups");
    if (setgid(kNobody) != 0) return Fail("setgid");
    if (setuid(kNobody) != 0) return Fail("setuid");
  } else if (mode == "seteuid") {
    if (seteuid(kNobody) != 0) return Fail("seteuid");
    if (seteuid(0) != 0) return Fail("seteuid back");
    if (setgroups(0, nullptr) != 0) return Fail("setgroups");
    if (setregid(kNobody, kNobody) != 0 || setresgid(kNobody, kNobody, kNobody) != 0) return Fail("setregid");
    if (setreuid(kNobody, kNobody) != 0 || setuid(kNobody) != 0) return Fail("setreuid");
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  // The threads libdump starts again come up as the calling thread is.
  std::string bad;
  if (!AllThreadsDroppedSoon(&bad)) {
    std::fprintf(stderr, "FAIL: threads kept other credentials:\n%s", bad.c_str());
    return 1;
  }
  if (std::getenv("LIBDUMP_HEAPDUMP_SIGNAL") != nullptr) {
    const int before = CountFiles(argv[2]);
    kill(getpid(), SIGUSR2);
    for (int i = 0; i < 300 && CountFiles(argv[2]) <= before; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (CountFiles(argv[2]) <= before) {
      std::fprintf(stderr, "FAIL: no heap dump in %s after SIGUSR2\n", argv[2]);
      return 1;
    }
  }
  std::printf("ok: %s\n", mode.c_str());
  return 0;
}
