//===- SemaImpl.h - state shared by the parts of Sema ------------*- C++
//-*-===//
//
// Sema is one class split over files by job: Sema.cpp (modules, names,
// recursion, config and train blocks), Elaborate.cpp (running model and def
// bodies: statements, expressions, calls), Builtins.cpp (tensor functions
// and their shape rules), Settings.cpp (initializers, data, optimizers).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LANG_SEMAIMPL_H
#define WHALE_LANG_SEMAIMPL_H

#include "lang/Frontend.h"
#include "lang/Program.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace whale::lang {

struct ModuleInfo;

/// A value during elaboration: compile-time numbers, strings and lists;
/// tensors (ids into the model being built); and names of things.
struct SVal {
  enum class Kind {
    Error,
    None,
    Int,
    Float,
    Bool,
    Str,
    List,
    Tensor,
    Module,
    Def,
    Builtin,
    Setting
  };
  Kind kind = Kind::None;
  Dim i;                              // Int (may be symbolic)
  double f = 0;                       // Float
  bool b = false;                     // Bool
  std::string s;                      // Str; Builtin name
  std::vector<SVal> list;             // List
  int tensor = -1;                    // Tensor
  const ModuleInfo *module = nullptr; // Module; Def's module
  const DefDecl *def = nullptr;       // Def
  Setting setting;                    // Setting (a constructor call)
  std::string category;               // Setting: "init", "data", ...

  static SVal error() {
    SVal v;
    v.kind = Kind::Error;
    return v;
  }
  static SVal none() { return SVal(); }
  static SVal ofInt(Dim d) {
    SVal v;
    v.kind = Kind::Int;
    v.i = std::move(d);
    return v;
  }
  static SVal ofFloat(double x) {
    SVal v;
    v.kind = Kind::Float;
    v.f = x;
    return v;
  }
  static SVal ofBool(bool x) {
    SVal v;
    v.kind = Kind::Bool;
    v.b = x;
    return v;
  }
  static SVal ofStr(std::string x) {
    SVal v;
    v.kind = Kind::Str;
    v.s = std::move(x);
    return v;
  }
  static SVal ofTensor(int id) {
    SVal v;
    v.kind = Kind::Tensor;
    v.tensor = id;
    return v;
  }
  bool isError() const { return kind == Kind::Error; }
};

/// What kind of value a message calls it: "an integer", "a tensor", ...
std::string describe(const SVal &v);

struct ModuleInfo {
  std::string name;
  const FileAST *ast = nullptr;
  bool isMain = false;
  std::map<std::string, const DefDecl *> defs;
  std::map<std::string, const ModelDecl *> models;
  std::map<std::string, const ConstDecl *> consts;
  std::map<std::string, const ModuleInfo *> imports;
  std::map<std::string, SVal> constValues; // evaluated in order
};

/// One argument of a builtin after binding: its value and where it was.
struct BoundArg {
  bool present = false;
  SVal value;
  Loc loc;
};

class Sema {
public:
  explicit Sema(Frontend &fe) : fe(fe), diags(fe.diagnostics()) {}
  std::optional<Program> run();

  // --- reporting (Sema.cpp) ---
  /// An error at `loc`, with a note for each enclosing inlined call; the
  /// same message at the same place is reported once.
  void error(Loc loc, const std::string &msg);
  void note(Loc loc, const std::string &msg) { diags.note(loc, msg); }

  // --- modules and names (Sema.cpp) ---
  const ModuleInfo *loadModule(const FileAST &ast, const std::string &name,
                               bool isMain);
  /// The path and text of module `dotted`, searched from `from`'s folder;
  /// nullopt (with an error naming the folders searched) when not found.
  std::optional<std::pair<std::string, std::string>>
  findModule(const std::string &dotted, const FileAST &from, Loc loc);
  void resolveNames(const ModuleInfo &m);
  void checkRecursion();
  void evaluateConsts(ModuleInfo &m);
  /// A constant's value given on the command line (`--define`), read as
  /// the kind of `scripted`, the value the script gives it.
  SVal defined(const ConstDecl &c, const SVal &scripted,
               const std::string &text);
  void checkConfig(const ModuleInfo &m);
  std::optional<Settings> checkTrain(const TrainDecl &t, const ModelDecl &m);

  // --- elaboration (Elaborate.cpp) ---
  std::optional<ModelGraph>
  elaborateModel(const ModuleInfo &m, const ModelDecl &model,
                 const std::map<std::string, int64_t> &dims,
                 std::optional<Settings> train);
  SVal eval(const Expr &e);
  SVal lookup(const std::string &name, Loc loc);
  bool execBlock(const Block &block); // false once a return ran
  SVal callDef(const DefDecl &def, const ModuleInfo &m, const CallExpr &call);
  SVal binary(char op, SVal lhs, SVal rhs, Loc loc);
  /// A compile-time integer that must be known (loop bounds, counts).
  std::optional<int64_t> knownInt(const SVal &v, Loc loc, const char *what);
  int addNode(NodeOp op, std::vector<int> operands, TensorType type,
              Loc loc,
              std::vector<std::pair<std::string, NodeAttr>> attrs = {});
  const TensorType &typeOf(int value) const { return graph->typeOf(value); }
  int constantLike(double value, DType dtype, Loc loc);
  /// Checks the batch / shard divisibility rules when a block closes.
  void checkDivisible(int taskgraph, size_t firstNode);
  bool unevenAllowed() const;
  /// Counts one statement or loop iteration against the unrolling limit;
  /// false (with one error) once the limit is passed.
  bool countStep(Loc loc);

  // --- builtins (Builtins.cpp) ---
  static bool isBuiltin(const std::string &name);
  SVal emitMatmul(int a, int b, bool transA, bool transB, Loc loc);
  SVal emitElementwise(char op, int a, int b, Loc loc);
  SVal callBuiltin(const std::string &name, const CallExpr &call);
  bool bindArgs(const std::string &fn, const CallExpr &call,
                const std::vector<std::string> &params, size_t required,
                std::vector<BoundArg> &out);

  // --- settings (Settings.cpp) ---
  static bool isSettingCtor(const std::string &name);
  static const std::vector<std::string> &settingCtorNames();
  SVal callSetting(const std::string &name, const CallExpr &call);
  std::optional<Setting> toSetting(const SVal &v, Loc loc);

  Frontend &fe;
  DiagnosticEngine &diags;
  std::vector<std::unique_ptr<ModuleInfo>> modules;
  std::map<std::string, ModuleInfo *> modulesByPath;
  std::vector<std::string> loading; // import chain, to find cycles
  std::set<std::pair<std::string, std::string>> reported; // (where, message)
  Settings config;
  int64_t steps = 0; // statements run, against options.maxSteps
  bool stepLimitReported = false;

  // Elaboration state of the model being built.
  struct Frame {
    const ModuleInfo *module = nullptr;
    std::map<std::string, SVal> locals;
    std::string path;                      // call path: "gpt/block_3"
    std::map<std::string, int> callCount;  // per def name, for block_0, block_1
    std::map<std::string, int> paramCount; // per param name, for w, w_1
    SVal result;
    bool returned = false;
    const DefDecl *def = nullptr;
  };
  ModelGraph *graph = nullptr;
  std::vector<Frame> frames;
  std::vector<Loc> callSites; // innermost last
  int currentTaskGraph = -1;
  std::string nameHint; // the variable a param() call is assigned to
  bool defaultSeen = false;
};

} // namespace whale::lang

#endif
