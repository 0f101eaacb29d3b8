// Writer and reader throughput of the dump format.
//
//   format_throughput write FILE [--mb N] [--zstd]   generate a dump of ~N MiB
//   format_throughput read FILE                      parse it, touching every byte
//
// Objects are 16 B - 4 KiB, log-uniform (most of them small, as in real heaps),
// copied straight from a 64 MiB pool the way the runtime copies live objects;
// each is preceded by the records a real dump interleaves (a root every 8th).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

using namespace libdump::format;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int Write(const char* path, uint64_t mb, bool zstd) {
  constexpr size_t kPool = 64 << 20;
  std::vector<uint8_t> pool(kPool + 4096);
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < pool.size(); i += 8) {
    const uint64_t v = rng() & 0x00ff00ff00ff00ffull;  // half-compressible, like real heaps
    std::memcpy(&pool[i], &v, 8);
  }
  // Sizes are drawn up front so the timed loop measures the writer only.
  std::vector<uint32_t> sizes(1 << 20);
  std::uniform_real_distribution<double> logsize(std::log(16.0), std::log(4096.0));
  for (auto& s : sizes) s = static_cast<uint32_t>(std::exp(logsize(rng))) & ~7u;

  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return perror(path), 1;
  FdSink file(fd);
  ZstdSink z(file, 1);
  Writer w(zstd ? static_cast<Sink&>(z) : file, {.buffer_size = 1 << 20});
  const uint64_t target = mb << 20;
  uint64_t objects = 0, payload = 0, addr = 0x100000000ull, pool_off = 0;
  const auto t0 = Clock::now();
  w.Header();
  w.Params({0, 8, 0, 0x100000000ull, 0x100000000ull + (target << 1)});
  w.Type({1, 64, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  while (payload < target) {
    const uint32_t size = sizes[objects & (sizes.size() - 1)];
    if (pool_off + size > kPool) pool_off = 0;
    w.Object({addr, (objects & 3) ? 0u : 1u, kObjRegular, size}, &pool[pool_off]);
    if ((objects & 7) == 0) w.DataRoot({0x600000 + objects * 8, addr});
    addr += size;
    pool_off += size;
    payload += size;
    ++objects;
  }
  w.Eof();
  if (zstd) z.Finish();
  const double secs = Seconds(t0);
  const uint64_t written = file.bytes_written();
  ::close(fd);
  if (w.error() != 0) return std::fprintf(stderr, "write error %d\n", w.error()), 1;
  std::printf("write%s: %llu objects, %.1f MiB heap, %.1f MiB file, %.3f s, %.2f GB/s of heap\n",
              zstd ? "+zstd1" : "", (unsigned long long)objects, payload / 1048576.0,
              written / 1048576.0, secs, payload / secs / 1e9);
  return 0;
}

int Read(const char* path) {
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return perror(path), 1;
  const auto t0 = Clock::now();
  uint64_t records = 0, objects = 0, payload = 0, sum = 0;
  try {
    Reader reader(fd, {.buffer_size = 1 << 20});
    Record r;
    while (reader.Next(r)) {
      ++records;
      if (r.kind != Kind::kObject) continue;
      ++objects;
      // Touch the payload the way a consumer does (a pointer scan reads every word).
      reader.ReadPayload([&](std::span<const uint8_t> c) {
        uint64_t w;
        for (size_t i = 0; i + 8 <= c.size(); i += 8) std::memcpy(&w, &c[i], 8), sum += w;
        payload += c.size();
      });
    }
  } catch (const FormatError& e) {
    std::fprintf(stderr, "%s:%s\n", path, e.what());
    return 1;
  }
  const double secs = Seconds(t0);
  const uint64_t bytes = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END));
  ::close(fd);
  std::printf("read: %llu records, %llu objects, %.1f MiB heap in %.1f MiB file, %.3f s, "
              "%.2f GB/s of file, %.2f GB/s of heap (checksum %llx)\n",
              (unsigned long long)records, (unsigned long long)objects, payload / 1048576.0,
              bytes / 1048576.0, secs, bytes / secs / 1e9, payload / secs / 1e9,
              (unsigned long long)(sum & 0xffff));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: format_throughput write FILE [--mb N] [--zstd] | read FILE\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "read") return Read(argv[2]);
  uint64_t mb = 1024;
  bool zstd = false;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mb") && i + 1 < argc) mb = std::stoull(argv[++i]);
    else if (!std::strcmp(argv[i], "--zstd")) zstd = true;
  }
  return Write(argv[2], mb, zstd);
}
