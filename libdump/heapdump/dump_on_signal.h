// Heap dumps on a signal (LIBDUMP_HEAPDUMP_SIGNAL): see dump_on_signal.cc.
#pragma once

namespace libdump::heapdump {

// In a forked child, after every fork handler has run: starts the child's
// own dumper thread if the parent had one. Anything else: does nothing.
void RestartDumperAfterFork();

}  // namespace libdump::heapdump
