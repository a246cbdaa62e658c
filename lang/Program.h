//===- Program.h - a checked, elaborated .whl program ------------*- C++
//-*-===//
//
// What Sema hands to MLIRGen: each model as a flat list of typed nodes (loops
// unrolled, defs inlined, parameters named by call path), the TaskGraph each
// node belongs to, and the config and train settings as plain values. It
// knows nothing of MLIR, so the front end can be checked (and fuzzed) alone.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LANG_PROGRAM_H
#define WHALE_LANG_PROGRAM_H

#include "lang/AST.h"
#include "lang/Shape.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace whale::lang {

/// A setting: a number, a flag, a string, or a constructor call such as
/// `adam(lr = 1e-3)`, kept as a dictionary whose `kind` entry names it.
struct Setting {
  enum class Kind { Int, Float, Bool, Str, Dict };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<std::pair<std::string, Setting>> dict;

  static Setting ofInt(int64_t v) {
    Setting x;
    x.kind = Kind::Int;
    x.i = v;
    return x;
  }
  static Setting ofFloat(double v) {
    Setting x;
    x.kind = Kind::Float;
    x.f = v;
    return x;
  }
  static Setting ofBool(bool v) {
    Setting x;
    x.kind = Kind::Bool;
    x.b = v;
    return x;
  }
  static Setting ofStr(std::string v) {
    Setting x;
    x.kind = Kind::Str;
    x.s = std::move(v);
    return x;
  }
  const Setting *get(const std::string &key) const {
    for (const auto &kv : dict)
      if (kv.first == key)
        return &kv.second;
    return nullptr;
  }
};
using Settings = std::vector<std::pair<std::string, Setting>>;

using NodeAttr = std::variant<int64_t, double, bool, std::string,
                              std::vector<int64_t>, std::vector<double>>;

/// The whale ops a node may be (lang/NodeOps.def).
enum class NodeOp {
#define WHALE_NODE_OP(Enumerator, Mnemonic, OpClass) Enumerator,
#include "lang/NodeOps.def"
};

/// The op's mnemonic, as messages name it ("matmul").
const char *nodeOpName(NodeOp op);

/// One op of the elaborated model. Every node has one result; value ids
/// number the model's inputs first, then the nodes in order.
struct Node {
  NodeOp op = NodeOp::constant;
  std::vector<int> operands;
  TensorType type;
  std::vector<std::pair<std::string, NodeAttr>> attrs;
  Loc loc;
  int taskgraph = -1; // index into ModelGraph::taskgraphs, or -1
};

struct ModelInput {
  std::string name;
  TensorType type;
  Loc loc;
};

struct TaskGraphInfo {
  StrategyKind strategy = StrategyKind::Replicate;
  int64_t devices = 0; // 0: every device
  Loc loc;
};

struct ModelGraph {
  std::string name;
  Loc loc;
  std::vector<ModelInput> inputs;
  std::vector<Node> nodes;
  std::vector<TaskGraphInfo> taskgraphs;
  int result = -1;
  std::optional<StrategyKind> defaultStrategy;
  int64_t defaultDevices = 0;
  std::optional<Settings> train; // the model's train block, when it has one

  const TensorType &typeOf(int value) const {
    return value < static_cast<int>(inputs.size())
               ? inputs[value].type
               : nodes[value - inputs.size()].type;
  }
  /// True when every shape is known, so the model can become MLIR.
  bool isKnown() const;
};

struct Program {
  Settings config;
  std::vector<ModelGraph> models;
  /// The main script's top-level constants that are numbers, bools or
  /// strings, in the order they are defined (what the REPL shows).
  Settings constants;
};

} // namespace whale::lang

#endif
