//===- WhaleDialect.td - the whale dialect ---------------------*- tablegen -*-===//

#ifndef WHALE_DIALECT
#define WHALE_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Whale_Dialect : Dialect {
  let name = "whale";
  let summary = "Local models annotated for distributed training";
  let description = [{
    The whale dialect holds a model as the user wrote it: compute ops on
    statically shaped tensors, trainable parameters named by their call path,
    and `whale.taskgraph` regions that mark which parts are replicated (data
    parallel) and which are split (tensor parallel). Later passes plan, shard
    and schedule this IR into per-rank programs.

    Module attributes carry the script's `config` and `train` blocks as
    dictionaries (`whale.config`, `whale.train`); the dialect verifies their
    keys.
  }];
  let cppNamespace = "::whale";
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

class Whale_Op<string mnemonic, list<Trait> traits = []>
    : Op<Whale_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Whale_StrategyReplicate : I32EnumAttrCase<"replicate", 0>;
def Whale_StrategySplit : I32EnumAttrCase<"split", 1>;
def Whale_Strategy : I32EnumAttr<"Strategy",
    "how a TaskGraph uses its devices",
    [Whale_StrategyReplicate, Whale_StrategySplit]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_StrategyAttr : EnumAttr<Whale_Dialect, Whale_Strategy, "strategy"> {
  let assemblyFormat = "$value";
}

def Whale_InitZeros : I32EnumAttrCase<"zeros", 0>;
def Whale_InitOnes : I32EnumAttrCase<"ones", 1>;
def Whale_InitNormal : I32EnumAttrCase<"normal", 2>;
def Whale_InitUniform : I32EnumAttrCase<"uniform", 3>;
def Whale_InitXavier : I32EnumAttrCase<"xavier", 4>;
def Whale_InitKind : I32EnumAttr<"InitKind",
    "how a parameter is initialized",
    [Whale_InitZeros, Whale_InitOnes, Whale_InitNormal, Whale_InitUniform,
     Whale_InitXavier]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_InitKindAttr : EnumAttr<Whale_Dialect, Whale_InitKind, "init"> {
  let assemblyFormat = "$value";
}

#endif // WHALE_DIALECT
