//===- whale/Train.h - training a loaded model --------------------*- C++
//-*-===//
//
// Runs a model's train block: compiles its train step, feeds it data, and
// reports each step. What `whale run` does, for any host.
//
//   whale::Interpreter interp;
//   interp.loadFile("mlp.whl");
//   whale::TrainOptions opts;
//   opts.onStep = [](const whale::StepReport &r) { ... };
//   whale::TrainResult r = whale::train(interp, opts);
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TRAIN_H
#define WHALE_TRAIN_H

#include "whale/Interpreter.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace whale {

/// A model input or a parameter: its name, element type ("f32", "i32") and
/// shape.
struct TensorInfo {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t elements() const;
  int64_t bytes() const;
};

/// A checkpoint's tensor as read: name, dtype ("f32", "i32" or "i64";
/// floats of any width widened to f32) and shape, and its bytes.
struct StoredArray {
  TensorInfo info;
  std::vector<uint8_t> bytes;
};

/// Every tensor of the checkpoint at `path` (a file, or a folder holding
/// `checkpoint.safetensors` as saves make them; any safetensors file), read
/// and checked as loading a checkpoint checks it (its layout and
/// checksums). False with `error`; for a folder of rank files, how to load
/// it instead.
bool readTensors(const std::string &path, std::vector<StoredArray> &out,
                 std::string &error);

struct StepReport {
  int64_t step = 0;  ///< 1-based
  int64_t steps = 0; ///< the last step of this run
  double loss = 0;
  double samplesPerSecond = 0; ///< of this step
  double elapsedSeconds = 0;   ///< since the run started
  /// The learning rate this step used (the schedule's, times the
  /// optimizer's lr).
  double learningRate = 0;
  /// The held-out loss taken after this step (eval_every), else NaN.
  double evalLoss = std::numeric_limits<double>::quiet_NaN();
};

/// A change of a running job's devices: after step `afterStep`, the job
/// goes on on `cluster`, re-planned, its state resharded in memory.
struct ElasticChange {
  int64_t afterStep = 0;
  std::string cluster;
};

/// What one reshard of a running job did.
struct ReshardReport {
  int64_t afterStep = 0;
  int64_t ranksBefore = 0, ranksAfter = 0;
  int64_t movedBytes = 0, lowerBoundBytes = 0, stayedBytes = 0;
  /// Under mpirun: the bytes sent from one process to another (a device
  /// index may move to another process when the device count changes).
  int64_t processBytes = 0;
  double seconds = 0; ///< re-planning, compiling and moving the state
  /// Of which planning and compiling (the rest reads, moves and writes
  /// the state).
  double planSeconds = 0;
  /// Why the devices changed where the run itself saw the need (a
  /// device's share of its cores rewritten under it); "" for a change
  /// asked for (the schedule, the control file).
  std::string why;
};

/// What one recovery from a failed rank did.
struct RecoveryReport {
  int64_t failedStep = 0;    ///< the step during which the rank failed
  int64_t resumedAfter = 0;  ///< the step of the state it resumed from
  /// Where that state came from: "memory" (the store's copies) or the
  /// checkpoint this run saved last (when no copy in memory survived).
  std::string source = "memory";
  int64_t devicesBefore = 0, devicesAfter = 0;
  int64_t movedBytes = 0;
  double seconds = 0; ///< from the failure to the state in the new ranks
  std::string failure; ///< the failed rank's message
  /// Ranks as processes: the processes lost, and the bytes of state the
  /// survivors sent each other to rebuild it.
  int64_t processesLost = 0, processBytes = 0;
};

/// One model input's buffer for the host to fill with a step's global
/// batch (TrainOptions::data): row-major, in the input's shape.
struct HostBatchBuffer {
  std::string name;  ///< the model's name for the input
  std::string dtype; ///< "f32" or "i32"
  std::vector<int64_t> shape;
  void *data = nullptr;
  int64_t bytes() const;
};

/// What the host's fill did: filled the batch (the default), asked the run
/// to end before this step as stop() ends it (its data ran out, it was
/// interrupted), or failed, saying why (which fails the run).
struct HostBatchOutcome {
  bool stop = false;
  std::string error;
};

/// Fills each input's buffer with step `step`'s (0-based) global batch.
using HostBatchFill = std::function<HostBatchOutcome(
    int64_t step, std::vector<HostBatchBuffer> &)>;

struct TrainOptions {
  std::string model;            ///< empty: the first model with a train block
  std::optional<int64_t> steps; ///< overrides the train block's
  std::optional<uint64_t> seed; ///< overrides the train block's
  int threads = 0;              ///< 0: every core
  std::string metricsPath;      ///< JSON lines, one per step
  /// JSON lines, one per step: the dataset samples each data-parallel
  /// replica computed on (runtime/run/SampleLog.h).
  std::string samplesPath;
  std::string tracePath;        ///< a Chrome trace of every op of every step
  /// With a trace and a cluster: each op's event also names its place in
  /// its rank program (`args.site`), which `whale profile` matches to the
  /// plan's events; and the ops' outputs are not checked for NaN, so the
  /// steps take as long as untraced ones.
  bool traceSites = false;
  /// With a trace under a plan: only every n-th step is traced (steps 1,
  /// 1 + n, ...); the steps between run untraced and leave their length in
  /// the trace as "step" spans of category "untraced". One run so measures
  /// what tracing costs (`bench/sim_accuracy.py`'s same-process A/B).
  int64_t traceEvery = 1;
  /// Chains of elementwise ops run as fused regions (generated kernels on
  /// CPU devices, element programs on GPUs); off, each op is its own
  /// runtime call (`--no-fuse`).
  bool fuse = true;
  /// Activations stored in bf16, parameters fp32 masters (issue 55,
  /// in progress): every op computes in fp32 between casts until it has a
  /// bf16 kernel, so this is slower, not faster, for now. One device only.
  bool ampStorage = false;
  /// Linear layers as GEMMs with bias and GELU epilogues
  /// (-whale-gemm-epilogues) in a plan's rank programs: unset, where a
  /// device is a GPU; true on CPU devices too (their composition), as the
  /// equivalence tests run them. The one-device path without a cluster
  /// never fuses them.
  std::optional<bool> gemmEpilogues;
  /// Gradient all-reduces start during backward and are waited for where
  /// their sums are read; off, each runs after the whole backward
  /// (`--no-overlap`).
  bool overlap = true;
  std::string savePath;         ///< a checkpoint written at the end
  /// Under a plan: save one file per rank, each with the boxes it holds
  /// (docs/elastic.md), instead of one file of the whole state. A folder
  /// of rank files loads under any plan, resharded as it loads.
  bool saveRanks = false;
  std::string loadPath;         ///< a checkpoint to resume from
  /// The devices (`cpu:4`, a JSON cluster file; see docs/parallelism.md).
  /// Empty: one CPU device. With several devices, or micro-batches, the
  /// model runs as planned: one rank per device, each on its own thread.
  std::string cluster;
  /// Equal local batches on every replica, however the devices differ
  /// (by default each device's share follows its speed and memory).
  bool evenPlan = false;
  /// Keep every parameter's final values in the result.
  bool keepParameters = false;
  /// Changes of the devices while the job runs, in step order (under a
  /// plan): see docs/elastic.md.
  std::vector<ElasticChange> elastic;
  /// Under a plan: a file a person writes a cluster spec into (`cpu:2`); at
  /// the next step boundary the job moves to those devices and removes
  /// the file. A spec the model cannot be planned on is reported in the
  /// result's `controlErrors` and the job goes on where it is.
  std::string controlPath;
  /// Under a plan: every this many steps, each rank's state is kept in
  /// memory with a copy on the next rank, so that when a rank fails the
  /// job re-plans for the others and goes on from there (0: never).
  int64_t replicateEvery = 0;
  /// Ranks are the processes of an MPI world (`mpirun -np N`, `srun`), one
  /// rank each: this process runs the rank of the device its MPI rank
  /// names, and every process returns the same losses. The CLI sets it
  /// when an MPI launcher started it. Each process saves its own rank's
  /// file (saveRanks) and traces its own rank (rank r > 0 to the trace path
  /// with `.process-r` before its extension); not yet with elastic
  /// changes, the in-memory store, single-file saves or keepParameters.
  bool processes = false;
  /// With `processes`: the ranks are those of this MPI communicator (a
  /// pointer to the host's MPI_Comm, for a host that is itself an MPI
  /// program), not the whole world. Whale works on a duplicate of it.
  const void *mpiCommunicator = nullptr;
  /// For tests: the rank on this device fails during step `failStep`.
  int64_t failDevice = -1, failStep = 0;
  std::function<void(const StepReport &)> onStep;
  /// The host's batches instead of the train block's data (its `data` is
  /// then not read): every plan splits the global batch the host fills as
  /// it splits the script's.
  HostBatchFill data;
  /// Long work that is not a step, as it starts ("planning the model over
  /// 4 devices", "compiling", "saving the checkpoint to ckpt"): for a
  /// progress line; "" when it is done.
  std::function<void(const std::string &)> onPhase;
};

struct TrainResult {
  bool ok = false;
  std::string error;          ///< what went wrong, when !ok
  /// Not ok because a stop was asked (requestInterrupt, a signal): the run
  /// ended at a step boundary, its last step saved where --save was given.
  bool stopped = false;
  int64_t firstStep = 0;      ///< 1-based; later than 1 when resumed
  std::vector<double> losses; ///< one per step run
  /// The held-out losses (eval_every): (step, loss), in step order.
  std::vector<std::pair<int64_t, double>> evalLosses;
  /// Final values by name, when keepParameters.
  std::map<std::string, std::vector<float>> parameters;
  /// Under a plan: bytes each rank handed to collectives (all-reduce,
  /// all-gather, all-to-all) and sent, in rank order (the runtime's
  /// counters), over the steps the last plan's ranks ran (a change of
  /// devices or a recovery opens new ranks).
  std::vector<int64_t> commBytes;
  int64_t stepsOnLastPlan = 0;
  /// Of which all-to-all (a mixture's slots), in rank order.
  std::vector<int64_t> allToAllBytes;
  /// Under a plan: each device's peak bytes held, by device (rank).
  std::vector<int64_t> peakMemory;
  /// Under a plan on devices that can hold a step (CUDA graphs): how the
  /// steps ran, one line (runtime/run/StepGraphs.h); else "".
  std::string stepGraphs;
  /// Under a plan: samples of the global batch each device computed on.
  std::vector<int64_t> localBatches;
  /// Under a plan of devices that differ: those balanced by a nominal rate
  /// (none declared or measured), which the driver says.
  std::vector<int64_t> nominalRates;
  /// Each change of the devices, in order.
  std::vector<ReshardReport> reshards;
  /// Changes asked for in the control file that could not be made, each
  /// with the step and why.
  std::vector<std::string> controlErrors;
  /// Each recovery from a failed rank, in order.
  std::vector<RecoveryReport> recoveries;
  /// The in-memory store: how often it was brought up to date, and the
  /// seconds that held the steps up in all (taking the state out of the
  /// ranks).
  int64_t storeUpdates = 0;
  double storeSeconds = 0;
  /// Of which the store's copies and checksums took on its own thread,
  /// beside the steps (not holding them up).
  double storeCopySeconds = 0;
  /// Under mpirun: this process's number at the end (after processes were
  /// lost, the survivors are numbered anew; process 0 reports), and the
  /// bytes of state the store sent to other processes.
  int32_t processRank = -1;
  int64_t storeSentBytes = 0;
};

/// Trains the loaded program's model for its train block's steps (or
/// `options.steps`), from its initial parameters or a checkpoint.
TrainResult train(Interpreter &interp, const TrainOptions &options);

/// train() a step at a time, for a host that drives the loop (Python's
/// `for step in run`): on one device or under a plan, the same steps,
/// reports, saves and result.
///
///   whale::Training run(interp, options);
///   whale::StepReport r;
///   while (run.next(r))
///     if (r.loss < 0.1) run.stop();
///   whale::TrainResult result = run.finish();
///
/// One thread drives it; stop() may come from any thread.
class Training {
public:
  /// Everything before the first step (compiling, planning, loading the
  /// checkpoint): a failure ends the run at once, and finish() says why.
  Training(Interpreter &interp, TrainOptions options);
  ~Training();
  Training(const Training &) = delete;
  Training &operator=(const Training &) = delete;

  /// Runs the next step and reports it; false once the run is over (its
  /// steps done, stopped or failed: finish() tells).
  bool next(StepReport &report);
  /// Ends the run before its next step, as SIGINT ends `whale run`: the
  /// steps done since the last save are saved where options.savePath was
  /// given. Any thread.
  void stop();
  /// Steps done, counting a loaded checkpoint's.
  int64_t stepsDone() const;
  /// Between steps, or after finish(): the state now (parameters,
  /// optimizer state, step) into a checkpoint at `path`, whole, whatever
  /// the plan.
  bool save(const std::string &path, std::string &error);
  /// Between steps, or after finish(): every parameter (name, dtype,
  /// shape), in the order
  /// checkpoints list them, and its values now.
  bool parameters(std::vector<TensorInfo> &info,
                  std::vector<std::vector<float>> &values, std::string &error);
  /// Every parameter's name, dtype and shape, without their values.
  std::vector<TensorInfo> parameterInfo() const;
  /// Between steps, or after finish(): parameters written into the run,
  /// each (name, all of its `count` values), on every rank that holds part
  /// of them; under a plan the state is gathered and handed back once for
  /// all of them. Not under mpirun.
  struct ParameterValues {
    std::string name;
    const float *values = nullptr;
    int64_t count = 0;
  };
  bool writeParameters(const std::vector<ParameterValues> &values,
                       std::string &error);
  /// The run's result (call once): ends it first, as stop() does, when
  /// steps remain.
  TrainResult finish();

  struct Impl;

private:
  std::unique_ptr<Impl> impl;
};

/// train() under a plan (options.cluster): one rank per device, each a
/// thread running its stage's program.
TrainResult trainParallel(Interpreter &interp, const TrainOptions &options);

/// The files a run of `options` reads: the script and its modules, the
/// checkpoint it loads, its training and held-out data, a cluster file.
std::vector<std::string> filesTrainReads(Interpreter &interp,
                                         const TrainOptions &options);

/// The first of `outputs` (each a flag and its path) that is one of
/// `inputs`, as an error naming both; "" when none is.
std::string checkOutputsAgainstInputs(
    const std::vector<std::pair<std::string, std::string>> &outputs,
    const std::vector<std::string> &inputs);

struct SampleOptions {
  std::string model;      ///< empty: the first model with a train block
  std::string checkpoint; ///< the trained parameters (from train's save)
  std::string prompt;     ///< the text generation continues
  int64_t tokens = 200;   ///< bytes to generate
  double temperature = 0.8; ///< 0: greedy, the most likely byte each time
  uint64_t seed = 0;
  int threads = 0;
  /// Decode over a key/value cache where the model allows it (each byte
  /// then costs one position); false: recompute the window for each byte.
  bool cache = true;
};

struct SampleResult {
  bool ok = false;
  std::string error;
  std::string text; ///< the prompt and what followed it
  /// Why no key/value cache served ("" when one did).
  std::string cacheRefusal;
};

/// Generates text with a trained byte-level language model: a model whose
/// inputs are tokens and targets [B, T] and whose loss is a cross entropy
/// over the vocabulary. Each new byte is drawn from the softmax of the
/// logits at the last position of the window, divided by the temperature
/// (at 0, the most likely). The window holds the text from its start while
/// the text is shorter, so that a continuation within the window is the
/// one a model without a window gives. With a key/value cache each byte
/// costs one position; past the window it starts over from the text's last
/// half window (at most half a window less context than recomputing the
/// window for each byte gives).
SampleResult sample(Interpreter &interp, const SampleOptions &options);

} // namespace whale

#endif
