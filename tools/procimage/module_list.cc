#include "module_list.h"

#include <algorithm>
#include <map>

#include <elf.h>

#include "elf_file.h"

namespace libdump::procimage {
namespace {

constexpr uint64_t kPage = 4096;
// The headers, program headers and build-id note of every linker's output
// lie in the first pages; more is never needed and a hostile mapping size
// cannot make the read larger.
constexpr size_t kHeaderBytes = 64 * 1024;

// A file whose contents the image lacks and which is not on disk is a module
// only if its name says it is one: a data file (locale-archive, a cache) is
// no module.
bool LooksLikeElf(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.find(".so") != std::string::npos;
}

std::string BaseName(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The file's headers as the image holds them; *held is how many bytes of
// the file's start it holds.
ElfInfo HeaderInImage(const ImageMapping& first, const ModuleOptions& options, size_t* held) {
  *held = 0;
  if (!options.read_image || first.file_offset != 0) return {};
  std::string bytes(std::min<uint64_t>(kHeaderBytes, first.end - first.start), '\0');
  bytes.resize(options.read_image(first.start, bytes.data(), bytes.size()));
  *held = bytes.size();
  return ReadElfBytes(bytes.data(), bytes.size());
}

uint64_t LoadBias(const ElfInfo& info, const std::vector<const ImageMapping*>& maps) {
  for (const auto* m : maps)
    if (m->file_offset == 0 && info.has_base) return m->start - info.base_vaddr;
  // No mapping of the file's start (a hostile or odd image): any mapping of
  // a segment's first page gives it too.
  for (const auto* m : maps)
    for (const auto& load : info.loads)
      if ((load.offset & ~(kPage - 1)) == m->file_offset) return m->start - (load.vaddr & ~(kPage - 1));
  return maps.front()->start;
}

}  // namespace

ModuleList BuildModules(const std::vector<ImageMapping>& mappings, const ModuleOptions& options) {
  // By path, in the order of each file's lowest mapping (mappings are sorted).
  std::map<std::string, std::vector<const ImageMapping*>> by_path;
  std::vector<std::string> order;
  for (const auto& m : mappings) {
    if (m.IsAnonymous()) continue;
    auto& list = by_path[m.path];
    if (list.empty()) order.push_back(m.path);
    list.push_back(&m);
  }
  // Each replacement's build-id, read once.
  std::vector<std::pair<std::string, std::string>> binaries;
  if (options.use_disk)
    for (const auto& b : options.binaries) binaries.emplace_back(ReadElfFile(b).build_id, b);

  ModuleList out;
  for (const auto& path : order) {
    const auto& maps = by_path[path];
    ImageModule mod;
    mod.path = path;
    mod.start = maps.front()->start;
    for (const auto* m : maps) mod.end = std::max(mod.end, m->end);
    const auto first = std::find_if(maps.begin(), maps.end(), [](const ImageMapping* m) { return m->file_offset == 0; });
    size_t held = 0;
    const ElfInfo in_image = first == maps.end() ? ElfInfo{} : HeaderInImage(**first, options, &held);
    // The image holds the file's start and it is no ELF file of ours: a data
    // file (locale-archive, a cache), no module.
    if (held >= EI_NIDENT && !in_image.is_elf) continue;
    if (options.entry != 0) {
      mod.executable = options.entry >= mod.start && options.entry < mod.end;
    } else if (!options.command.empty()) {
      // comm is the first 15 bytes of the file's name (gdb writes it whole).
      mod.executable = BaseName(path).substr(0, 15) == options.command.substr(0, 15);
    }

    std::string candidate;
    if (options.use_disk) {
      if (mod.executable && !options.executable.empty()) {
        candidate = options.executable;
      } else {
        for (const auto& [id, file] : binaries)
          if (!in_image.build_id.empty() && id == in_image.build_id) candidate = file;
        if (candidate.empty()) candidate = options.disk_path ? options.disk_path(*maps.front()) : path;
      }
    }
    const ElfInfo on_disk = candidate.empty() ? ElfInfo{} : ReadElfFile(candidate);
    if (!in_image.is_elf && !on_disk.is_elf && !mod.executable && !LooksLikeElf(path)) continue;

    mod.build_id = in_image.is_elf ? in_image.build_id : on_disk.build_id;
    const ElfInfo& layout = in_image.is_elf ? in_image : on_disk;
    mod.load_bias = layout.is_elf ? LoadBias(layout, maps) : mod.start;
    if (!on_disk.is_elf) {
      if (options.use_disk)
        out.damage.push_back(path + ": " + (candidate.empty() ? std::string("no file") : candidate + " is not readable as ELF") +
                             "; its left-out mappings are absent");
    } else if (!in_image.is_elf) {
      // Nothing in the image to check the file against: taken on trust, and
      // said so.
      mod.file_matches = true;
      out.damage.push_back(path + ": the image lacks the file's headers; " + candidate + " is used unchecked");
    } else if (in_image.build_id == on_disk.build_id) {
      mod.file_matches = true;
    } else {
      out.damage.push_back(path + ": " + candidate + " has build-id " +
                           (on_disk.build_id.empty() ? std::string("(none)") : on_disk.build_id) + ", the image " +
                           (in_image.build_id.empty() ? std::string("(none)") : in_image.build_id) +
                           "; its left-out mappings are absent");
    }
    if (mod.file_matches) mod.file = candidate;
    out.modules.push_back(std::move(mod));
  }
  return out;
}

}  // namespace libdump::procimage
