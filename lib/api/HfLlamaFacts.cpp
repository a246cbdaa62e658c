//===- HfLlamaFacts.cpp - what a script's Llama says beyond its weights ---===//

#include "lib/api/HfLlamaFacts.h"

#include "dialects/Whale/IR/WhaleOps.h"

namespace whale {

LlamaOpFacts llamaOpFacts(mlir::func::FuncOp fn) {
  LlamaOpFacts f;
  fn.walk([&](mlir::Operation *op) {
    if (auto a = mlir::dyn_cast<AttentionOp>(op)) {
      // The heads' axis: H of [..., T, H, E], or the one before T.
      const int64_t axis =
          a.getQuery().getType().getRank() - (a.getSequenceMajor() ? 2 : 3);
      if (axis >= 0)
        f.heads.insert({a.getQuery().getType().getDimSize(axis),
                        a.getKey().getType().getDimSize(axis)});
    } else if (auto r = mlir::dyn_cast<RopeOp>(op)) {
      f.thetas.insert(r.getTheta().convertToDouble());
      std::optional<llvm::ArrayRef<double>> s = r.getScaling();
      f.scalings.insert(s ? std::vector<double>(s->begin(), s->end())
                          : std::vector<double>());
    } else if (auto n = mlir::dyn_cast<RmsNormOp>(op)) {
      f.eps.insert(n.getEps().convertToDouble());
    }
  });
  return f;
}

void transposeInto(const float *in, int64_t rows, int64_t cols, float *out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[c * rows + r] = in[r * cols + c];
}

} // namespace whale
