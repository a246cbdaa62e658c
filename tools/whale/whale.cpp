//===- whale.cpp - the whale command line ---------------------------------===//
//
// A thin client of libwhale: parses arguments, calls the Interpreter, prints
// what it returns. Exit codes: 0 success, 1 errors in the script, 2 misuse.
//
//===----------------------------------------------------------------------===//

#include "whale/Interpreter.h"
#include "whale/Train.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>

namespace {

const char *kUsage = R"(usage: whale <command> [options]

commands:
  compile FILE.whl [--emit=ast|whale|grad|train|runtime] [-o OUT] [--dim NAME=N]...
                   [-I DIR]...
                   [--annotate-cost] [--locations]
      check a script and print it at a stage (default: whale)
  run FILE.whl [--steps N] [--seed S] [--threads N] [--metrics FILE.jsonl]
               [--trace FILE.json] [--save CKPT] [--load CKPT] [-I DIR]...
      train the script's model as its train block says, on this machine's CPU
  sample FILE.whl --load CKPT [--prompt TEXT] [--tokens N]
                  [--temperature T] [--seed S] [--threads N] [-I DIR]...
      generate text with a trained byte-level model (from run --save)
  version          print the version
  help             print this text

options of compile:
  --emit=STAGE     ast: the syntax tree; whale: the whale dialect;
                   grad: with each model's gradient function (autodiff);
                   train: with each trained model's train step;
                   runtime: all of it as calls of the runtime's C ABI
  -o OUT           write the output to OUT instead of standard output
  --dim NAME=N     bind a symbolic input dimension (e.g. the batch B)
  -I DIR           search DIR for imports (before WHALE_PATH and the stdlib)
  --annotate-cost  attach the cost model's FLOPs, bytes and memory to each op
  --locations      print source locations on the IR

CKPT, a checkpoint: a path ending in .safetensors is the file; any other
path is a folder holding checkpoint.safetensors (made by --save).
)";

int usageError(const std::string &msg) {
  std::cerr << "whale: error: " << msg << "\n"
            << "run 'whale help' for usage\n";
  return 2;
}

bool parseDim(const std::string &spec, whale::InterpreterOptions &opts) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  const std::string value = spec.substr(eq + 1);
  char *end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < 1)
    return false;
  opts.dims[spec.substr(0, eq)] = v;
  return true;
}

int compile(int argc, char **argv) {
  whale::InterpreterOptions opts;
  std::string file, out, emit = "whale";
  bool annotateCost = false, locations = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string &flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0)
        return arg.substr(flag.size() + 1);
      if (arg == flag && i + 1 < argc)
        return std::string(argv[++i]);
      return std::nullopt;
    };
    if (auto v = value("--emit")) {
      emit = *v;
    } else if (auto v = value("-o")) {
      out = *v;
    } else if (auto v = value("--dim")) {
      if (!parseDim(*v, opts))
        return usageError("--dim takes NAME=N with N >= 1, got '" + *v + "'");
    } else if (auto v = value("-I")) {
      opts.searchPath.push_back(*v);
    } else if (arg == "--annotate-cost") {
      annotateCost = true;
    } else if (arg == "--locations") {
      locations = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (file.empty()) {
      file = arg;
    } else {
      return usageError("compile takes one script, got '" + file + "' and '" +
                        arg + "'");
    }
  }
  if (file.empty())
    return usageError("compile needs a script: whale compile FILE.whl");
  std::optional<whale::Stage> stage = whale::parseStage(emit);
  if (!stage)
    return usageError("unknown stage '" + emit +
                      "'; stages: ast, whale, grad, train, runtime");

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
  if (out.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream f(out);
  f << text;
  if (!f) {
    std::cerr << "whale: error: cannot write '" << out << "'\n";
    return 1;
  }
  return 0;
}

bool parseCount(const std::string &flag, const std::string &v, int64_t &out) {
  char *end = nullptr;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0)
    return false;
  out = n;
  return true;
}

int run(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::TrainOptions train;
  std::string file;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string &flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0)
        return arg.substr(flag.size() + 1);
      if (arg == flag && i + 1 < argc)
        return std::string(argv[++i]);
      return std::nullopt;
    };
    int64_t n;
    if (auto v = value("--steps")) {
      if (!parseCount("--steps", *v, n) || n < 1)
        return usageError("--steps takes a positive integer, got '" + *v + "'");
      train.steps = n;
    } else if (auto v = value("--seed")) {
      if (!parseCount("--seed", *v, n))
        return usageError("--seed takes a non-negative integer, got '" + *v +
                          "'");
      train.seed = static_cast<uint64_t>(n);
    } else if (auto v = value("--threads")) {
      if (!parseCount("--threads", *v, n) || n < 1)
        return usageError("--threads takes a positive integer, got '" + *v +
                          "'");
      train.threads = static_cast<int>(n);
    } else if (auto v = value("--metrics")) {
      train.metricsPath = *v;
    } else if (auto v = value("--save")) {
      train.savePath = *v;
    } else if (auto v = value("--trace")) {
      train.tracePath = *v;
    } else if (auto v = value("--load")) {
      train.loadPath = *v;
    } else if (auto v = value("-I")) {
      opts.searchPath.push_back(*v);
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (file.empty()) {
      file = arg;
    } else {
      return usageError("run takes one script, got '" + file + "' and '" + arg +
                        "'");
    }
  }
  if (file.empty())
    return usageError("run needs a script: whale run FILE.whl");
  whale::Interpreter interp(opts);
  if (!interp.loadFile(file) || !interp.module()) {
    std::cerr << interp.renderDiagnostics();
    return 1;
  }
  std::cerr << interp.renderDiagnostics(); // warnings
  // On a terminal the progress line updates in place; in a log, one line
  // per tenth of the run.
  bool tty = ::isatty(STDERR_FILENO);
  train.onStep = [&](const whale::StepReport &r) {
    int64_t every = std::max<int64_t>(1, r.steps / 10);
    if (!tty && r.step % every != 0 && r.step != r.steps)
      return;
    char line[160];
    std::snprintf(
        line, sizeof line, "step %lld/%lld  loss %.4f  %.0f samples/s  %.1fs",
        static_cast<long long>(r.step), static_cast<long long>(r.steps), r.loss,
        r.samplesPerSecond, r.elapsedSeconds);
    std::cerr << (tty ? "\r" : "") << line << (tty ? "" : "\n") << std::flush;
  };
  whale::TrainResult result = whale::train(interp, train);
  if (tty)
    std::cerr << "\n";
  if (!result.ok) {
    std::cerr << "whale: error: " << result.error << "\n";
    return 1;
  }
  if (!result.losses.empty())
    std::cout << "trained steps " << result.firstStep << " to "
              << result.firstStep + result.losses.size() - 1 << ": loss "
              << result.losses.front() << " -> " << result.losses.back()
              << "\n";
  return 0;
}

int sample(int argc, char **argv) {
  whale::InterpreterOptions opts;
  whale::SampleOptions sampling;
  std::string file;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string &flag) -> std::optional<std::string> {
      if (arg.rfind(flag + "=", 0) == 0)
        return arg.substr(flag.size() + 1);
      if (arg == flag && i + 1 < argc)
        return std::string(argv[++i]);
      return std::nullopt;
    };
    int64_t n;
    if (auto v = value("--load")) {
      sampling.checkpoint = *v;
    } else if (auto v = value("--prompt")) {
      sampling.prompt = *v;
    } else if (auto v = value("--tokens")) {
      if (!parseCount("--tokens", *v, n))
        return usageError("--tokens takes a non-negative integer, got '" + *v +
                          "'");
      sampling.tokens = n;
    } else if (auto v = value("--temperature")) {
      char *end = nullptr;
      double t = std::strtod(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(t > 0))
        return usageError("--temperature takes a positive number, got '" + *v +
                          "'");
      sampling.temperature = t;
    } else if (auto v = value("--seed")) {
      if (!parseCount("--seed", *v, n))
        return usageError("--seed takes a non-negative integer, got '" + *v +
                          "'");
      sampling.seed = static_cast<uint64_t>(n);
    } else if (auto v = value("--threads")) {
      if (!parseCount("--threads", *v, n) || n < 1)
        return usageError("--threads takes a positive integer, got '" + *v +
                          "'");
      sampling.threads = static_cast<int>(n);
    } else if (auto v = value("-I")) {
      opts.searchPath.push_back(*v);
    } else if (!arg.empty() && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (file.empty()) {
      file = arg;
    } else {
      return usageError("sample takes one script, got '" + file + "' and '" +
                        arg + "'");
    }
  }
  if (file.empty() || sampling.checkpoint.empty())
    return usageError("sample needs a script and a checkpoint: whale sample "
                      "FILE.whl --load CKPT");
  whale::Interpreter interp(opts);
  if (!interp.loadFile(file) || !interp.module()) {
    std::cerr << interp.renderDiagnostics();
    return 1;
  }
  whale::SampleResult result = whale::sample(interp, sampling);
  if (!result.ok) {
    std::cerr << "whale: error: " << result.error << "\n";
    return 1;
  }
  std::cout << result.text << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    std::cout << "whale " WHALE_VERSION "\n";
    return 0;
  }
  if (cmd == "compile")
    return compile(argc - 2, argv + 2);
  if (cmd == "run")
    return run(argc - 2, argv + 2);
  if (cmd == "sample")
    return sample(argc - 2, argv + 2);
  return usageError("unknown command '" + cmd + "'");
}
