#include "options.h"

#include <boost/program_options.hpp>
#include <charconv>

#include "version.h"

namespace libdump::readdump {

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: readdump [options] FILE\n"
    "       readdump --growth [--top N] [--json] [--max-growth BYTES] OLD... NEW\n"
    "\n"
    "Parses a heap dump (go1.3 heap dump format with libdump extensions; zstd or\n"
    "gzip compressed dumps are detected) and prints a summary, or what the options\n"
    "ask for. Several options combine; sections print in the order listed below.\n"
    "FILE '-' reads standard input (a pipe works, also with --validate).\n"
    "\n"
    "exit status: 0 ok, 1 invalid input (a missing file, a directory) or validation\n"
    "problems, 2 usage error, 3 a class grew more than --max-growth\n"
    "\n";

}  // namespace

ParseResult ParseOptions(int argc, const char* const* argv, Options& o, std::ostream& out,
                         std::ostream& err) {
  po::options_description visible("options");
  visible.add_options()
      ("help,h", "print this help and exit")
      ("version,V", "print the version and exit")
      ("records", po::bool_switch(&o.records), "one line per record: KIND at=OFFSET key=value ...")
      ("validate", po::bool_switch(&o.validate),
       "semantic checks (pointers, frames, types, roots); one line per problem, exit 1 if any")
      ("summary", po::bool_switch(&o.summary), "the summary (the default when no other section is asked for)")
      ("histogram", po::bool_switch(&o.histogram),
       "objects and bytes per class after typing (docs/TYPING.md), largest first, with the rule that named each")
      ("raw-types", po::bool_switch(&o.raw_types),
       "with --histogram: the dump's own types (type records) instead of the typed classes (implies --histogram)")
      ("top", po::value<std::string>()->value_name("N"), "with --histogram: only the N largest types (implies --histogram)")
      ("threads", po::bool_switch(&o.threads), "each thread with its frames")
      ("json", po::bool_switch(&o.json), "one JSON document instead of text")
      ("dominators", po::bool_switch(&o.dominators),
       "the objects that retain the most (dominator tree under the roots); with --top N only N")
      ("flame", po::bool_switch(&o.flame),
       "with --dominators: retained bytes by dominator path (root kind, then class along the dominator tree) as "
       "folded stacks, 'frame;frame;frame bytes' lines that flamegraph.pl and speedscope read")
      ("output,o", po::value<std::string>(&o.output)->value_name("FILE"),
       "with --flame: write to FILE (written whole, then renamed into place) instead of standard output")
      ("force", po::bool_switch(&o.force), "with -o: replace an existing FILE")
      ("path-to-root", po::value<std::string>(&o.path_to_root)->value_name("ADDR"),
       "the shortest chain of strong references from a root to the object at ADDR")
      ("diff", po::value<std::string>(&o.diff_old)->value_name("OLD"),
       "--diff OLD NEW: per-class change of count, bytes and retained bytes from OLD to NEW")
      ("symbolize", po::bool_switch(&o.symbolize),
       "FILE is a flight recorder trace (Trace Event JSON): writes it to standard output with its hex frames "
       "named from its maps and the binaries' symbols and DWARF (function (file:line))")
      ("growth", po::bool_switch(&o.growth),
       "--growth OLD... NEW: what grows across a series of dumps of one process, oldest first: "
       "classes per dump, survivors and churn, the accumulation points with their paths")
      ("max-growth", po::value<std::string>()->value_name("BYTES"),
       "with --growth: exit 3 when a class's bytes grew by more than BYTES from the first dump to the last")
      ("index-dir", po::value<std::string>(&o.index_dir)->value_name("DIR"),
       "the analysis verbs keep each dump's analysed graph here and reopen it from there (default: "
       "$XDG_CACHE_HOME/libdump for dumps of 64 MiB or more; with DIR, every dump)")
      ("no-index-cache", po::bool_switch(&o.no_index_cache), "neither read nor write an index")
      ("include-own", po::bool_switch(&o.include_own),
       "show libdump's own memory (its dump writer, symbolizer, buffers), one class per component; left out by default")
      ("memory", po::value<std::string>(&o.memory)->value_name("SIZE"),
       "bound the analysis verbs' resident memory to SIZE (512M, 2G; default a quarter of physical memory; "
       "'unlimited'): past half of it the graph's arrays go to files in the index directory")

      ("classes", po::bool_switch(&o.classes),
       "objects, bytes and retained bytes per class after typing (docs/TYPING.md), with the rule that named each; with --top N only N")
      ("leaks", po::bool_switch(&o.leaks),
       "objects no root reaches (leaks, in C++), by class, and the largest unreachable clusters; with --top N only N")
      ("binary", po::value<std::vector<std::string>>(&o.typing.binaries)->value_name("FILE")->composing(),
       "an ELF file of the dumped process with symbols or DWARF, for typing (repeatable)")
      ("debug-dir", po::value<std::vector<std::string>>(&o.typing.debug_dirs)->value_name("DIR")->composing(),
       "a directory of separate debug files (.build-id/xx/yyyy.debug), for typing (repeatable)")
      ("no-typing", "keep the dump's own classes: no typing pass (docs/TYPING.md)");
  po::options_description hidden;
  std::vector<std::string> files;
  hidden.add_options()("file", po::value<std::vector<std::string>>(&files));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("file", -1);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "readdump: " << e.what() << "\nTry 'readdump --help'.\n";
    return ParseResult::kUsageError;
  }
  if (vm.count("no-typing")) o.typing.enabled = false;
  if (vm.count("help")) {
    out << kUsage << visible;
    return ParseResult::kHelp;
  }
  if (vm.count("version")) {
    tools::PrintVersion(out, "readdump");
    return ParseResult::kHelp;
  }
  if (files.empty() || files.back().empty()) {
    err << "readdump: no FILE given\nTry 'readdump --help'.\n";
    return ParseResult::kUsageError;
  }
  o.file = files.back();
  if (o.growth) {
    if (files.size() < 2) {
      err << "readdump: --growth needs two dumps or more, oldest first\n";
      return ParseResult::kUsageError;
    }
    o.series.assign(files.begin(), files.end() - 1);
  } else if (files.size() > 1) {
    err << "readdump: one FILE only (several dumps: --growth OLD... NEW)\n";
    return ParseResult::kUsageError;
  }
  if (vm.count("max-growth")) {
    const std::string& s = vm["max-growth"].as<std::string>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), o.max_growth);
    if (!o.growth || ec != std::errc() || end != s.data() + s.size()) {
      err << "readdump: --max-growth needs --growth and a number of bytes\n";
      return ParseResult::kUsageError;
    }
    o.has_max_growth = true;
  }
  if (o.flame && !o.dominators) {
    err << "readdump: --flame needs --dominators\n";
    return ParseResult::kUsageError;
  }
  if ((vm.count("output") || o.force) && !o.flame) {
    err << "readdump: -o and --force need --dominators --flame\n";
    return ParseResult::kUsageError;
  }
  if (vm.count("top")) {
    // Parsed here: lexical_cast would wrap "-1" around to 2^64-1.
    const std::string& s = vm["top"].as<std::string>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), o.top);
    if (ec != std::errc() || end != s.data() + s.size() || o.top == 0) {
      err << "readdump: --top needs a positive number\n";
      return ParseResult::kUsageError;
    }
    if (!o.dominators && !o.classes && !o.leaks && o.diff_old.empty() && !o.growth) o.histogram = true;
  }
  if (o.raw_types) o.histogram = true;
  if (o.Analysis() || o.symbolize) return ParseResult::kRun;
  if (!o.records && !o.validate && !o.histogram && !o.threads) o.summary = true;
  return ParseResult::kRun;
}

}  // namespace libdump::readdump
