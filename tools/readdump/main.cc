// readdump: summarise, list, validate a heap dump. Sections stream where they
// can (records, problems) and the rest print once the dump has been read.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "class_histogram.h"
#include "dump_file.h"
#include "type_histogram.h"
#include "input_file.h"
#include "json_writer.h"
#include "libdump/format/reader.h"
#include "options.h"
#include "records.h"
#include "analysis_verbs.h"
#include "summary.h"
#include "symbolize.h"
#include "threads.h"
#include "typing.h"
#include "typing_report.h"
#include "validate.h"

namespace libdump::readdump {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

class Run {
 public:
  explicit Run(const Options& o) : o_(o), name_(o.file == "-" ? "<stdin>" : o.file), json_(std::cout) {}

  // The input's name in messages.
  const std::string& name() const { return name_; }

  // With --json, ends the document a failed run leaves open, with the error
  // (also on stderr) as its last member: stdout stays one valid JSON document.
  void EndJson(const std::string& error) {
    if (!o_.json) return;
    if (!json_.started()) {
      json_.BeginObject();
      json_.Field("file", name_);
    }
    json_.CloseTo(1);
    json_.Field("error", error);
    json_.EndObject();
    json_.Finish();
  }

  int Main() {
    // --validate reads the dump twice: a pipe is copied to a temporary file.
    input_.emplace(o_.file);
    if (o_.validate) input_->MakeRereadable();
    std::shared_ptr<format::Reader> reader =
        o_.validate ? OpenDump(input_->path()) : OpenDumpFd(input_->TakeFd());
    summary_.compression = reader->compression();
    summary_.dialect = reader->dialect();
    validator_.SetGoRuntime(reader->dialect() != format::Dialect::kLibdump);
    if (o_.json) {
      json_.BeginObject();
      json_.Field("file", name_);
      if (o_.records) {
        json_.Key("records");
        json_.BeginArray();
      }
    }
    format::Record r;
    uint64_t end = 0;
    while (reader->Next(r)) {
      First(r);
      end = r.offset;
    }
    reader.reset();
    if (o_.json && o_.records) json_.EndArray();
    if (o_.validate) SecondPass(end);
    Finish();
    return problems_ == 0 ? kExitOk : kExitInvalid;
  }

 private:
  void First(const format::Record& r) {
    summary_.Add(r);
    if (o_.histogram) histogram_.Add(r);
    if (o_.threads) threads_.Add(r);
    if (o_.validate) validator_.Collect(r);
    if (o_.records) {
      if (o_.json) {
        WriteRecordJson(json_, r);
      } else {
        PrintRecordLine(std::cout, r);
      }
    }
  }

  void SecondPass(uint64_t end) {
    validator_.FinishCollect();
    if (o_.json) {
      json_.Key("problems");
      json_.BeginArray();
    } else {
      Section();
    }
    std::shared_ptr<format::Reader> reader = OpenDump(input_->path());
    format::Record r;
    while (reader->Next(r)) {
      if (r.offset > end || (r.offset == end && r.kind != format::Kind::kEof)) ThrowChanged(r.offset);
      validator_.Check(r, *reader);
    }
    if (r.offset != end) ThrowChanged(r.offset);
    problems_ = validator_.problems();
    if (o_.json) {
      json_.EndArray();
      json_.Key("valid");
      json_.Bool(problems_ == 0);
    } else if (problems_ == 0) {
      std::cout << name_ << ": ok, no problems\n";
    } else {
      std::cout << name_ << ": " << problems_ << (problems_ == 1 ? " problem\n" : " problems\n");
    }
  }

  void Report(const Problem& p) {
    if (o_.json) {
      json_.BeginObject();
      json_.Field("at", p.offset);
      json_.Field("record", format::KindName(p.kind));
      json_.Field("message", p.message);
      json_.EndObject();
    } else {
      std::cout << name_ << ':' << p.offset << ": kind " << static_cast<uint64_t>(p.kind) << " ("
                << format::KindName(p.kind) << "): " << p.message << '\n';
    }
  }

  // The typing pass's class table, for the summary's typed fraction and the
  // histogram (docs/TYPING.md): the dump read again as a graph and typed,
  // once. Only a libdump dump in a file that can be read again; a dump the
  // graph refuses (two objects at one address) says why, and the histogram
  // then shows the dump's own types.
  struct Typed {
    bool done = false;
    typing::Stats stats;
    std::string error;
    std::vector<Histogram::Row> classes;
  };
  const Typed& TypeOnce() {
    if (typed_) return *typed_;
    Typed& t = typed_.emplace();
    if (!o_.typing.enabled || summary_.dialect != format::Dialect::kLibdump) return t;
    std::string path;
    if (o_.validate) {
      path = input_->path();
    } else if (o_.file != "-" && IsRegularFile(o_.file)) {
      path = o_.file;
    } else {
      return t;
    }
    t.done = true;
    try {
      heapgraph::HeapGraph g;
      g.include_own = o_.include_own;
      heapgraph::Load(path, g);
      t.stats = typing::Type(g, o_.typing);
      t.classes = ClassRows(g);
    } catch (const format::FormatError& e) {
      t.error = e.what();
    } catch (const std::exception& e) {
      t.error = e.what();
    }
    return t;
  }

  void TypeHistogram() {
    if (!o_.histogram || o_.raw_types) return;
    if (const Typed& t = TypeOnce(); t.done && t.error.empty()) histogram_.SetClasses(t.classes);
  }

  void Finish() {
    TypeHistogram();
    if (o_.json) {
      if (o_.summary) {
        json_.Key("summary");
        WriteSummaryJson(json_, summary_);
        if (const Typed& t = TypeOnce(); t.done) {
          json_.Key("typing");
          if (t.error.empty()) {
            typing::WriteTypedFractionJson(json_, t.stats);
          } else {
            json_.BeginObject();
            json_.Field("error", t.error);
            json_.EndObject();
          }
        }
      }
      if (o_.histogram) {
        json_.Key("histogram");
        WriteHistogramJson(json_, histogram_, o_.top);
      }
      if (o_.threads) {
        json_.Key("threads");
        WriteThreadsJson(json_, threads_);
      }
      json_.EndObject();
      json_.Finish();
      return;
    }
    if (o_.summary) {
      Section();
      PrintSummary(std::cout, name_, summary_);
      if (const Typed& t = TypeOnce(); t.done) {
        if (t.error.empty()) {
          typing::PrintTypedFraction(std::cout, t.stats);
        } else {
          std::cout << "typed: not computed: " << t.error << '\n';
        }
      }
    }
    if (o_.histogram) {
      Section();
      PrintHistogram(std::cout, histogram_, o_.top);
    }
    if (o_.threads) {
      Section();
      PrintThreads(std::cout, threads_);
    }
  }

  // Text sections are separated by a blank line.
  void Section() {
    if (sections_++ > 0 || o_.records) std::cout << '\n';
  }

  const Options& o_;
  const std::string name_;
  std::optional<tools::InputFile> input_;
  JsonWriter json_;
  Summary summary_;
  Histogram histogram_{o_.include_own};
  std::optional<Typed> typed_;
  ThreadTable threads_;
  Validator validator_{[this](const Problem& p) { Report(p); }};
  uint64_t problems_ = 0;
  int sections_ = 0;
};

}  // namespace
}  // namespace libdump::readdump

int main(int argc, char** argv) {
  using namespace libdump::readdump;
  std::ios::sync_with_stdio(false);
  Options options;
  switch (ParseOptions(argc, argv, options, std::cout, std::cerr)) {
    case ParseResult::kHelp:
      return kExitOk;
    case ParseResult::kUsageError:
      return kExitUsage;
    case ParseResult::kRun:
      break;
  }
  Run run(options);
  std::string error;
  try {
    if (options.symbolize) return RunSymbolize(options);
    if (options.Analysis()) return RunAnalysis(options);
    return run.Main();
  } catch (const libdump::format::FormatError& e) {
    error = run.name() + ':' + e.what();
  } catch (const OpenError& e) {
    error = run.name() + ": " + e.what();
  } catch (const libdump::tools::InputError& e) {
    error = run.name() + ": " + e.what();
  } catch (const std::bad_alloc&) {
    error = run.name() + ": out of memory";
  } catch (const std::exception& e) {
    // Decompressor and I/O failures that escape as other exceptions are still
    // bad input, not a crash.
    error = run.name() + ": " + e.what();
  }
  run.EndJson(error);
  std::cout.flush();
  std::cerr << error << '\n';
  return kExitInvalid;
}
