// The core of every "whole file or nothing" output, the runtime's
// PartialFile and the tools' OutputFile alike: a temporary that is created,
// never opened (so nothing planted at its name is written through or taken
// over), and a move into place that can refuse to replace what is there.
#pragma once

namespace libdump::output {

// Creates path for writing with the given mode: O_CREAT|O_EXCL, so a file
// already there (planted, or another's) is refused with EEXIST, and
// O_NOFOLLOW, so a symbolic link is never followed. Returns the descriptor,
// or -1 with errno set. Async-signal-safe (one open(2)).
int CreateExclusive(const char* path, int mode);

// Moves from to to unless to exists: renameat2(RENAME_NOREPLACE), or link
// and unlink where the file system lacks it. Returns 0 or the errno (EEXIST
// when to exists); from is left in place when it fails.
int RenameNoReplace(const char* from, const char* to);

// Gives a temporary up: closes fd (when >= 0) and removes path.
void CloseAndRemove(int fd, const char* path);

}  // namespace libdump::output
