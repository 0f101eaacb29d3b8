// A program that allocates nothing: burns ~0.3 s of CPU in main. Run under
// the preload with every allocation sampled and the CPU profiler on, its
// heap profile must hold no sample (attribution_check.sh): the profilers'
// own allocations (start-up, the worker, symbolization at exit) are not the
// program's.
int main() {
  volatile unsigned long x = 0;
  for (unsigned long i = 0; i < 300000000UL; ++i) x = x + i;
  return 0;
}
