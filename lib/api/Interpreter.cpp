//===- Interpreter.cpp - the public embedding API -------------------------===//

#include "whale/Interpreter.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lang/Frontend.h"
#include "lang/MLIRGen.h"
#include "lib/compile/PassErrors.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>

namespace whale {

std::optional<Stage> parseStage(const std::string &name) {
  if (name == "ast")
    return Stage::AST;
  if (name == "whale")
    return Stage::Whale;
  if (name == "grad")
    return Stage::Grad;
  if (name == "train")
    return Stage::Train;
  if (name == "runtime")
    return Stage::Runtime;
  return std::nullopt;
}

static bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

static_assert(std::is_same_v<ConfigValue, lang::ConfigValue>,
              "the public API's config value is the front end's");

ConfigValue parseConfigValue(const std::string &text) {
  return lang::configValueOf(text);
}

std::string configText(const ConfigValue &value) {
  return lang::configText(value);
}

std::string stdlibDirectory() {
  // An install puts the stdlib beside the binaries; the build tree uses the
  // source folder, so both an installed and a just-built whale find it.
  if (isDirectory(WHALE_INSTALLED_STDLIB_DIR))
    return WHALE_INSTALLED_STDLIB_DIR;
  return WHALE_SOURCE_STDLIB_DIR;
}

/// The threads every interpreter's MLIR context works on. A context makes
/// a pool of its own by default, a thread per core each; `whale search`
/// plans several candidates at once, each in contexts of its own, and
/// planning works on the context's threads, so pools of their own would
/// put several threads per core on the machine. Made once and never freed,
/// so no context can outlive it.
static llvm::ThreadPoolInterface &sharedThreadPool() {
  static llvm::ThreadPoolInterface *pool = new llvm::DefaultThreadPool();
  return *pool;
}

struct Interpreter::Impl {
  InterpreterOptions options;
  mlir::MLIRContext context{mlir::MLIRContext::Threading::DISABLED};
  std::unique_ptr<lang::Frontend> frontend;
  std::optional<lang::Program> program;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  bool generated = false;
  // How the last load was made, so the script can be elaborated again.
  bool fromFile = false;
  std::string pathOrSource, name;

  bool load(std::vector<std::string> searchPath, bool fromFile,
            const std::string &pathOrSource, const std::string &name);

  explicit Impl(InterpreterOptions options) : options(std::move(options)) {
    context.setThreadPool(sharedThreadPool());
    context.getOrLoadDialect<WhaleDialect>();
    context.getOrLoadDialect<mlir::func::FuncDialect>();
    loadRuntimeLoweringDialects(context);
  }
};

Interpreter::Interpreter(InterpreterOptions options)
    : impl(std::make_unique<Impl>(std::move(options))) {}
Interpreter::~Interpreter() = default;

std::vector<std::string> Interpreter::searchPath(const std::string &) const {
  std::vector<std::string> path = impl->options.searchPath;
  if (impl->options.useEnvironmentPath)
    if (const char *env = std::getenv("WHALE_PATH")) {
      std::string s = env;
      size_t start = 0;
      while (start <= s.size()) {
        size_t end = s.find(':', start);
        if (end == std::string::npos)
          end = s.size();
        if (end > start)
          path.push_back(s.substr(start, end - start));
        start = end + 1;
      }
    }
  path.push_back(stdlibDirectory());
  return path;
}

bool Interpreter::Impl::load(std::vector<std::string> searchPath, bool fromFile,
                             const std::string &pathOrSource,
                             const std::string &name) {
  Impl &impl = *this;
  impl.fromFile = fromFile;
  impl.pathOrSource = pathOrSource;
  impl.name = name;
  lang::FrontendOptions opts;
  opts.searchPath = std::move(searchPath);
  opts.dims = impl.options.dims;
  opts.defines = impl.options.defines;
  opts.configs = impl.options.configs;
  opts.batch = impl.options.batch;
  impl.frontend = std::make_unique<lang::Frontend>(opts);
  impl.program.reset();
  impl.module = nullptr;
  impl.generated = false;
  bool parsed = fromFile ? impl.frontend->parseFile(pathOrSource)
                         : impl.frontend->parseString(pathOrSource, name);
  if (!parsed)
    return false;
  impl.program = impl.frontend->analyze();
  return impl.program.has_value();
}

std::vector<std::pair<std::string, std::string>>
Interpreter::constants() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (!impl->program)
    return out;
  for (const auto &[name, v] : impl->program->constants) {
    std::string text;
    switch (v.kind) {
    case lang::Setting::Kind::Int:
      text = std::to_string(v.i);
      break;
    case lang::Setting::Kind::Float: {
      // The shortest form that reads back as the same double.
      char buf[32];
      for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v.f);
        if (std::strtod(buf, nullptr) == v.f)
          break;
      }
      text = buf;
      // Written as the language writes a number: with a point or exponent.
      if (text.find_first_of(".eEn") == std::string::npos)
        text += ".0";
      break;
    }
    case lang::Setting::Kind::Bool:
      text = v.b ? "true" : "false";
      break;
    case lang::Setting::Kind::Str:
      // With the escapes the lexer reads back.
      text = "\"";
      for (char c : v.s)
        text += c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                : c == '\t' ? "\\t" : std::string(1, c);
      text += "\"";
      break;
    case lang::Setting::Kind::Dict:
      continue;
    }
    out.push_back({name, text});
  }
  return out;
}

bool Interpreter::loadFile(const std::string &path) {
  return impl->load(searchPath(path), true, path, path);
}

bool Interpreter::loadString(const std::string &source,
                             const std::string &name) {
  return impl->load(searchPath(name), false, source, name);
}

static Diagnostic toPublic(const lang::SourceManager &sources,
                           const lang::Diagnostic &d) {
  Diagnostic out;
  out.severity =
      d.severity == lang::Severity::Error     ? Diagnostic::Severity::Error
      : d.severity == lang::Severity::Warning ? Diagnostic::Severity::Warning
                                              : Diagnostic::Severity::Note;
  if (d.loc.valid() && d.loc.file < sources.size()) {
    out.file = sources.path(d.loc.file);
    out.line = d.loc.line;
    out.column = d.loc.col;
  }
  out.message = d.message;
  for (const lang::Diagnostic &n : d.notes)
    out.notes.push_back(toPublic(sources, n));
  return out;
}

std::vector<Diagnostic> Interpreter::diagnostics() const {
  std::vector<Diagnostic> out;
  if (!impl->frontend)
    return out;
  for (const lang::Diagnostic &d : impl->frontend->diagnostics().all())
    out.push_back(toPublic(impl->frontend->sources(), d));
  return out;
}

std::string Interpreter::renderDiagnostics() const {
  return impl->frontend ? impl->frontend->renderDiagnostics() : std::string();
}

std::vector<std::string> Interpreter::filesRead() const {
  return impl->frontend ? impl->frontend->filesRead()
                        : std::vector<std::string>();
}

bool Interpreter::hasErrors() const {
  return !impl->frontend || impl->frontend->diagnostics().hasErrors();
}

mlir::ModuleOp Interpreter::module() {
  if (!impl->program)
    return nullptr;
  if (!impl->generated) {
    impl->generated = true;
    impl->module =
        lang::mlirGen(impl->context, *impl->program, impl->frontend->sources(),
                      impl->frontend->diagnostics());
  }
  return impl->module ? *impl->module : nullptr;
}

mlir::MLIRContext &Interpreter::context() { return impl->context; }

std::unique_ptr<Interpreter> Interpreter::atBatch(int64_t batch) const {
  if (impl->pathOrSource.empty() && impl->name.empty())
    return nullptr;
  InterpreterOptions options = impl->options;
  options.batch = batch;
  auto other = std::make_unique<Interpreter>(options);
  bool ok = impl->fromFile ? other->loadFile(impl->pathOrSource)
                           : other->loadString(impl->pathOrSource, impl->name);
  return ok ? std::move(other) : nullptr;
}

/// A pass's errors as the front end's own, at their place in the script
/// (rendered with the source line and a caret, as any error of the script).
static void reportPassErrors(lang::Frontend &frontend,
                             const PassErrors &errors) {
  for (const PassErrors::Error &e : errors.errors()) {
    lang::Loc loc;
    for (uint32_t f = 0; f < frontend.sources().size(); ++f)
      if (!e.file.empty() && frontend.sources().path(f) == e.file)
        loc = lang::Loc{f, e.line, e.column};
    frontend.diagnostics().error(loc, e.message);
  }
  if (errors.errors().empty())
    frontend.diagnostics().error(lang::Loc{}, "compiling the model failed");
}

std::optional<std::string> Interpreter::emit(Stage stage) {
  if (!impl->program)
    return std::nullopt;
  switch (stage) {
  case Stage::AST:
    return lang::dumpAST(*impl->frontend->mainAST());
  case Stage::Whale:
  case Stage::Grad:
  case Stage::Train:
  case Stage::Runtime: {
    mlir::ModuleOp m = module();
    if (!m)
      return std::nullopt;
    mlir::OwningOpRef<mlir::ModuleOp> lowered;
    if (stage != Stage::Whale) {
      // A copy: the whale-dialect module stays as it is for other stages.
      lowered = m.clone();
      mlir::PassManager pm(&impl->context);
      PassErrors errors(&impl->context);
      // The train step as a run on the CPU compiles it: fused.
      if (stage == Stage::Grad)
        buildWhaleGradPipeline(pm);
      else if (stage == Stage::Train)
        buildWhaleTrainPipeline(pm, TrainPipelineOptions());
      else
        buildWhaleRuntimePipeline(pm, TrainPipelineOptions());
      if (mlir::failed(pm.run(*lowered))) {
        reportPassErrors(*impl->frontend, errors);
        return std::nullopt;
      }
      m = *lowered;
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    m.print(os);
    return text;
  }
  }
  return std::nullopt;
}

} // namespace whale
