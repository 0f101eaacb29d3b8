// Numeric command-line values, checked against their range. Boost's
// lexical_cast wraps "-1" around to 2^64-1 for an unsigned option (then
// `--threads -1` asks for 4 billion threads), so the tools parse these
// themselves and report a usage error instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace libdump::tools {

// The decimal integer `s` if it lies in [min, max]; nothing for a sign, a
// suffix, an empty string or a value out of range.
std::optional<uint64_t> ParseUintOption(std::string_view s, uint64_t min, uint64_t max);

}  // namespace libdump::tools
