// LIBDUMP_* environment variables: one parser for all of them, so that every
// variable accepts the same spellings and says when it is wrong.
//
// Booleans: 1/0, true/false, yes/no, on/off (any case). Sizes: a decimal
// number of bytes with an optional binary suffix k/K/KB/KiB, M/MB/MiB,
// G/GB/GiB, T/TB/TiB (512k = 524288 bytes). Signals: a name with or without
// SIG (USR2, SIGUSR2), RTMIN+N, or a number. An empty variable counts as
// unset. Anything else is refused with one line on stderr naming the
// variable, the value and why, and the caller's documented default is used
// (as jemalloc does for MALLOC_CONF). docs/ENVIRONMENT.md lists them all.
//
// Allocation-free and lock-free: the allocator reads its variables on the
// first malloc, before anything else is ready, and the warning is one write()
// of a line built on the stack.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libdump::env {

// The variable's value, or nullptr when unset or empty. secure_getenv: a
// set-user-ID program ignores them all (LIBDUMP_HEAPDUMP_PATH names a file
// the process creates).
const char* Get(const char* name);

// Parsers of one value: true, with *out set, when `s` is valid.
bool ParseBool(const char* s, bool* out);
bool ParseSize(const char* s, uint64_t* out);
bool ParseUint(const char* s, uint64_t* out);  // decimal digits only
// A signal by name or number. 0 when refused, with *why set to a static
// sentence ("is reserved for crashes", "is not a signal").
int ParseSignal(const char* s, const char** why);

// Why libdump refuses `sig` for a handler of its own (nullptr: usable).
const char* SignalRefusal(int sig);

// Reads `name`; on an invalid value warns and returns `def`.
bool GetBool(const char* name, bool def);
uint64_t GetSize(const char* name, uint64_t def, uint64_t min, uint64_t max);
uint64_t GetUint(const char* name, uint64_t def, uint64_t min, uint64_t max);
// `taken`, when not 0, is a signal already in use; `taken_by` says why
// ("is already libdump's stop signal"). A `def` of 0 means off ("ignored").
int GetSignal(const char* name, int def, int taken = 0, const char* taken_by = nullptr);

// "libdump: NAME=VALUE WHY; using DEFAULT" on stderr, one write().
void Warn(const char* name, const char* value, const char* why, const char* using_default);
void WarnUint(const char* name, const char* value, const char* why, uint64_t using_default);

}  // namespace libdump::env
