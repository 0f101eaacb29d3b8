#include <sys/stat.h>

#include "typing.h"

namespace libdump::typing {

namespace {

// A file as the index sees it: its name, size and modification time, so a
// rebuilt binary (other DWARF) makes the index stale.
std::string FileStamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return path + ":missing";
  return path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

std::string CacheSalt(const Options& o) {
  std::string salt = o.enabled ? "typing" : "no-typing";
  for (const std::string& b : o.binaries) salt += "\nbinary " + FileStamp(b);
  for (const std::string& d : o.debug_dirs) salt += "\ndebug-dir " + FileStamp(d);
  return salt;
}

}  // namespace libdump::typing
