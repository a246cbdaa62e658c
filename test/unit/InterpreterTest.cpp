//===- InterpreterTest.cpp - the public embedding API ---------------------===//

#include "whale/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

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
