//===- whale.cpp - the whale command line ---------------------------------===//
//
// A thin client of libwhale: parses arguments, calls the Interpreter, prints
// what it returns. Exit codes: 0 success, 1 errors in the script, 2 misuse.
//
//===----------------------------------------------------------------------===//

#include "whale/Interpreter.h"

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

namespace {

const char *kUsage = R"(usage: whale <command> [options]

commands:
  compile FILE.whl [--emit=ast|whale|grad|train|runtime] [-o OUT] [--dim NAME=N]...
                   [-I DIR]...
                   [--annotate-cost] [--locations]
      check a script and print it at a stage (default: whale)
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
  return usageError("unknown command '" + cmd + "'");
}
