// The dynamic loader's module list is read under a glibc lock
// (dl_iterate_phdr's, which libunwind's local unwinding takes too, and
// libunwind's own cache lock beside it) that fork() does not make free in the
// child: a child forked while another thread is inside waits forever at its
// first unwind or module listing. libdump's own readers of the list (the
// heap dump's module capture, the heap profiler's unwinds) enter a
// LoaderSection, and a fork waits for the sections in progress to end and
// holds new ones back until it is done.
//
// Nothing inside a section may allocate or wait for another thread: the
// fork's prepare handlers run in an order nobody controls, and one of them
// may already hold the allocator's locks while this one waits.
#pragma once

namespace libdump::capture {

class LoaderSection {
 public:
  LoaderSection();
  ~LoaderSection();
  LoaderSection(const LoaderSection&) = delete;
  LoaderSection& operator=(const LoaderSection&) = delete;
};

// Registers the fork handlers (once; pthread_atfork allocates, so not from
// inside an allocation).
void InstallLoaderGate();

}  // namespace libdump::capture
