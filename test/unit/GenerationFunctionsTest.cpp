//===- GenerationFunctionsTest.cpp - the decoding step against the window -===//
//
// A Llama's decoding step over its key/value caches gives, position after
// position, the logits the model run whole on the window gives at that
// position: the transformers fixtures' models (grouped, multi-query,
// Llama 3.1's rope scaling) with their large weights, each text of the
// batch stepped on its own. A model that mixes positions otherwise has no step,
// and the refusal names the op.
//
//===----------------------------------------------------------------------===//

#include "lib/compile/GenerationFunctions.h"
#include "RuntimeFixture.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Jit.h"
#include "lib/compile/StageSignature.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "whale/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using whale::testing::TestRuntime;

const std::string kFixtures =
    std::string(WHALE_SOURCE_DIR) + "/test/transformers/";

struct Generation {
  whale::Interpreter interp;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp logits;
  std::string model;
  whale::DecodeFunction decode;
  std::string refusal;

  Generation(const std::string &script,
             std::map<std::string, std::string> defines = {})
      : interp([&] {
          whale::InterpreterOptions o;
          o.defines = std::move(defines);
          return o;
        }()) {
    const bool loaded = script.find("model ") != std::string::npos
                            ? interp.loadString(script, "inline.whl")
                            : interp.loadFile(script);
    EXPECT_TRUE(loaded) << interp.renderDiagnostics();
    if (!loaded)
      return;
    // Attention fused, as whale sample reads the model.
    module = whale::hostForward(interp);
    std::string error;
    mlir::func::FuncOp model;
    module->walk([&](mlir::func::FuncOp f) {
      if (!model && f->hasAttr("whale.model"))
        model = f;
    });
    this->model = model.getName().str();
    logits = whale::addLogitsFunction(model, error);
    EXPECT_TRUE(logits) << error;
    if (logits)
      refusal = whale::addDecodeFunction(logits, decode);
  }
};

/// The largest difference between the decoding step's logits and the
/// whole window's, over every position and row, relative to the largest
/// logit.
double stepAgainstWindow(Generation &g, const std::string &weights,
                         float largestAtLeast = 1.0f) {
  EXPECT_TRUE(g.decode.fn) << g.refusal;
  if (!g.decode.fn)
    return 1;
  std::vector<whale::Parameter> params;
  g.logits.walk([&](whale::ParamOp p) {
    params.push_back(
        {p.getName().str(), std::vector<int64_t>(p.getType().getShape())});
  });
  std::string name = g.logits.getName().str();
  std::string decodeName = g.decode.fn.getName().str();
  std::string error;
  std::unique_ptr<whale::JitProgram> program =
      whale::JitProgram::compile(*g.module, error);
  EXPECT_TRUE(program) << error;
  if (!program)
    return 1;
  TestRuntime rt;
  int64_t step = 0;
  // The fixture's weights, or (none named) the parameters as initialized.
  if (!weights.empty()) {
    EXPECT_EQ(whale::loadCheckpoint(rt.ctx, weights, g.model, params, 0, step),
              "");
  }
  auto tokensType =
      mlir::cast<mlir::RankedTensorType>(g.logits.getArgumentTypes()[0]);
  const int64_t batch = tokensType.getShape()[0],
                window = tokensType.getShape()[1];
  whale_rt_tensor *tokens = rt.make(WHALE_RT_I32, {batch, window});
  whale_rt_tensor *targets = rt.make(WHALE_RT_I32, {batch, window});
  for (int64_t i = 0; i < batch * window; ++i) {
    TestRuntime::data<int32_t>(tokens)[i] =
        static_cast<int32_t>((i * 37 + 11) % 256);
    TestRuntime::data<int32_t>(targets)[i] = 0;
  }
  whale_rt_tensor *in[] = {tokens, targets};
  whale_rt_tensor *whole = nullptr;
  EXPECT_EQ(program->lookup(name)(rt.ctx, in, &whole), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  const int64_t vocab = whale_rt_tensor_shape(whole)[2];
  const float *expected = TestRuntime::data<float>(whole);
  float largest = 0;
  for (int64_t i = 0; i < batch * window * vocab; ++i)
    largest = std::max(largest, std::fabs(expected[i]));

  // Each text of the batch through the step on its own, from empty caches.
  whale::JitProgram::Entry decode = program->lookup(decodeName);
  double worst = 0;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<whale_rt_tensor *> args{rt.make(WHALE_RT_I32, {1, 1}),
                                        rt.make(WHALE_RT_I32, {})};
    for (const std::vector<int64_t> &c : g.decode.caches)
      args.push_back(rt.make(WHALE_RT_F32, c));
    std::vector<whale_rt_tensor *> out(1 + g.decode.caches.size());
    for (int64_t p = 0; p < window; ++p) {
      *TestRuntime::data<int32_t>(args[0]) =
          TestRuntime::data<int32_t>(tokens)[b * window + p];
      *TestRuntime::data<int32_t>(args[1]) = static_cast<int32_t>(p);
      EXPECT_EQ(decode(rt.ctx, args.data(), out.data()), WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);
      const float *got = TestRuntime::data<float>(out[0]);
      for (int64_t v = 0; v < vocab; ++v)
        worst = std::max<double>(
            worst, std::fabs(got[v] - expected[(b * window + p) * vocab + v]));
      whale_rt_tensor_release(rt.ctx, out[0]);
      for (size_t i = 1; i < out.size(); ++i) {
        whale_rt_tensor_release(rt.ctx, args[1 + i]);
        args[1 + i] = out[i];
      }
    }
  }
  EXPECT_GT(largest, largestAtLeast) << "logits large enough to compare";
  return worst / largest;
}

// f32 sums of at most 64 terms in another order (the step's attention sums
// its scores and values in its own loop, the window's kernel in blocks),
// through 2 layers: each logit within a few hundred units of roundoff
// (6e-8) of its largest; 1e-5 bounds that with room and is far below what a
// wrong position or a wrong key head gives (order 1).
constexpr double kStepTolerance = 1e-5;

TEST(GenerationFunctions, GroupedQueryLlamaStepsAsItsWindow) {
  Generation g(kFixtures + "tiny_llama.whl");
  EXPECT_EQ(g.decode.caches.size(), 4u); // two layers, a key and a value
  EXPECT_EQ(g.decode.window, 16);
  // One text's: [1, key heads, window, head width].
  EXPECT_EQ(g.decode.caches[0], (std::vector<int64_t>{1, 2, 16, 8}));
  EXPECT_LT(stepAgainstWindow(g, kFixtures + "fixture/whale.safetensors"),
            kStepTolerance);
}

TEST(GenerationFunctions, MultiQueryLlamaStepsAsItsWindow) {
  Generation g(kFixtures + "tiny_llama.whl", {{"D", "48"},
                                              {"KV_HEADS", "1"},
                                              {"HIDDEN", "96"},
                                              {"THETA", "500000.0"}});
  EXPECT_LT(stepAgainstWindow(g, kFixtures + "fixture-mqa/whale.safetensors"),
            kStepTolerance);
}

TEST(GenerationFunctions, Llama31RopeScalingStepsAsItsWindow) {
  Generation g(kFixtures + "tiny_llama31.whl");
  EXPECT_LT(
      stepAgainstWindow(g, kFixtures + "fixture-llama31/whale.safetensors"),
      kStepTolerance);
}

// GPT's learned position table: the step reads its row at the position
// (an embedding lookup); its attention, fused from nn.attention's chain,
// is sequence-major. Its weights as initialized: logits up to about 1
// (measured 7.7e-7 apart at most).
TEST(GenerationFunctions, GptStepsAsItsWindow) {
  Generation g(std::string(WHALE_SOURCE_DIR) + "/examples/gpt.whl");
  EXPECT_EQ(g.refusal, "");
  EXPECT_EQ(g.decode.caches.size(), 8u); // four blocks
  EXPECT_LT(stepAgainstWindow(g, "", /*largestAtLeast=*/0.5f), kStepTolerance);
}

// A model that mixes positions otherwise has no step, and the refusal
// names the op: here an attention that is not causal.
TEST(GenerationFunctions, AnAttentionThatIsNotCausalHasNoStep) {
  Generation g(R"(import nn
model m(tokens: i32[2, 8], targets: i32[2, 8]) {
  x = nn.embed(tokens, 256, 16)
  q = nn.split_heads(x, 2)
  a = nn.merge_heads(scaled_dot_product_attention(q, q, q))
  return mean(cross_entropy(nn.proj(x + a, 256), targets))
}
)");
  EXPECT_FALSE(g.decode.fn);
  EXPECT_NE(g.refusal.find("'whale.attention' at"), std::string::npos)
      << g.refusal;
  EXPECT_NE(g.refusal.find("is not a causal attention"), std::string::npos)
      << g.refusal;
  EXPECT_NE(g.refusal.find("inline.whl"), std::string::npos) << g.refusal;
  // The module keeps no half-built step.
  EXPECT_FALSE(g.module->lookupSymbol("m_logits_decode"));
}

} // namespace
