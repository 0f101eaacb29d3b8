#include "live_image.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "elf_file.h"
#include "module_list.h"
#include "platform/proc/maps_parser.h"

namespace libdump::procimage {
namespace {

using Clock = std::chrono::steady_clock;

// A thread that does not stop in this time is in an uninterruptible wait
// (a hung file system): the attach gives up rather than hang with it.
constexpr auto kStopTimeout = std::chrono::seconds(5);

std::string ProcPath(int pid, const std::string& rest) { return "/proc/" + std::to_string(pid) + "/" + rest; }

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A field of /proc/PID/status ("State", "TracerPid"), "" when absent.
std::string StatusField(int pid, const std::string& field) {
  std::ifstream in(ProcPath(pid, "status"));
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      const auto at = line.find_first_not_of(" \t", field.size() + 1);
      return at == std::string::npos ? "" : line.substr(at);
    }
  return "";
}

// The thread ids of /proc/PID/task; false when the directory is gone.
bool ListTasks(int pid, std::vector<int>* out) {
  out->clear();
  DIR* dir = ::opendir(ProcPath(pid, "task").c_str());
  if (dir == nullptr) return false;
  while (const dirent* e = ::readdir(dir)) {
    const int tid = std::atoi(e->d_name);
    if (tid > 0) out->push_back(tid);
  }
  ::closedir(dir);
  return true;
}

uint64_t AuxEntry(int pid) {
  std::ifstream in(ProcPath(pid, "auxv"), std::ios::binary);
  uint64_t kv[2];
  // The vector ends at AT_NULL; the bound keeps a strange file cheap.
  for (int i = 0; i < 512 && in.read(reinterpret_cast<char*>(kv), sizeof kv) && kv[0] != AT_NULL; ++i)
    if (kv[0] == AT_ENTRY) return kv[1];
  return 0;
}

}  // namespace

bool ReadMapsFile(const std::string& path, std::vector<ImageMapping>* out) {
  out->clear();
  return proc::ForEachMapsLine(
      [&](const proc::MapsLine& line) {
        ImageMapping m;
        m.start = line.start;
        m.end = line.end;
        m.readable = line.readable;
        m.writable = line.writable;
        m.executable = line.executable;
        m.path = std::string(line.path);
        m.file_offset = line.offset;
        m.present = line.readable;
        out->push_back(std::move(m));
        return true;
      },
      path.c_str());
}

std::unique_ptr<LiveImage> LiveImage::Attach(int pid, const LiveOptions& options) {
  if (pid <= 0) throw LiveError("process " + std::to_string(pid) + ": not a process id");
  if (pid == getpid()) throw LiveError("process " + std::to_string(pid) + ": is this process (a process cannot stop itself)");
  std::unique_ptr<LiveImage> image(new LiveImage(pid));
  // Field 4 of stat, after the parenthesised name.
  const std::string stat = FirstLine(ProcPath(pid, "stat"));
  const auto paren = stat.rfind(')');
  image->parent_ = paren != std::string::npos && std::atoi(stat.c_str() + std::min(stat.size(), paren + 4)) == getpid();
  image->StopAll();
  image->mem_fd_ = ::open(ProcPath(pid, "mem").c_str(), O_RDONLY | O_CLOEXEC);
  image->command_ = FirstLine(ProcPath(pid, "comm"));
  image->ReadThreads();
  image->ReadMappings(options);
  return image;
}

LiveImage::~LiveImage() {
  Detach();
  if (mem_fd_ >= 0) ::close(mem_fd_);
}

void LiveImage::Fail(const std::string& what) {
  Detach();
  throw LiveError("process " + std::to_string(pid_) + ": " + what);
}

void LiveImage::StopAll() {
  stop_start_ = Clock::now();
  attached_ = true;
  std::set<int> seen;
  std::vector<int> tasks;
  // A thread not yet stopped may start another: list again until a pass
  // finds none new (stopped threads start nothing).
  for (bool added = true; added;) {
    added = false;
    if (!ListTasks(pid_, &tasks)) {
      if (tids_.empty()) Fail("no such process");
      break;  // it exited while being stopped; what was stopped is let go by the caller
    }
    for (const int tid : tasks) {
      if (!seen.insert(tid).second) continue;
      if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        const int err = errno;
        if (err == ESRCH) continue;  // the thread ended meanwhile
        if (err == EPERM) {
          const std::string state = StatusField(pid_, "State"), tracer = StatusField(pid_, "TracerPid");
          if (state.empty()) Fail("no such process");
          if (state[0] == 'Z' || state[0] == 'X') Fail("has exited (" + state + ")");
          if (!tracer.empty() && tracer != "0") Fail("already traced by process " + tracer);
          Fail("not permitted to trace it (EPERM): see /proc/sys/kernel/yama/ptrace_scope; "
               "another user's process needs root (CAP_SYS_PTRACE)");
        }
        Fail("PTRACE_SEIZE of thread " + std::to_string(tid) + ": " + std::strerror(err));
      }
      tids_.push_back(tid);
      signals_.push_back(0);
      added = true;
      if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 && errno != ESRCH)
        Fail("PTRACE_INTERRUPT of thread " + std::to_string(tid) + ": " + std::strerror(errno));
      const size_t index = tids_.size() - 1;
      for (const auto deadline = Clock::now() + kStopTimeout;;) {
        int status = 0;
        const pid_t got = ::waitpid(tid, &status, __WALL | WNOHANG);
        if (got == tid && WIFSTOPPED(status)) {
          // A stop for a signal the thread was being sent, rather than for
          // the interrupt: the signal is handed back at detach.
          if (status >> 16 != PTRACE_EVENT_STOP && WSTOPSIG(status) != SIGTRAP) signals_[index] = WSTOPSIG(status);
          break;
        }
        if ((got == tid && (WIFEXITED(status) || WIFSIGNALED(status))) || (got < 0 && errno == ECHILD)) {
          tids_.pop_back();  // it ended: the kernel has untraced it
          signals_.pop_back();
          break;
        }
        if (Clock::now() > deadline) Fail("thread " + std::to_string(tid) + " did not stop within 5 s");
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }
  if (tids_.empty()) Fail("no thread could be stopped (it has exited)");
}

void LiveImage::Detach() {
  if (!attached_) return;
  std::vector<int> gone;
  for (size_t i = 0; i < tids_.size(); ++i)
    if (::ptrace(PTRACE_DETACH, tids_[i], nullptr, reinterpret_cast<void*>(static_cast<intptr_t>(signals_[i]))) != 0 &&
        errno == ESRCH)
      gone.push_back(tids_[i]);
  stop_end_ = Clock::now();
  attached_ = false;
  // A thread that cannot be let go is dying (killed while stopped): its exit
  // is reported to the tracer, and until the tracer collects it the process
  // cannot be reaped by its parent. The leader is left to its parent when
  // that is this process (its exit status is the parent's to take).
  for (const int tid : gone) {
    if (tid == pid_ && parent_) continue;
    for (const auto deadline = Clock::now() + std::chrono::seconds(1); Clock::now() < deadline;) {
      int status = 0;
      const pid_t got = ::waitpid(tid, &status, __WALL | WNOHANG);
      if (got == tid || (got < 0 && errno == ECHILD)) break;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

std::chrono::nanoseconds LiveImage::StoppedFor() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>((attached_ ? Clock::now() : stop_end_) - stop_start_);
}

void LiveImage::ReadThreads() {
  for (const int tid : tids_) {
    user_regs_struct regs;
    if (::ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) {
      damage_.push_back(Describe() + ": thread " + std::to_string(tid) + ": no registers (" + std::strerror(errno) + ")");
      continue;
    }
    ImageThread t;
    t.tid = tid;
    static_assert(sizeof regs == sizeof t.regs);
    std::memcpy(t.regs, &regs, sizeof t.regs);
    t.name = FirstLine(ProcPath(pid_, "task/" + std::to_string(tid) + "/comm"));
    threads_.push_back(std::move(t));
  }
}

void LiveImage::ReadMappings(const LiveOptions& options) {
  const std::string maps = ProcPath(pid_, "maps");
  const bool ok = ReadMapsFile(maps, &mappings_);
  if (!ok) Fail("cannot read " + maps);

  ModuleOptions mo;
  mo.read_image = [this](uint64_t addr, void* out, size_t n) { return Read(addr, out, n); };
  // A file deleted or replaced since it was mapped is still there as the
  // process maps it, under /proc/PID/map_files (root only).
  mo.disk_path = [this](const ImageMapping& m) {
    static constexpr char kDeleted[] = " (deleted)";
    const size_t k = sizeof kDeleted - 1;
    if (m.path.size() <= k || m.path.compare(m.path.size() - k, k, kDeleted) != 0) return m.path;
    char range[48];
    std::snprintf(range, sizeof range, "%" PRIx64 "-%" PRIx64, m.start, m.end);
    return ProcPath(pid_, std::string("map_files/") + range);
  };
  mo.entry = AuxEntry(pid_);
  mo.command = command_;
  mo.executable = options.executable;
  mo.binaries = options.binaries;
  ModuleList list = BuildModules(mappings_, mo);
  modules_ = std::move(list.modules);
  for (auto& line : list.damage) damage_.push_back(Describe() + ": " + line);
}

size_t LiveImage::Read(uint64_t addr, void* out, size_t n) const {
  if (n == 0) return 0;
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  const ssize_t got = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  size_t done = got > 0 ? static_cast<size_t>(got) : 0;
  // /proc/PID/mem reads what process_vm_readv refuses (memory the process
  // may not write, such as [vvar] on some kernels, or when the call is
  // filtered out by a sandbox).
  if (done < n && mem_fd_ >= 0 && addr + done <= static_cast<uint64_t>(INT64_MAX)) {
    const ssize_t more = ::pread(mem_fd_, static_cast<uint8_t*>(out) + done, n - done, static_cast<off_t>(addr + done));
    if (more > 0) done += static_cast<size_t>(more);
  }
  return done;
}

}  // namespace libdump::procimage
