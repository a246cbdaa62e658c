//===- Options.cpp - every verb's options, in one table -------------------===//

#include "tools/whale/Options.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <sstream>

namespace whale::cli {
namespace {

/// What every verb that reads a script takes.
const std::vector<OptionSpec> &scriptOptions() {
  static const std::vector<OptionSpec> shared = {
      {"-I", "DIR",
       "search DIR for imports (before WHALE_PATH and the stdlib); any "
       "number of times"},
      {"--define", "NAME=VALUE",
       "the value of the script's top-level constant NAME (--define "
       "LAYERS=96); any number of times"},
      {"--config", "KEY=VALUE",
       "a config key as the config block would set it (--config "
       "num_micro_batch=8); any number of times"},
  };
  return shared;
}

const OptionSpec kCluster = {
    "--cluster", "SPEC",
    "the devices: cpu:N, a list such as cpu:2,cpu:2@threads=2, or a JSON "
    "cluster file (default: one CPU device)"};
const OptionSpec kEven = {
    "--even", "",
    "equal shares of the batch on every device (default: shares follow "
    "each device's speed and memory)"};
const OptionSpec kJson = {"--json", "", "print JSON instead of text"};
const OptionSpec kProbe = {
    "--probe", "",
    "measure the devices that declare no rate first (their GEMM rate and "
    "memory bandwidth, as whale devices --probe does) and plan by that"};
const OptionSpec kHelp = {"--help", "", "print this help (also -h)"};

std::vector<VerbSpec> makeVerbs() {
  std::vector<VerbSpec> v = {
      {"compile",
       "FILE.whl",
       "check a script and print it at a stage",
       "Parses and checks the script, then prints it as the stage says.",
       {{"--emit", "STAGE",
         "ast: the syntax tree; whale: the whale dialect (default); grad: "
         "with each model's gradient function; train: with each trained "
         "model's train step; runtime: all of it as calls of the runtime's "
         "C ABI; planned: the model planned for --cluster; ranks: one "
         "program per pipeline stage; bundle: the plan compiled ahead of "
         "time into the folder -o names, for whale-exec (docs/aot.md)"},
        {"-o", "OUT", "write the output to OUT (default: standard output)"},
        {"--dim", "NAME=N",
         "bind a symbolic input dimension (such as the batch B)"},
        kCluster,
        kEven,
        {"--annotate-cost", "",
         "attach the cost model's FLOPs, bytes and memory to each op"},
        {"--trace-sites", "",
         "with --emit=bundle: each op names its place in its rank program "
         "in a trace, for whale-exec --profile-trace and whale profile "
         "--from-trace"},
        {"--bf16-activations", "",
         "with --emit=planned, ranks or bundle: the plan under amp's "
         "storage, as whale run --bf16-activations runs it"},
        {"--locations", "", "print source locations on the IR"}},
       true},
      {"run",
       "FILE.whl",
       "train the script's model as its train block says",
       "On this machine's CPU, or with --cluster as planned over its "
       "devices (a thread per rank). Under mpirun or srun each process runs "
       "the ranks of an equal block of the devices (docs/distributed.md).",
       {kCluster,
        kEven,
        kProbe,
        {"--steps", "N", "train N steps (default: the train block's)"},
        {"--seed", "S",
         "the seed of parameters and data order (default: "
         "the train block's)"},
        {"--threads", "N", "threads in all (default: every core)"},
        {"--metrics", "FILE.jsonl",
         "one JSON line per step: loss, samples/s, "
         "time"},
        {"--log-samples", "FILE.jsonl",
         "per step, the dataset samples each replica trained on"},
        {"--trace", "FILE.json",
         "a Chrome trace of every op of every step (under mpirun one per "
         "process)"},
        {"--trace-every", "N",
         "with --trace and --cluster: trace steps 1, 1 + N, ...; the "
         "steps between run untraced, their lengths kept in the trace "
         "(what tracing costs, measured in one run)"},
        {"--save", "CKPT",
         "a checkpoint after the run (and every save_every "
         "steps)"},
        {"--save-ranks", "",
         "save CKPT as one file per rank (their own boxes), which --load "
         "reads under any plan"},
        {"--load", "CKPT",
         "resume from a checkpoint, or start from a Hugging Face Llama "
         "checkpoint folder (imported first)"},
        {"--hf-names", "FILE",
         "with a Hugging Face folder to --load: the names file of a model of "
         "the script's own parts (as import takes it)"},
        {"--elastic", "FILE",
         "change the devices while it runs: lines \"STEP SPEC\" (after step "
         "STEP, re-plan for SPEC and reshard the state in memory)"},
        {"--control", "FILE",
         "the same by hand: a SPEC written into FILE moves the run at the "
         "next step boundary (and FILE is removed)"},
        {"--replicate-every", "N",
         "keep each rank's state in memory every N steps with a copy on the "
         "next rank, so a failed rank is recovered on the others (default: "
         "0, never)"},
        {"--status", "FILE",
         "write the job's outcome there as JSON ({\"ok\": true, ...}), "
         "removed first: under mpirun --enable-recovery, whose exit status "
         "is 0 even when every process failed, the job's own"},
        {"--fail-rank", "DEVICE@STEP",
         "for tests: the rank on DEVICE fails in step STEP"},
        {"--no-fuse", "",
         "run each elementwise op as its own runtime call instead of "
         "generated fused kernels (to compare)"},
        {"--bf16-activations", "",
         "amp's storage: matmuls read bf16 activations and one bf16 copy "
         "of each weight a step, parameters and their gradients stay fp32 "
         "(in progress: ops without a bf16 kernel, all but matmuls today, "
         "compute on fp32 values)"},
        {"--no-overlap", "",
         "all-reduce the gradients after the whole backward instead of "
         "during it (to compare)"}},
       true},
      {"plan",
       "FILE.whl",
       "show the plan over a cluster's devices",
       "Per TaskGraph its strategy, devices, schedule, memory per device and "
       "bytes communicated per step; per device its share of the batch, "
       "predicted time and memory, balanced beside even.",
       {kCluster, kJson, kEven, kProbe},
       true},
      {"sim",
       "FILE.whl",
       "predict one training iteration without running it",
       "Time, samples and tokens per second, FLOP/s and MFU, per-rank "
       "compute, communication and idle time, peak memory and the "
       "activations in it, time by event kind (docs/simulation.md).",
       {kCluster,
        kProbe,
        {"--profile", "DB.json",
         "event times measured by whale profile (any number: their events "
         "together, the median where several have one; an event none has "
         "is priced from the nearest timed one of its family)"},
        {"--trace", "FILE.json", "the predicted timeline as a Chrome trace"},
        {"--events", "", "list the distinct events and their durations"},
        {"--no-overlap", "",
         "the plan with every gradient all-reduce after the backward (as "
         "whale run --no-overlap runs it)"},
        {"--no-fuse", "",
         "the plan with every elementwise op its own kernel (as whale run "
         "--no-fuse runs it)"},
        {"--bf16-activations", "",
         "the plan under amp's storage (as whale run --bf16-activations "
         "runs it): its activations, and so its memory, in bf16"},
        kJson,
        kEven},
       true},
      {"search",
       "FILE.whl",
       "find the fastest plan for a cluster",
       "Every data, tensor and pipeline degree, stage cut, micro-batch "
       "count, schedule and balance the cluster allows, pruned by memory and "
       "a lower bound, the rest simulated and ranked (the fastest "
       "data-parallel plans also with their gradient sums after the "
       "backward); prints the winner as the config to paste.",
       {kCluster,
        {"--top", "K", "how many plans to list (default: 5)"},
        {"--profile", "DB.json",
         "event times measured by whale profile (any number, as for whale "
         "sim)"},
        {"--jobs", "N",
         "plans planned side by side (default: one per core; each holds "
         "its rank programs in memory); the result is the same for any N"},
        kJson},
       true},
      {"reshard",
       "",
       "what moving a plan's state to other devices takes",
       "The state of the script's plan on the first cluster as tensors in "
       "boxes per rank, and the pieces, bytes per rank and route, and the "
       "lower bound of moving it to the plan on the second cluster.",
       {{"--from", "FILE.whl@SPEC", "the script and the cluster it runs on"},
        {"--to", "SPEC", "the cluster to move to"},
        {"--to-config", "KEY=VALUE",
         "a config key of the new plan; any number of times"},
        {"--apply", "CKPT",
         "rewrite checkpoint CKPT for the new plan as a folder of rank "
         "files (with -o)"},
        {"-o", "DIR", "where --apply writes"},
        kJson},
       true},
      {"profile",
       "FILE.whl",
       "time each distinct op of a plan on this machine",
       "A few runs of each op at its shapes and each collective at its "
       "sizes, through the same JIT as training, into a profile database.",
       {kCluster,
        {"-o", "DB.json", "the database to write"},
        {"--trace", "FILE.json",
         "keep the Chrome trace of the profiling run the times come from"},
        {"--trace-every", "N",
         "trace only every N-th step of the profiling run (which runs N "
         "times as many), the others untraced in the same trace"},
        {"--from-trace", "FILE.json",
         "time the events from a profiling run made elsewhere (whale-exec "
         "--profile-trace on a plan compiled --trace-sites; docs/aot.md) "
         "instead of running them here"},
        kEven},
       true},
      {"devices",
       "",
       "show the devices as Whale sees them",
       "Under mpirun or srun without --cluster: the allocation's cluster, a "
       "node per host and a CPU device per process.",
       {{"--cluster", "SPEC", "the devices (default: cpu:1)"},
        {"--probe", "", "time a GEMM on each device"},
        {"-o", "CLUSTER.json",
         "write the cluster, with measured rates, as JSON"}},
       false},
      {"sample",
       "FILE.whl",
       "generate text with a trained byte-level model",
       "Continues the prompt byte by byte from the softmax of the logits at "
       "the last position, divided by the temperature. A model whose ops "
       "treat each position alone but for causal attention and its "
       "positions (rope, a learned table: a Llama's, a GPT's) decodes over "
       "a key/value cache: each byte costs one position; past the window it "
       "starts over from the text's last half window. Other models (one "
       "that is told why) recompute the window for each byte.",
       {{"--load", "CKPT",
         "the trained parameters (from run --save), or a Hugging Face "
         "Llama checkpoint folder"},
        {"--hf-names", "FILE",
         "with a Hugging Face folder to --load: the names file of a model of "
         "the script's own parts (as import takes it)"},
        {"--prompt", "TEXT", "the text to continue (default: empty)"},
        {"--tokens", "N", "bytes to generate (default: 200)"},
        {"--temperature", "T",
         "sampling temperature (default: 0.8; 0: greedy)"},
        {"--seed", "S", "the sampling seed (default: 0)"},
        {"--threads", "N", "threads (default: every core)"},
        {"--no-cache", "",
         "recompute the window for each byte rather than decode over a "
         "key/value cache"}},
       true},
      {"import",
       "FILE.whl",
       "a Hugging Face Llama checkpoint as the script's Whale checkpoint",
       "Reads config.json and model.safetensors (or the shards "
       "model.safetensors.index.json names) of a Llama-family checkpoint "
       "as transformers writes it, and writes the weights as a checkpoint "
       "of the script's model at its first step, for run, sample and every "
       "plan to --load. The script builds the model of the stdlib's parts "
       "(nn.embed, nn.llama_block, nn.rmsnorm, nn.proj, as "
       "examples/llama.whl does) with the checkpoint's shapes, heads, "
       "rope_theta and rms_norm_eps.",
       {{"--hf", "DIR", "the Hugging Face checkpoint's folder"},
        {"-o", "CKPT.safetensors", "the Whale checkpoint to write"},
        {"--hf-names", "FILE",
         "for a model of the script's own parts: a JSON object of its "
         "parameter names and transformers' (\"{i}\" a layer's number; "
         "{\"hf\": NAME, \"transposed\": true} for an nn.Linear weight); "
         "default: the stdlib's Llama parts"},
        {"--model", "NAME",
         "the model (default: the first with a train "
         "block)"}},
       true},
      {"export",
       "FILE.whl",
       "a Whale checkpoint of a Llama as a Hugging Face checkpoint",
       "Writes the checkpoint's parameters of the script's model as "
       "transformers' LlamaForCausalLM keeps them (model.safetensors, fp32) "
       "with a config.json of the script's sizes, heads, rope_theta, rope "
       "scaling, rms_norm_eps and context, for from_pretrained. The script "
       "builds its model of the stdlib's parts, as import needs.",
       {{"--load", "CKPT",
         "the Whale checkpoint: one file (from run --save or import) or a "
         "folder of rank files, each parameter put together from its ranks' "
         "parts"},
        {"--hf", "DIR", "the folder to write (made if missing)"},
        {"--hf-names", "FILE",
         "for a model of the script's own parts: its names file, as import "
         "takes it"},
        {"--model", "NAME",
         "the model (default: the first with a train "
         "block)"}},
       true},
      {"report",
       "METRICS.jsonl",
       "a run as one HTML page",
       "The loss (and held-out loss) and samples/s by step; one measured "
       "step (the median of those after the first) beside one predicted "
       "iteration, on one time scale: each rank's busy, communication and "
       "idle time and its timeline; and the plan: one self-contained page, "
       "no network, no script.",
       {{"--trace", "FILE.json", "a measured trace (whale run --trace)"},
        {"--sim-trace", "FILE.json", "a predicted trace (whale sim --trace)"},
        {"--plan", "PLAN.json", "the plan (whale plan --json)"},
        {"-o", "REPORT.html", "where to write it (default: standard output)"}},
       false},
      {"repl",
       "",
       "a session: definitions, expressions and commands",
       "Definitions accumulate and are checked as typed, expressions print "
       "their values, :help lists the commands; `whale` alone on a terminal "
       "starts one; from a pipe it reads inputs line by line "
       "(docs/repl.md).",
       {},
       true},
      {"completion", "bash", "print the bash completion script", "", {}, false},
      {"version", "", "print the version", "", {}, false},
      {"help", "[VERB]", "print the overview, or a verb's help", "", {}, false},
  };
  for (VerbSpec &verb : v)
    verb.options.push_back(kHelp);
  return v;
}

/// A verb's own options, then those of a script verb.
std::vector<OptionSpec> allOptions(const VerbSpec &verb) {
  std::vector<OptionSpec> all = verb.options;
  if (verb.script)
    all.insert(all.end(), scriptOptions().begin(), scriptOptions().end());
  return all;
}

std::string usageLine(const VerbSpec &verb) {
  std::string line = "whale " + verb.name;
  if (!verb.operands.empty())
    line += " " + verb.operands;
  if (!verb.options.empty())
    line += " [options]";
  return line;
}

/// `text` wrapped to `width` columns, each line after `indent` spaces.
std::string wrap(const std::string &text, size_t indent, size_t width = 78) {
  std::istringstream words(text);
  std::string out, line, word;
  while (words >> word) {
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty())
    out += std::string(indent, ' ') + line + "\n";
  return out;
}

} // namespace

const std::vector<VerbSpec> &verbs() {
  static const std::vector<VerbSpec> all = makeVerbs();
  return all;
}

const VerbSpec *findVerb(const std::string &name) {
  for (const VerbSpec &v : verbs())
    if (v.name == name)
      return &v;
  return nullptr;
}

const OptionSpec *findOption(const VerbSpec &verb, const std::string &flag) {
  for (const OptionSpec &o : verb.options)
    if (o.flag == flag)
      return &o;
  if (verb.script)
    for (const OptionSpec &o : scriptOptions())
      if (o.flag == flag)
        return &o; // the table's own entries: they outlive the call
  return nullptr;
}

std::string verbHelp(const VerbSpec &verb) {
  std::string out = "usage: " + usageLine(verb) + "\n\n" +
                    wrap(verb.summary + ". " + verb.details, 2);
  std::vector<OptionSpec> all = allOptions(verb);
  if (!all.empty())
    out += "\noptions:\n";
  for (const OptionSpec &o : all) {
    std::string head = "  " + o.flag + (o.value.empty() ? "" : " " + o.value);
    out += head + "\n" + wrap(o.help, 6);
  }
  return out;
}

std::string overview() {
  std::string out = "usage: whale <verb> [options]   (whale help VERB, or "
                    "whale VERB --help, for a verb's options)\n\nverbs:\n";
  for (const VerbSpec &v : verbs())
    out += "  " + usageLine(v) + "\n" + wrap(v.summary, 6);
  out += "\n" +
         wrap("SPEC, the devices: cpu:N, a list such as "
              "cpu:2,cpu:2@threads=2, or a JSON cluster file "
              "(docs/balancing.md). A device may declare threads, mem (a "
              "memory limit: 2GiB, 512MiB) and flops: "
              "cpu:1@threads=4,mem=2GiB.",
              0) +
         "\n" +
         wrap("CKPT, a checkpoint: a path ending in .safetensors is the "
              "file; any other path is a folder holding "
              "checkpoint.safetensors (made by --save).",
              0);
  return out;
}

std::string nearestOption(const VerbSpec &verb, const std::string &arg) {
  std::vector<OptionSpec> all = allOptions(verb);
  std::string flag = arg.substr(0, arg.find('='));
  std::string best;
  unsigned bestDistance = 0;
  for (const OptionSpec &o : all) {
    unsigned d = llvm::StringRef(flag).edit_distance(o.flag);
    if (best.empty() || d < bestDistance) {
      best = o.flag;
      bestDistance = d;
    }
  }
  // Near: at most a third of the option's letters off.
  return !best.empty() && bestDistance * 3 <= best.size() ? best : "";
}

std::string bashCompletion() {
  std::string out =
      "# bash completion for whale: verbs, then each verb's options, and\n"
      "# files for the rest. Made by `whale completion bash`.\n"
      "_whale() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" verb=\"${COMP_WORDS[1]}\"\n"
      "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
      "    COMPREPLY=($(compgen -W \"";
  for (const VerbSpec &v : verbs())
    out += v.name + " ";
  out += "\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  local options=\"\"\n"
         "  case \"$verb\" in\n";
  for (const VerbSpec &v : verbs()) {
    out += "    " + v.name + ") options=\"";
    for (const OptionSpec &o : allOptions(v))
      out += o.flag + " ";
    out += "\" ;;\n";
  }
  out += "  esac\n"
         "  if [[ \"$cur\" == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "}\n"
         "complete -o filenames -F _whale whale\n";
  return out;
}

} // namespace whale::cli
