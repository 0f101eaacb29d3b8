// Which file on disk stands for each module of an image, for unwinding and
// naming frames: a --binary whose build-id is the module's, else the
// file the image matched to the module (ImageModule::file), else none (a
// rebuilt library would name the wrong functions).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::coretodump {

class ModuleFiles {
 public:
  // Reads the build-id of each binary; problems() lists those without one.
  explicit ModuleFiles(const std::vector<std::string>& binaries);
  std::string FileFor(const procimage::ImageModule& m) const;
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::map<std::string, std::string> by_build_id_;
  std::vector<std::string> problems_;
};

// Lower-case hex of an ELF file's NT_GNU_BUILD_ID, empty when it has none
// or is no ELF file.
std::string FileBuildId(const std::string& path);

}  // namespace libdump::coretodump
