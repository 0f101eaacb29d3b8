// The containers a dump may come in; the reader detects them (format/input.cc).
#pragma once

namespace libdump::format {

enum class Compression { kNone, kZstd, kGzip };
const char* CompressionName(Compression c);

}  // namespace libdump::format
