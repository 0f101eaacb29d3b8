#include "heap_walker.h"

#include "glibc_walker.h"

namespace libdump::heapwalk {

std::vector<std::unique_ptr<HeapWalker>> AllWalkers() {
  std::vector<std::unique_ptr<HeapWalker>> out;
  out.push_back(std::make_unique<GlibcWalker>());
  return out;
}

std::string OtherAllocator(const procimage::ProcessImage& image) {
  // Mapped libraries name the allocator; the first one found wins because a
  // process links at most one malloc that replaces glibc's.
  static const struct {
    const char* file;
    const char* name;
  } kKnown[] = {{"libdump.so", "libdump's own"}, {"libjemalloc.so", "jemalloc's"},
                {"libtcmalloc", "tcmalloc's"}, {"libmimalloc.so", "mimalloc's"}};
  for (const auto& m : image.Modules()) {
    const std::string base = m.path.substr(m.path.rfind('/') + 1);
    for (const auto& k : kKnown) {
      if (base.rfind(k.file, 0) == 0) return std::string("the heap is ") + k.name + " (" + base + " mapped): not walked yet";
    }
  }
  return "";
}

}  // namespace libdump::heapwalk
