// Quoting of strings taken from a dump, whose bytes are arbitrary: names are
// UTF-8 by convention only, and a corrupt or hostile dump may hold anything.
#pragma once

#include <string>
#include <string_view>

namespace libdump::readdump {

// "..." for text output: valid UTF-8 sequences pass through, control bytes,
// quote, backslash and every byte of an invalid sequence become escapes, so
// one record stays one line and grep sees real names.
std::string QuoteText(std::string_view s);
// The same escaping without the quotes, for names in columns.
std::string EscapeText(std::string_view s);

// A JSON string literal. JSON text must be valid Unicode, so each byte of an
// invalid UTF-8 sequence is replaced by U+FFFD; control characters use \uXXXX.
std::string QuoteJson(std::string_view s);

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if the byte
// there does not start one (overlong forms, surrogates and values above
// U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i);

}  // namespace libdump::readdump
