//===- whale-exec.cpp - run a plan compiled ahead of time -----------------===//
//
// `whale-exec FOLDER`: trains from what `whale compile --emit=bundle -o
// FOLDER` wrote, with nothing but the runtime linked in: no MLIR, no LLVM,
// so it runs on cluster nodes (and GPU machines) that have neither.
//
//===----------------------------------------------------------------------===//

#include "runtime/WhaleRuntime.h"
#include "runtime/bundle/RunPlan.h"
#include "runtime/run/ElasticSchedule.h"
#include "runtime/run/Interrupt.h"
#include "support/InputFile.h"
#include "support/Limits.h"
#include "tools/RecoveryLine.h"
#include "tools/StepProgress.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

namespace {

const char *kUsage =
    "usage: whale-exec FOLDER [options]\n"
    "\n"
    "Trains from a plan compiled ahead of time (whale compile FILE.whl\n"
    "--emit=bundle --cluster SPEC -o FOLDER), with the same data order,\n"
    "losses, metrics and checkpoint as `whale run` gives with that plan.\n"
    "Under mpirun or srun each process runs the ranks of an equal block of\n"
    "the plan's devices (start a number of processes that divides them).\n"
    "\n"
    "options:\n"
    "  --steps N            train N steps (default: the compiled plan's)\n"
    "  --seed S             the seed of the parameters (default: the plan's)\n"
    "  --threads N          threads in all for devices that name none\n"
    "                       (default: every core)\n"
    "  --data PATH          the corpus of text(...) or tokens(...) data, in\n"
    "                       place of the path compiled into the plan\n"
    "  --metrics FILE.jsonl one JSON line per step: loss, samples/s, time, lr\n"
    "  --log-samples FILE.jsonl\n"
    "                       one JSON line per step: the dataset samples each\n"
    "                       data-parallel replica trained on\n"
    "  --trace FILE.json    a Chrome trace of every op of every step\n"
    "  --profile-trace FILE.json\n"
    "                       a trace whose steps run as untraced ones (no\n"
    "                       finite checks), for whale profile --from-trace\n"
    "                       (compile the plan with --trace-sites)\n"
    "  --trace-every N      with a trace: trace steps 1, 1 + N, ...; the\n"
    "                       steps between run untraced, their lengths kept\n"
    "                       in the trace (what tracing costs, in one run)\n"
    "  --save PATH          a checkpoint at the end (and after save_every\n"
    "                       steps): PATH.safetensors or a folder\n"
    "  --elastic FILE       change to other compiled plans of the model while\n"
    "                       it runs: lines \"STEP FOLDER\" (after step STEP,\n"
    "                       go on under the plan in FOLDER, the state moved\n"
    "                       in memory)\n"
    "  --control FILE       a file to write the folder of another compiled\n"
    "                       plan of the model into: the job moves to it at\n"
    "                       the next step boundary and removes the file\n"
    "  --save-ranks         save one file per rank into the --save folder,\n"
    "                       each with the boxes its rank holds (loads under\n"
    "                       any plan of the model)\n"
    "  --load PATH          resume from a checkpoint of whale run or\n"
    "                       whale-exec (one file or rank files), of any\n"
    "                       plan of the model\n"
    "  --replicate-every N  keep the state in memory after every N steps,\n"
    "                       each rank's copy with the next rank, so that a\n"
    "                       failed rank costs only the steps since then\n"
    "  --fallback FOLDER    a compiled plan of the model for fewer devices\n"
    "                       (any number): when a rank fails (or, under\n"
    "                       mpirun --enable-recovery, a process dies), the\n"
    "                       job goes on under the first that runs on the\n"
    "                       devices left, from the state in memory or the\n"
    "                       last checkpoint\n"
    "  --fail-rank DEVICE@STEP\n"
    "                       for tests: the rank on DEVICE fails in STEP\n"
    "  --help, -h           print this help\n"
    "\n"
    "SIGINT, SIGTERM and SIGHUP stop the run after the step it is on, saving\n"
    "the steps done since the last save where --save was given; the exit\n"
    "status is then 128 + the signal.\n";

int usageError(const std::string &msg) {
  std::cerr << "whale-exec: error: " << msg << "\n"
            << "run 'whale-exec --help' for the options\n";
  return 2;
}

/// An integer in [lo, hi] from `text`, or nothing.
std::optional<int64_t> integer(const std::string &text, int64_t lo,
                               int64_t hi) {
  char *end = nullptr;
  errno = 0;
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || n < lo || n > hi)
    return std::nullopt;
  return n;
}

} // namespace

int main(int argc, char **argv) {
  // A file-size limit fails a write with EFBIG, reported, rather than
  // killing the runner (as whale's main does).
  ::signal(SIGXFSZ, SIG_IGN);
  whale::RunPlanOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    auto value = [&](const char *flag) -> std::optional<std::string> {
      if (arg != flag)
        return std::nullopt;
      if (i + 1 >= argc)
        return std::string("\x01");
      return std::string(argv[++i]);
    };
    std::optional<std::string> v;
    auto need = [&](const char *flag) {
      return usageError(std::string(flag) + " takes a value");
    };
    if ((v = value("--steps"))) {
      std::optional<int64_t> n = integer(*v, 1, int64_t(1) << 40);
      if (*v == "\x01")
        return need("--steps");
      if (!n)
        return usageError("--steps takes a positive integer, got '" + *v + "'");
      options.steps = *n;
    } else if ((v = value("--seed"))) {
      std::optional<int64_t> n = integer(*v, 0, INT64_MAX);
      if (*v == "\x01")
        return need("--seed");
      if (!n)
        return usageError("--seed takes a non-negative integer, got '" + *v +
                          "'");
      options.seed = static_cast<uint64_t>(*n);
    } else if ((v = value("--threads"))) {
      std::optional<int64_t> n = integer(*v, 1, 1024);
      if (*v == "\x01")
        return need("--threads");
      if (!n)
        return usageError("--threads takes an integer from 1 to 1024, got '" +
                          *v + "'");
      options.threads = static_cast<int>(*n);
    } else if ((v = value("--elastic"))) {
      if (*v == "\x01")
        return need("--elastic");
      std::string text;
      if (std::string err = whale::rt::readRegularFile(
              *v, "the elastic schedule", whale::rt::kMaxTextInput, text);
          !err.empty())
        return usageError(err);
      std::string error;
      if (!whale::parseElasticSchedule(text, *v,
                                       whale::ChangeTarget::CompiledPlan,
                                       options.elastic, error)) {
        std::cerr << error << "\n";
        return 2;
      }
    } else if ((v = value("--metrics")) || (v = value("--log-samples")) ||
               (v = value("--control")) || (v = value("--trace")) ||
               (v = value("--profile-trace")) || (v = value("--save")) ||
               (v = value("--data")) || (v = value("--load"))) {
      if (*v == "\x01")
        return need(arg.c_str());
      options.traceWithoutChecks =
          options.traceWithoutChecks || arg == "--profile-trace";
      (arg == "--metrics"                             ? options.metricsPath
       : arg == "--log-samples"                       ? options.samplesPath
       : arg == "--control"                           ? options.controlPath
       : arg == "--trace" || arg == "--profile-trace" ? options.tracePath
       : arg == "--save"                              ? options.savePath
       : arg == "--load"                              ? options.loadPath
                                                      : options.dataPath) = *v;
    } else if ((v = value("--trace-every"))) {
      std::optional<int64_t> n = integer(*v, 1, whale::kMaxTraceEvery);
      if (*v == "\x01")
        return need("--trace-every");
      if (!n)
        return usageError("--trace-every takes an integer from 1 to " +
                          std::to_string(whale::kMaxTraceEvery) + ", got '" +
                          *v + "'");
      options.traceEvery = *n;
    } else if ((v = value("--replicate-every"))) {
      std::optional<int64_t> n = integer(*v, 1, int64_t(1) << 40);
      if (*v == "\x01")
        return need("--replicate-every");
      if (!n)
        return usageError("--replicate-every takes a positive integer, got '" +
                          *v + "'");
      options.replicateEvery = *n;
    } else if ((v = value("--fallback"))) {
      if (*v == "\x01")
        return need("--fallback");
      options.fallbacks.push_back(*v);
    } else if ((v = value("--fail-rank"))) {
      if (*v == "\x01")
        return need("--fail-rank");
      const size_t at = v->find('@');
      std::optional<int64_t> device =
          at == std::string::npos
              ? std::nullopt
              : integer(v->substr(0, at), 0, int64_t(1) << 20);
      std::optional<int64_t> step =
          at == std::string::npos
              ? std::nullopt
              : integer(v->substr(at + 1), 1, int64_t(1) << 40);
      if (!device || !step)
        return usageError("--fail-rank takes DEVICE@STEP, got '" + *v + "'");
      options.failDevice = *device;
      options.failStep = *step;
    } else if (arg == "--save-ranks") {
      options.saveRanks = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (options.folder.empty()) {
      options.folder = arg;
    } else {
      return usageError("one compiled plan at a time; also got '" + arg + "'");
    }
  }
  if (options.folder.empty())
    return usageError("which compiled plan? whale-exec FOLDER");
  if (options.traceEvery > 1 && options.tracePath.empty())
    return usageError("--trace-every needs --trace or --profile-trace: the "
                      "trace whose steps it chooses");
  const bool tty = ::isatty(STDERR_FILENO);
  options.onStep = [&](const whale::StepFigures &f) {
    whale::cli::printStepProgress(
        whale::StepReport{f.step, f.steps, f.loss, f.samplesPerSecond,
                          f.elapsedSeconds, f.learningRate, f.evalLoss},
        tty);
  };
  // Started by mpirun or srun: each process runs its block of ranks.
  options.processes = whale_rt_launched_by_mpi() != 0;
  struct MpiFinalizer {
    bool active;
    ~MpiFinalizer() {
      if (active)
        whale_rt_mpi_finalize();
    }
  } finalizer{options.processes};
  whale::StopOnSignals stopOnSignals;
  whale::RunPlanResult result = whale::runCompiledPlan(options);
  if (tty && result.processRank <= 0)
    std::cerr << "\n";
  if (result.processRank <= 0)
    for (const std::string &e : result.controlErrors)
      std::cerr << ("whale-exec: warning: the change asked in " +
                    options.controlPath + " was not made " + e + "\n");
  if (result.stopped) {
    // Stopped by a signal at a step boundary, every process alike (under
    // mpirun they agreed with the step's losses): one report, no abort,
    // and the signal's exit status (1 for a process the signal missed).
    const int status =
        stopOnSignals.signal() != 0 ? 128 + stopOnSignals.signal() : 1;
    if (result.processRank <= 0)
      std::cerr << "whale-exec: " + result.error + "\n";
    return status;
  }
  if (!result.ok) {
    // One write of the whole line: several processes may report at once.
    std::cerr << "whale-exec: error: " +
                     (options.processes
                          ? "process " + std::to_string(result.processRank) +
                                ": "
                          : std::string()) +
                     result.error + "\n";
    // The other processes may wait on this one: end them all.
    if (options.processes) {
      std::cerr.flush();
      whale_rt_mpi_abort(1);
    }
    return 1;
  }
  // After processes were lost, MPI_Finalize would wait for them (Open MPI
  // without ULFM): the survivors leave without it, once they have said
  // what they have to say.
  const bool lostProcesses =
      options.processes &&
      std::any_of(
          result.recoveries.begin(), result.recoveries.end(),
          [](const whale::ExecRecovery &r) { return r.processesLost > 0; });
  struct LeaveAfterLoss {
    bool active;
    ~LeaveAfterLoss() {
      if (active)
        whale_rt_mpi_leave(0);
    }
  } leave{lostProcesses};
  if (result.processRank > 0)
    return 0; // rank 0's process reports
  std::cout << "trained " << result.model << " on " << result.ranks
            << (result.ranks == 1 ? " rank" : " ranks") << ", steps "
            << result.firstStep << " to "
            << result.firstStep + int64_t(result.losses.size()) - 1
            << ": loss " << result.losses.front() << " -> "
            << result.losses.back() << "\n";
  for (const whale::ExecChange &c : result.changes) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", c.seconds);
    std::cout << "changed to " << c.plan << " after step " << c.afterStep
              << ": " << c.ranksBefore << " -> " << c.ranksAfter
              << " ranks, moved " << c.movedBytes << " bytes, kept "
              << c.stayedBytes << " in place, "
              << (c.processBytes > 0 ? std::to_string(c.processBytes) +
                                           " sent between processes, "
                                     : std::string())
              << seconds << " s\n";
  }
  for (const whale::ExecRecovery &r : result.recoveries)
    std::cout << whale::cli::recoveryLine(
        r, std::to_string(r.ranksBefore) + " -> " +
               std::to_string(r.ranksAfter) + " ranks under " + r.plan);
  if (result.storeUpdates > 0)
    std::cout << "kept the state in memory " << result.storeUpdates
              << " times\n";
  if (!result.evalLosses.empty())
    std::cout << "held-out loss after step " << result.evalLosses.back().first
              << ": " << result.evalLosses.back().second << "\n";
  // As whale run prints it (bench/gpt2_gpu.py reads this line). Under
  // mpirun this process knows its own ranks' peaks only, and says so.
  if (!result.peakMemory.empty()) {
    std::cout << (result.processRank < 0
                      ? "peak memory per device:"
                      : "peak memory per device of this process:");
    for (int64_t b : result.peakMemory)
      std::cout << " " << b;
    std::cout << " bytes\n";
  }
  if (!result.stepGraphs.empty())
    std::cout << result.stepGraphs << "\n";
  // Standard output is checked like any file: `whale-exec B > /dev/full`
  // fails rather than exiting 0 with nothing written (issue 92 item 9).
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::cerr << "whale-exec: error: cannot write the output: "
              << std::strerror(errno ? errno : EIO) << "\n";
    return 1;
  }
  return 0;
}
