//===- SemaTest.cpp - elaboration into a flat program ---------------------===//

#include "lang/Frontend.h"

#include <gtest/gtest.h>

using namespace whale::lang;

namespace {

std::optional<Program> analyze(const std::string &src, Frontend &fe) {
  if (!fe.parseString(src, "/virtual/t.whl"))
    return std::nullopt;
  return fe.analyze();
}

const char *kTwoLayers = R"(
D = 8
def layer(x: f32[..., N], out: int) -> f32[..., out] {
  w = param([N, out], init = normal(0.1))
  return relu(x @ w)
}
model m(x: f32[B, D]) {
  replicate(2) {
    for i in range(2) { x = layer(x, D) }
  }
  return mean(x)
}
)";

TEST(Sema, UnrollsLoopsAndNamesParametersByCallPath) {
  FrontendOptions opts;
  opts.dims["B"] = 4;
  Frontend fe(opts);
  std::optional<Program> p = analyze(kTwoLayers, fe);
  ASSERT_TRUE(p) << fe.renderDiagnostics();
  ASSERT_EQ(p->models.size(), 1u);
  const ModelGraph &g = p->models[0];
  std::vector<std::string> params;
  for (const Node &n : g.nodes)
    if (n.op == NodeOp::param)
      params.push_back(std::get<std::string>(n.attrs[0].second));
  EXPECT_EQ(params, (std::vector<std::string>{"m/layer_0/w", "m/layer_1/w"}));
  ASSERT_EQ(g.taskgraphs.size(), 1u);
  EXPECT_EQ(g.taskgraphs[0].devices, 2);
  EXPECT_EQ(g.typeOf(g.result).str(), "f32[]");
  EXPECT_TRUE(g.isKnown());
}

TEST(Sema, WithoutABatchShapesStaySymbolic) {
  Frontend fe;
  std::optional<Program> p = analyze(kTwoLayers, fe);
  ASSERT_TRUE(p) << fe.renderDiagnostics();
  const ModelGraph &g = p->models[0];
  EXPECT_EQ(g.inputs[0].type.str(), "f32[B, 8]");
  EXPECT_FALSE(g.isKnown());
}

TEST(Sema, ShapeErrorInADefNamesTheCallSite) {
  Frontend fe;
  std::optional<Program> p = analyze(R"(
def f(x: f32[B, N]) {
  w = param([3, 5])
  return x @ w
}
model m(x: f32[B, 4]) { return mean(f(x)) }
)",
                                     fe);
  EXPECT_FALSE(p);
  ASSERT_EQ(fe.diagnostics().errorCount(), 1u);
  const Diagnostic &d = fe.diagnostics().all()[0];
  EXPECT_EQ(d.loc.line, 4u);
  EXPECT_NE(d.message.find("contracting dimensions are 4 and 3"),
            std::string::npos);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].loc.line, 6u);
}

TEST(Sema, ConfigAndTrainBecomeSettings) {
  Frontend fe;
  std::optional<Program> p = analyze(R"(
config { num_micro_batch = 2
         schedule = "gpipe" }
model m(x: f32[B, 4], y: i32[B]) {
  return mean(cross_entropy(x @ param([4, 3]), y))
}
train m {
  data = synthetic(batch = 8)
  optimizer = sgd(lr = 0.5)
  steps = 3
}
)",
                                     fe);
  ASSERT_TRUE(p) << fe.renderDiagnostics();
  ASSERT_EQ(p->config.size(), 2u);
  EXPECT_EQ(p->config[0].second.i, 2);
  const ModelGraph &g = p->models[0];
  ASSERT_TRUE(g.train);
  EXPECT_EQ(g.inputs[0].type.str(), "f32[8, 4]"); // batch bound by the data
  const Setting *opt = nullptr;
  for (const auto &kv : *g.train)
    if (kv.first == "optimizer")
      opt = &kv.second;
  ASSERT_TRUE(opt);
  EXPECT_EQ(opt->get("kind")->s, "sgd");
  EXPECT_DOUBLE_EQ(opt->get("lr")->f, 0.5);
  EXPECT_DOUBLE_EQ(opt->get("momentum")->f, 0.0);
}

} // namespace
