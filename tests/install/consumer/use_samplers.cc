// libdump::samplers and libdump::prof_preload (libdumpprof.so): the profilers' API.
#include "libdump/profiler.h"

int main() {
  libdump::SetCPUProfileRate(250);
  return libdump::CPUProfileRate() == 250 ? 0 : 1;
}
