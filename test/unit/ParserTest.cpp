//===- ParserTest.cpp - trees, recovery and depth limits ------------------===//

#include "lang/Parser.h"

#include "llvm/Support/Casting.h"

#include <gtest/gtest.h>

using namespace whale::lang;
using llvm::dyn_cast;

namespace {

TEST(Parser, PrecedenceOfOperators) {
  DiagnosticEngine diags;
  auto ast = parseFile("X = -a + b * c @ d\n", 0, "t.whl", diags);
  ASSERT_FALSE(diags.hasErrors());
  ASSERT_EQ(ast->decls.size(), 1u);
  auto *c = dyn_cast<ConstDecl>(ast->decls[0].get());
  ASSERT_TRUE(c);
  // (-a) + ((b * c) @ d)
  auto *add = dyn_cast<BinaryExpr>(c->value.get());
  ASSERT_TRUE(add);
  EXPECT_EQ(add->op, '+');
  EXPECT_TRUE(dyn_cast<UnaryExpr>(add->lhs.get()));
  auto *at = dyn_cast<BinaryExpr>(add->rhs.get());
  ASSERT_TRUE(at);
  EXPECT_EQ(at->op, '@');
  auto *mul = dyn_cast<BinaryExpr>(at->lhs.get());
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->op, '*');
}

TEST(Parser, ModelWithBlocksAndLoop) {
  DiagnosticEngine diags;
  auto ast = parseFile(R"(model m(x: f32[B, 4]) {
  default split(2)
  replicate(4) {
    for i in range(1, 3) { x = f(x, k = i) }
  }
  split { y = x }
  return y
}
)",
                       0, "t.whl", diags);
  ASSERT_FALSE(diags.hasErrors()) << diags.all()[0].message;
  auto *m = dyn_cast<ModelDecl>(ast->decls[0].get());
  ASSERT_TRUE(m);
  ASSERT_EQ(m->params.size(), 1u);
  EXPECT_EQ(m->params[0].type.dims[0].name, "B");
  EXPECT_EQ(m->params[0].type.dims[1].value, 4);
  ASSERT_EQ(m->body.size(), 4u);
  auto *d = dyn_cast<DefaultStmt>(m->body[0].get());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->strategy, StrategyKind::Split);
  auto *r = dyn_cast<TaskGraphStmt>(m->body[1].get());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->strategy, StrategyKind::Replicate);
  ASSERT_TRUE(r->count);
  auto *loop = dyn_cast<ForStmt>(r->body[0].get());
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->rangeArgs.size(), 2u);
  auto *s = dyn_cast<TaskGraphStmt>(m->body[2].get());
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->count); // every device
}

TEST(Parser, RecoversAndReportsSeveralErrors) {
  DiagnosticEngine diags;
  auto ast = parseFile(R"(def f(x: f32[N]) {
  a = x +
  b = )
  return x
}
model m(x: f32[B]) { return f(x) }
)",
                       0, "t.whl", diags);
  EXPECT_EQ(diags.errorCount(), 2u);
  // The model after the broken def still parses.
  bool sawModel = false;
  for (const DeclPtr &d : ast->decls)
    sawModel |= llvm::isa<ModelDecl>(d.get());
  EXPECT_TRUE(sawModel);
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  DiagnosticEngine diags;
  std::string deep(100000, '(');
  parseFile("X = " + deep, 0, "t.whl", diags);
  ASSERT_TRUE(diags.hasErrors());
  EXPECT_NE(diags.all()[0].message.find("nesting is too deep"),
            std::string::npos);

  DiagnosticEngine diags2;
  std::string chain = "X = a";
  for (int i = 0; i < 100000; ++i)
    chain += " + a";
  parseFile(chain, 0, "t.whl", diags2);
  ASSERT_TRUE(diags2.hasErrors());
}

} // namespace
