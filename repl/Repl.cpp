//===- Repl.cpp - whale repl: a session of definitions and commands -------===//

#include "repl/Repl.h"

#include "lang/Frontend.h"
#include "lang/Suggest.h"
#include "lib/compile/Jit.h"
#include "runtime/run/Interrupt.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/LineEditor/LineEditor.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <istream>
#include <ostream>
#include <sstream>
#include <unistd.h>

namespace whale {

namespace {

/// The name the session's script is checked under.
constexpr const char *kSession = "<session>";

const char *const kHelp =
    R"(Definitions (import, NAME = value, def, model, config, train) add to the
session, or replace one of the same name; an expression prints its value.
A tensor expression is computed on this CPU; `x = <tensor expression>`
keeps it as x, and randn([2, 3]) gives standard normal samples. An input
goes on over lines until its brackets close.

  :help                  this text
  :list                  the session as a script
  :load FILE             add FILE's definitions
  :save FILE             write the session as a script (its tensors to
                         FILE.safetensors; :load FILE reads both)
  :ir [STAGE]            the session at a stage: whale (default), grad, train,
                         runtime, ast
  :plan --cluster SPEC   the plan over SPEC's devices (as whale plan)
  :sim --cluster SPEC    its predicted speed (as whale sim)
  :train [STEPS]         run the train block (as whale run; --cluster SPEC
                         and the other flags of whale run may follow)
  :devices               this machine's devices
  :reset                 forget every definition
  :quit                  end the session (so does the end of the input)
)";

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e + 1 - b);
}

std::vector<std::string> words(const std::string &s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

std::vector<std::string> linesOf(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

/// The key under which a declaration replaces an earlier one.
std::string keyOf(const lang::Decl &d) {
  using namespace lang;
  if (auto *i = llvm::dyn_cast<ImportDecl>(&d))
    return "import " + i->alias;
  if (auto *c = llvm::dyn_cast<ConstDecl>(&d))
    return "constant " + c->name;
  if (llvm::isa<ConfigDecl>(d))
    return "config";
  if (auto *f = llvm::dyn_cast<DefDecl>(&d))
    return "def " + f->name;
  if (auto *m = llvm::dyn_cast<ModelDecl>(&d))
    return "model " + m->name;
  return "train " + llvm::cast<TrainDecl>(d).model;
}

void onInterrupt(int) { requestInterrupt(); }

/// A tensor's values as PyTorch and numpy print them: nested brackets,
/// rows on their own lines, a dimension of more than 6 shown as its first
/// and last 3 with `...` between; then its type.
std::string formatTensor(const std::vector<int64_t> &shape, const char *dtype,
                         const std::function<std::string(int64_t)> &value) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  size_t width = 0;
  std::function<void(size_t, int64_t)> measure = [&](size_t d, int64_t at) {
    if (d == shape.size()) {
      width = std::max(width, value(at).size());
      return;
    }
    for (int64_t k = 0; k < shape[d]; ++k)
      if (shape[d] <= 6 || k < 3 || k >= shape[d] - 3)
        measure(d + 1, at + k * strides[d]);
  };
  measure(0, 0);
  std::string out;
  std::function<void(size_t, int64_t, size_t)> print = [&](size_t d, int64_t at,
                                                           size_t indent) {
    if (d == shape.size()) {
      std::string v = value(at);
      out += std::string(width - v.size(), ' ') + v;
      return;
    }
    out += "[";
    for (int64_t k = 0; k < shape[d]; ++k) {
      if (shape[d] > 6 && k == 3) {
        out += d + 1 == shape.size() ? "..., "
                                     : "...,\n" + std::string(indent + 1, ' ');
        k = shape[d] - 3;
      }
      print(d + 1, at + k * strides[d], indent + 1);
      if (k + 1 < shape[d])
        out +=
            d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' ');
    }
    out += "]";
  };
  print(0, 0, 0);
  std::string type = std::string(dtype) + "[";
  for (size_t d = 0; d < shape.size(); ++d)
    type += (d ? ", " : "") + std::to_string(shape[d]);
  return out + "  " + type + "]\n";
}

} // namespace

ReplSession::ReplSession(ReplOptions opts) : options(std::move(opts)) {
  // Imports resolve from the current folder, as for a script kept here.
  options.interpreter.searchPath.insert(options.interpreter.searchPath.begin(),
                                        ".");
  interp = std::make_unique<Interpreter>(options.interpreter);
  // The stdlib's modules and their defs, for completion.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(stdlibDirectory(), ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef path = it->path();
    if (!path.ends_with(".whl"))
      continue;
    std::string module = llvm::sys::path::stem(path).str();
    lang::Frontend fe;
    if (!fe.parseFile(path.str()))
      continue;
    for (const lang::DeclPtr &d : fe.mainAST()->decls)
      if (auto *def = llvm::dyn_cast<lang::DefDecl>(d.get()))
        stdlibMembers.push_back(module + "." + def->name);
  }
}

std::vector<std::string>
ReplSession::completions(const std::string &word) const {
  static const char *const commands[] = {
      ":help", ":list",  ":load",    ":save",  ":ir",  ":plan",
      ":sim",  ":train", ":devices", ":reset", ":quit"};
  std::vector<std::string> names;
  for (const char *c : commands)
    names.push_back(c);
  for (const Definition &d : defs)
    names.push_back(d.key.substr(d.key.find(' ') + 1));
  for (const std::string &b : lang::builtinNames())
    names.push_back(b);
  names.push_back("randn");
  names.insert(names.end(), stdlibMembers.begin(), stdlibMembers.end());
  for (const char *k : {"import", "model", "def", "train", "config",
                        "replicate", "split", "return", "for", "in"})
    names.push_back(k);
  std::vector<std::string> out;
  for (const std::string &n : names)
    if (!word.empty() && n.rfind(word, 0) == 0 &&
        std::find(out.begin(), out.end(), n) == out.end())
      out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

ReplSession::~ReplSession() = default;

bool ReplSession::complete(const std::string &text) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote || c == '\n')
        quote = 0;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    }
  }
  // More closing than opening brackets is an error for the parser to name.
  return depth <= 0;
}

std::string ReplSession::script() const {
  std::string s;
  for (const Definition &d : defs)
    s += d.text;
  return s;
}

bool ReplSession::check(const std::vector<Definition> &candidate,
                        std::ostream &err, const std::string &name) {
  std::string text;
  // The first line of each definition in the script, to place diagnostics
  // back in what was typed.
  std::vector<unsigned> firstLine;
  unsigned line = 1;
  for (const Definition &d : candidate) {
    firstLine.push_back(line);
    text += d.text;
    for (char c : d.text)
      line += c == '\n';
  }
  if (interp->loadString(text, kSession))
    return true;
  auto show = [&](const Diagnostic &d, const char *severity) {
    if (d.file != kSession) {
      err << (d.file.empty() ? "whale"
                             : d.file + ":" + std::to_string(d.line) + ":" +
                                   std::to_string(d.column))
          << ": " << severity << ": " << d.message << "\n";
      return;
    }
    size_t k = 0;
    while (k + 1 < firstLine.size() && firstLine[k + 1] <= d.line)
      ++k;
    unsigned rel = d.line - firstLine[k] + 1;
    unsigned shift = rel == 1 ? candidate[k].shift : 0;
    unsigned column = d.column > shift ? d.column - shift : 1;
    err << name << ":" << rel << ":" << column << ": " << severity << ": "
        << d.message << " (in " << candidate[k].key << ")\n";
    std::vector<std::string> lines = linesOf(candidate[k].text);
    if (rel >= 1 && rel <= lines.size()) {
      std::string shown =
          lines[rel - 1].substr(std::min<size_t>(shift, lines[rel - 1].size()));
      err << "  " << shown << "\n  ";
      for (unsigned i = 1; i < column && i <= shown.size(); ++i)
        err << (shown[i - 1] == '\t' ? '\t' : ' ');
      err << "^\n";
    }
  };
  for (const Diagnostic &d : interp->diagnostics()) {
    show(d, d.severity == Diagnostic::Severity::Warning ? "warning"
            : d.severity == Diagnostic::Severity::Note  ? "note"
                                                        : "error");
    for (const Diagnostic &n : d.notes)
      show(n, "note");
  }
  return false;
}

bool ReplSession::define(const std::string &text, std::ostream &out,
                         std::ostream &err, const std::string &name) {
  lang::Frontend parsed;
  if (!parsed.parseString(text, name)) {
    err << parsed.renderDiagnostics();
    return false;
  }
  // Each declaration's lines, from its first to the next one's.
  const auto &decls = parsed.mainAST()->decls;
  std::vector<std::string> lines = linesOf(text);
  std::vector<Definition> added;
  for (size_t i = 0; i < decls.size(); ++i) {
    size_t from = i == 0 ? 1 : decls[i]->getLoc().line;
    size_t to =
        i + 1 < decls.size() ? decls[i + 1]->getLoc().line - 1 : lines.size();
    std::string part;
    for (size_t l = from; l <= to && l <= lines.size(); ++l)
      part += lines[l - 1] + "\n";
    added.push_back({keyOf(*decls[i]), part, 0});
  }
  std::vector<Definition> candidate = defs;
  std::vector<std::string> replaced;
  for (Definition &a : added) {
    bool found = false;
    for (Definition &d : candidate)
      if (d.key == a.key) {
        d = a;
        found = true;
        replaced.push_back(a.key);
      }
    if (!found)
      candidate.push_back(a);
  }
  if (!check(candidate, err, name)) {
    // The session stays as it was.
    check(defs, err, name);
    return false;
  }
  defs = std::move(candidate);
  for (const std::string &r : replaced)
    out << "note: redefined " << r << "\n";
  // A constant of a tensor's name replaces the tensor.
  for (const Definition &a : added)
    llvm::erase_if(
        tensors, [&](const auto &t) { return a.key == "constant " + t.first; });
  // The value of each constant defined.
  for (const Definition &a : added)
    if (a.key.rfind("constant ", 0) == 0)
      for (const auto &[cname, value] : interp->constants())
        if ("constant " + cname == a.key)
          out << cname << " = " << value << "\n";
  return true;
}

bool ReplSession::readsTensors(const std::string &expr) const {
  // An identifier token of the expression that names a session tensor or
  // randn: its errors are the tensor expression's.
  std::string word;
  auto named = [&](const std::string &w) {
    return w == "randn" ||
           llvm::any_of(tensors, [&](const auto &t) { return t.first == w; });
  };
  for (char c : expr + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
      continue;
    }
    if (named(word))
      return true;
    word.clear();
  }
  return false;
}

bool ReplSession::evaluate(const std::string &expr, std::ostream &out,
                           std::ostream &err) {
  std::vector<Definition> candidate = defs;
  candidate.push_back({"the expression", "_ = " + expr + "\n", 4});
  std::ostringstream why;
  if (!check(candidate, why, "<input>")) {
    // Not a compile-time value: a tensor, computed now on this CPU. When
    // it is not one either, the first error is the one to show; when it
    // is one that fails to compute, why.
    std::ostringstream tensorWhy;
    err << (evaluateTensor(expr, out, tensorWhy) || readsTensors(expr)
                ? tensorWhy.str()
                : why.str());
    check(defs, err, "<input>");
    return true;
  }
  for (const auto &[name, value] : interp->constants())
    if (name == "_")
      out << value << "\n";
  // The expression is not kept: the session is as before.
  check(defs, err, "<input>");
  return true;
}

bool ReplSession::evaluateTensor(const std::string &expr, std::ostream &out,
                                 std::ostream &err,
                                 const std::string &assignTo) {
  // randn([2, 3]) becomes a tensor of samples made here.
  std::string expanded = expr;
  NamedTensors given = tensors;
  if (std::string e = expandRandn(expanded, rng, given); !e.empty()) {
    err << "whale: error: " << e << "\n";
    return true;
  }
  // The session's tensors are the model's inputs, so the expression can
  // read them; "model __eval(x: f32[2, 3]) {" is 13 characters before them.
  std::string header = "model __eval(";
  for (size_t k = 0; k < given.size(); ++k) {
    const TensorValue &t = given[k].second;
    header +=
        (k ? ", " : "") + given[k].first + ": " + (t.isFloat ? "f32[" : "i32[");
    for (size_t d = 0; d < t.shape.size(); ++d)
      header += (d ? ", " : "") + std::to_string(t.shape[d]);
    header += "]";
  }
  std::vector<Definition> candidate = defs;
  candidate.push_back(
      {"the expression", header + ") {\n  return " + expanded + "\n}\n", 0});
  if (!check(candidate, err, "<input>"))
    return false;
  mlir::ModuleOp session = interp->module();
  auto fn = session ? session.lookupSymbol<mlir::func::FuncOp>("__eval")
                    : mlir::func::FuncOp();
  if (!fn || fn.getNumResults() != 1)
    return false;
  // The expression alone, in a module of its own, compiled and run once.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(session.getLoc());
  module->push_back(fn.clone());
  std::string error;
  std::unique_ptr<JitProgram> program = JitProgram::compile(*module, error);
  JitProgram::Entry entry = program ? program->lookup("__eval") : nullptr;
  if (!entry) {
    err << "whale: error: compiling the expression failed: " << error << "\n";
    return true;
  }
  std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)> ctx(
      whale_rt_context_create("cpu:0", 1, 0, 0), whale_rt_context_destroy);
  std::vector<whale_rt_tensor *> inputs;
  for (const auto &[name, t] : given) {
    whale_rt_tensor *in = nullptr;
    const void *data = t.isFloat ? static_cast<const void *>(t.f.data())
                                 : static_cast<const void *>(t.i.data());
    int64_t bytes =
        4 * static_cast<int64_t>(t.isFloat ? t.f.size() : t.i.size());
    if (!ctx ||
        whale_rt_tensor_create(ctx.get(),
                               t.isFloat ? WHALE_RT_F32 : WHALE_RT_I32,
                               static_cast<int32_t>(t.shape.size()),
                               t.shape.data(), &in) != WHALE_RT_OK ||
        whale_rt_tensor_write(ctx.get(), in, data, bytes) != WHALE_RT_OK) {
      err << "whale: error: "
          << (ctx ? whale_rt_last_error(ctx.get()) : "no CPU context") << "\n";
      return true;
    }
    inputs.push_back(in);
  }
  whale_rt_tensor *result = nullptr;
  if (!ctx || entry(ctx.get(), inputs.data(), &result) != WHALE_RT_OK ||
      !result) {
    err << "whale: error: "
        << (ctx ? whale_rt_last_error(ctx.get()) : "no CPU context") << "\n";
    return true;
  }
  auto type = mlir::cast<mlir::RankedTensorType>(fn.getResultTypes()[0]);
  std::vector<int64_t> shape(type.getShape());
  int64_t n = type.getNumElements();
  bool isFloat = type.getElementType().isF32();
  std::vector<float> f(isFloat ? n : 0);
  std::vector<int32_t> i(isFloat ? 0 : n);
  whale_rt_status st =
      isFloat ? whale_rt_tensor_read(ctx.get(), result, f.data(), n * 4)
              : whale_rt_tensor_read(ctx.get(), result, i.data(), n * 4);
  whale_rt_tensor_release(ctx.get(), result);
  if (st != WHALE_RT_OK) {
    err << "whale: error: " << whale_rt_last_error(ctx.get()) << "\n";
    return true;
  }
  if (!assignTo.empty()) {
    // Kept for later expressions, as the session's tensor of that name.
    keepTensor(tensors, assignTo,
               TensorValue{shape, isFloat, std::move(f), std::move(i)});
    std::string type = isFloat ? "f32[" : "i32[";
    for (size_t d = 0; d < shape.size(); ++d)
      type += (d ? ", " : "") + std::to_string(shape[d]);
    out << assignTo << ": " << type << "]\n";
    return true;
  }
  out << formatTensor(shape, isFloat ? "f32" : "i32", [&](int64_t k) {
    char buf[32];
    if (isFloat)
      std::snprintf(buf, sizeof buf, "%.4f", f[k]);
    else
      std::snprintf(buf, sizeof buf, "%d", i[k]);
    return std::string(buf);
  });
  return true;
}

int ReplSession::runOnScript(const std::string &verb,
                             const std::vector<std::string> &args,
                             std::ostream &err) {
  if (!options.runVerb) {
    err << "whale: error: this session cannot run " << verb << "\n";
    return 1;
  }
  char name[] = ".whale-session-XXXXXX.whl";
  int fd = ::mkstemps(name, 4);
  if (fd < 0) {
    err << "whale: error: cannot write the session's script in this folder\n";
    return 1;
  }
  ::close(fd);
  std::string path = name;
  if (std::string e =
          rt::writeOutputFile(path, script(), "the session's script");
      !e.empty()) {
    err << "whale: error: " << e << "\n";
    std::remove(path.c_str());
    return 1;
  }
  std::vector<std::string> argv = {verb, path};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const std::string &dir : options.interpreter.searchPath) {
    argv.push_back("-I");
    argv.push_back(dir);
  }
  int rc = options.runVerb(argv);
  std::remove(path.c_str());
  return rc;
}

bool ReplSession::command(const std::string &line, std::ostream &out,
                          std::ostream &err) {
  std::vector<std::string> w = words(line);
  const std::string cmd = w.front();
  std::vector<std::string> rest(w.begin() + 1, w.end());
  if (cmd == ":quit" || cmd == ":q" || cmd == ":exit")
    return false;
  if (cmd == ":help") {
    out << kHelp;
  } else if (cmd == ":list") {
    out << script();
  } else if (cmd == ":reset") {
    defs.clear();
    tensors.clear();
    rng.seed(0);
    check(defs, err, "<input>");
    out << "the session is empty\n";
  } else if (cmd == ":load" || cmd == ":save") {
    if (rest.size() != 1) {
      err << "whale: error: " << cmd << " takes one file\n";
    } else if (cmd == ":save") {
      // The tensors go beside the script, in FILE.safetensors, tagged
      // with the script's checksum: the tensors first, so that a failure
      // of either leaves a pair that :load refuses to mix, never one it
      // takes for the session. A session without tensors removes the
      // old file, which belongs to another script.
      const std::string text = script();
      const std::string beside = rest[0] + ".safetensors";
      std::string e;
      if (!tensors.empty())
        e = saveTensors(beside, tensors, text);
      if (e.empty())
        e = rt::writeOutputFile(rest[0], text, "the session's script");
      if (e.empty() && tensors.empty() &&
          llvm::sys::fs::is_regular_file(beside))
        if (std::error_code ec = llvm::sys::fs::remove(beside))
          e = "cannot remove the old tensors '" + beside +
              "' of another script: " + ec.message();
      if (!e.empty())
        err << "whale: error: " << e << "\n";
      else
        out << "wrote " << defs.size() << " definitions to " << rest[0]
            << (tensors.empty() ? ""
                                : " and " + std::to_string(tensors.size()) +
                                      " tensors to " + rest[0] + ".safetensors")
            << "\n";
    } else {
      std::string text;
      if (std::string e = rt::readRegularFile(rest[0], "the script",
                                              rt::kMaxTextInput, text);
          !e.empty()) {
        err << "whale: error: " << e << "\n";
      } else {
        // Its imports resolve beside it, as when it runs alone.
        llvm::StringRef folder = llvm::sys::path::parent_path(rest[0]);
        auto &path = options.interpreter.searchPath;
        if (!folder.empty() &&
            std::find(path.begin(), path.end(), folder.str()) == path.end()) {
          path.push_back(folder.str());
          interp = std::make_unique<Interpreter>(options.interpreter);
        }
        size_t before = defs.size();
        if (define(text, out, err, rest[0])) {
          out << "loaded " << rest[0] << ": " << defs.size() - before
              << " new definitions, " << defs.size() << " in the session\n";
          // And the tensors :save put beside it, when there are any.
          std::string saved = rest[0] + ".safetensors";
          size_t had = tensors.size();
          if (llvm::sys::fs::is_regular_file(saved)) {
            if (std::string e = loadTensors(saved, tensors, text);
                !e.empty())
              err << "whale: error: " << e << "\n";
            else
              out << "loaded the tensors of " << saved << ": "
                  << tensors.size() - had << " new, " << tensors.size()
                  << " in the session\n";
          }
        }
      }
    }
  } else if (cmd == ":ir") {
    std::optional<Stage> stage = parseStage(rest.empty() ? "whale" : rest[0]);
    if (!stage || rest.size() > 1) {
      err << "whale: error: :ir takes one stage: ast, whale, grad, train or "
             "runtime\n";
    } else if (std::optional<std::string> text = interp->emit(*stage)) {
      out << *text;
    } else {
      err << interp->renderDiagnostics();
    }
  } else if (cmd == ":plan" || cmd == ":sim") {
    runOnScript(cmd.substr(1), rest, err);
  } else if (cmd == ":train") {
    std::vector<std::string> args;
    if (!rest.empty() && rest[0][0] != '-') {
      args = {"--steps", rest[0]};
      rest.erase(rest.begin());
    }
    args.insert(args.end(), rest.begin(), rest.end());
    runOnScript("run", args, err);
  } else if (cmd == ":devices") {
    if (options.runVerb)
      options.runVerb({"devices"});
  } else {
    err << "whale: error: unknown command '" << cmd << "'; :help lists them\n";
  }
  return true;
}

bool ReplSession::handle(const std::string &input, std::ostream &out,
                         std::ostream &err) {
  std::string text = trim(input);
  if (text.empty())
    return true;
  if (text[0] == ':')
    return command(text, out, err);
  // A definition, or else an expression to evaluate.
  lang::Frontend asDefinition;
  if (asDefinition.parseString(text + "\n", "<input>")) {
    // `NAME = <tensor expression>` names a tensor computed now, when it is
    // no constant; other errors are the definition's.
    const auto &decls = asDefinition.mainAST()->decls;
    auto *assign = decls.size() == 1
                       ? llvm::dyn_cast<lang::ConstDecl>(decls[0].get())
                       : nullptr;
    std::ostringstream why;
    if (define(text + "\n", out, assign ? why : err, "<input>") || !assign)
      return true;
    bool isConstant = std::any_of(defs.begin(), defs.end(), [&](auto &d) {
      return d.key == "constant " + assign->name;
    });
    std::ostringstream tensorWhy;
    std::string rhs = trim(text.substr(text.find('=') + 1));
    if (isConstant)
      err << why.str();
    else
      err << (evaluateTensor(rhs, out, tensorWhy, assign->name) ||
                      readsTensors(rhs)
                  ? tensorWhy.str()
                  : why.str());
    check(defs, err, "<input>");
    return true;
  }
  lang::Frontend asExpression;
  if (asExpression.parseString("_ = " + text + "\n", "<input>") &&
      asExpression.mainAST()->decls.size() == 1 &&
      llvm::isa<lang::ConstDecl>(*asExpression.mainAST()->decls[0]))
    return evaluate(text, out, err);
  err << asDefinition.renderDiagnostics();
  return true;
}

namespace {
/// Ctrl-C's handler. At the prompt it interrupts the terminal read (no
/// SA_RESTART), so the line being typed is dropped; while a command runs it
/// only sets the flag the train loops check between steps, and restarts
/// whatever it lands in: a progress line's write cut short by it would
/// leave the stream failed (stdio does not retry a write that returned
/// EINTR), and the "interrupted after step" error written to it next would
/// be lost.
void catchInterrupts(bool restart) {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = restart ? SA_RESTART : 0;
  ::sigaction(SIGINT, &action, nullptr);
}
} // namespace

int runRepl(std::istream &in, std::ostream &out, std::ostream &err,
            ReplOptions options) {
  const bool interactive = options.interactive;
  const std::string history = options.historyPath;
  ReplSession session(std::move(options));
  std::unique_ptr<llvm::LineEditor> editor;
  if (interactive) {
    // Ctrl-C stops a running step (the train loops check between steps)
    // or drops the line being typed; the session goes on.
    catchInterrupts(/*restart=*/false);
    out << "whale repl: :help lists the commands, :quit ends\n" << std::flush;
    editor = std::make_unique<llvm::LineEditor>("whale", history);
    editor->loadHistory();
    editor->setListCompleter([&session](llvm::StringRef buffer, size_t pos) {
      size_t start = pos;
      while (start > 0 &&
             (std::isalnum(static_cast<unsigned char>(buffer[start - 1])) ||
              buffer[start - 1] == '_' || buffer[start - 1] == '.' ||
              buffer[start - 1] == ':'))
        --start;
      std::string word = buffer.substr(start, pos - start).str();
      std::vector<llvm::LineEditor::Completion> out;
      for (const std::string &c : session.completions(word))
        out.emplace_back(c.substr(word.size()), c);
      return out;
    });
  }
  std::string pending;
  for (;;) {
    std::string line;
    if (editor) {
      editor->setPrompt(pending.empty() ? "whale> " : "  ...> ");
      std::optional<std::string> read = editor->readLine();
      if (!read && interruptRequested()) {
        clearInterrupt();
        pending.clear();
        out << "\n" << std::flush;
        continue;
      }
      if (!read)
        break;
      line = *read;
      editor->saveHistory();
    } else if (!std::getline(in, line)) {
      break;
    }
    pending += line + "\n";
    if (!ReplSession::complete(pending))
      continue;
    std::string input = std::move(pending);
    pending.clear();
    clearInterrupt();
    if (editor)
      catchInterrupts(/*restart=*/true);
    const bool goOn = session.handle(input, out, err);
    if (editor)
      catchInterrupts(/*restart=*/false);
    // A write that failed (a closed pipe, a signal) does not silence the
    // rest of the session.
    out.clear();
    err.clear();
    if (!goOn)
      return 0;
    out.flush();
  }
  if (!trim(pending).empty()) {
    err << "whale: error: the input ended inside an unfinished input (its "
           "brackets do not close)\n";
    return 1;
  }
  return 0;
}

} // namespace whale
