//===- whale.cpp - the whale command line ---------------------------------===//
//
// A thin client of libwhale: parses arguments, calls the Interpreter, prints
// what it returns. Exit codes: 0 success, 1 errors in the script, 2 misuse.
//
//===----------------------------------------------------------------------===//

#include "support/OutputFile.h"
#include "whale/HuggingFace.h"
#include "whale/Interpreter.h"
#include "whale/Train.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Bundle.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/DeviceProbe.h"
#include "lib/compile/Planner.h"
#include "lib/elastic/ReshardReport.h"
#include "lib/elastic/StateCollection.h"
#include "lib/perf/Profile.h"
#include "lib/perf/Search.h"
#include "lib/perf/Simulate.h"
#include "lib/report/PlanReport.h"
#include "lib/report/Report.h"
#include "lowering/Passes.h"
#include "repl/Repl.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/run/ElasticSchedule.h"
#include "runtime/run/Interrupt.h"
#include "support/JsonString.h"
#include "tools/RecoveryLine.h"
#include "tools/StepProgress.h"
#include "tools/whale/Options.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/LineEditor/LineEditor.h"
#include "llvm/Support/FileSystem.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "runtime/core/Allocator.h"
#include "support/InputFile.h"
#include "support/Limits.h"
#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

/// What a verb returns after printing its --help: the process exits 0.
constexpr int kHelpShown = 1000;

int usageError(const std::string &msg, const std::string &verb = "") {
  std::cerr << "whale: error: " << msg << "\n"
            << "run 'whale help" << (verb.empty() ? "" : " " + verb)
            << "' for usage\n";
  return 2;
}

bool parseDim(const std::string &spec, whale::InterpreterOptions &opts) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  const std::string value = spec.substr(eq + 1);
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || v < 1)
    return false;
  opts.dims[spec.substr(0, eq)] = v;
  return true;
}

/// Walks one command's arguments: flags with a value (`--flag V` or
/// `--flag=V`) and, through finish(), what every command shares: `-I DIR`,
/// the one script, and an error for anything else.
class Args {
public:
  Args(const char *command, int argc, char **argv)
      : command(command), spec(whale::cli::findVerb(command)), argc(argc),
        argv(argv) {}

  bool next() {
    if (++i >= argc)
      return false;
    current = argv[i];
    return true;
  }
  const std::string &arg() const { return current; }

  /// Whether the argument is the switch `flag`.
  bool is(const std::string &flag) {
    listed(flag);
    return current == flag;
  }

  std::optional<std::string> value(const std::string &flag) {
    listed(flag);
    if (current.rfind(flag + "=", 0) == 0)
      return current.substr(flag.size() + 1);
    if (current == flag && i + 1 < argc)
      return std::string(argv[++i]);
    if (current == flag)
      missingValue = flag;
    return std::nullopt;
  }

  /// Takes the argument as `-I`, the script or an error; returns the exit
  /// code of a usage error, 0 when taken.
  int finish(whale::InterpreterOptions &opts, std::string &file) {
    if (current == "--help" || current == "-h") {
      std::cout << whale::cli::verbHelp(*spec);
      return kHelpShown;
    }
    // What every verb that reads a script shares.
    if (spec->script) {
      if (auto v = value("-I")) {
        opts.searchPath.push_back(*v);
        return 0;
      }
      for (const char *flag : {"--define", "--config"})
        if (auto v = value(flag)) {
          size_t eq = v->find('=');
          if (eq == std::string::npos || eq == 0 || eq + 1 == v->size())
            return usageError(std::string(flag) + " takes " +
                              (flag[2] == 'd' ? "NAME" : "KEY") +
                              "=VALUE, got '" + *v + "'");
          if (flag[2] == 'd')
            opts.defines[v->substr(0, eq)] = v->substr(eq + 1);
          else
            opts.configs[v->substr(0, eq)] =
                whale::parseConfigValue(v->substr(eq + 1));
          return 0;
        }
    }
    if (!missingValue.empty())
      return usageError(missingValue + " needs a value");
    if (!current.empty() && current[0] == '-') {
      std::string near = whale::cli::nearestOption(*spec, current);
      return usageError(
          "unknown option '" + current + "'" +
              (near.empty() ? "" : "; did you mean '" + near + "'?"),
          command);
    }
    if (!file.empty())
      return usageError(std::string(command) + " takes one script, got '" +
                        file + "' and '" + current + "'");
    file = current;
    return 0;
  }

private:
  /// The parser reads only options of the table (tools/whale/Options.cpp),
  /// so --help, suggestions and completion know every one.
  void listed(const std::string &flag) {
    if (!spec || !whale::cli::findOption(*spec, flag)) {
      std::cerr << "whale: internal error: option '" << flag << "' of '"
                << command << "' is missing from the options table\n";
      std::exit(70);
    }
  }

  const char *command;
  const whale::cli::VerbSpec *spec;
  int argc;
  char **argv;
  int i = -1;
  std::string current;
  std::string missingValue; ///< a flag that came last, without its value
};

/// An integer flag value of at least `min`; nullopt (after reporting the
/// usage error in `rc`) when it is not one.
std::optional<int64_t> integer(const std::string &flag, const std::string &v,
                               int64_t min, int &rc,
                               int64_t max = int64_t(1) << 62) {
  char *end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (!v.empty() && *end == '\0' && errno == 0 && n >= min && n <= max)
    return n;
  rc = usageError(
      flag + " takes " + (min > 0 ? "a positive" : "a non-negative") +
      " integer" +
      (max < (int64_t(1) << 62) ? " up to " + std::to_string(max) : "") +
      ", got '" + v + "'");
  return std::nullopt;
}

/// Loads `file` into `interp`; false, its diagnostics printed, when it
/// does not load.
bool loadScript(whale::Interpreter &interp, const std::string &file) {
  if (interp.loadFile(file) && interp.module())
    return true;
  std::cerr << interp.renderDiagnostics();
  return false;
}

/// Writes `text` to `out` (stdout when empty); never over a file `read`
/// loaded (the script, a module it imports) or one of `alsoRead` (a cluster
/// file, profiles, metrics), which the output would destroy.
int writeOutput(const std::string &out, const std::string &text,
                const whale::Interpreter *read = nullptr,
                std::vector<std::string> alsoRead = {},
                const char *flag = "-o") {
  if (out.empty()) {
    std::cout << text;
    return 0;
  }
  if (read)
    for (const std::string &input : read->filesRead())
      alsoRead.push_back(input);
  for (const std::string &input : alsoRead)
    if (!input.empty() && whale::rt::sameFile(out, input)) {
      std::cerr << "whale: error: " << flag << " '" << out << "' is '" << input
                << "', which this command read; write the output "
                   "elsewhere\n";
      return 1;
    }
  if (std::string err = whale::rt::writeOutputFile(out, text, "the output");
      !err.empty()) {
    std::cerr << "whale: error: " << err << "\n";
    return 1;
  }
  return 0;
}

/// Loads the script and plans its trained model over the cluster, which
/// `parsed` receives when given; `options` says how (its `even` and
/// `defaultThreads` are set here).
bool loadAndPlan(const whale::InterpreterOptions &opts, const std::string &file,
                 const std::string &cluster, whale::Interpreter &interp,
                 whale::PlannedModel &plan, bool even,
                 whale::PlannedModel *evenPlan = nullptr,
                 std::string *evenError = nullptr,
                 whale::Cluster *parsed = nullptr,
                 whale::PlanOptions options = {}) {
  whale::Cluster own;
  whale::Cluster &c = parsed ? *parsed : own;
  std::string error;
  if (!whale::parseCluster(cluster, c, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return false;
  }
  if (!interp.loadFile(file) || !interp.module()) {
    std::cerr << interp.renderDiagnostics();
    return false;
  }
  options.even = even;
  options.defaultThreads = whale::sharedThreads(c, 0);
  // A large model takes seconds to plan: say so on a terminal.
  const bool tty = ::isatty(STDERR_FILENO);
  if (tty)
    std::cerr << "planning the model over " << c.devices.size()
              << " devices..." << std::flush;
  struct ClearLine {
    bool on;
    ~ClearLine() {
      if (on)
        std::cerr << "\r\033[K" << std::flush;
    }
  } clear{tty};
  if (!whale::planModel(interp, "", c, options, plan, error)) {
    std::cerr << error << "\n";
    return false;
  }
  if (evenPlan) {
    options.even = true;
    if (!whale::planModel(interp, "", c, options, *evenPlan, *evenError) &&
        evenError->empty())
      *evenError = "planning failed";
  }
  return true;
}

int emitPlanned(const whale::InterpreterOptions &opts, const std::string &file,
                const std::string &out, bool ranks, const std::string &cluster,
                bool even, bool ampStorage) {
  whale::Interpreter interp(opts);
  whale::PlannedModel plan;
  whale::PlanOptions planning;
  planning.ampStorage = ampStorage;
  if (!loadAndPlan(opts, file, cluster, interp, plan, even, nullptr, nullptr,
                   nullptr, planning))
    return 1;
  std::string text;
  llvm::raw_string_ostream os(text);
  (ranks ? *plan.ranks : *plan.planned)->print(os);
  for (const whale::RankVariant &v : plan.others)
    if (ranks)
      os << "// ----- the rank programs at a micro-batch of " << v.microBatch
         << "\n"
         << *v.ranks;
  return writeOutput(out, text, &interp, {cluster});
}

/// `whale compile --emit=bundle -o FOLDER`: the plan compiled ahead of time
/// for tools/whale-exec; prints the files it wrote.
int emitBundle(const whale::InterpreterOptions &opts, const std::string &file,
               const std::string &folder, const std::string &cluster, bool even,
               bool traceSites, bool ampStorage) {
  if (folder.empty())
    return usageError("--emit=bundle writes a folder: give it with -o FOLDER");
  whale::Interpreter interp(opts);
  if (!loadScript(interp, file))
    return 1;
  whale::TrainOptions options;
  options.cluster = cluster;
  options.evenPlan = even;
  options.traceSites = traceSites;
  options.ampStorage = ampStorage;
  const bool tty = ::isatty(STDERR_FILENO);
  options.onPhase = [&](const std::string &what) {
    if (tty)
      std::cerr << "\r\033[K" << (what.empty() ? "" : what + "...")
                << std::flush;
  };
  whale::BundleReport report;
  std::string error;
  if (!whale::compileBundle(interp, options, folder, report, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  std::cout << "compiled " << report.ranks
            << (report.ranks == 1 ? " rank" : " ranks") << " into " << folder
            << " (run it with whale-exec " << folder << "):\n";
  for (const auto &[name, bytes] : report.files)
    std::cout << "  " << name << "  " << bytes << " bytes\n";
  return 0;
}

/// Leaves a finished command's plan to the process's exit instead of
/// freeing it: the rank programs of a large pipeline hold millions of ops,
/// and erasing them one by one took 4 of the 27 s `whale sim` spent on
/// Megatron-LM's 1T run of 512 micro-batches (clang's -disable-free skips
/// the same work). The plan stays reachable, so leak checkers pass it.
void leaveToExit(whale::PlannedModel &plan) {
  llvm::BuryPointer(std::make_unique<whale::PlannedModel>(std::move(plan)));
}

/// `--probe` on plan, sim and run: the devices of `cluster` that declare no
/// rate are measured first, as `whale devices --probe` measures them, and
/// `cluster` then names a cluster file of what was measured (removed when
/// the process ends). `threads`: the run's --threads (0: every core).
/// False after saying why.
bool probeFirst(std::string &cluster, int threads = 0) {
  whale::Cluster c;
  std::string error;
  if (!whale::parseCluster(cluster.empty() ? "cpu:1" : cluster, c, error) ||
      !whale::checkClusterDevices(c, error) ||
      !whale::probeCluster(c, whale::sharedThreads(c, threads), std::cerr,
                           error)) {
    std::cerr << "whale: error: --probe: " << error << "\n";
    return false;
  }
  static struct Probed {
    std::vector<std::string> paths;
    ~Probed() {
      for (const std::string &p : paths)
        std::remove(p.c_str());
    }
  } probed;
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createTemporaryFile("whale-probed", "json", path)) {
    std::cerr << "whale: error: --probe: cannot write a cluster file\n";
    return false;
  }
  probed.paths.push_back(path.str().str());
  std::ofstream out(probed.paths.back());
  out << whale::clusterJson(c);
  if (!out.flush()) {
    std::cerr << "whale: error: --probe: cannot write " << probed.paths.back()
              << "\n";
    return false;
  }
  cluster = probed.paths.back();
  return true;
}

int planCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string file, cluster;
  bool json = false, even = false, probe = false;
  Args args("plan", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--cluster")) {
      cluster = *v;
    } else if (args.is("--probe")) {
      probe = true;
    } else if (args.is("--json")) {
      json = true;
    } else if (args.is("--even")) {
      even = true;
    } else if (int rc = args.finish(opts, file)) {
      return rc;
    }
  }
  if (file.empty() || cluster.empty())
    return usageError("plan needs a script and a cluster: whale plan FILE.whl "
                      "--cluster SPEC");
  if (probe && !probeFirst(cluster))
    return 1;
  whale::Interpreter interp(opts);
  whale::PlannedModel plan, evenPlan;
  std::string evenError;
  if (!loadAndPlan(opts, file, cluster, interp, plan, even,
                   even ? nullptr : &evenPlan, &evenError))
    return 1;
  const whale::PlannedModel *other = even ? nullptr : &evenPlan;
  std::cout << (json ? whale::planJson(plan, other, evenError)
                     : whale::planText(plan, other, evenError));
  leaveToExit(plan);
  leaveToExit(evenPlan);
  return 0;
}

/// Reads the profile databases into one (an event several hold takes the
/// median of their times); false after saying why.
bool loadProfiles(const std::vector<std::string> &paths,
                  whale::sim::ProfileDb &db) {
  std::vector<whale::sim::ProfileDb> dbs(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string error;
    if (!dbs[i].load(paths[i], error)) {
      std::cerr << "whale: error: " << error << "\n";
      return false;
    }
  }
  db = whale::sim::ProfileDb::combine(dbs);
  return true;
}

/// `whale sim`: plans the script over the cluster and replays one iteration
/// of the plan in the simulator.
int simCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string file, cluster, trace;
  std::vector<std::string> profiles;
  bool json = false, even = false, events = false, probe = false;
  whale::PlanOptions planning;
  Args args("sim", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--cluster")) {
      cluster = *v;
    } else if (args.is("--probe")) {
      probe = true;
    } else if (auto v = args.value("--profile")) {
      profiles.push_back(*v);
    } else if (auto v = args.value("--trace")) {
      trace = *v;
    } else if (args.is("--json")) {
      json = true;
    } else if (args.is("--events")) {
      events = true;
    } else if (args.is("--no-overlap")) {
      planning.overlap = false;
    } else if (args.is("--no-fuse")) {
      planning.fuse = false;
    } else if (args.is("--bf16-activations")) {
      planning.ampStorage = true;
    } else if (args.is("--even")) {
      even = true;
    } else if (int rc = args.finish(opts, file)) {
      return rc;
    }
  }
  if (file.empty() || cluster.empty())
    return usageError("sim needs a script and a cluster: whale sim FILE.whl "
                      "--cluster SPEC");
  if (probe && !probeFirst(cluster))
    return 1;
  std::string error;
  whale::sim::ProfileDb db;
  if (!loadProfiles(profiles, db))
    return 1;
  whale::Cluster c;
  whale::Interpreter interp(opts);
  whale::PlannedModel plan;
  // The simulator only reads the rank programs, as `whale search` does:
  // verifying them was a fifth of simulating Megatron-LM's 1T plan (their
  // 512 micro-batches unrolled), and whatever runs the plan verifies it.
  planning.verify = false;
  if (!loadAndPlan(opts, file, cluster, interp, plan, even, nullptr, nullptr,
                   &c, planning))
    return 1;
  whale::SimulateOptions options;
  if (!profiles.empty())
    options.profile = &db;
  options.trace = !trace.empty();
  options.defaultThreads = whale::sharedThreads(c, 0);
  whale::Simulation sim;
  if (!whale::simulatePlan(plan, c, options, sim, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  std::vector<std::string> readAlso = profiles;
  readAlso.push_back(cluster);
  if (!trace.empty())
    if (int rc = writeOutput(trace, whale::simulationTrace(sim), &interp,
                             readAlso, "--trace"))
      return rc;
  std::cout << (json     ? whale::simulationJson(sim, plan)
                : events ? whale::simulationEvents(sim)
                         : whale::simulationText(sim, plan));
  leaveToExit(plan);
  return 0;
}

/// `whale search`: plans and simulates the plans the cluster allows and
/// ranks them.
int searchCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string file, cluster;
  std::vector<std::string> profiles;
  bool json = false;
  int top = 5, jobs = 0;
  Args args("search", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--cluster")) {
      cluster = *v;
    } else if (auto v = args.value("--profile")) {
      profiles.push_back(*v);
    } else if (auto v = args.value("--top")) {
      int rc = 0;
      std::optional<int64_t> k = integer("--top", *v, 1, rc);
      if (!k)
        return rc;
      top = static_cast<int>(std::min<int64_t>(*k, 1 << 20));
    } else if (auto v = args.value("--jobs")) {
      int rc = 0;
      std::optional<int64_t> n = integer("--jobs", *v, 1, rc, 1024);
      if (!n)
        return rc;
      jobs = static_cast<int>(*n);
    } else if (args.is("--json")) {
      json = true;
    } else if (int rc = args.finish(opts, file)) {
      return rc;
    }
  }
  if (file.empty() || cluster.empty())
    return usageError("search needs a script and a cluster: whale search "
                      "FILE.whl --cluster SPEC");
  whale::Cluster c;
  std::string error;
  if (!whale::parseCluster(cluster, c, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  whale::sim::ProfileDb db;
  if (!loadProfiles(profiles, db))
    return 1;
  whale::SearchOptions options;
  options.top = top;
  options.jobs = jobs;
  options.defaultThreads = whale::sharedThreads(c, 0);
  if (!profiles.empty())
    options.profile = &db;
  bool tty = ::isatty(STDERR_FILENO);
  options.progress = [&](size_t done, size_t total,
                         const whale::SearchCandidate &k) {
    if (tty)
      std::cerr << "\r\033[K";
    std::cerr << "search " << done << "/" << total << ": " << k.label();
    if (k.outcome == whale::SearchCandidate::Outcome::Simulated)
      std::cerr << llvm::formatv(": {0:F3} ms", k.iterationSeconds * 1e3).str();
    else
      std::cerr << ": " << k.reason;
    std::cerr << (tty && done < total ? "" : "\n") << std::flush;
  };
  whale::SearchResult result;
  if (!whale::searchPlans(file, opts, c, options, result, error)) {
    std::cerr << (error.rfind("whale", 0) == 0 || error.find(": error:") !=
                          std::string::npos
                      ? ""
                      : "whale: error: ")
              << error << (error.back() == '\n' ? "" : "\n");
    return 1;
  }
  std::cout << (json ? whale::searchJson(result, top)
                     : whale::searchText(result, top));
  return 0;
}

/// `whale reshard`: the delta between the state of two plans of a script.
int reshardCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string from, to, file, apply, out;
  std::map<std::string, std::string> toConfigs;
  bool json = false;
  Args args("reshard", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--apply")) {
      apply = *v;
    } else if (auto v = args.value("-o")) {
      out = *v;
    } else if (auto v = args.value("--from")) {
      from = *v;
    } else if (auto v = args.value("--to")) {
      to = *v;
    } else if (auto v = args.value("--to-config")) {
      size_t eq = v->find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v->size())
        return usageError("--to-config takes KEY=VALUE, got '" + *v + "'");
      toConfigs[v->substr(0, eq)] = v->substr(eq + 1);
    } else if (args.is("--json")) {
      json = true;
    } else if (int rc = args.finish(opts, file)) {
      return rc;
    }
  }
  // The script ends in .whl; a cluster spec may hold '@' itself.
  size_t at = from.find(".whl@");
  if (!file.empty() || from.empty() || to.empty() || at == std::string::npos)
    return usageError("reshard needs --from SCRIPT.whl@CLUSTER and --to "
                      "CLUSTER: whale reshard --from gpt.whl@cpu:4 --to cpu:2");
  if (apply.empty() != out.empty())
    return usageError("--apply CKPT and -o DIR go together: the checkpoint "
                      "to reshard and the folder of rank files to write");
  // With --apply a stop asked (SIGINT, SIGTERM, SIGHUP) comes before the
  // set is written or after it, whole; a second one ends the process at
  // once without a file half written (issue 92 item 16). The old set stays
  // whole either way: the new one replaces it only when complete.
  std::optional<whale::StopOnSignals> stopOnSignals;
  if (!apply.empty())
    stopOnSignals.emplace();
  const std::string script = from.substr(0, at + 4),
                    oldCluster = from.substr(at + 5);
  whale::InterpreterOptions newOpts = opts;
  for (const auto &[key, value] : toConfigs)
    newOpts.configs[key] = whale::parseConfigValue(value);
  whale::Cluster a, b;
  whale::Interpreter oldInterp(opts), newInterp(newOpts);
  whale::PlannedModel oldPlan, newPlan;
  if (!loadAndPlan(opts, script, oldCluster, oldInterp, oldPlan, false,
                   nullptr, nullptr, &a) ||
      !loadAndPlan(newOpts, script, to, newInterp, newPlan, false, nullptr,
                   nullptr, &b))
    return 1;
  whale::StateCollection before, after;
  whale::ReshardPlan plan;
  std::string error;
  // With --apply the checkpoint's own boxes are what moves.
  whale::StateCheckpoint ckpt;
  if (!apply.empty()) {
    if (std::string err = whale::loadStateCheckpoint(apply, ckpt);
        !err.empty()) {
      std::cerr << "whale: error: " << err << "\n";
      return 1;
    }
    if (ckpt.model != newPlan.model) {
      std::cerr << "whale: error: " << apply << " is a checkpoint of '"
                << ckpt.model << "', not of '" << newPlan.model << "'\n";
      return 1;
    }
  }
  if (!(apply.empty() ? whale::stateOf(oldPlan, a, before, error)
                      : (before = ckpt.layout, true)) ||
      !whale::stateOf(newPlan, b, after, error) ||
      !whale::planReshard(before, after, plan, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  if (!apply.empty()) {
    whale::StateCheckpoint rewritten;
    rewritten.model = ckpt.model;
    rewritten.nextStep = ckpt.nextStep;
    rewritten.seed = ckpt.seed;
    rewritten.layout = after;
    if (!whale::applyReshard(after, plan, ckpt.held, rewritten.held, error)) {
      std::cerr << "whale: error: " << error << "\n";
      return 1;
    }
    if (stopOnSignals && stopOnSignals->signal() != 0) {
      std::cerr << "whale: stopped by a signal before writing " << out
                << ": nothing was written\n";
      return 128 + stopOnSignals->signal();
    }
    if (std::string err = whale::saveRankCheckpoint(out, rewritten);
        !err.empty()) {
      std::cerr << "whale: error: " << err << "\n";
      return 1;
    }
    if (stopOnSignals && stopOnSignals->signal() != 0) {
      std::cerr << "whale: stopped by a signal, after writing " << out
                << " whole\n";
      return 128 + stopOnSignals->signal();
    }
  }
  std::cout << (json ? whale::reshardJson(before, after, plan)
                     : whale::reshardText(before, after, plan));
  return 0;
}

/// `whale profile`: plans the script over the cluster and times each
/// distinct op of the plan on the cluster's devices.
int profileCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string file, cluster, out, trace, fromTrace;
  bool even = false;
  int64_t traceEvery = 1;
  int rc = 0;
  Args args("profile", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--cluster")) {
      cluster = *v;
    } else if (auto v = args.value("-o")) {
      out = *v;
    } else if (auto v = args.value("--trace")) {
      trace = *v;
    } else if (auto v = args.value("--from-trace")) {
      fromTrace = *v;
    } else if (auto v = args.value("--trace-every")) {
      std::optional<int64_t> n =
          integer("--trace-every", *v, 1, rc, whale::kMaxTraceEvery);
      if (!n)
        return rc;
      traceEvery = *n;
    } else if (args.is("--even")) {
      even = true;
    } else if ((rc = args.finish(opts, file))) {
      return rc;
    }
  }
  if (file.empty() || cluster.empty() || out.empty())
    return usageError("profile needs a script, a cluster and an output: "
                      "whale profile FILE.whl --cluster SPEC -o DB.json");
  if (!trace.empty() && !fromTrace.empty())
    return usageError("--trace keeps a profiling run's trace; --from-trace "
                      "reads one made elsewhere: give one of them");
  whale::Cluster c;
  std::string error;
  // From a trace the devices were elsewhere (a GPU's, say): none opens here.
  if (!whale::parseCluster(cluster, c, error) ||
      (fromTrace.empty() && !whale::checkClusterDevices(c, error))) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  whale::Interpreter interp(opts);
  whale::PlannedModel plan;
  if (!loadAndPlan(opts, file, cluster, interp, plan, even))
    return 1;
  whale::ProfileOptions options;
  options.defaultThreads = whale::sharedThreads(c, 0);
  options.even = even;
  options.tracePath = trace;
  options.fromTrace = fromTrace;
  options.traceEvery = traceEvery;
  bool tty = ::isatty(STDERR_FILENO);
  options.progress = [&](size_t done, size_t total) {
    if (tty || done == total)
      std::cerr << (tty ? "\r" : "") << "profiled " << done << "/" << total
                << " events" << (tty && done < total ? "" : "\n") << std::flush;
  };
  whale::sim::ProfileDb db;
  if (!whale::profilePlan(interp, cluster, plan, c, options, db, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  if (!out.empty() && !fromTrace.empty() && whale::rt::sameFile(out, fromTrace))
    return usageError("-o '" + out + "' is the trace it reads (--from-trace); "
                      "write the profile elsewhere");
  return writeOutput(out, db.toJson(), &interp, {cluster});
}

/// `whale devices`: the cluster as Whale sees it; --probe measures each
/// distinct thread count's GEMM rate into the devices that declare none.
int devicesCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string cluster = "cpu:1", out, unused;
  bool probe = false, clusterGiven = false;
  Args args("devices", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--cluster")) {
      cluster = *v;
      clusterGiven = true;
    } else if (auto v = args.value("-o")) {
      out = *v;
    } else if (args.is("--probe")) {
      probe = true;
    } else if (int rc = args.finish(opts, unused)) {
      return rc;
    }
  }
  if (!unused.empty())
    return usageError("devices takes no script: whale devices --cluster SPEC");
  whale::Cluster c;
  std::string error;
  if (whale_rt_launched_by_mpi() && !clusterGiven) {
    // Under mpirun or srun: the cluster of this allocation, a node per
    // host and a CPU device per process, its host's cores shared out;
    // rank 0's process writes it.
    if (probe)
      return usageError("devices --probe under mpirun is not there yet: "
                        "probe on each host alone");
    int32_t rank = 0, size = 1;
    char why[512] = "";
    if (whale_rt_mpi_init(&rank, &size, why, sizeof why) != WHALE_RT_OK) {
      std::cerr << "whale: error: " << why << "\n";
      return 1;
    }
    constexpr int64_t kName = 256;
    std::vector<char> names(static_cast<size_t>(size) * kName);
    std::vector<int32_t> cores(static_cast<size_t>(size));
    bool ok = whale_rt_mpi_allocation(names.data(), kName, cores.data()) ==
              WHALE_RT_OK;
    whale_rt_mpi_finalize();
    if (!ok) {
      std::cerr << "whale: error: the processes could not tell each other "
                   "their hosts\n";
      return 1;
    }
    if (rank > 0)
      return 0;
    std::map<std::string, int> perHost;
    for (int32_t r = 0; r < size; ++r)
      ++perHost[names.data() + r * kName];
    for (int32_t r = 0; r < size; ++r) {
      std::string host = names.data() + r * kName;
      auto at = std::find(c.hosts.begin(), c.hosts.end(), host);
      if (at == c.hosts.end()) {
        c.nodes.push_back(host);
        c.hosts.push_back(host);
        at = c.hosts.end() - 1;
      }
      whale::DeviceSpec d;
      d.node = static_cast<int>(at - c.hosts.begin());
      d.threads = std::max(1, cores[r] / perHost[host]);
      c.devices.push_back(d);
    }
  } else if (!whale::parseCluster(cluster, c, error) ||
             !whale::checkClusterDevices(c, error)) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  int shared = whale::sharedThreads(c, 0);
  std::vector<std::string> source(c.devices.size(), "declared");
  for (size_t i = 0; i < c.devices.size(); ++i)
    if (!(c.devices[i].flops > 0))
      source[i] = probe ? "measured" : "nominal";
  if (probe && !whale::probeCluster(c, shared, std::cerr, error)) {
    std::cerr << "whale: error: probing failed: " << error << "\n";
    return 1;
  }
  std::vector<double> rates = whale::deviceRates(c, shared);
  llvm::outs() << llvm::formatv(
      "{0,-6} {1,-5} {2,-10} {3,7} {4,12} {5,10}  {6}\n", "device", "kind",
      "node", "threads", "memory", "GFLOP/s", "rate");
  for (size_t i = 0; i < c.devices.size(); ++i) {
    const whale::DeviceSpec &d = c.devices[i];
    llvm::outs() << llvm::formatv(
        "{0,-6} {1,-5} {2,-10} {3,7} {4,12} {5,10:F1}  {6}\n", i, d.kind(),
        d.node < static_cast<int>(c.nodes.size()) ? c.nodes[d.node] : "",
        whale::threadsOf(d, shared),
        d.memory > 0 ? whale::rt::formatBytes(d.memory) : "no limit",
        rates[i] / 1e9, source[i]);
  }
  if (std::any_of(c.devices.begin(), c.devices.end(),
                  [](const whale::DeviceSpec &d) { return !d.gpu; }))
    llvm::outs() << "CPU convolutions: " << whale_rt_conv_kernels() << "\n";
  llvm::outs().flush();
  if (!out.empty())
    return writeOutput(out, whale::clusterJson(c), nullptr, {cluster});
  return 0;
}

int compile(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string file, out, emit = "whale", cluster;
  bool annotateCost = false, locations = false, even = false,
       traceSites = false, ampStorage = false;
  Args args("compile", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--emit")) {
      emit = *v;
    } else if (auto v = args.value("-o")) {
      out = *v;
    } else if (auto v = args.value("--dim")) {
      if (!parseDim(*v, opts))
        return usageError("--dim takes NAME=N with N >= 1, got '" + *v + "'");
    } else if (auto v = args.value("--cluster")) {
      cluster = *v;
    } else if (args.is("--annotate-cost")) {
      annotateCost = true;
    } else if (args.is("--locations")) {
      locations = true;
    } else if (args.is("--trace-sites")) {
      traceSites = true;
    } else if (args.is("--bf16-activations")) {
      ampStorage = true;
    } else if (args.is("--even")) {
      even = true;
    } else if (int rc = args.finish(opts, file)) {
      return rc;
    }
  }
  if (traceSites && emit != "bundle")
    return usageError("--trace-sites is for --emit=bundle");
  if (ampStorage && emit != "bundle" && emit != "planned" && emit != "ranks")
    return usageError("--bf16-activations is for --emit=planned, ranks or "
                      "bundle (whale run takes it too)");
  if (!out.empty() && !file.empty() && whale::rt::sameFile(out, file))
    return usageError("-o '" + out + "' is the script itself; write the " +
                      "output elsewhere");
  if (file.empty())
    return usageError("compile needs a script: whale compile FILE.whl");
  if (emit == "bundle")
    return emitBundle(opts, file, out, cluster, even, traceSites, ampStorage);
  if (emit == "planned" || emit == "ranks")
    return emitPlanned(opts, file, out, emit == "ranks",
                       cluster.empty() ? "cpu:1" : cluster, even, ampStorage);
  std::optional<whale::Stage> stage = whale::parseStage(emit);
  if (!stage)
    return usageError("unknown stage '" + emit +
                      "'; stages: ast, whale, grad, train, runtime, planned, "
                      "ranks, bundle");

  whale::Interpreter interp(opts);
  bool ok = interp.loadFile(file);
  std::string text;
  if (ok && *stage == whale::Stage::Whale) {
    mlir::ModuleOp module = interp.module();
    ok = static_cast<bool>(module);
    if (ok && annotateCost) {
      mlir::PassManager pm(&interp.context());
      pm.addPass(whale::createWhaleAnnotateCost());
      ok = succeeded(pm.run(module));
    }
    if (ok) {
      llvm::raw_string_ostream os(text);
      mlir::OpPrintingFlags flags;
      if (locations)
        flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false)
            .useLocalScope();
      module->print(os, flags);
    }
  } else if (ok) {
    std::optional<std::string> s = interp.emit(*stage);
    ok = s.has_value();
    if (ok)
      text = *s;
  }
  std::cerr << interp.renderDiagnostics();
  if (!ok || interp.hasErrors())
    return 1;
  return writeOutput(out, text, &interp);
}

/// The job's outcome as JSON for `--status FILE`: under `mpirun
/// --enable-recovery` the launcher's exit status is 0 even when every
/// process failed, so a job's script reads this instead. Written whole by
/// the reporting process (or by every process that fails); absent when
/// the processes died without a word.
std::string statusJson(const whale::TrainResult &r, int exitStatus) {
  int64_t lost = 0;
  for (const whale::RecoveryReport &rec : r.recoveries)
    lost += rec.processesLost;
  std::string s = std::string("{\"ok\": ") + (r.ok ? "true" : "false") +
                  ", \"exit_status\": " + std::to_string(exitStatus);
  if (!r.losses.empty())
    s += ", \"first_step\": " + std::to_string(r.firstStep) +
         ", \"last_step\": " +
         std::to_string(r.firstStep + static_cast<int64_t>(r.losses.size()) -
                        1);
  s += ", \"recoveries\": " + std::to_string(r.recoveries.size()) +
       ", \"processes_lost\": " + std::to_string(lost);
  if (!r.ok)
    s += ", \"error\": " + whale::rt::jsonQuote(r.error);
  return s + "}\n";
}

/// A Hugging Face checkpoint folder given to --load, imported into a
/// temporary Whale checkpoint that the run or sampling loads and that goes
/// with this object; `path` then names it. Nothing for a Whale checkpoint.
struct ImportedForLoad {
  std::string file;
  ~ImportedForLoad() {
    if (!file.empty())
      std::remove(file.c_str());
  }
  /// "" or the import's error.
  std::string take(whale::Interpreter &interp, const std::string &model,
                   std::string &path, const std::string &names) {
    if (path.empty() || !whale::isHuggingFaceFolder(path))
      return "";
    std::error_code ec;
    std::string name =
        (std::filesystem::temp_directory_path(ec) / "whale-hf-XXXXXX").string();
    int fd = ec ? -1 : ::mkstemp(name.data());
    if (fd < 0)
      return "cannot make a temporary checkpoint for " + path + ": " +
             (ec ? ec.message() : std::strerror(errno));
    ::close(fd);
    // The import names its own file beside the one mkstemp made.
    file = name + ".safetensors";
    std::remove(name.c_str());
    whale::HfImportOptions import;
    import.model = model;
    import.source = path;
    import.output = file;
    import.names = names;
    whale::HfImportResult r = whale::importHuggingFace(interp, import);
    if (!r.ok)
      return r.error;
    path = file;
    return "";
  }
};

/// Removes the status file an earlier run wrote at `path`, so that it cannot
/// pass for this run's; an error when `path` is a regular file that is not
/// one (a status file is one JSON line that begins `{"ok": `). Nothing
/// there, or a FIFO or device, is left as it is.
std::string removeEarlierStatus(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return "";
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (st.st_size > 4096 || line.rfind("{\"ok\": ", 0) != 0 ||
      line.find("\"exit_status\": ") == std::string::npos)
    return "--status '" + path +
           "' is a file Whale did not write as a status; name another";
  std::remove(path.c_str());
  return "";
}

int run(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::TrainOptions train;
  std::string file, elastic, statusPath, hfNames;
  bool probe = false;
  Args args("run", argc, argv);
  int rc = 0;
  while (args.next()) {
    if (auto v = args.value("--steps")) {
      if (!(train.steps = integer("--steps", *v, 1, rc, whale::kMaxSteps)))
        return rc;
    } else if (auto v = args.value("--seed")) {
      std::optional<int64_t> n = integer("--seed", *v, 0, rc);
      if (!n)
        return rc;
      train.seed = static_cast<uint64_t>(*n);
    } else if (auto v = args.value("--threads")) {
      std::optional<int64_t> n =
          integer("--threads", *v, 1, rc, whale::kMaxThreads);
      if (!n)
        return rc;
      train.threads = static_cast<int>(*n);
    } else if (auto v = args.value("--status")) {
      statusPath = *v;
    } else if (auto v = args.value("--metrics")) {
      train.metricsPath = *v;
    } else if (auto v = args.value("--log-samples")) {
      train.samplesPath = *v;
    } else if (auto v = args.value("--save")) {
      train.savePath = *v;
    } else if (auto v = args.value("--trace")) {
      train.tracePath = *v;
    } else if (auto v = args.value("--trace-every")) {
      std::optional<int64_t> n =
          integer("--trace-every", *v, 1, rc, whale::kMaxTraceEvery);
      if (!n)
        return rc;
      train.traceEvery = *n;
    } else if (auto v = args.value("--load")) {
      train.loadPath = *v;
    } else if (auto v = args.value("--hf-names")) {
      hfNames = *v;
    } else if (auto v = args.value("--cluster")) {
      train.cluster = *v;
    } else if (args.is("--probe")) {
      probe = true;
    } else if (auto v = args.value("--elastic")) {
      elastic = *v;
    } else if (auto v = args.value("--control")) {
      train.controlPath = *v;
    } else if (args.is("--save-ranks")) {
      train.saveRanks = true;
    } else if (auto v = args.value("--replicate-every")) {
      std::optional<int64_t> n = integer("--replicate-every", *v, 1, rc);
      if (!n)
        return rc;
      train.replicateEvery = *n;
    } else if (auto v = args.value("--fail-rank")) {
      // DEVICE@STEP: for tests of recovery.
      size_t at = v->find('@');
      std::optional<int64_t> device, step;
      if (at == std::string::npos ||
          !(device = integer("--fail-rank", v->substr(0, at), 0, rc)) ||
          !(step = integer("--fail-rank", v->substr(at + 1), 1, rc)))
        return rc ? rc
                  : usageError("--fail-rank takes DEVICE@STEP, got '" + *v +
                               "'");
      train.failDevice = *device;
      train.failStep = *step;
    } else if (args.is("--even")) {
      train.evenPlan = true;
    } else if (args.is("--no-fuse")) {
      train.fuse = false;
    } else if (args.is("--bf16-activations")) {
      train.ampStorage = true;
    } else if (args.is("--no-overlap")) {
      train.overlap = false;
    } else if ((rc = args.finish(opts, file))) {
      return rc;
    }
  }
  if (file.empty())
    return usageError("run needs a script: whale run FILE.whl");
  if (train.saveRanks && (train.cluster.empty() || train.savePath.empty()))
    return usageError("--save-ranks needs --cluster and --save: the ranks "
                      "whose boxes to write");
  if (train.failStep > 0 && train.cluster.empty())
    return usageError("--fail-rank needs --cluster: the devices one of "
                      "which fails");
  if (!train.controlPath.empty() && train.cluster.empty())
    return usageError("--control needs --cluster: the devices the run "
                      "starts on");
  if (probe) {
    if (train.cluster.empty())
      return usageError("--probe needs --cluster: the devices to measure");
    if (!probeFirst(train.cluster, train.threads))
      return 1;
  }
  // One device without a plan has no driver to mark its untraced steps.
  if (train.traceEvery > 1 &&
      (train.cluster.empty() || train.tracePath.empty()))
    return usageError("--trace-every needs --trace and --cluster: the run "
                      "whose steps it traces");
  if (!elastic.empty()) {
    if (train.cluster.empty())
      return usageError("--elastic needs --cluster: the devices the run "
                        "starts on");
    std::string text,
        error = whale::rt::readRegularFile(elastic, "the elastic schedule",
                                           whale::rt::kMaxTextInput, text);
    if (!error.empty()) {
      std::cerr << "whale: error: " << error << "\n";
      return 1;
    }
    std::vector<whale::ScheduledChange> changes;
    if (!whale::parseElasticSchedule(
            text, elastic, whale::ChangeTarget::Devices, changes, error)) {
      std::cerr << error << "\n";
      return 1;
    }
    for (const whale::ScheduledChange &c : changes)
      train.elastic.push_back({c.afterStep, c.target});
  }
  whale::Interpreter interp(opts);
  if (!loadScript(interp, file))
    return 1;
  std::cerr << interp.renderDiagnostics(); // warnings
  // Started by mpirun or srun: this process is one rank of the plan, and
  // the process of rank 0 reports for all.
  int32_t processRank = 0, processCount = 1;
  if (whale_rt_launched_by_mpi()) {
    char why[512] = "";
    if (whale_rt_mpi_init(&processRank, &processCount, why, sizeof why) !=
        WHALE_RT_OK) {
      std::cerr << "whale: error: " << why << "\n";
      return 1;
    }
    if (train.cluster.empty())
      train.cluster = "cpu:" + std::to_string(processCount);
    train.processes = true;
  }
  struct MpiFinalizer {
    bool active;
    ~MpiFinalizer() {
      if (active)
        whale_rt_mpi_finalize();
    }
  } finalizer{train.processes};
  // On a terminal the progress line updates in place; in a log, one line
  // per tenth of the run.
  bool tty = ::isatty(STDERR_FILENO);
  train.onStep = [&](const whale::StepReport &r) {
    whale::cli::printStepProgress(r, tty);
  };
  // Planning, compiling and saving show on a terminal, as a line the
  // next one replaces; in a log they stay quiet.
  train.onPhase = [&](const std::string &what) {
    if (!tty || processRank > 0)
      return;
    std::cerr << "\r\033[K" << (what.empty() ? "" : what + "...")
              << std::flush;
  };
  // A status file of an earlier job must not pass for this one's; but only
  // a status file is removed (issue 92 item 2): never a file the run reads,
  // nor one Whale did not write, nor a FIFO or device, which the status is
  // written into as it is.
  if (!statusPath.empty() && processRank <= 0) {
    if (std::string err = whale::rt::checkOutputPath(statusPath, "the status");
        !err.empty())
      return usageError("--status: " + err);
    std::vector<std::string> inputs = whale::filesTrainReads(interp, train);
    if (!elastic.empty())
      inputs.push_back(elastic);
    if (std::string err = whale::checkOutputsAgainstInputs(
            {{"--status", statusPath}}, inputs);
        !err.empty())
      return usageError(err);
    if (std::string err = removeEarlierStatus(statusPath); !err.empty())
      return usageError(err);
  }
  auto writeStatus = [&](const whale::TrainResult &r, int exitStatus) {
    if (statusPath.empty())
      return;
    if (std::string err = whale::rt::writeOutputFile(
            statusPath, statusJson(r, exitStatus), "the status");
        !err.empty())
      std::cerr << "whale: warning: " + err + "\n";
  };
  whale::StopOnSignals stopOnSignals;
  // A Hugging Face checkpoint folder is read as `whale import` reads it.
  ImportedForLoad imported;
  if (std::string err =
          imported.take(interp, train.model, train.loadPath, hfNames);
      !err.empty()) {
    std::cerr << "whale: error: " << err << "\n";
    return 1;
  }
  whale::TrainResult result = whale::train(interp, train);
  if (tty)
    std::cerr << "\n";
  for (const std::string &e : result.controlErrors)
    std::cerr << ("whale: warning: the change asked in " + train.controlPath +
                  " was not made " + e + "\n");
  // (A stop the REPL's Ctrl-C asked is its error, reported below.)
  if (result.stopped && (stopOnSignals.signal() != 0 || train.processes)) {
    // Stopped by a signal at a step boundary, every process alike (under
    // mpirun they agreed with the step's losses): one report, no abort,
    // and the signal's exit status (1 for a process the signal missed).
    const int status =
        stopOnSignals.signal() != 0 ? 128 + stopOnSignals.signal() : 1;
    if (processRank <= 0) {
      std::cerr << "whale: " + result.error + "\n";
      writeStatus(result, status);
    }
    return status;
  }
  if (!result.ok) {
    // One write of the whole line: under mpirun several processes may
    // report at once into the same stream.
    std::cerr << "whale: error: " +
                     (train.processes
                          ? "process " + std::to_string(processRank) + ": "
                          : std::string()) +
                     result.error + "\n";
    writeStatus(result, 1);
    // The other processes may wait on this one: end them all.
    if (train.processes) {
      std::cerr.flush();
      whale_rt_mpi_abort(1);
    }
    return 1;
  }
  // Rank 0's process reports (after processes were lost, the survivors'
  // process 0).
  const bool lostProcesses =
      train.processes &&
      llvm::any_of(result.recoveries, [](const whale::RecoveryReport &r) {
        return r.processesLost > 0;
      });
  if (train.processes && result.processRank != 0) {
    if (lostProcesses)
      whale_rt_mpi_leave(0);
    return 0;
  }
  writeStatus(result, 0);
  if (!result.losses.empty())
    std::cout << "trained steps " << result.firstStep << " to "
              << result.firstStep + result.losses.size() - 1 << ": loss "
              << result.losses.front() << " -> " << result.losses.back()
              << "\n";
  if (!result.evalLosses.empty())
    std::cout << "held-out loss after step " << result.evalLosses.back().first
              << ": " << result.evalLosses.back().second << "\n";
  if (!result.commBytes.empty() && !result.losses.empty()) {
    // The runtime's counters: what each rank handed to its collectives.
    int64_t most = 0, total = 0;
    for (int64_t b : result.commBytes) {
      most = std::max(most, b);
      total += b;
    }
    // The counters are the last plan's ranks', over the steps they ran.
    int64_t steps = std::max<int64_t>(1, result.stepsOnLastPlan);
    std::cout << "communicated per step: " << total / steps
              << " bytes over all ranks, at most " << most / steps
              << " by one rank\n";
    int64_t mostAllToAll = 0;
    for (int64_t b : result.allToAllBytes)
      mostAllToAll = std::max(mostAllToAll, b);
    if (mostAllToAll > 0)
      std::cout << "of which all-to-all: at most " << mostAllToAll / steps
                << " by one rank\n";
  }
  // One write per line: under mpirun another process's output may
  // interleave between the pieces of an unbuffered stream.
  for (const whale::RecoveryReport &r : result.recoveries)
    std::cout << whale::cli::recoveryLine(
        r, std::to_string(r.devicesBefore) + " -> " +
               std::to_string(r.devicesAfter) + " devices");
  if (result.storeUpdates > 0)
    std::cout << "kept the state in memory " << result.storeUpdates
              << " times, "
              << llvm::formatv("{0:F3}", result.storeSeconds).str()
              << " s holding the steps up, "
              << llvm::formatv("{0:F3}", result.storeCopySeconds).str()
              << " s copying beside them"
              << (result.storeSentBytes > 0
                      ? ", this process sent " +
                            std::to_string(result.storeSentBytes) +
                            " bytes to the next"
                      : std::string())
              << "\n";
  for (const whale::ReshardReport &r : result.reshards)
    std::cout << "resharded after step " << r.afterStep << ": " << r.ranksBefore
              << " -> " << r.ranksAfter << " ranks, moved " << r.movedBytes
              << " bytes (lower bound " << r.lowerBoundBytes << "), kept "
              << r.stayedBytes << " in place, "
              << (r.processBytes > 0 ? std::to_string(r.processBytes) +
                                           " sent between processes, "
                                     : std::string())
              << llvm::formatv("{0:F3}", r.seconds).str() << " s ("
              << llvm::formatv("{0:F3}", r.planSeconds).str()
              << " s re-planning and compiling)"
              << (r.why.empty() ? "" : ": " + r.why) << "\n";
  if (!result.localBatches.empty()) {
    std::cout << "samples per device:";
    for (int64_t b : result.localBatches)
      std::cout << " " << b;
    if (!result.nominalRates.empty())
      std::cout << " (balanced by nominal rates: `whale devices --cluster "
                   "SPEC --probe -o FILE.json` measures them)";
    std::cout << "\npeak memory per device:";
    for (int64_t b : result.peakMemory)
      std::cout << " " << b;
    std::cout << " bytes\n";
  }
  if (!result.stepGraphs.empty())
    std::cout << result.stepGraphs << "\n";
  // After processes were lost, MPI_Finalize would wait for them (Open
  // MPI without ULFM): the survivors leave without it.
  if (lostProcesses) {
    std::cout.flush();
    std::cerr.flush();
    whale_rt_mpi_leave(0);
  }
  return 0;
}

/// `whale report`: a run's metrics (and traces, plan) as one HTML page.
int reportCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::ReportInputs in;
  std::string out;
  Args args("report", argc, argv);
  while (args.next()) {
    if (auto v = args.value("--trace")) {
      in.tracePath = *v;
    } else if (auto v = args.value("--sim-trace")) {
      in.simTracePath = *v;
    } else if (auto v = args.value("--plan")) {
      in.planPath = *v;
    } else if (auto v = args.value("-o")) {
      out = *v;
    } else if (int rc = args.finish(opts, in.metricsPath)) {
      return rc;
    }
  }
  if (in.metricsPath.empty())
    return usageError("report needs the metrics: whale report METRICS.jsonl "
                      "-o REPORT.html",
                      "report");
  std::string error;
  std::string html = whale::reportHtml(in, error);
  if (html.empty()) {
    std::cerr << "whale: error: " << error << "\n";
    return 1;
  }
  return writeOutput(
      out, html, nullptr,
      {in.metricsPath, in.tracePath, in.simTracePath, in.planPath});
}

int importCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::HfImportOptions import;
  std::string file;
  Args args("import", argc, argv);
  int rc = 0;
  while (args.next()) {
    if (auto v = args.value("--hf"))
      import.source = *v;
    else if (auto v = args.value("-o"))
      import.output = *v;
    else if (auto v = args.value("--model"))
      import.model = *v;
    else if (auto v = args.value("--hf-names"))
      import.names = *v;
    else if ((rc = args.finish(opts, file)))
      return rc;
  }
  if (file.empty() || import.source.empty() || import.output.empty())
    return usageError("import needs a script, a Hugging Face checkpoint and "
                      "an output: whale import FILE.whl --hf DIR -o "
                      "CKPT.safetensors",
                      "import");
  whale::Interpreter interp(opts);
  if (!loadScript(interp, file))
    return 1;
  whale::HfImportResult result = whale::importHuggingFace(interp, import);
  if (!result.ok) {
    std::cerr << "whale: error: " << result.error << "\n";
    return 1;
  }
  std::cout << "imported " << result.tensors << " tensors ("
            << result.parameters << " parameters) from " << import.source
            << " into " << import.output << "\n";
  return 0;
}

int exportCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::HfExportOptions exporting;
  std::string file;
  Args args("export", argc, argv);
  int rc = 0;
  while (args.next()) {
    if (auto v = args.value("--load"))
      exporting.checkpoint = *v;
    else if (auto v = args.value("--hf"))
      exporting.output = *v;
    else if (auto v = args.value("--model"))
      exporting.model = *v;
    else if (auto v = args.value("--hf-names"))
      exporting.names = *v;
    else if ((rc = args.finish(opts, file)))
      return rc;
  }
  if (file.empty() || exporting.checkpoint.empty() || exporting.output.empty())
    return usageError("export needs a script, a checkpoint and a folder: "
                      "whale export FILE.whl --load CKPT --hf DIR",
                      "export");
  whale::Interpreter interp(opts);
  if (!loadScript(interp, file))
    return 1;
  whale::HfExportResult result = whale::exportHuggingFace(interp, exporting);
  if (!result.ok) {
    std::cerr << "whale: error: " << result.error << "\n";
    return 1;
  }
  std::cout << "exported " << result.tensors << " tensors of "
            << exporting.checkpoint << " into " << exporting.output << "\n";
  return 0;
}

int sample(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::SampleOptions sampling;
  std::string file, hfNames;
  Args args("sample", argc, argv);
  int rc = 0;
  while (args.next()) {
    if (auto v = args.value("--load")) {
      sampling.checkpoint = *v;
    } else if (auto v = args.value("--hf-names")) {
      hfNames = *v;
    } else if (auto v = args.value("--prompt")) {
      sampling.prompt = *v;
    } else if (auto v = args.value("--tokens")) {
      std::optional<int64_t> n = integer("--tokens", *v, 0, rc);
      if (!n)
        return rc;
      sampling.tokens = *n;
    } else if (auto v = args.value("--temperature")) {
      char *end = nullptr;
      double t = std::strtod(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(t >= 0) || !std::isfinite(t))
        return usageError("--temperature takes a number >= 0 (0: greedy), "
                          "got '" +
                          *v + "'");
      sampling.temperature = t;
    } else if (auto v = args.value("--seed")) {
      std::optional<int64_t> n = integer("--seed", *v, 0, rc);
      if (!n)
        return rc;
      sampling.seed = static_cast<uint64_t>(*n);
    } else if (auto v = args.value("--threads")) {
      std::optional<int64_t> n =
          integer("--threads", *v, 1, rc, whale::kMaxThreads);
      if (!n)
        return rc;
      sampling.threads = static_cast<int>(*n);
    } else if (args.is("--no-cache")) {
      sampling.cache = false;
    } else if ((rc = args.finish(opts, file))) {
      return rc;
    }
  }
  if (file.empty() || sampling.checkpoint.empty())
    return usageError("sample needs a script and a checkpoint: whale sample "
                      "FILE.whl --load CKPT");
  whale::Interpreter interp(opts);
  if (!loadScript(interp, file))
    return 1;
  ImportedForLoad imported;
  if (std::string err =
          imported.take(interp, sampling.model, sampling.checkpoint, hfNames);
      !err.empty()) {
    std::cerr << "whale: error: " << err << "\n";
    return 1;
  }
  whale::SampleResult result = whale::sample(interp, sampling);
  if (!result.ok) {
    std::cerr << "whale: error: " << result.error << "\n";
    return 1;
  }
  if (sampling.cache && !result.cacheRefusal.empty())
    std::cerr << "whale: note: no key/value cache (" << result.cacheRefusal
              << "): each byte recomputes the window\n";
  std::cout << result.text << "\n";
  return 0;
}

} // namespace

int runCommand(int argc, char **argv);

/// Output to standard output is checked like any file's: `whale compile
/// X.whl > /dev/full` fails rather than exiting 0 with nothing written.
int main(int argc, char **argv) {
  int rc = 0;
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, which the
  // writers report ("File too large") and clean up after, instead of the
  // signal killing the process with a temporary left behind.
  ::signal(SIGXFSZ, SIG_IGN);
  // What the library reports it reports as errors; an exception that still
  // escapes is a bug or the machine's limit, said as such, not an abort.
  try {
    rc = runCommand(argc, argv);
  } catch (const std::bad_alloc &) {
    std::cerr << "whale: error: out of memory\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "whale: internal error: " << e.what() << "\n";
    return 70;
  }
  std::cout.flush();
  llvm::outs().flush();
  if (rc == 0 && (!std::cout || llvm::outs().has_error() ||
                  std::fflush(stdout) != 0 || std::ferror(stdout))) {
    llvm::outs().clear_error();
    std::cerr << "whale: error: cannot write the output: "
              << std::strerror(errno ? errno : EIO) << "\n";
    return 1;
  }
  return rc;
}

/// `whale repl`: the session reads standard input; its :plan, :sim, :train
/// and :devices run this program's verbs.
int replCommand(int argc, char **argv) {
  whale::InterpreterOptions opts;
  Args args("repl", argc, argv);
  std::string file;
  while (args.next())
    if (int rc = args.finish(opts, file))
      return rc;
  if (!file.empty())
    return usageError("repl takes no script; use :load FILE in the session");
  whale::ReplOptions options;
  options.interpreter = opts;
  options.interactive = ::isatty(0) && ::isatty(1);
  // History between sessions: WHALE_HISTORY, else ~/.whale-history.
  const char *history = std::getenv("WHALE_HISTORY");
  options.historyPath =
      history ? history : llvm::LineEditor::getDefaultHistoryPath("whale");
  options.runVerb = [](const std::vector<std::string> &verbArgs) {
    std::vector<std::string> all = {"whale"};
    all.insert(all.end(), verbArgs.begin(), verbArgs.end());
    std::vector<char *> argv;
    for (std::string &a : all)
      argv.push_back(a.data());
    int rc = runCommand(static_cast<int>(argv.size()), argv.data());
    std::cout.flush();
    return rc;
  };
  return whale::runRepl(std::cin, std::cout, std::cerr, std::move(options));
}

int dispatch(int argc, char **argv) {
  if (argc < 2) {
    // On a terminal, a session; else (a pipe, a script) the usage.
    if (::isatty(0) && ::isatty(1))
      return replCommand(0, argv + 2);
    std::cerr << whale::cli::overview();
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    if (argc > 2) {
      const whale::cli::VerbSpec *verb = whale::cli::findVerb(argv[2]);
      if (!verb)
        return usageError("no verb '" + std::string(argv[2]) + "'");
      std::cout << whale::cli::verbHelp(*verb);
      return 0;
    }
    std::cout << whale::cli::overview();
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    std::cout << "whale " WHALE_VERSION "\n";
    return 0;
  }
  if (cmd == "completion") {
    if (argc != 3 || std::string(argv[2]) != "bash")
      return usageError("completion takes the shell: whale completion bash",
                        "completion");
    std::cout << whale::cli::bashCompletion();
    return 0;
  }
  if (cmd == "compile")
    return compile(argc - 2, argv + 2);
  if (cmd == "devices")
    return devicesCommand(argc - 2, argv + 2);
  if (cmd == "plan")
    return planCommand(argc - 2, argv + 2);
  if (cmd == "run")
    return run(argc - 2, argv + 2);
  if (cmd == "sim")
    return simCommand(argc - 2, argv + 2);
  if (cmd == "profile")
    return profileCommand(argc - 2, argv + 2);
  if (cmd == "search")
    return searchCommand(argc - 2, argv + 2);
  if (cmd == "reshard")
    return reshardCommand(argc - 2, argv + 2);
  if (cmd == "sample")
    return sample(argc - 2, argv + 2);
  if (cmd == "import")
    return importCommand(argc - 2, argv + 2);
  if (cmd == "export")
    return exportCommand(argc - 2, argv + 2);
  if (cmd == "report")
    return reportCommand(argc - 2, argv + 2);
  if (cmd == "repl")
    return replCommand(argc - 2, argv + 2);
  std::string near;
  unsigned best = 3; // at most two letters off
  for (const whale::cli::VerbSpec &v : whale::cli::verbs()) {
    unsigned d = llvm::StringRef(cmd).edit_distance(v.name);
    if (d < best)
      best = d, near = v.name;
  }
  return usageError("unknown command '" + cmd + "'" +
                    (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

int runCommand(int argc, char **argv) {
  int rc = dispatch(argc, argv);
  return rc == kHelpShown ? 0 : rc;
}
