// Where a dump's bytes go: the file, behind zstd when asked, on `threads`
// worker processes, or on the dumping thread when there is one or the
// workers cannot start. Every sink maps its memory up front: the output is
// made after the stop (or in a forked child), where nothing may allocate.
#pragma once

#include <optional>

#include "heap_dump_writer.h"
#include "libdump/format/sink.h"
#include "parallel_zstd_sink.h"

namespace libdump::heapdump {

class DumpOutput {
 public:
  DumpOutput(int fd, const DumpOptions& o);
  DumpOutput(const DumpOutput&) = delete;
  DumpOutput& operator=(const DumpOutput&) = delete;

  format::Sink& sink();
  // Ends the stream; the first error of either sink, or 0.
  int Finish();

 private:
  format::FdSink file_;
  std::optional<format::ZstdSink> zstd_;
  std::optional<ParallelZstdSink> parallel_;
};

}  // namespace libdump::heapdump
