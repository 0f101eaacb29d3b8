// The flight recorder's CPU samples come from timers of its own (a lower
// rate than a CPU profile's) whose SIGPROF reaches the CPU profiler's
// handler. Their si_value carries this tag, so that the handler passes them
// to the hook and keeps them out of a CPU profile running at the same time.
#pragma once

namespace libdump::samplers {

inline constexpr int kRecorderTimerTag = 0x46524543;  // "FREC"

// Called on the interrupted thread, in the signal handler.
using SigprofHook = void (*)(void* ucontext);
// Installs the SIGPROF handler if needed; nullptr removes the hook.
// Defined in cpu_profiler.cc, which owns the handler.
void SetSigprofHook(SigprofHook hook);

}  // namespace libdump::samplers
