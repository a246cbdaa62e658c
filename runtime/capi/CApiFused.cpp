//===- CApiFused.cpp - the C ABI's generated kernels ----------------------===//

#include "runtime/capi/CApiInternal.h"
#include "runtime/ops/ElementProgram.h"

#include <vector>

using namespace whale::rt;
using namespace whale::rt::capi;

extern "C" {

whale_rt_status whale_rt_fused(whale_rt_context *ctx, const char *name,
                               void (*kernel)(void **, int64_t, int64_t),
                               const int64_t *program, int64_t program_words,
                               int32_t num_inputs, whale_rt_tensor **inputs,
                               int32_t num_outputs, whale_rt_tensor **outputs,
                               int64_t rows, int64_t row_elements) {
  return traced(
      ctx, name ? name : "fused", outputs, num_outputs > 0 ? num_outputs : 0,
      [&]() -> whale_rt_status {
        if ((!kernel && !program) || (program && program_words < 1) ||
            num_inputs < 0 || num_outputs < 1 || rows < 0 ||
            row_elements < 1 || (num_inputs > 0 && !inputs) || !outputs)
          return ctx->invalid("fused: no kernel or program, or no tensors to "
                              "run it on");
        const int64_t elements = rows * row_elements;
        // Which operands are stored in bf16 (amp's storage): the program
        // says, and the generated kernel was built for the same types; a
        // region without a program takes f32 only.
        // Only the operands' records are read here, on every call (the
        // device that runs the program reads it whole, once).
        fused::Layout layout;
        if (program) {
          std::vector<fused::Instr> unread;
          std::string why;
          if (!fused::parse(program, program_words, layout, unread, why,
                            /*operandsOnly=*/true))
            return ctx->invalid("fused: " + why);
          if (layout.inputs != num_inputs || layout.outputs != num_outputs)
            return ctx->invalid("fused: an element program for " +
                                std::to_string(layout.inputs) + " inputs and " +
                                std::to_string(layout.outputs) +
                                " results was given " +
                                std::to_string(num_inputs) + " and " +
                                std::to_string(num_outputs));
        }
        // The addresses on the stack for the few operands a region has; a
        // call is on the step's path, once per region per step.
        void *few[16];
        int64_t fewSizes[16];
        std::vector<void *> many;
        std::vector<int64_t> manySizes;
        const int32_t total = num_inputs + num_outputs;
        if (total > 16) {
          many.resize(total);
          manySizes.resize(total);
        }
        void **data = total > 16 ? many.data() : few;
        int64_t *sizes = total > 16 ? manySizes.data() : fewSizes;
        for (int32_t i = 0; i < num_inputs + num_outputs; ++i) {
          bool output = i >= num_inputs;
          whale_rt_tensor *t = output ? outputs[i - num_inputs] : inputs[i];
          const DType want = layout.bf16[i] ? DType::BF16 : DType::F32;
          if (!t || t->tensor.dtype() != want)
            return ctx->invalid(
                "fused: " + std::string(output ? "output " : "input ") +
                std::to_string(output ? i - num_inputs : i) + " is not " +
                (want == DType::BF16 ? "a bf16" : "an f32") + " tensor");
          // A sum ending the region's chain is smaller than the region.
          int64_t n = t->tensor.numel();
          if (n > elements || (output && n < 1))
            return ctx->invalid(
                "fused: " + std::string(output ? "output " : "input ") +
                std::to_string(output ? i - num_inputs : i) + " has " +
                std::to_string(n) + " elements for a region of " +
                std::to_string(elements));
          sizes[i] = n;
          data[i] = t->tensor.raw();
        }
        Device::FusedCode code;
        code.kernel = kernel;
        code.program = program;
        code.programWords = program ? program_words : 0;
        code.inputs = num_inputs;
        code.outputs = num_outputs;
        code.elements = sizes;
        return ran(ctx, ctx->device->fused(code, data, rows, row_elements));
      });
}

} // extern "C"
