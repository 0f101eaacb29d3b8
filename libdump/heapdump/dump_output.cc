#include "dump_output.h"

namespace libdump::heapdump {

DumpOutput::DumpOutput(int fd, const DumpOptions& o) : file_(fd) {
  if (!o.zstd) return;
  if (o.threads > 1) {
    parallel_.emplace(file_, o.zstd_level, o.threads);
    if (parallel_->ok()) return;
    parallel_.reset();
  }
  zstd_.emplace(file_, o.zstd_level);
}

format::Sink& DumpOutput::sink() {
  if (parallel_) return *parallel_;
  return zstd_ ? static_cast<format::Sink&>(*zstd_) : file_;
}

int DumpOutput::Finish() {
  if (parallel_) {
    parallel_->Finish();
    if (parallel_->error() != 0) return parallel_->error();
  }
  if (zstd_) {
    zstd_->Finish();
    if (zstd_->error() != 0) return zstd_->error();
  }
  return file_.error();
}

}  // namespace libdump::heapdump
