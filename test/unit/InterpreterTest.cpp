//===- InterpreterTest.cpp - the public embedding API ---------------------===//

#include "whale/Interpreter.h"
#include "whale/whale.h"

#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace {

TEST(Interpreter, LoadsAStringAndGivesEachStage) {
  whale::InterpreterOptions opts;
  opts.dims["B"] = 2;
  whale::Interpreter interp(opts);
  ASSERT_TRUE(interp.loadString(R"(
import nn
model m(x: f32[B, 4]) { return mean(nn.linear(x, 3)) }
)",
                                "embedded.whl"))
      << interp.renderDiagnostics();
  std::optional<std::string> ast = interp.emit(whale::Stage::AST);
  ASSERT_TRUE(ast);
  EXPECT_NE(ast->find("model m"), std::string::npos);
  std::optional<std::string> ir = interp.emit(whale::Stage::Whale);
  ASSERT_TRUE(ir);
  EXPECT_NE(ir->find("whale.param \"m/linear_0/w\""), std::string::npos);
  mlir::ModuleOp module = interp.module();
  ASSERT_TRUE(module);
  EXPECT_FALSE(module.getBody()->empty());
}

TEST(Interpreter, DiagnosticsAreValues) {
  whale::Interpreter interp;
  EXPECT_FALSE(interp.loadString(
      "model m(x: f32[B, 4]) {\n  return mean(y)\n}\n", "bad.whl"));
  std::vector<whale::Diagnostic> diags = interp.diagnostics();
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].severity, whale::Diagnostic::Severity::Error);
  EXPECT_EQ(diags[0].file, "bad.whl");
  EXPECT_EQ(diags[0].line, 2u);
  EXPECT_EQ(diags[0].column, 15u);
  EXPECT_EQ(diags[0].message, "unknown name 'y'");
  EXPECT_NE(interp.renderDiagnostics().find("              ^"),
            std::string::npos);
  EXPECT_FALSE(interp.emit(whale::Stage::Whale));
}

TEST(Interpreter, ConfigKeysAreSetByTypedValues) {
  const std::string script = R"(
import nn
config {
  schedule = "gpipe"
}
model m(x: f32[B, 4]) { return mean(nn.linear(x, 3)) }
)";
  whale::InterpreterOptions opts;
  opts.dims["B"] = 8;
  opts.configs["num_micro_batch"] = 2; // an integer, not its text
  opts.configs["schedule"] = "1f1b";   // replaces the block's value
  opts.configs["recompute"] = true;
  whale::Interpreter interp(opts);
  ASSERT_TRUE(interp.loadString(script, "config.whl"))
      << interp.renderDiagnostics();
  std::optional<std::string> ir = interp.emit(whale::Stage::Whale);
  ASSERT_TRUE(ir);
  EXPECT_NE(ir->find("#whale.settings<num_micro_batch = 2, recompute = true, "
                     "schedule = \"1f1b\">"),
            std::string::npos)
      << *ir;

  // A value of the wrong kind is refused as a config block's would be:
  // the text "2" is a string, not the integer a command line means by it.
  opts.configs["num_micro_batch"] = std::string("2");
  whale::Interpreter wrong(opts);
  EXPECT_FALSE(wrong.loadString(script, "config.whl"));
  EXPECT_NE(wrong.renderDiagnostics().find(
                "--config num_micro_batch=2: 'num_micro_batch' must be an "
                "integer"),
            std::string::npos)
      << wrong.renderDiagnostics();
}

TEST(Interpreter, ACommandLinesConfigTextReadsAsItsValue) {
  EXPECT_EQ(whale::parseConfigValue("8"), whale::ConfigValue(int64_t(8)));
  EXPECT_EQ(whale::parseConfigValue("false"), whale::ConfigValue(false));
  EXPECT_EQ(whale::parseConfigValue("1f1b"),
            whale::ConfigValue(std::string("1f1b")));
  EXPECT_EQ(whale::parseConfigValue(""), whale::ConfigValue(std::string()));
  for (const char *text : {"8", "-3", "true", "after_backward"})
    EXPECT_EQ(whale::configText(whale::parseConfigValue(text)), text);
}

TEST(Interpreter, MissingFileIsAnError) {
  whale::Interpreter interp;
  EXPECT_FALSE(interp.loadFile("/no/such/file.whl"));
  ASSERT_EQ(interp.diagnostics().size(), 1u);
  EXPECT_NE(interp.diagnostics()[0].message.find("cannot read"),
            std::string::npos);
}

TEST(Interpreter, TheExamplesCompile) {
  for (const char *name : {"mlp", "gpt", "classify_100k"}) {
    whale::Interpreter interp;
    ASSERT_TRUE(interp.loadFile(std::string(WHALE_SOURCE_DIR) + "/examples/" +
                                name + ".whl"))
        << interp.renderDiagnostics();
    EXPECT_TRUE(interp.module()) << name << ": " << interp.renderDiagnostics();
  }
}

} // namespace

namespace {

/// Loads, emits and reads diagnostics through `w`, alternating a good and
/// a bad script, `rounds` times; false when a result is not what the
/// script it came from gives.
bool hammer(whale_interp *w, int rounds) {
  bool ok = true;
  for (int i = 0; i < rounds; ++i) {
    bool good = i % 2 == 0;
    whale_status st = whale_interp_load_string(
        w,
        good ? "model m(x: f32[2, 4]) { return mean(x) }"
             : "model m(x: f32[2, 4]) { return mean(y) }",
        "t.whl");
    // Another thread may have loaded since: only the kinds are checked.
    ok = ok && (st == WHALE_OK || st == WHALE_ERROR_SCRIPT);
    const char *diags = whale_interp_diagnostics(w);
    ok = ok && diags != nullptr;
    if (char *ir = whale_interp_emit(w, "whale")) {
      ok = ok && std::string(ir).find("func.func @m") != std::string::npos;
      whale_string_free(ir);
    }
  }
  return ok;
}

TEST(Interpreter, OneHandleFromTwoThreadsAndTwoHandlesSideBySide) {
  // One handle shared by two threads: the calls take turns (no memory
  // error under ASan, no torn results); two handles run in parallel.
  whale_interp *shared = whale_interp_create();
  bool a = false, b = false;
  std::thread t1([&] { a = hammer(shared, 40); });
  std::thread t2([&] { b = hammer(shared, 40); });
  t1.join();
  t2.join();
  EXPECT_TRUE(a && b);
  whale_interp_destroy(shared);

  whale_interp *one = whale_interp_create(), *two = whale_interp_create();
  std::thread t3([&] { a = hammer(one, 40); });
  std::thread t4([&] { b = hammer(two, 40); });
  t3.join();
  t4.join();
  EXPECT_TRUE(a && b);
  EXPECT_EQ(whale_interp_load_string(one, "model m() { return 1 +", "x.whl"),
            WHALE_ERROR_SCRIPT);
  EXPECT_NE(std::string(whale_interp_diagnostics(one)).find("x.whl:1"),
            std::string::npos);
  whale_interp_destroy(one);
  whale_interp_destroy(two);
}

} // namespace
