//===- EquivalenceSupport.h - training a script two ways and comparing -*- C++
//-*-===//
//
// Shared by the equivalence and balance suites: a script (or an edit of
// one) trained on one device and under a cluster, losses and parameters
// compared at fp32's contract (relative 1e-4 after 5 steps).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_EQUIVALENCESUPPORT_H
#define WHALE_TEST_UNIT_EQUIVALENCESUPPORT_H

#include "test/unit/Worst.h"
#include "whale/Train.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

namespace whale::testing {

/// The scripts the equivalence, balance and GPU suites train.
inline const char *const kMlp = "examples/mlp.whl";
inline const char *const kGpt = "examples/gpt.whl";
inline const char *const kCnn = "examples/cnn.whl";
inline const char *const kMoeGpt = "examples/moe_gpt.whl";
inline const char *const kMlpStages = "test/equivalence/mlp_stages.whl";
inline const char *const kMlpSplit = "test/equivalence/mlp_split.whl";
inline const char *const kHybrid = "test/equivalence/classify_hybrid.whl";
inline const char *const kCnnSplit = "test/equivalence/cnn_split.whl";
inline const char *const kSplitStage = "test/equivalence/mlp_split_stage.whl";
inline const char *const kSwiGluSplit = "test/equivalence/swiglu_split.whl";
inline const char *const kLlamaMlpSplit =
    "test/equivalence/llama_mlp_split.whl";
inline const char *const kLlamaBlockSplit =
    "test/equivalence/llama_block_split.whl";

inline std::string source(const char *path) {
  std::ifstream f(std::string(WHALE_SOURCE_DIR) + "/" + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// `text` with `from` replaced by `to` (which must occur).
inline std::string edit(std::string text, const std::string &from,
                        const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

/// Trains `text` for 5 steps on `cluster`, one thread a rank, keeping the
/// parameters; `configure` may change the options first.
inline whale::TrainResult
trainText(const std::string &text, const std::string &name,
          const std::string &cluster,
          const std::function<void(whale::TrainOptions &)> &configure = {}) {
  whale::Interpreter interp;
  EXPECT_TRUE(
      interp.loadString(text, std::string(WHALE_SOURCE_DIR) + "/" + name))
      << interp.renderDiagnostics();
  whale::TrainOptions opts;
  opts.steps = 5;
  opts.threads = 1;
  opts.cluster = cluster;
  opts.keepParameters = true;
  if (configure)
    configure(opts);
  return whale::train(interp, opts);
}

inline double relative(double a, double b) {
  return std::fabs(a - b) / std::max(std::fabs(b), 1e-12);
}

/// Trains `text` on one device and under `cluster`, and compares.
/// `planned`, when given, receives the run under the cluster; `localText`,
/// when given, is what trains on one device instead of `text`;
/// `configure`, when given, changes both runs' options alike.
inline void expectEquivalent(
    const std::string &text, const std::string &name,
    const std::string &cluster, whale::TrainResult *plannedOut = nullptr,
    const std::string *localText = nullptr,
    const std::function<void(whale::TrainOptions &)> &configure = {}) {
  whale::TrainResult local =
      trainText(localText ? *localText : text, name, "", configure);
  whale::TrainResult planned = trainText(text, name, cluster, configure);
  if (plannedOut)
    *plannedOut = planned;
  ASSERT_TRUE(local.ok) << local.error;
  ASSERT_TRUE(planned.ok) << planned.error;
  ASSERT_EQ(planned.losses.size(), local.losses.size());
  for (size_t i = 0; i < local.losses.size(); ++i)
    EXPECT_LT(relative(planned.losses[i], local.losses[i]), 1e-4)
        << "step " << i + 1 << ": " << planned.losses[i] << " vs "
        << local.losses[i];
  ASSERT_EQ(planned.parameters.size(), local.parameters.size());
  double worst = 0;
  for (const auto &[pname, want] : local.parameters) {
    const std::vector<float> &got = planned.parameters[pname];
    ASSERT_EQ(got.size(), want.size()) << pname;
    // Relative to the parameter's scale, so values near zero compare by
    // the size of the tensor they belong to. A tensor that stays below
    // 1e-3 compares absolutely: the attention's key bias has a gradient of
    // zero in exact arithmetic, so Adam moves it by rounding noise alone,
    // differently under any change of summation order.
    double scale = 0, diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = worseOf(scale, std::fabs(double(want[i])));
      diff = worseOf(diff, std::fabs(double(got[i]) - double(want[i])));
    }
    // A tensor Adam moved by noise alone stays far below the size a real
    // gradient moves a parameter by in a step (about the learning rate):
    // under 1e-6 on one device, it must stay under 1e-6 planned too, and
    // its values are otherwise noise to compare.
    if (scale < 1e-6) {
      double got = 0;
      for (float v : planned.parameters[pname])
        got = worseOf(got, std::fabs(double(v)));
      EXPECT_LT(got, 1e-6) << pname << " moved by noise alone on one device";
      continue;
    }
    double rel = diff / std::max(scale, 1e-3);
    worst = worseOf(worst, rel);
    EXPECT_LT(rel, 1e-4) << pname << " (scale " << scale << ")";
  }
  std::printf(
      "%s on %s: 5 losses within %.1e, parameters within %.1e\n", name.c_str(),
      cluster.c_str(),
      [&] {
        double w = 0;
        for (size_t i = 0; i < local.losses.size(); ++i)
          w = std::max(w, relative(planned.losses[i], local.losses[i]));
        return w;
      }(),
      worst);
}

} // namespace whale::testing

#endif
