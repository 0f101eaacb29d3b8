#include "libdump/format/compression.h"

namespace libdump::format {

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kZstd: return "zstd";
    case Compression::kGzip: return "gzip";
  }
  return "?";
}

}  // namespace libdump::format
