//===- WhaleOps.td - ops of the whale dialect ------------------*- tablegen -*-===//

#ifndef WHALE_OPS
#define WHALE_OPS

include "dialects/Whale/IR/WhaleDialect.td"
include "dialects/Whale/Interfaces/CostOpInterface.td"
include "dialects/Whale/Interfaces/GradientOpInterface.td"
include "dialects/Whale/Interfaces/ShardingOpInterface.td"
include "dialects/Whale/Interfaces/ScalarFormulaOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Whale_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
def Whale_IndexTensor : RankedTensorOf<[I32, I64]>;
def Whale_I32Tensor : RankedTensorOf<[I32]>;
def Whale_AnyTensor : RankedTensorOf<[F32, F16, BF16, F64, I32, I64]>;
// A position in a sequence, read when the op runs: `tensor<i32>`.
def Whale_Position : 0DTensorOf<[I32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI32Type())">;

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Whale_TaskGraphOp : Whale_Op<"taskgraph", [
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A part of the model with one parallel strategy";
  let description = [{
    A TaskGraph is a subgraph of the model that is parallelized one way:
    `replicate` runs a copy on each of its devices with a slice of the batch
    (data parallelism); `split` shards its operators over its devices (tensor
    parallelism). `devices` is the device count the user asked for; when it is
    absent, the TaskGraph takes every device. TaskGraphs never nest.

    The body may use values defined above it; values it produces for later
    ops leave through `whale.yield`.

    ```mlir
    %h = whale.taskgraph replicate(4) -> (tensor<8x16xf32>) {
      %w = whale.param "m/w" normal [0.0, 2.0e-02] : tensor<16x16xf32>
      %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
      whale.yield %y : tensor<8x16xf32>
    }
    ```
  }];
  let arguments = (ins Whale_StrategyAttr:$strategy,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$devices);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    custom<StrategyKeyword>($strategy) (`(` $devices^ `)`)?
    (`->` `(` type($results)^ `)`)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Whale_YieldOp : Whale_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"TaskGraphOp">]> {
  let summary = "Values a TaskGraph hands to the rest of the model";
  let description = [{
    Ends a `whale.taskgraph` body; its operands become the TaskGraph's results.

    ```mlir
    whale.yield %y : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

def Whale_ParamOp : Whale_Op<"param", [
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getBytesRead"]>]> {
  let summary = "A trainable parameter";
  let description = [{
    A parameter of the model, named by the call path that created it
    (`classifier/mlp_0/w1`), with its initializer. `init_args` holds the
    initializer's numbers: `normal` [mean, std], `uniform` [low, high],
    `xavier` [gain]; `zeros` and `ones` take none. Under tensor
    parallelism `shard = [axis, shards]` makes the result this rank's part
    of the parameter: the whole is initialized as on one device and split.
    Uneven shards add `shard_weights` (the group's, as all_gather takes
    them) and the whole extent: `shard = [axis, shards, extent]`.

    A `frozen` parameter is state no gradient trains (no optimizer update,
    no gradient sync): a batch normalization's running statistics, which
    the whale.batch_norm that reads them updates, or a layer a script
    keeps fixed. It is saved, resharded and restored as any parameter.

    With parameters sharded over the replicas (ZeRO stage 3,
    `shard_parameters`), `owner` places the parameter on one member of
    `group` (`replicas`, or `shard_peers` with `shards`), the one that
    updates it: only there does the runtime keep it. Elsewhere the result
    is a handle without values, which only `whale.gather_params` (and the
    owner's update, which runs on the owner alone) may read.

    ```mlir
    %w = whale.param "mlp/w1" normal [0.0, 2.0e-02] : tensor<1024x4096xf32>
    %v = whale.param "mlp/w2" normal [0.0, 2.0e-02] {group = "replicas", owner = 1 : i64} : tensor<4096x1024xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Whale_InitKindAttr:$init,
                       DenseF64ArrayAttr:$init_args,
                       OptionalAttr<DenseI64ArrayAttr>:$shard,
                       OptionalAttr<DenseI64ArrayAttr>:$shard_weights,
                       UnitAttr:$frozen,
                       OptionalAttr<I64Attr>:$owner,
                       OptionalAttr<StrAttr>:$group,
                       OptionalAttr<I64Attr>:$shards);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $name custom<InitKeyword>($init) $init_args attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// The whole parameter's type; the result is part `i` of `shards` of
    /// it along `axis` when the op has `shard = [axis, shards(, extent)]`.
    ::mlir::RankedTensorType getFullType();
  }];
  let hasVerifier = 1;
}

def Whale_ConstantOp : Whale_Op<"constant", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface>]> {
  let summary = "A tensor filled with one number";
  let description = [{
    A tensor every element of which is `value`; scalars in expressions such as
    `x * 0.5` become rank-0 constants that broadcast.

    ```mlir
    %c = whale.constant 5.000000e-01 : tensor<f32>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Whale_MatmulOp : Whale_Op<"matmul", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Matrix product over the last two dimensions";
  let description = [{
    `lhs` is `[..., M, K]` (or `[..., K, M]` with `transpose_lhs`), `rhs` is
    `[K, N]` or `[..., K, N]` (or `N, K` with `transpose_rhs`). Leading batch
    dimensions of the two sides must agree where both have them. The result is
    `[..., M, N]`.

    ```mlir
    %y = whale.matmul %x, %w {transpose_rhs} : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$lhs, Whale_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Whale_BinaryOp<string mnemonic, string what>
    : Whale_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
        DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Elementwise " # what # " with broadcasting";
  let description = [{
    Elementwise }] # what # [{ of two tensors of the same element type. Shapes
    broadcast as in NumPy: aligned from the last dimension, each pair of
    extents equal or one of them 1.

    ```mlir
    %z = whale.}] # mnemonic # [{ %x, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$lhs, Whale_AnyTensor:$rhs);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_AddOp : Whale_BinaryOp<"add", "sum">;
def Whale_SubOp : Whale_BinaryOp<"sub", "difference">;
def Whale_MulOp : Whale_BinaryOp<"mul", "product">;
def Whale_DivOp : Whale_BinaryOp<"div", "quotient">;

// An elementwise function with a runtime kernel of its own, UnaryKind
// `mnemonic` (the runtime's WHALE_RT_* of the same name); its gradient is a
// whale.unary_grad of that kind.
class Whale_UnaryOp<string mnemonic, string what, int flopsPerElement>
    : Whale_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, SameOperandsAndResultType, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
        DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Elementwise " # what;
  let description = [{
    Applies }] # what # [{ to every element of a floating-point tensor.

    ```mlir
    %y = whale.}] # mnemonic # [{ %x : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  // FLOPs charged per element; the table is in docs/cost-model.md.
  let extraClassDeclaration = [{
    static constexpr int64_t kFlopsPerElement = }] # flopsPerElement # [{;
  }];
  // Elementwise: split where the input is split.
  let extraClassDefinition = [{
    void $cppClass::getShardingPatterns(::whale::sharding::Context &ctx) {
      ::whale::sharding::addElementwiseSplits(*this, ctx);
      ctx.addAllWhole(*this);
    }
    int64_t $cppClass::getFlops() {
      return kFlopsPerElement * ::whale::tensorElements(getType());
    }
    ::llvm::SmallVector<::mlir::Value>
    $cppClass::buildGradients(::mlir::OpBuilder &b,
                              ::llvm::ArrayRef<::mlir::Value> g) {
      return ::whale::unaryGradients(*this, b, ::whale::UnaryKind::}] # mnemonic # [{,
                                     g[0]);
    }
  }];
}

def Whale_NegOp : Whale_UnaryOp<"neg", "negation", 1>;
def Whale_ReluOp : Whale_UnaryOp<"relu", "max(x, 0)", 1>;
def Whale_GeluOp : Whale_UnaryOp<"gelu", "the GELU activation (tanh form)", 8>;
def Whale_TanhOp : Whale_UnaryOp<"tanh", "the hyperbolic tangent", 4>;
def Whale_ExpOp : Whale_UnaryOp<"exp", "the exponential", 4>;
def Whale_LogOp : Whale_UnaryOp<"log", "the natural logarithm", 4>;
def Whale_SqrtOp : Whale_UnaryOp<"sqrt", "the square root", 1>;

// An elementwise op defined by its formula (ScalarFormulaOpInterface.td):
// `forward` computes the element y from x, `derivative` the element of x's
// gradient from x, y and the output gradient g, each C++ over the
// ScalarBuilder `s`. Fused kernels on the CPU, element programs on a GPU
// and the op alone (a region of its own) compute from them; its cost, its
// gradient (whale.formula_grad) and its sharding (split where its input is)
// come with the class. A new elementwise op is one row below and one row
// of the front end's builtin table.
class Whale_FormulaOp<string mnemonic, string what, int flopsPerElement,
                      int gradFlopsPerElement, code forward, code derivative>
    : Whale_Op<mnemonic, [Pure, SameOperandsAndResultType,
        DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
        DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>,
        DeclareOpInterfaceMethods<Whale_ShardingOpInterface>,
        DeclareOpInterfaceMethods<Whale_ScalarFormulaOpInterface>]> {
  let summary = "Elementwise " # what;
  let description = [{
    Applies }] # what # [{ to every element of an f32 tensor, computed
    from its formula in the kernel of the fused region that holds it.

    ```mlir
    %y = whale.}] # mnemonic # [{ %x : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    int64_t $cppClass::getFlops() {
      return }] # flopsPerElement # [{ * ::whale::tensorElements(getType());
    }
    int64_t $cppClass::getGradientFlopsPerElement() {
      return }] # gradFlopsPerElement # [{;
    }
    ::llvm::SmallVector<::mlir::Value>
    $cppClass::buildGradients(::mlir::OpBuilder &b,
                              ::llvm::ArrayRef<::mlir::Value> g) {
      return ::whale::formulaGradients(*this, b, g[0]);
    }
    void $cppClass::getShardingPatterns(::whale::sharding::Context &ctx) {
      ::whale::sharding::addElementwiseSplits(*this, ctx);
      ctx.addAllWhole(*this);
    }
    ::whale::ScalarHandle $cppClass::buildScalar(::whale::ScalarBuilder &s,
                                                 ::whale::ScalarHandle x) {
      }] # forward # [{
    }
    ::whale::ScalarHandle $cppClass::buildScalarGradient(
        ::whale::ScalarBuilder &s, ::whale::ScalarHandle x,
        ::whale::ScalarHandle y, ::whale::ScalarHandle g) {
      (void)x;
      (void)y;
      }] # derivative # [{
    }
  }];
}

// SwiGLU's gate (Llama's MLP): x * sigmoid(x); its derivative
// sigmoid(x) * (1 + x * (1 - sigmoid(x))).
def Whale_SiluOp : Whale_FormulaOp<"silu", "SiLU, x * sigmoid(x)", 5, 9,
  [{ return s.mul(x, s.sigmoid(x)); }],
  [{
    ::whale::ScalarHandle sig = s.sigmoid(x);
    return s.mul(g, s.mul(sig, s.add(s.c(1), s.mul(x, s.sub(s.c(1), sig)))));
  }]>;

def Whale_CastOp : Whale_Op<"cast", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Converts a tensor between f32 and bf16";
  let description = [{
    Every element converted to the result's element type: to bf16 rounds to
    nearest, ties to even (NaN stays NaN, infinities stay); to f32 is
    exact. Mixed precision (amp = "bf16") stores activations in bf16 and
    keeps parameters and their gradients in f32; casts mark where values
    cross. The gradient converts back.

    ```mlir
    %h = whale.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def Whale_CausalMaskOp : Whale_Op<"causal_mask", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Masks future positions of attention scores";
  let description = [{
    For scores `[..., T, S]` sets element `(i, j)` to negative infinity where
    `j > i + (S - T)`, so position `i` attends only to itself and the past.
    The last two dimensions are the query and key positions.

    ```mlir
    %m = whale.causal_mask %s : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization and losses
//===----------------------------------------------------------------------===//

def Whale_SoftmaxOp : Whale_Op<"softmax", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Softmax along one axis";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `axis` (negative counts from the
    end).

    ```mlir
    %p = whale.softmax %x axis = -1 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Whale_AttentionOp : Whale_Op<"attention", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure,
    AllTypesMatch<["query", "result"]>, AllTypesMatch<["key", "value"]>,
    DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops", "getOutputMemory"]>]> {
  let summary = "Fused attention over the last two dimensions";
  let description = [{
    `softmax(query key^T * scale) value` over `[..., T, E]` operands, with
    key j hidden from query i > ... when `causal` (j > i). What
    `-whale-fuse-attention` makes of the matmul, scale, causal mask,
    softmax and matmul chain: the `[..., T, T]` scores are never held.

    With `sequence_major` every operand and the result are `[..., T, H, E]`:
    the heads sit inside each position, as a linear layer's output
    reshaped into heads is, and attention runs over T for each head. The
    pass folds the permutes that split and merge heads into this form, so
    no transpose runs on either side of the op, forward or backward.

    Key and value may have fewer heads than query (grouped-query attention:
    the heads' axis, the one before T or H of `[..., T, H, E]`, divides
    query's): each key head serves that many consecutive query heads, as
    transformers' `repeat_kv` lays them out, and is read, not repeated.

    ```mlir
    %o = whale.attention %q, %k, %v scale = 2.500000e-01 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
    %p = whale.attention %x, %y, %z scale = 2.500000e-01 causal sequence_major : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
    %g = whale.attention %q, %a, %b scale = 2.500000e-01 causal : tensor<2x4x16x8xf32>, tensor<2x1x16x8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$query, Whale_FloatTensor:$key,
                       Whale_FloatTensor:$value, F64Attr:$scale,
                       UnitAttr:$causal, UnitAttr:$sequence_major);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `scale` `=` $scale (`causal` $causal^)?
    (`sequence_major` $sequence_major^)? attr-dict `:` type($query) `,`
    type($key)
  }];
  let extraClassDeclaration = [{
    /// The axis attention runs over: T of [..., T, E] or [..., T, H, E].
    int64_t getSequenceAxis() {
      return getQuery().getType().getRank() - (getSequenceMajor() ? 3 : 2);
    }
  }];
  let hasVerifier = 1;
}

def Whale_LayerNormOp : Whale_Op<"layernorm", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Layer normalization over the last dimension";
  let description = [{
    Normalizes `input` `[..., D]` to zero mean and unit variance over its last
    dimension, then scales by `gamma` `[D]` and shifts by `beta` `[D]`.

    ```mlir
    %y = whale.layernorm %x, %g, %b eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$gamma,
                       Whale_FloatTensor:$beta, F64Attr:$eps);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `eps` `=` $eps attr-dict `:` type($input) `,`
    type($gamma) `,` type($beta)
  }];
  let hasVerifier = 1;
}

def Whale_RmsNormOp : Whale_Op<"rms_norm", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Root-mean-square normalization over the last dimension";
  let description = [{
    Llama's RMSNorm: divides each row of `input` `[..., D]` by the root of
    its mean square plus `eps`, then scales by `weight` `[D]`. No mean is
    taken out and there is no bias:

    `result = input / sqrt(mean(input * input, -1) + eps) * weight`

    ```mlir
    %y = whale.rms_norm %x, %w eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$weight,
                       F64Attr:$eps);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` `=` $eps attr-dict `:` type($input) `,`
    type($weight)
  }];
  let hasVerifier = 1;
}

def Whale_RopeOp : Whale_Op<"rope", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Rotary position embedding of queries or keys (RoPE)";
  let description = [{
    For `input` `[..., T, E]` (E even), position `t` of the T axis and
    `i < E / 2`: the pair `(x[i], x[i + E/2])` turns by the angle
    `t * theta^(-2i / E)`, as Hugging Face transformers' Llama applies it
    (`x * cos + rotate_half(x) * sin`, the two halves of each row paired).
    The frequencies and angles are computed in f32 as transformers computes
    them. With `inverse` the turn is backwards: the gradient of a rotation
    is its inverse.

    `scaling = [factor, low_freq_factor, high_freq_factor,
    original_max_position_embeddings]` rescales the frequencies as Llama
    3.1 does (transformers' `rope_type = "llama3"`): wavelengths longer
    than the original context over low_freq_factor are divided by factor,
    those shorter than it over high_freq_factor kept, and those between
    blended.

    With `at %p` the first row of T sits at position `p` rather than 0 (a
    `tensor<i32>` read when the op runs): a key/value cache's decoding
    step, whose one row is the text's position p.

    ```mlir
    %q2 = whale.rope %q theta = 1.000000e+04 : tensor<2x4x16x8xf32>
    %k2 = whale.rope %k theta = 5.000000e+05 scaling = [8.0, 1.0, 4.0, 8192.0] : tensor<2x4x16x8xf32>
    %q3 = whale.rope %q at %p theta = 1.000000e+04 : tensor<2x4x1x8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input,
                       Optional<Whale_Position>:$position, F64Attr:$theta,
                       OptionalAttr<DenseF64ArrayAttr>:$scaling,
                       UnitAttr:$inverse);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`at` $position^)? `theta` `=` $theta (`scaling` `=` $scaling^)?
    (`inverse` $inverse^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Whale_KvAttentionOp : Whale_Op<"kv_attention", [Pure,
    AllTypesMatch<["query", "result"]>, AllTypesMatch<["key", "value"]>,
    AllTypesMatch<["key_cache", "value_cache", "new_key_cache",
                   "new_value_cache"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Causal attention of new rows over a key/value cache";
  let description = [{
    A decoding step's attention. `key` and `value` `[B, Hk, N, E]` are the
    rows of positions `p .. p + N - 1` (`position` is p, a `tensor<i32>`
    read when the op runs); the caches `[B, Hk, W, E]` hold the rows of
    the positions before p (what is after them is never read). The new
    caches are the old with rows p .. p + N - 1 replaced by `key` and
    `value`, and `result` `[B, H, N, E]` is what a causal `whale.attention`
    over positions 0 .. p + N - 1 gives for the last N queries: query row
    i attends to the cache's rows 0 .. p + i. Hk divides H: each key head
    serves H / Hk consecutive query heads, as in `whale.attention`.
    p + N must not pass W (an error when it runs).

    ```mlir
    %o, %kc2, %vc2 = whale.kv_attention %q, %k, %v into %kc, %vc at %p scale = 3.535534e-01 : tensor<1x4x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$query, Whale_FloatTensor:$key,
                       Whale_FloatTensor:$value, Whale_FloatTensor:$key_cache,
                       Whale_FloatTensor:$value_cache,
                       Whale_Position:$position, F64Attr:$scale);
  let results = (outs Whale_FloatTensor:$result,
                      Whale_FloatTensor:$new_key_cache,
                      Whale_FloatTensor:$new_value_cache);
  let assemblyFormat = [{
    $query `,` $key `,` $value `into` $key_cache `,` $value_cache `at`
    $position `scale` `=` $scale attr-dict `:` type($query) `,` type($key)
    `,` type($key_cache)
  }];
  let hasVerifier = 1;
}

def Whale_TopKOp : Whale_Op<"topk", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "The k largest entries of each last-dimension row";
  let description = [{
    For `input` `[..., N]` and `1 <= k <= N`: each row's k first entries in
    the top-k order (larger first, the lower position first among equals, a
    NaN above every number), as values `[..., k]` of the input's type, or
    with `indices` as their positions (`i32`), which have no gradient.

    ```mlir
    %v = whale.topk %g k = 2 : tensor<16x8xf32> -> tensor<16x2xf32>
    %i = whale.topk %g k = 2 indices : tensor<16x8xf32> -> tensor<16x2xi32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, I64Attr:$k,
                       UnitAttr:$indices);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $input `k` `=` $k (`indices` $indices^)? attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Whale_MoeDispatchOp : Whale_Op<"moe_dispatch", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure,
    DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Tokens to their experts' slots (mixture of experts)";
  let description = [{
    `tokens` `[G, S, D]` are G groups of S tokens; `experts` `[G, S, k]`
    (i32) are each token's k chosen experts. Each group gives every expert
    `capacity` slots, taken first by the tokens' first choices in token
    order, then by their second choices, and so on; a choice that finds its
    expert full is dropped. The result `[E, G * capacity, D]` holds expert
    e's slots of group g at rows `g * capacity ...`: each taken slot the
    token (times its gate when `gates` `[G, S, k]` is given), the others
    zero. Groups never share slots, so the same tokens are kept however the
    groups are cut over devices.

    ```mlir
    %d = whale.moe_dispatch %x, %e experts = 4 capacity = 3
        : tensor<2x6x8xf32>, tensor<2x6x1xi32> -> tensor<4x6x8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$tokens, Whale_I32Tensor:$experts,
                       Optional<Whale_FloatTensor>:$gates,
                       I64Attr:$num_experts, I64Attr:$capacity);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $tokens `,` $experts (`,` $gates^)? `experts` `=` $num_experts
    `capacity` `=` $capacity attr-dict `:` type($tokens) `,` type($experts)
    (`,` type($gates)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_MoeCombineOp : Whale_Op<"moe_combine", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure,
    DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Experts' slots back to their tokens (mixture of experts)";
  let description = [{
    The inverse routing of `whale.moe_dispatch`: for `slotted`
    `[E, G * C, D]` and the same `experts` `[G, S, k]`, each token's sum over
    its kept choices of its slot's row (times the choice's gate when `gates`
    is given), `[G, S, D]`; a token whose choices were all dropped gets
    zeros. C is `slotted`'s second extent over G.

    ```mlir
    %y = whale.moe_combine %h, %e, %g
        : tensor<4x6x8xf32>, tensor<2x6x1xi32>, tensor<2x6x1xf32> -> tensor<2x6x8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$slotted, Whale_I32Tensor:$experts,
                       Optional<Whale_FloatTensor>:$gates);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $slotted `,` $experts (`,` $gates^)? attr-dict `:` type($slotted) `,`
    type($experts) (`,` type($gates)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_OneHotOp : Whale_Op<"one_hot", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure,
    DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Integer ids as rows of zeros with a one";
  let description = [{
    For `ids` `[...]` (i32) in `[0, classes)`, `[..., classes]` with 1 at
    each id and 0 elsewhere. It has no gradient (counts of a choice, as a
    mixture of experts' balancing loss takes them).

    ```mlir
    %h = whale.one_hot %ids classes = 4 : tensor<2x6xi32> -> tensor<2x6x4xf32>
    ```
  }];
  let arguments = (ins Whale_I32Tensor:$ids, I64Attr:$classes);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `classes` `=` $classes attr-dict `:` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_DropoutOp : Whale_Op<"dropout", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface, ["getShardingRefusal"]>, Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Zeroes a random share of the elements while training";
  let description = [{
    While a step trains, each element of `input` `[N, ...]` (N the batch's
    rows) is zeroed with probability `rate` and the others are scaled by
    1 / (1 - rate); while evaluating it is the identity. Which elements drop
    is a hash of the job's seed, the step, `key` (the dropout's place in the
    model) and the element's index in the global batch: row
    `first + row_offset + n` of it, where `first` is the rank's first row
    (the runtime's) and `row_offset` the micro-batch's (the rank
    programs'). So every plan drops the same elements, and the gradient is
    the same op applied to the output's gradient.

    ```mlir
    %y = whale.dropout %x rate = 1.000000e-01 key = 42 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, F64Attr:$rate, I64Attr:$key,
                       DefaultValuedAttr<I64Attr, "0">:$row_offset);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input `rate` `=` $rate `key` `=` $key attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Whale_BatchNormOp : Whale_Op<"batch_norm", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface, ["getShardingRefusal"]>, 
    MemoryEffects<[MemRead, MemWrite]>,
    AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["gamma", "beta", "running_mean", "running_var",
                   "mean", "invstd"]>,
    DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Batch normalization over the whole batch, per channel";
  let description = [{
    Normalizes `input` `[N, C, ...]` per channel c over the batch's rows and
    every position after the channel (N x H x W for images) while a step
    trains: y = (x - mean) x invstd x gamma + beta, invstd =
    1 / sqrt(var + eps), var the biased variance. The statistics are the
    whole global batch's on every plan: data-parallel replicas sum their
    rows' channel sums over the replica group (two all-reduces of C floats
    and a count: the mean, then the centred squares), so each plan
    normalizes as one device does. The step then moves the `frozen`
    parameters `running_mean` and `running_var` toward the batch's mean and
    unbiased variance by `momentum` (PyTorch's convention: r = (1 -
    momentum) r + momentum x stat; momentum 0 leaves them, as a recomputed
    forward must). While evaluating, the running statistics normalize and
    nothing is updated. `mean` and `invstd` are the statistics used, for
    the gradient. Where shard groups share their rows, `row_copies` ranks
    hold each row (the rank programs set it): their sums and counts are
    each that many times the batch's, which the ratios cancel and the
    unbiased variance's count must not see.

    ```mlir
    %y, %m, %s = whale.batch_norm %x, %g, %b, %rm, %rv momentum = 1.000000e-01 eps = 1.000000e-05 : tensor<8x4x6x6xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$gamma,
                       Whale_FloatTensor:$beta, Whale_FloatTensor:$running_mean,
                       Whale_FloatTensor:$running_var, F64Attr:$momentum,
                       F64Attr:$eps,
                       DefaultValuedAttr<I64Attr, "1">:$row_copies);
  let results = (outs Whale_FloatTensor:$result, Whale_FloatTensor:$mean,
                      Whale_FloatTensor:$invstd);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta `,` $running_mean `,` $running_var
    `momentum` `=` $momentum `eps` `=` $eps attr-dict `:` type($input) `,`
    type($gamma)
  }];
  let hasVerifier = 1;
}

def Whale_Conv2dOp : Whale_Op<"conv2d", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "2-D convolution of NCHW images";
  let description = [{
    Convolves `input` `[N, C, H, W]` with `weight` `[O, C / groups, KH, KW]`
    (cross-correlation, as deep-learning frameworks define it) into
    `[N, O, OH, OW]`, with `stride`, zero `padding` on each side and
    `dilation`, each `[height, width]`. The channels form `groups`
    independent groups.

    ```mlir
    %y = whale.conv2d %x, %w stride = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$weight,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilation, I64Attr:$groups);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `stride` `=` $stride `padding` `=` $padding
    `dilation` `=` $dilation `groups` `=` $groups attr-dict `:` type($input)
    `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_Pool2dOp : Whale_Op<"pool2d", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Max or average pooling over the last two dimensions";
  let description = [{
    Pools every `[H, W]` plane of `input` `[..., H, W]` with a `kernel`
    window moved by `stride`, over zero `padding` on each side (at most half
    the kernel), each `[height, width]`. `kind` is "max" or "avg"; an
    average counts the padding as zeros.

    ```mlir
    %y = whale.pool2d %x kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, StrAttr:$kind,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kind` `=` $kind `kernel` `=` $kernel `stride` `=` $stride
    `padding` `=` $padding attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_EmbeddingOp : Whale_Op<"embedding", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getBytesRead"]>]> {
  let summary = "Rows of a table picked by integer ids";
  let description = [{
    For a table `[V, D]` and ids `[...]`, the result `[..., D]` holds row
    `ids[...]` of the table. Ids out of `[0, V)` are a runtime error.

    ```mlir
    %e = whale.embedding %table[%ids] : tensor<256x64xf32>, tensor<4x32xi32> -> tensor<4x32x64xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$table, Whale_IndexTensor:$ids);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_CrossEntropyOp : Whale_Op<"cross_entropy", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Softmax cross entropy with integer labels";
  let description = [{
    For logits `[..., C]` and labels `[...]` in `[0, C)`, the loss of each
    sample, `logsumexp(logits) - logits[label]`, shaped like the labels.

    ```mlir
    %l = whale.cross_entropy %logits, %y : tensor<8x100xf32>, tensor<8xi32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$logits, Whale_IndexTensor:$labels);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Whale_ReduceOp<string mnemonic, string what>
    : Whale_Op<mnemonic, [Pure, DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
        DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "The " # what # " over some axes";
  let description = [{
    Reduces `input` by taking the }] # what # [{ over `axes` (sorted, distinct,
    non-negative). With `keepdim` the reduced axes stay with extent 1;
    without, they are dropped. Reducing every axis gives a rank-0 tensor.

    ```mlir
    %s = whale.}] # mnemonic # [{ %x axes = [1] : tensor<8x16xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdim);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_ReduceSumOp : Whale_ReduceOp<"reduce_sum", "sum">;
def Whale_ReduceMeanOp : Whale_ReduceOp<"reduce_mean", "mean">;
def Whale_ReduceMaxOp : Whale_ReduceOp<"reduce_max", "maximum">;

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

def Whale_ReshapeOp : Whale_Op<"reshape", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface,
        ["getBytesRead", "getBytesWritten", "getOutputMemory"]>]> {
  let summary = "The same elements in another shape";
  let description = [{
    Reinterprets the elements in row-major order; element counts must agree.
    A reshape is a view: it moves no bytes and holds no memory of its own.

    ```mlir
    %r = whale.reshape %x : tensor<8x16xf32> -> tensor<8x4x4xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$input);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Whale_CopyOp : Whale_Op<"copy", [SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Whale_CostOpInterface>]> {
  let summary = "A value in memory of its own";
  let description = [{
    The same elements in a new tensor. Tensors are values: an op that the
    runtime runs in place (a collective's sum, clipping) still leaves its
    operand as it was for every other reader. `-whale-copy-written-operands`
    gives such an op a copy where something else reads its operand (or the
    operand is a parameter, an input or a result), so the runtime may write
    it. The result is a fresh allocation, so two copies of one value are
    never merged.

    ```mlir
    %c = whale.copy %g : tensor<16x4xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$input);
  let results = (outs Res<Whale_AnyTensor, "", [MemAlloc]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Whale_TransposeOp : Whale_Op<"transpose", [DeclareOpInterfaceMethods<Whale_ShardingOpInterface>, Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface>]> {
  let summary = "Permutes dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %t = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_SliceOp : Whale_Op<"slice", [Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getBytesRead"]>]> {
  let summary = "A contiguous range along one axis";
  let description = [{
    Keeps indices `[start, end)` of dimension `axis`.

    ```mlir
    %s = whale.slice %x axis = 1, start = 0, end = 8 : tensor<4x24xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$input, I64Attr:$axis, I64Attr:$start,
                       I64Attr:$end);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis `,` `start` `=` $start `,` `end` `=` $end attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_ConcatOp : Whale_Op<"concat", [Pure, DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface>]> {
  let summary = "Joins tensors along one axis";
  let description = [{
    All inputs agree in rank, element type and every extent but `axis`.

    ```mlir
    %c = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<4x24xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

include "dialects/Whale/IR/WhaleGradientOps.td"
include "dialects/Whale/IR/WhaleOptimizerOps.td"
include "dialects/Whale/IR/WhaleCommOps.td"
include "dialects/Whale/IR/WhaleShardOps.td"
include "dialects/Whale/IR/WhaleFusionOps.td"

#endif // WHALE_OPS
