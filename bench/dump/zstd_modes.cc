// Two ways to compress a dump on several cores, on the same bytes: zstd's
// own multithreading (ZSTD_c_nbWorkers, one frame, threads) and the dump's
// ParallelZstdSink (independent 1 MiB frames, worker processes), with one
// thread for reference. Reads FILE (a raw dump) into memory, then for each
// mode writes the compressed stream to /dev/null REPS times, alternating the
// modes, and prints the median wall and CPU seconds (children included) and
// the compressed size.
//
// Usage: zstd_modes FILE [LEVEL] [WORKERS] [REPS] [BLOCK_MIB]
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "parallel_zstd_sink.h"

namespace {

size_t g_block = libdump::heapdump::ParallelZstdSink::kDefaultBlock;

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double Cpu() {
  double t = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    t += u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return t;
}

// Bytes written, as the dump writer hands them over: 1 MiB at a time.
size_t Threads(const std::string& in, int level, int workers, int null_fd) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, workers);
  std::vector<char> out(ZSTD_CStreamOutSize());
  size_t total = 0;
  for (size_t at = 0; at <= in.size();) {
    const size_t n = std::min<size_t>(1 << 20, in.size() - at);
    const bool last = at + n == in.size();
    ZSTD_inBuffer i{in.data() + at, n, 0};
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const size_t r = ZSTD_compressStream2(c, &o, &i, last ? ZSTD_e_end : ZSTD_e_continue);
      total += o.pos;
      (void)!write(null_fd, out.data(), o.pos);
      if (last ? r == 0 : i.pos == i.size) break;
    }
    at += n;
    if (last) break;
  }
  ZSTD_freeCCtx(c);
  return total;
}

size_t Processes(const std::string& in, int level, int workers, int null_fd) {
  libdump::format::FdSink file(null_fd);
  libdump::heapdump::ParallelZstdSink z(file, level, workers, g_block);
  for (size_t at = 0; at < in.size(); at += 1 << 20) z.Write(in.data() + at, std::min<size_t>(1 << 20, in.size() - at));
  z.Finish();
  return file.bytes_written();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: zstd_modes FILE [LEVEL] [WORKERS] [REPS]\n");
    return 2;
  }
  const int level = argc > 2 ? std::atoi(argv[2]) : 1;
  const int workers = argc > 3 ? std::atoi(argv[3]) : 2;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 5;
  if (argc > 5) g_block = static_cast<size_t>(std::atoi(argv[5])) << 20;
  std::string in;
  {
    FILE* f = std::fopen(argv[1], "rb");
    if (f == nullptr) return 1;
    char buf[1 << 16];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) in.append(buf, n);
    std::fclose(f);
  }
  const int null_fd = open("/dev/null", O_WRONLY);
  struct Mode { const char* name; size_t (*run)(const std::string&, int, int, int); int workers; };
  const Mode modes[] = {{"one-thread", Threads, 0}, {"nbWorkers-threads", Threads, workers},
                        {"frames-processes", Processes, workers}};
  std::vector<double> wall[3], cpu[3];
  size_t bytes[3] = {};
  for (int r = 0; r < reps; ++r) {
    for (int m = 0; m < 3; ++m) {
      const double w0 = Now(), c0 = Cpu();
      bytes[m] = modes[m].run(in, level, modes[m].workers, null_fd);
      wall[m].push_back(Now() - w0);
      cpu[m].push_back(Cpu() - c0);
    }
  }
  for (int m = 0; m < 3; ++m) {
    std::sort(wall[m].begin(), wall[m].end());
    std::sort(cpu[m].begin(), cpu[m].end());
    std::printf("%-18s block %zu MiB level %d workers %d: wall %.3f s median (%.3f-%.3f), cpu %.3f s, %.2f GB/s, %zu bytes\n",
                modes[m].name, g_block >> 20, level, modes[m].workers, wall[m][reps / 2], wall[m].front(), wall[m].back(),
                cpu[m][reps / 2], in.size() / wall[m][reps / 2] / 1e9, bytes[m]);
  }
  return 0;
}
