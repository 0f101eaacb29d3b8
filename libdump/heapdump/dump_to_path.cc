#include "dump_to_path.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "own_memory.h"
#include "platform/output/output_file.h"

namespace libdump::heapdump {

namespace {
std::atomic<uint64_t> g_sequence{0};
}  // namespace

std::string ExpandDumpPath(const char* pattern, uint64_t sequence) {
  return output::ExpandPath(pattern == nullptr || *pattern == '\0' ? kDefaultDumpPath : pattern, nullptr, sequence);
}

int DumpToPath(const char* pattern, const HeapDumpOptions& options, const char* why) {
  // The paths and the file are libdump's own, not the program's.
  const internal::OwnScope own(internal::OwnComponent::kDumpWriter);
  const uint64_t sequence = g_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
  output::PartialFile file(ExpandDumpPath(pattern, sequence), 0600, output::PartialFile::Existing::kKeep);
  if (file.fd() < 0) {
    std::fprintf(stderr, "libdump: cannot create heap dump %s %s: %s\n", file.partial_path().c_str(), why,
                 std::strerror(file.error()));
    return file.error();
  }
  int err = WriteHeapDump(file.fd(), options);
  if (err == 0) err = file.Commit();
  else file.Abandon();
  if (err != 0) {
    std::fprintf(stderr, "libdump: heap dump %s %s failed: %s\n", file.path().c_str(), why, std::strerror(err));
  } else {
    std::fprintf(stderr, "libdump: heap dump %s written to %s\n", why, file.path().c_str());
  }
  return err;
}

}  // namespace libdump::heapdump
