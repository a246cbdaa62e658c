//===- FusedKernelTest.cpp - fused regions against the ops one by one -----===//
//
// Each case is a small program of elementwise ops. It is compiled twice,
// as written (one runtime call per op) and after -whale-fuse-elementwise
// (one generated kernel per region), run on the same inputs, and the two
// compared element by element: bit for bit where the ops are arithmetic
// (the kernels keep the runtime's order of operations and contract
// nothing), within a few units in the last place where exp, log or tanh
// are polynomials in the kernel and libm's in the runtime.
//
// Cases under amp's storage read and write bf16 operands, and round inside
// the region where a cast does: the kernels and programs must round as the
// runtime's cast does, bit for bit, infinities and NaNs included.
//
// A third time it is fused for GPUs (element-programs) and run on a CPU
// device that, as the CUDA device does, ignores the generated kernel and
// runs each region's element program through the interpreter the CUDA
// kernel is built from (runtime/ops/ElementProgram.h), a point at a time.
//
//===----------------------------------------------------------------------===//

#include "HostElementKernel.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Jit.h"
#include "lowering/Passes.h"
#include "runtime/capi/CApiInternal.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/Nvrtc.h"
#include "runtime/ops/Bf16.h"
#include "runtime/ops/ElementProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Case {
  std::string name;
  std::vector<std::string> inputs; ///< tensor types
  std::string body;                ///< ops over %a0, %a1, ...
  std::vector<std::string> results; ///< "%v : type"
  bool exact = true;                ///< arithmetic only: bit for bit
  bool positive = false;            ///< inputs in (0.5, 1.5) (log, sqrt)
  int regions = 1;                  ///< fused regions expected
  /// Relative tolerance where not exact: a few units in the last place,
  /// more where the runtime adds a sum's terms in another order.
  float tolerance = 1e-6f;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::string program(const Case &c) {
  std::string s = "func.func @f(";
  for (size_t i = 0; i < c.inputs.size(); ++i)
    s += (i ? ", %a" : "%a") + std::to_string(i) + ": " + c.inputs[i];
  s += ") -> (";
  for (size_t i = 0; i < c.results.size(); ++i)
    s += (i ? ", " : "") + c.results[i].substr(c.results[i].find(':') + 2);
  s += ") attributes {whale.model} {\n" + c.body + "\n  return ";
  for (size_t i = 0; i < c.results.size(); ++i)
    s += (i ? ", " : "") + c.results[i].substr(0, c.results[i].find(' '));
  s += " : ";
  for (size_t i = 0; i < c.results.size(); ++i)
    s += (i ? ", " : "") + c.results[i].substr(c.results[i].find(':') + 2);
  return s + "\n}\n";
}

int64_t numel(const whale_rt_tensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < whale_rt_tensor_rank(t); ++d)
    n *= whale_rt_tensor_shape(t)[d];
  return n;
}

std::vector<int64_t> shapeOf(const std::string &type) {
  std::vector<int64_t> shape;
  size_t at = type.find('<') + 1;
  while (at < type.size() && std::isdigit(static_cast<unsigned char>(type[at]))) {
    size_t end = type.find('x', at);
    shape.push_back(std::stoll(type.substr(at, end - at)));
    at = end + 1;
  }
  return shape;
}

using whale::rt::Status;

/// A CPU device that runs fused regions as a GPU does: by their element
/// programs, never their generated kernels.
class ProgramDevice : public whale::rt::CpuDevice {
public:
  /// inParts: sums split as a GPU splits few long ones; generated: each
  /// program runs as its generated kernel (ElementKernelSource.h) built for
  /// the host, as a GPU runs it once NVRTC has compiled it.
  ProgramDevice(bool inParts, bool generated)
      : CpuDevice("programs", {}), inParts(inParts), generated(generated) {}
  Status fused(const FusedCode &code, void **data, int64_t,
               int64_t) override {
    namespace fused = whale::rt::fused;
    fused::Layout layout;
    std::vector<fused::Instr> instrs;
    std::string why;
    if (!fused::parse(code.program, code.programWords, layout, instrs, why))
      return Status::invalid(why);
    if (!fused::fitsOperands(layout, code.elements, code.inputs + code.outputs,
                             why))
      return Status::invalid(why);
    const int count = static_cast<int>(instrs.size());
    if (generated) {
      std::string source;
      if (!fused::elementKernelSource(layout, instrs, source, why))
        return Status::invalid(why);
      whale::testing::HostElementKernel kernel =
          whale::testing::buildHostElementKernel(source, why);
      if (!kernel)
        return Status::invalid(why);
      whale::testing::HostOperands operands{};
      for (int i = 0; i < layout.inputs + layout.outputs; ++i)
        operands.data[i] = data[i];
      kernel(operands, 1, nullptr);
      sources.push_back(std::move(source));
    } else if (!inParts || layout.rowOp != fused::NoRowOp) {
      for (int64_t t = 0; t < layout.threads; ++t)
        fused::runOnHost(layout, instrs.data(), count, data, t);
    } else {
      // As a GPU runs a program whose sums it splits (fused::termParts):
      // each thread's terms in parts, uneven where they do not divide,
      // then the parts added in order.
      const int64_t parts = std::min<int64_t>(layout.terms + 1, 3);
      std::vector<float> partials(layout.outputs * parts * layout.threads);
      for (int64_t at = 0; at < layout.threads * parts; ++at)
        fused::runPart(layout, instrs.data(), count, data, at, parts,
                       partials.data());
      for (int64_t t = 0; t < layout.threads; ++t)
        fused::sumParts(layout, data, t, parts, partials.data());
    }
    ++ran;
    return Status::ok();
  }
  int ran = 0; ///< regions run by their programs
  bool inParts, generated;
  std::vector<std::string> sources; ///< the generated kernels that ran
};

enum class Mode { Unfused, Kernels, Programs, ProgramsInParts, Generated };

/// The results of `c` compiled unfused, fused for the CPU's kernels, or
/// fused for element programs, on inputs made from `c`'s shapes; how many
/// fused regions the compiled module had (and, for programs, how many ran
/// as programs).
std::vector<std::vector<float>>
run(const Case &c, Mode mode, int &regions, int *programsRan = nullptr,
    std::vector<std::string> *sources = nullptr) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
  whale::loadRuntimeLoweringDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(program(c), &ctx);
  EXPECT_TRUE(module) << program(c);
  if (!module)
    return {};
  const bool programs = mode == Mode::Programs ||
                        mode == Mode::ProgramsInParts ||
                        mode == Mode::Generated;
  if (mode != Mode::Unfused) {
    mlir::PassManager pm(&ctx);
    whale::WhaleFuseElementwiseOptions options;
    options.elementPrograms = programs;
    pm.addPass(whale::createWhaleFuseElementwise(options));
    EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  }
  regions = 0;
  module->walk([&](whale::FusedOp) { ++regions; });
  std::string error;
  std::unique_ptr<whale::JitProgram> jit =
      whale::JitProgram::compile(*module, error);
  EXPECT_TRUE(jit) << error;
  if (!jit)
    return {};
  whale::JitProgram::Entry f = jit->lookup("f");

  whale_rt_context *rt = whale_rt_context_create("cpu:0", 2, 0, 5);
  ProgramDevice *programDevice = nullptr;
  if (programs) {
    auto device = std::make_unique<ProgramDevice>(mode == Mode::ProgramsInParts,
                                                  mode == Mode::Generated);
    programDevice = device.get();
    rt->device = std::move(device);
  }
  std::vector<whale_rt_tensor *> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::vector<int64_t> shape = shapeOf(c.inputs[i]);
    const bool bf16 = c.inputs[i].find("bf16") != std::string::npos;
    whale_rt_tensor *t = nullptr;
    EXPECT_EQ(whale_rt_tensor_create(rt, bf16 ? WHALE_RT_BF16 : WHALE_RT_F32,
                                     static_cast<int32_t>(shape.size()),
                                     shape.data(), &t),
              WHALE_RT_OK);
    void *d = whale_rt_tensor_data(t);
    int64_t n = numel(t);
    for (int64_t k = 0; k < n; ++k) {
      float v = 3.0f * std::sin(0.71f * k + 1.3f * i + 0.2f);
      v = c.positive ? 1.0f + v / 6.0f : v;
      if (bf16)
        static_cast<uint16_t *>(d)[k] = whale::rt::bf16Bits(v);
      else
        static_cast<float *>(d)[k] = v;
    }
    inputs.push_back(t);
  }
  std::vector<whale_rt_tensor *> outs(c.results.size(), nullptr);
  EXPECT_EQ(f(rt, inputs.data(), outs.data()), WHALE_RT_OK)
      << whale_rt_last_error(rt);
  std::vector<std::vector<float>> values;
  for (whale_rt_tensor *t : outs) {
    if (whale_rt_tensor_dtype(t) == WHALE_RT_BF16) {
      const uint16_t *d =
          static_cast<const uint16_t *>(whale_rt_tensor_data(t));
      std::vector<float> widened;
      for (int64_t k = 0; k < numel(t); ++k)
        widened.push_back(whale::rt::bf16Value(d[k]));
      values.push_back(std::move(widened));
      continue;
    }
    const float *d = static_cast<const float *>(whale_rt_tensor_data(t));
    values.emplace_back(d, d + numel(t));
  }
  if (programsRan && programDevice)
    *programsRan = programDevice->ran;
  if (sources && programDevice)
    *sources = programDevice->sources;
  whale_rt_context_destroy(rt);
  return values;
}

class FusedAgainstUnfused : public ::testing::TestWithParam<Case> {};

/// Every element of `got` against `want`, as `c` says to compare them.
void expectAgree(const Case &c, const std::vector<std::vector<float>> &got,
                 const std::vector<std::vector<float>> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size());
    for (size_t i = 0; i < want[r].size(); ++i) {
      float w = want[r][i], g = got[r][i];
      uint32_t wb, gb;
      std::memcpy(&wb, &w, sizeof wb);
      std::memcpy(&gb, &g, sizeof gb);
      if (c.exact) // bits: NaNs too
        EXPECT_EQ(gb, wb) << "result " << r << " element " << i << ": " << g
                          << " for " << w;
      else if (std::isnan(w))
        EXPECT_TRUE(std::isnan(g)) << "result " << r << " element " << i;
      else if (std::isinf(w))
        EXPECT_EQ(g, w) << "result " << r << " element " << i;
      else
        EXPECT_NEAR(g, w, c.tolerance * std::max(1.0f, std::fabs(w)))
            << "result " << r << " element " << i;
    }
  }
}

TEST_P(FusedAgainstUnfused, EveryElementAgrees) {
  const Case &c = GetParam();
  int fusedRegions = 0, plainRegions = 0;
  std::vector<std::vector<float>> fused = run(c, Mode::Kernels, fusedRegions);
  std::vector<std::vector<float>> plain =
      run(c, Mode::Unfused, plainRegions);
  EXPECT_EQ(plainRegions, 0);
  EXPECT_EQ(fusedRegions, c.regions);
  expectAgree(c, fused, plain);
}

TEST_P(FusedAgainstUnfused, ElementProgramsAgree) {
  const Case &c = GetParam();
  int programRegions = 0, ran = -1, plainRegions = 0;
  std::vector<std::vector<float>> programs =
      run(c, Mode::Programs, programRegions, &ran);
  std::vector<std::vector<float>> plain =
      run(c, Mode::Unfused, plainRegions);
  // Every case fuses as it does for the CPU.
  EXPECT_EQ(programRegions, c.regions);
  EXPECT_EQ(ran, programRegions) << "every region ran as its program";
  expectAgree(c, programs, plain);
}

/// The same programs as the kernels generated from them
/// (ElementKernelSource.h), built for the host: bit for bit where the
/// interpreter is. Where NVRTC is installed (it needs no GPU) each kernel's
/// source also compiles for a Hopper GPU.
TEST_P(FusedAgainstUnfused, GeneratedKernelsAgree) {
  const Case &c = GetParam();
  int regions = 0, ran = -1, plainRegions = 0;
  std::vector<std::string> sources;
  std::vector<std::vector<float>> generated =
      run(c, Mode::Generated, regions, &ran, &sources);
  std::vector<std::vector<float>> plain = run(c, Mode::Unfused, plainRegions);
  EXPECT_EQ(ran, regions) << "every region ran";
  expectAgree(c, generated, plain);
  std::string why;
  if (whale::rt::cuda::Nvrtc *nvrtc = whale::rt::cuda::Nvrtc::get(why))
    for (const std::string &source : sources) {
      std::vector<char> cubin;
      EXPECT_TRUE(nvrtc->compile(source, "sm_90", cubin, why)) << why << "\n"
                                                               << source;
    }
}

/// The same programs with every thread's terms in parts, as a GPU runs
/// few long sums: the sums add in another order, so within rounding (up
/// to 2e-5 relative on the long, cancelling sums here).
TEST_P(FusedAgainstUnfused, ElementProgramsInPartsAgree) {
  Case c = GetParam();
  int programRegions = 0, ran = -1, plainRegions = 0;
  std::vector<std::vector<float>> programs =
      run(c, Mode::ProgramsInParts, programRegions, &ran);
  std::vector<std::vector<float>> plain = run(c, Mode::Unfused, plainRegions);
  EXPECT_EQ(ran, programRegions) << "every region ran as its program";
  c.exact = false;
  c.tolerance = std::max(c.tolerance, 1e-4f);
  expectAgree(c, programs, plain);
}

const std::string T = "tensor<6x10x33xf32>";

std::string bin(const std::string &op, const std::string &out,
                const std::string &l, const std::string &lt,
                const std::string &r, const std::string &rt,
                const std::string &type = T) {
  return "  " + out + " = whale." + op + " " + l + ", " + r + " : " + lt +
         ", " + rt + " -> " + type + "\n";
}
std::string un(const std::string &op, const std::string &out,
               const std::string &x, const std::string &type = T) {
  return "  " + out + " = whale." + op + " " + x + " : " + type + "\n";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // Each binary op with each way of broadcasting.
  const std::vector<std::pair<std::string, std::string>> others = {
      {"full", T},
      {"row", "tensor<33xf32>"},
      {"middle", "tensor<6x1x33xf32>"},
      {"column", "tensor<6x10x1xf32>"},
      {"scalar", "tensor<f32>"}};
  for (std::string op : {"add", "sub", "mul", "div"})
    for (const auto &[how, type] : others) {
      out.push_back({op + "_" + how + "_right", {T, type},
                     bin(op, "%r", "%a0", T, "%a1", type), {"%r : " + T}});
      out.push_back({op + "_" + how + "_left", {type, T},
                     bin(op, "%r", "%a0", type, "%a1", T), {"%r : " + T}});
    }
  // Both operands broadcast.
  out.push_back({"add_both_broadcast",
                 {"tensor<6x1x33xf32>", "tensor<10x1xf32>"},
                 bin("add", "%r", "%a0", "tensor<6x1x33xf32>", "%a1",
                     "tensor<10x1xf32>"),
                 {"%r : " + T}});
  // The unary functions and their gradients.
  for (std::string f : {"neg", "relu", "gelu", "tanh", "exp", "log", "sqrt"}) {
    bool positive = f == "log" || f == "sqrt";
    bool exact = f == "neg" || f == "relu" || f == "sqrt";
    out.push_back({f, {T}, un(f, "%r", "%a0"), {"%r : " + T}, exact,
                   positive});
    out.push_back({f + "_grad",
                   {T, T},
                   un(f, "%y", "%a0") + "  %r = whale.unary_grad " + f +
                       " %a0, %y, %a1 : " + T + "\n",
                   {"%r : " + T},
                   exact,
                   positive});
  }
  // An op defined by its formula and its gradient (ScalarFormulaOpInterface):
  // the generated kernel, the element program and the region the lowering
  // makes of it alone compute it from the same formula.
  out.push_back({"silu", {T}, un("silu", "%r", "%a0"), {"%r : " + T},
                 /*exact=*/false});
  out.push_back({"silu_grad",
                 {T, T},
                 un("silu", "%y", "%a0") +
                     "  %r = whale.formula_grad \"whale.silu\" %a0, %y, %a1 : " +
                     T + "\n",
                 {"%r : " + T},
                 /*exact=*/false});
  // Gradients of broadcast binary ops that sum nothing (the operand of
  // the output's shape). A difference's left one is the output's gradient
  // itself: forwarded, no region.
  for (std::string op : {"sub", "mul", "div"})
    for (int operand : {0, 1}) {
      std::string small = "tensor<33xf32>";
      std::string lt = operand == 0 ? T : small, rt = operand == 0 ? small : T;
      out.push_back({op + "_grad_" + std::to_string(operand),
                     {lt, rt, T},
                     "  %r = whale.binary_grad " + op +
                         " %a0, %a1, %a2 operand = " +
                         std::to_string(operand) + " : " + lt + ", " + rt +
                         ", " + T + " -> " + T + "\n",
                     {"%r : " + T},
                     /*exact=*/true,
                     /*positive=*/false,
                     /*regions=*/op == "sub" && operand == 0 ? 0 : 1});
    }
  // A chain whose middle value is read outside it too: two results.
  out.push_back({"chain_with_two_results",
                 {T, "tensor<33xf32>", T},
                 bin("add", "%s", "%a0", T, "%a1", "tensor<33xf32>") +
                     un("gelu", "%g", "%s") +
                     "  %d = whale.unary_grad gelu %s, %g, %a2 : " + T + "\n" +
                     bin("mul", "%r", "%d", T, "%a2", T),
                 {"%g : " + T, "%r : " + T},
                 /*exact=*/false});
  // Sums that end a chain. The kernels add in the runtime's order, so
  // the sums agree bit for bit, but where the runtime sums each row on
  // its own first (into a single element: the scalar case).
  const std::vector<std::pair<std::string, std::string>> summed = {
      {"row", "tensor<33xf32>"},
      {"middle", "tensor<6x1x33xf32>"},
      {"column", "tensor<6x10x1xf32>"},
      {"scalar", "tensor<f32>"}};
  for (const auto &[how, small] : summed) {
    // GELU's gradient, and the gradient of the operand it was added to.
    out.push_back({"bias_grad_" + how,
                   {T, small, T},
                   un("gelu", "%y", "%a0") +
                       "  %d = whale.unary_grad gelu %a0, %y, %a2 : " + T +
                       "\n  %s = whale.binary_grad add %a0, %a1, %d "
                       "operand = 1 : " +
                       T + ", " + small + ", " + T + " -> " + small + "\n",
                   {"%d : " + T, "%s : " + small},
                   /*exact=*/false});
    // A product's gradient for its broadcast operand, exactly.
    out.push_back({"mul_grad_sum_" + how,
                   {T, small, T},
                   bin("add", "%g", "%a2", T, "%a0", T) +
                       "  %s = whale.binary_grad mul %a0, %a1, %g "
                       "operand = 1 : " +
                       T + ", " + small + ", " + T + " -> " + small + "\n",
                   {"%s : " + small},
                   /*exact=*/how != "scalar"});
  }
  // Large enough that the threads split it: the rows of the product's
  // gradient among them, the columns of the bias's (each call sums every
  // row of its columns).
  {
    const std::string big = "tensor<64x40x129xf32>", row = "tensor<129xf32>";
    out.push_back({"split_among_threads",
                   {big, row, big},
                   bin("mul", "%g", "%a2", big, "%a0", big, big) +
                       "  %s = whale.binary_grad mul %a0, %a1, %g "
                       "operand = 1 : " +
                       big + ", " + row + ", " + big + " -> " + row + "\n",
                   {"%g : " + big, "%s : " + row}});
    out.push_back({"rows_among_threads",
                   {big, big},
                   bin("mul", "%g", "%a0", big, "%a1", big, big) +
                       "  %r = whale.reduce_sum %g axes = [2] : " + big +
                       " -> tensor<64x40xf32>\n",
                   {"%g : " + big, "%r : tensor<64x40xf32>"}});
  }
  // Both operands' gradients summed, each over other dimensions: no
  // dimension is left to split, one call sums them all.
  out.push_back({"both_operands_summed",
                 {"tensor<6x1x33xf32>", "tensor<10x1xf32>", T},
                 bin("add", "%g", "%a2", T, "%a2", T) +
                     "  %s0 = whale.binary_grad mul %a0, %a1, %g operand = 0 "
                     ": tensor<6x1x33xf32>, tensor<10x1xf32>, " +
                     T + " -> tensor<6x1x33xf32>\n" +
                     "  %s1 = whale.binary_grad mul %a0, %a1, %g operand = 1 "
                     ": tensor<6x1x33xf32>, tensor<10x1xf32>, " +
                     T + " -> tensor<10x1xf32>\n",
                 {"%s0 : tensor<6x1x33xf32>", "%s1 : tensor<10x1xf32>"},
                 /*exact=*/false,
                 /*positive=*/false,
                 /*regions=*/1,
                 // The runtime sums each row of 33 first, then the rows.
                 /*tolerance=*/1e-5f});
  // reduce_sum and reduce_mean over some axes, with and without keepdim.
  out.push_back({"reduce_sum_middle",
                 {T, T},
                 bin("mul", "%p", "%a0", T, "%a1", T) +
                     "  %s = whale.reduce_sum %p axes = [1] : " + T +
                     " -> tensor<6x33xf32>\n",
                 {"%p : " + T, "%s : tensor<6x33xf32>"}});
  out.push_back({"reduce_mean_outer_keepdim",
                 {T},
                 un("exp", "%e", "%a0") +
                     "  %s = whale.reduce_mean %e axes = [0, 2] {keepdim} : " +
                     T + " -> tensor<1x10x1xf32>\n",
                 {"%s : tensor<1x10x1xf32>"},
                 /*exact=*/false});
  out.push_back({"mean_squared_error",
                 {T, T},
                 bin("sub", "%d", "%a0", T, "%a1", T) +
                     bin("mul", "%q", "%d", T, "%d", T) +
                     "  %m = whale.reduce_mean %q axes = [0, 1, 2] : " + T +
                     " -> tensor<f32>\n",
                 {"%m : tensor<f32>"}});
  // x - mean(x): the mean's region, then the difference's.
  out.push_back({"centered",
                 {T},
                 un("exp", "%e", "%a0") +
                     "  %m = whale.reduce_mean %e axes = [2] {keepdim} : " +
                     T + " -> tensor<6x10x1xf32>\n" +
                     bin("sub", "%c", "%e", T, "%m", "tensor<6x10x1xf32>"),
                 {"%c : " + T},
                 /*exact=*/false,
                 /*positive=*/false,
                 /*regions=*/2});
  // Chains that end in an op of each row. The residual sum and its
  // layernorm, both results: the row is read back from the sum's output.
  const std::string D = "tensor<33xf32>";
  auto layernorm = [&](const std::string &out, const std::string &x,
                       const std::string &g, const std::string &b) {
    return "  " + out + " = whale.layernorm " + x + ", " + g + ", " + b +
           " eps = 1.0e-5 : " + T + ", " + D + ", " + D + "\n";
  };
  out.push_back({"residual_layernorm",
                 {T, T, D, D},
                 bin("add", "%s", "%a0", T, "%a1", T) +
                     layernorm("%n", "%s", "%a2", "%a3"),
                 {"%s : " + T, "%n : " + T},
                 /*exact=*/false});
  // Only the layernorm is a result: its input row is computed into the
  // layernorm's output, which it then normalizes in place. A bias row.
  out.push_back({"bias_gelu_layernorm",
                 {T, D, D, D},
                 bin("add", "%s", "%a0", T, "%a1", D) + un("gelu", "%h", "%s") +
                     layernorm("%n", "%h", "%a2", "%a3"),
                 {"%n : " + T},
                 /*exact=*/false});
  // Enough rows that the threads split them.
  {
    const std::string big = "tensor<64x40x129xf32>", row = "tensor<129xf32>";
    out.push_back({"layernorm_rows_among_threads",
                   {big, big, row, row},
                   bin("add", "%s", "%a0", big, "%a1", big, big) +
                       "  %n = whale.layernorm %s, %a2, %a3 eps = 1.0e-5 : " +
                       big + ", " + row + ", " + row + "\n",
                   {"%n : " + big},
                   /*exact=*/false});
  }
  // A Llama block's residual sum and its RMSNorm, both results; and rows
  // enough for the threads, of a width (129) no whole number of the
  // squares' 16 lanes.
  out.push_back({"residual_rmsnorm",
                 {T, T, D},
                 bin("add", "%s", "%a0", T, "%a1", T) +
                     "  %n = whale.rms_norm %s, %a2 eps = 1.0e-5 : " + T +
                     ", " + D + "\n",
                 {"%s : " + T, "%n : " + T},
                 /*exact=*/false});
  {
    const std::string big = "tensor<64x40x129xf32>", row = "tensor<129xf32>";
    out.push_back({"rmsnorm_rows_among_threads",
                   {big, big, row},
                   bin("add", "%s", "%a0", big, "%a1", big, big) +
                       "  %n = whale.rms_norm %s, %a2 eps = 1.0e-5 : " + big +
                       ", " + row + "\n",
                   {"%n : " + big},
                   /*exact=*/false});
  }
  // Positions [10, 33] added to every sample of [6, 10, 33], then the
  // layernorm: row r reads the positions' row r mod 10.
  out.push_back({"positions_layernorm",
                 {T, "tensor<10x33xf32>", D, D},
                 bin("add", "%s", "%a0", T, "%a1", "tensor<10x33xf32>") +
                     layernorm("%n", "%s", "%a2", "%a3"),
                 {"%s : " + T, "%n : " + T},
                 /*exact=*/false});
  // A scaled softmax over the last dimension, the scale one element.
  out.push_back({"scaled_softmax",
                 {T, "tensor<f32>"},
                 bin("mul", "%m", "%a0", T, "%a1", "tensor<f32>") +
                     "  %p = whale.softmax %m axis = -1 : " + T + "\n",
                 {"%p : " + T},
                 /*exact=*/false});
  // An input neither whole, a row nor an element (broadcast along the
  // middle dimension): the softmax stays the runtime's.
  out.push_back({"softmax_of_middle_broadcast",
                 {T, "tensor<6x1x33xf32>"},
                 bin("add", "%m", "%a0", T, "%a1", "tensor<6x1x33xf32>") +
                     "  %p = whale.softmax %m axis = 2 : " + T + "\n",
                 {"%p : " + T},
                 /*exact=*/false});
  // amp's storage: bf16 operands widened as they are loaded, results
  // rounded as they are stored, and a value rounded inside the region (a
  // cast and its widening) rounded in registers, as the runtime's casts
  // round. The lone cast of the last input stays the runtime's.
  {
    const std::string B = "tensor<6x10x33xbf16>";
    auto cast = [](const std::string &out, const std::string &x,
                   const std::string &from, const std::string &to) {
      return "  " + out + " = whale.cast " + x + " : " + from + " to " + to +
             "\n";
    };
    out.push_back(
        {"bf16_bias_relu_round_trip",
         {B, D, B},
         cast("%x", "%a0", B, T) + bin("add", "%s", "%x", T, "%a1", D) +
             un("relu", "%h", "%s") + cast("%hb", "%h", T, B) +
             cast("%hw", "%hb", B, T) + bin("mul", "%m", "%hw", T, "%s", T) +
             cast("%mb", "%m", T, B) + cast("%y", "%a2", B, T),
         {"%s : " + T, "%hb : " + B, "%mb : " + B, "%y : " + T}});
    // Infinities and NaNs through the rounding: x / 0 and 0 / 0.
    out.push_back({"bf16_rounds_infinities_and_nans",
                   {T, T},
                   bin("sub", "%z", "%a1", T, "%a1", T) +
                       bin("div", "%q", "%a0", T, "%z", T) +
                       bin("div", "%n", "%z", T, "%z", T) +
                       bin("add", "%u", "%q", T, "%n", T) +
                       cast("%qb", "%q", T, B) + cast("%ub", "%u", T, B),
                   {"%qb : " + B, "%ub : " + B}});
    // A bias gradient of a bf16 output gradient: widened, summed in fp32.
    out.push_back({"bf16_bias_gradient",
                   {B, B},
                   cast("%g", "%a0", B, T) + cast("%x", "%a1", B, T) +
                       un("exp", "%e", "%x") +
                       bin("mul", "%d", "%g", T, "%e", T) +
                       "  %s = whale.reduce_sum %d axes = [0, 1] : " + T +
                       " -> " + D + "\n" + cast("%db", "%d", T, B),
                   {"%db : " + B, "%s : " + D},
                   /*exact=*/false,
                   /*positive=*/false,
                   /*regions=*/1,
                   /*tolerance=*/1e-5f});
    // The residual stream in bf16 into a layernorm; gamma and beta f32.
    out.push_back({"bf16_residual_layernorm",
                   {B, B, D, D},
                   cast("%x", "%a0", B, T) + cast("%r", "%a1", B, T) +
                       bin("add", "%s", "%x", T, "%r", T) +
                       cast("%sb", "%s", T, B) +
                       layernorm("%n", "%s", "%a2", "%a3"),
                   {"%sb : " + B, "%n : " + T},
                   /*exact=*/false});
    // The layernorm's rows rounded as they are stored (the f32 row kept
    // apart meanwhile), the residual stream f32, the branch's output bf16.
    out.push_back(
        {"residual_layernorm_rounded",
         {T, B, D, D},
         cast("%x", "%a1", B, T) + bin("add", "%s", "%a0", T, "%x", T) +
             layernorm("%n", "%s", "%a2", "%a3") + cast("%nb", "%n", T, B),
         {"%s : " + T, "%nb : " + B},
         /*exact=*/false});
    // A softmax's rows rounded, its input kept in no result.
    out.push_back({"scaled_softmax_rounded",
                   {B, "tensor<f32>"},
                   cast("%x", "%a0", B, T) +
                       bin("mul", "%m", "%x", T, "%a1", "tensor<f32>") +
                       "  %p = whale.softmax %m axis = -1 : " + T + "\n" +
                       cast("%pb", "%p", T, B),
                   {"%pb : " + B},
                   /*exact=*/false});
  }
  // A single element, and a region over a rank-0 result.
  out.push_back({"scalars",
                 {"tensor<f32>", "tensor<f32>"},
                 bin("mul", "%m", "%a0", "tensor<f32>", "%a1", "tensor<f32>",
                     "tensor<f32>") +
                     un("neg", "%r", "%m", "tensor<f32>"),
                 {"%r : tensor<f32>"}});
  return out;
}

// A residual sum's RMSNorm fused sums its squares as the runtime's kernel
// does (16 lanes, then the lanes in order), in the CPU's kernels and the
// host's programs alike: bit for bit the unfused ops, so a Llama trains to
// the same losses fused or not. (A GPU's block sums add in another order.)
TEST(FusedRmsNorm, TheCpuKernelsAndProgramsAreTheUnfusedOpsBitForBit) {
  const std::string D = "tensor<33xf32>";
  Case c{"residual_rmsnorm_exact",
         {T, T, D},
         bin("add", "%s", "%a0", T, "%a1", T) +
             "  %n = whale.rms_norm %s, %a2 eps = 1.0e-5 : " + T + ", " + D +
             "\n",
         {"%s : " + T, "%n : " + T},
         /*exact=*/true};
  int regions = 0, ran = -1, plainRegions = 0;
  std::vector<std::vector<float>> plain = run(c, Mode::Unfused, plainRegions);
  std::vector<std::vector<float>> fused = run(c, Mode::Kernels, regions);
  EXPECT_EQ(regions, 1);
  expectAgree(c, fused, plain);
  std::vector<std::vector<float>> programs =
      run(c, Mode::Programs, regions, &ran);
  EXPECT_EQ(ran, 1);
  expectAgree(c, programs, plain);
}

INSTANTIATE_TEST_SUITE_P(Ops, FusedAgainstUnfused, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

} // namespace
