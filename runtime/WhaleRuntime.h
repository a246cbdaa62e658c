/*===- WhaleRuntime.h - the runtime's C ABI ------------------------*- C -*-===*
 *
 * What lowered Whale programs call. Every function takes an explicit context
 * (a device, its parameters, the last error) and returns a status; a failing
 * call leaves a message, with the numbers involved, in
 * whale_rt_last_error(ctx). No hidden globals: two contexts share nothing,
 * so ranks of one process each have their own.
 *
 * Tensors are handles owned by their context. Operation outputs are created
 * by the caller with the shape the compiler computed; every entry point
 * checks shapes and dtypes anyway, since this is a boundary.
 *
 *===----------------------------------------------------------------------===*/

#ifndef WHALE_RUNTIME_WHALERUNTIME_H
#define WHALE_RUNTIME_WHALERUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct whale_rt_context whale_rt_context;
typedef struct whale_rt_tensor whale_rt_tensor;

typedef int32_t whale_rt_status;
enum {
  WHALE_RT_OK = 0,
  WHALE_RT_OUT_OF_MEMORY = 1,
  WHALE_RT_INVALID_ARGUMENT = 2,
  WHALE_RT_INTERNAL = 3,
};

/* WHALE_RT_BF16 is storage only (amp): 16-bit words, fp32's exponent and the
 * top 7 bits of its mantissa. */
enum {
  WHALE_RT_F32 = 0,
  WHALE_RT_F64 = 1,
  WHALE_RT_I32 = 2,
  WHALE_RT_I64 = 3,
  WHALE_RT_BF16 = 4,
};
enum { WHALE_RT_ADD = 0, WHALE_RT_SUB = 1, WHALE_RT_MUL = 2, WHALE_RT_DIV = 3 };
enum {
  WHALE_RT_NEG = 0,
  WHALE_RT_RELU = 1,
  WHALE_RT_GELU = 2,
  WHALE_RT_TANH = 3,
  WHALE_RT_EXP = 4,
  WHALE_RT_LOG = 5,
  WHALE_RT_SQRT = 6,
};
enum { WHALE_RT_SUM = 0, WHALE_RT_MEAN = 1, WHALE_RT_MAX = 2 };
/* Initializers, numbered as the whale dialect's InitKind. */
enum {
  WHALE_RT_INIT_ZEROS = 0,
  WHALE_RT_INIT_ONES = 1,
  WHALE_RT_INIT_NORMAL = 2,
  WHALE_RT_INIT_UNIFORM = 3,
  WHALE_RT_INIT_XAVIER = 4,
};

/* A CPU device with `threads` workers and a memory limit in bytes (0: none).
 * `seed` drives parameter initialization. NULL when out of memory. */
whale_rt_context *whale_rt_context_create(const char *device_name,
                                          int32_t threads, int64_t memory_limit,
                                          uint64_t seed);
/* A context on any device: "cpu:N" (threads and the limit as above) or
 * "cuda:N", GPU N through the CUDA plugin, which loads only where an NVIDIA
 * driver is. On failure *out is NULL and `error` (error_size bytes, may be
 * NULL) says why: no driver, no plugin in this build, no such GPU. */
whale_rt_status whale_rt_context_open(const char *device_name, int32_t threads,
                                      int64_t memory_limit, uint64_t seed,
                                      whale_rt_context **out, char *error,
                                      int64_t error_size);
/* WHALE_RT_OK when `device_name` can be opened on this machine; otherwise
 * why not, in `error`. Opens nothing. */
whale_rt_status whale_rt_device_check(const char *device_name, char *error,
                                      int64_t error_size);
void whale_rt_context_destroy(whale_rt_context *ctx);
/* Which of OpenBLAS's kernels run CPU GEMMs, chosen now if no GEMM ran yet:
 * "SkylakeX kernels", say, and in parentheses why, where Whale chose them
 * (runtime/cpu/BlasKernels.h) or OPENBLAS_CORETYPE named them. */
const char *whale_rt_blas_kernels(void);
/* How CPU devices run convolutions: "oneDNN 2.6.3 (avx512)", or the
 * composed path (im2col and GEMM) and why (runtime/cpu/DnnlConv.h). */
const char *whale_rt_conv_kernels(void);
const char *whale_rt_last_error(const whale_rt_context *ctx);
int64_t whale_rt_memory_in_use(const whale_rt_context *ctx);
int64_t whale_rt_memory_peak(const whale_rt_context *ctx);

whale_rt_status whale_rt_tensor_create(whale_rt_context *ctx, int32_t dtype,
                                       int32_t rank, const int64_t *shape,
                                       whale_rt_tensor **out);
/* A tensor over the caller's memory, read and written in place (zero-copy):
 * `data` must stay alive until the tensor is released, be aligned to
 * WHALE_RT_ALIGNMENT bytes (as the runtime's own buffers are), and the
 * context's device must address host memory (not a GPU). */
enum { WHALE_RT_ALIGNMENT = 64 };
whale_rt_status whale_rt_tensor_wrap(whale_rt_context *ctx, int32_t dtype,
                                     int32_t rank, const int64_t *shape,
                                     void *data, whale_rt_tensor **out);
void whale_rt_tensor_release(whale_rt_context *ctx, whale_rt_tensor *t);
/* The tensor's memory for host code, or NULL when it lives where the host
 * cannot address it (a GPU): use whale_rt_tensor_read / _write there. */
void *whale_rt_tensor_data(whale_rt_tensor *t);
/* Copies the tensor's first `bytes` bytes to host memory, or host memory
 * into them, on any device. */
whale_rt_status whale_rt_tensor_read(whale_rt_context *ctx, whale_rt_tensor *t,
                                     void *dst, int64_t bytes);
whale_rt_status whale_rt_tensor_write(whale_rt_context *ctx, whale_rt_tensor *t,
                                      const void *src, int64_t bytes);
int32_t whale_rt_tensor_rank(const whale_rt_tensor *t);
const int64_t *whale_rt_tensor_shape(const whale_rt_tensor *t);
int32_t whale_rt_tensor_dtype(const whale_rt_tensor *t);

/* The parameter `name`: created and initialized on first use (from the
 * context's seed and the name, so any rank makes the same values), then
 * the same tensor every time. A later call with another shape or dtype is
 * an error. f32 only for now. */
whale_rt_status whale_rt_param(whale_rt_context *ctx, const char *name,
                               int32_t init_kind, const double *init_args,
                               int32_t num_args, int32_t rank,
                               const int64_t *shape, whale_rt_tensor **out);
whale_rt_status whale_rt_fill(whale_rt_context *ctx, whale_rt_tensor *t,
                              double value);
/* The parameters a context has made, in name order: their count, and the
 * name and tensor of the `index`-th (NULL past the end). For a driver to
 * check what a compiled program made against the plan that describes it. */
int64_t whale_rt_param_count(const whale_rt_context *ctx);
const char *whale_rt_param_name(const whale_rt_context *ctx, int64_t index,
                                whale_rt_tensor **tensor);

/* The optimizer state tensors the context holds for parameter `param`: 0
 * before its first update (or where another rank keeps its state), 1 for
 * SGD with momentum, 2 for Adam. For a driver to check a compiled plan's
 * manifest against what its programs keep. */
int32_t whale_rt_optimizer_state_count(const whale_rt_context *ctx,
                                       whale_rt_tensor *param);

/* Forward operations on f32 tensors (ids and labels i32 or i64). */
whale_rt_status whale_rt_matmul(whale_rt_context *ctx, whale_rt_tensor *a,
                                whale_rt_tensor *b, whale_rt_tensor *out,
                                int32_t transpose_a, int32_t transpose_b);
whale_rt_status whale_rt_binary(whale_rt_context *ctx, int32_t op,
                                whale_rt_tensor *a, whale_rt_tensor *b,
                                whale_rt_tensor *out);
/* A linear layer: out = x w + bias (x [..., M, K], w [K, N] or with
 * transpose_w [N, K], bias [N]), then the tanh GELU when gelu is nonzero,
 * with the sum before the GELU in pre where pre is not NULL (only with
 * gelu). All f32, or under amp's storage x and w bf16 (bias f32), the sum
 * kept in fp32, out f32 or rounded once to bf16 and pre f32 or out's type. A
 * GPU applies bias and GELU in the GEMM's epilogue. */
whale_rt_status whale_rt_linear(whale_rt_context *ctx, whale_rt_tensor *x,
                                whale_rt_tensor *w, whale_rt_tensor *bias,
                                whale_rt_tensor *out, whale_rt_tensor *pre,
                                int32_t transpose_w, int32_t gelu);
/* A linear layer's weight and bias gradients from dout, its output's
 * gradient: dw (w's shape, [K, N] or with transpose_w [N, K]) is the product
 * of x [..., M, K] and dout [..., M, N] over every row, dbias [N] is dout
 * summed over every row. All f32, or x and dout bf16 (dw and dbias f32,
 * dbias the sum of the bf16 dout). A GPU sums dbias in the GEMM's
 * epilogue. */
whale_rt_status
whale_rt_linear_weight_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                            whale_rt_tensor *dout, whale_rt_tensor *dw,
                            whale_rt_tensor *dbias, int32_t transpose_w);
/* The gradient through gelu(pre) w (pre [..., M, K], w [K, N] or with
 * transpose_w [N, K]) from dout [..., M, N]: dpre = gelu'(pre) (dout w^T),
 * the tanh GELU's derivative. All f32, or w and dout bf16 with pre and dpre
 * of one type, f32 or bf16 (dpre rounded once). A GPU applies the
 * derivative in the GEMM's epilogue. */
whale_rt_status
whale_rt_gelu_matmul_grad(whale_rt_context *ctx, whale_rt_tensor *pre,
                          whale_rt_tensor *w, whale_rt_tensor *dout,
                          whale_rt_tensor *dpre, int32_t transpose_w);
whale_rt_status whale_rt_unary(whale_rt_context *ctx, int32_t op,
                               whale_rt_tensor *x, whale_rt_tensor *out);
whale_rt_status whale_rt_softmax(whale_rt_context *ctx, whale_rt_tensor *x,
                                 int64_t axis, whale_rt_tensor *out);
/* out = x converted between f32 and bf16 (either way; the shapes equal):
 * to bf16 rounds to nearest, ties to even, keeping NaN and infinities; to
 * f32 is exact. */
whale_rt_status whale_rt_cast(whale_rt_context *ctx, whale_rt_tensor *x,
                              whale_rt_tensor *out);
/* x (f32) rounded to bf16 into `rounded` (x's shape), as whale_rt_cast
 * rounds it, and x summed over its leading dimensions into `sum` (f32, x's
 * last dimensions), as whale_rt_binary_grad sums a bias added to every row:
 * the same bits as the two calls, with x read once. */
whale_rt_status whale_rt_round_and_sum(whale_rt_context *ctx,
                                       whale_rt_tensor *x,
                                       whale_rt_tensor *rounded,
                                       whale_rt_tensor *sum);
/* A fused region of elementwise ops (and the sums ending them). On a
 * device whose memory the host addresses, `kernel(data, lo, hi)`, which
 * the compiler generated, computes slices [lo, hi) of the `rows` slices of
 * `row_elements` elements each that make up the region's iteration space,
 * `data` the addresses of the inputs' then the outputs' elements (a sum's
 * output is smaller than the space); it runs over the device's threads,
 * each call on slices of its own. Other devices (GPUs) run the region's
 * element program instead: `program_words` int64 words (layout in
 * runtime/ops/ElementProgram.h); either may be null where the plan's devices
 * never need it. `name` (the region's ops, "fused: add gelu") names it in
 * traces. */
whale_rt_status whale_rt_fused(whale_rt_context *ctx, const char *name,
                               void (*kernel)(void **, int64_t, int64_t),
                               const int64_t *program, int64_t program_words,
                               int32_t num_inputs, whale_rt_tensor **inputs,
                               int32_t num_outputs, whale_rt_tensor **outputs,
                               int64_t rows, int64_t row_elements);
whale_rt_status whale_rt_causal_mask(whale_rt_context *ctx, whale_rt_tensor *x,
                                     whale_rt_tensor *out);
whale_rt_status whale_rt_layernorm(whale_rt_context *ctx, whale_rt_tensor *x,
                                   whale_rt_tensor *gamma,
                                   whale_rt_tensor *beta, double eps,
                                   whale_rt_tensor *out);
/* Rotary position embedding of x [..., T, E] (E even), as Hugging Face
 * transformers' Llama applies it: position t turns the pair (x[i],
 * x[i + E/2]) by t * theta^(-2i/E), the angle computed in f32 as
 * transformers computes it. `scaling`, null or {factor, low_freq_factor,
 * high_freq_factor, original_max_position_embeddings}, rescales the
 * frequencies as Llama 3.1 does. `inverse` turns the other way (the
 * gradient). `position`, null or an i32 scalar p >= 0, puts the first row
 * of T at position p (a key/value cache's decoding step). */
whale_rt_status whale_rt_rope(whale_rt_context *ctx, whale_rt_tensor *x,
                              whale_rt_tensor *position, double theta,
                              const double *scaling, int32_t inverse,
                              whale_rt_tensor *out);
/* Root-mean-square normalization over the last dimension (Llama's RMSNorm):
 * out = x / sqrt(mean(x * x) + eps) * weight, weight [D]. */
whale_rt_status whale_rt_rms_norm(whale_rt_context *ctx, whale_rt_tensor *x,
                                  whale_rt_tensor *weight, double eps,
                                  whale_rt_tensor *out);
/* Convolution of x [N, C, H, W] with w [O, C / groups, KH, KW] into out
 * [N, O, OH, OW]; `geometry` is {strideH, strideW, padH, padW, dilationH,
 * dilationW, groups}. */
whale_rt_status whale_rt_conv2d(whale_rt_context *ctx, whale_rt_tensor *x,
                                whale_rt_tensor *w, const int64_t *geometry,
                                whale_rt_tensor *out);
/* The k largest entries of each last-dimension row of x [..., N] (larger
 * first, the lower position first among equals, NaN above every number):
 * their values (f32 [..., k]) and positions (i32 [..., k]); either output
 * may be NULL. */
whale_rt_status whale_rt_topk(whale_rt_context *ctx, whale_rt_tensor *x,
                              int64_t k, whale_rt_tensor *values,
                              whale_rt_tensor *positions);
/* A mixture of experts' routing (runtime/ops/MoeMath.h): tokens [G, S, D]
 * into slots [E, G * C, D] by their choices `experts` [G, S, k] (i32), each
 * expert taking C per group, first choices first and in token order; back
 * from slots to tokens (each the sum of its kept choices' rows); and the
 * gradient of the gates, each kept choice's dot product of its token's row
 * with its slot's row. `gates` [G, S, k] weigh each choice; NULL weighs
 * one. */
whale_rt_status whale_rt_moe_dispatch(whale_rt_context *ctx,
                                      whale_rt_tensor *tokens,
                                      whale_rt_tensor *experts,
                                      whale_rt_tensor *gates,
                                      whale_rt_tensor *slotted);
whale_rt_status whale_rt_moe_combine(whale_rt_context *ctx,
                                     whale_rt_tensor *slotted,
                                     whale_rt_tensor *experts,
                                     whale_rt_tensor *gates,
                                     whale_rt_tensor *out);
whale_rt_status whale_rt_moe_gate_grad(whale_rt_context *ctx,
                                       whale_rt_tensor *tokens,
                                       whale_rt_tensor *slotted,
                                       whale_rt_tensor *experts,
                                       whale_rt_tensor *dgates);
/* out [..., classes] (f32): a one at each of ids [...] (i32), zeros
 * elsewhere. */
whale_rt_status whale_rt_one_hot(whale_rt_context *ctx, whale_rt_tensor *ids,
                                 int64_t classes, whale_rt_tensor *out);
/* Max or average pooling of every plane of x [..., H, W]; `geometry` is
 * {kernelH, kernelW, strideH, strideW, padH, padW}. An average counts the
 * padding as zeros. */
enum { WHALE_RT_POOL_MAX = 0, WHALE_RT_POOL_AVG = 1 };
whale_rt_status whale_rt_pool2d(whale_rt_context *ctx, int32_t kind,
                                whale_rt_tensor *x, const int64_t *geometry,
                                whale_rt_tensor *out);
whale_rt_status whale_rt_embedding(whale_rt_context *ctx,
                                   whale_rt_tensor *table, whale_rt_tensor *ids,
                                   whale_rt_tensor *out);
whale_rt_status whale_rt_cross_entropy(whale_rt_context *ctx,
                                       whale_rt_tensor *logits,
                                       whale_rt_tensor *labels,
                                       whale_rt_tensor *out);
whale_rt_status whale_rt_reduce(whale_rt_context *ctx, int32_t op,
                                whale_rt_tensor *x, int32_t num_axes,
                                const int64_t *axes, whale_rt_tensor *out);
/* Same elements, new shape (a copy: outputs never alias inputs). */
whale_rt_status whale_rt_reshape(whale_rt_context *ctx, whale_rt_tensor *x,
                                 whale_rt_tensor *out);
/* The same, where nothing reads `x` after: `*out` is a new tensor of
 * `shape` over x's memory, and `x` is left empty (releasing it frees
 * nothing). No copy. */
whale_rt_status whale_rt_reshape_take(whale_rt_context *ctx,
                                      whale_rt_tensor *x, int32_t rank,
                                      const int64_t *shape,
                                      whale_rt_tensor **out);
whale_rt_status whale_rt_transpose(whale_rt_context *ctx, whale_rt_tensor *x,
                                   const int64_t *permutation,
                                   whale_rt_tensor *out);
whale_rt_status whale_rt_slice(whale_rt_context *ctx, whale_rt_tensor *x,
                               int64_t axis, int64_t start, int64_t end,
                               whale_rt_tensor *out);
whale_rt_status whale_rt_concat(whale_rt_context *ctx, int32_t num_inputs,
                                whale_rt_tensor *const *inputs, int64_t axis,
                                whale_rt_tensor *out);

/* Copies x into the larger out by NumPy broadcasting. */
whale_rt_status whale_rt_broadcast(whale_rt_context *ctx, whale_rt_tensor *x,
                                   whale_rt_tensor *out);

/* Gradients. Each writes (overwrites) the gradient of its op's inputs from
 * the gradient of its output; a null gradient output is skipped. Statistics
 * a backward needs (layernorm's mean and rstd, cross entropy's
 * log-sum-exp, max's argmax) are recomputed from the forward inputs. */
whale_rt_status whale_rt_matmul_grad(whale_rt_context *ctx, whale_rt_tensor *a,
                                     whale_rt_tensor *b, whale_rt_tensor *dout,
                                     whale_rt_tensor *da, whale_rt_tensor *db,
                                     int32_t transpose_a, int32_t transpose_b);
whale_rt_status whale_rt_binary_grad(whale_rt_context *ctx, int32_t op,
                                     whale_rt_tensor *a, whale_rt_tensor *b,
                                     whale_rt_tensor *dout, whale_rt_tensor *da,
                                     whale_rt_tensor *db);
/* y is the forward output (tanh, exp and sqrt use it). */
whale_rt_status whale_rt_unary_grad(whale_rt_context *ctx, int32_t op,
                                    whale_rt_tensor *x, whale_rt_tensor *y,
                                    whale_rt_tensor *dy, whale_rt_tensor *dx);
/* Attention over [..., T, E]: out = softmax(q k^T * scale, causally masked
 * under WHALE_RT_ATTENTION_CAUSAL) v, and its gradient from the inputs, the
 * output and dout (the probabilities recomputed, never kept). `form` is an
 * or of the flags below; under WHALE_RT_ATTENTION_SEQUENCE_MAJOR every
 * operand is [..., T, H, E] (heads inside each position, as a linear
 * layer's output reshaped), and no permute is needed around the call.
 * Under amp's storage q, k and v may be bf16 (all three): out is then f32
 * or bf16, rounded once; the gradient takes q, k, v and out bf16 together,
 * dout and the gradients f32. */
#define WHALE_RT_ATTENTION_CAUSAL 1
#define WHALE_RT_ATTENTION_SEQUENCE_MAJOR 2
whale_rt_status whale_rt_attention(whale_rt_context *ctx, whale_rt_tensor *q,
                                   whale_rt_tensor *k, whale_rt_tensor *v,
                                   double scale, int32_t form,
                                   whale_rt_tensor *out);
/* A decoding step's attention over a key/value cache: k and v
 * [B, Hk, N, E] are the rows of positions p .. p + N - 1 (`position`, an
 * i32 scalar, is p); key_cache and value_cache [B, Hk, W, E] hold the rows
 * before p. new_key_cache and new_value_cache are the caches with rows
 * p .. p + N - 1 replaced (they may be the caches themselves: written in
 * place), and out [B, H, N, E] is causal attention's for those N queries
 * (query row i attends to rows 0 .. p + i); Hk divides H. p + N <= W. */
whale_rt_status whale_rt_kv_attention(whale_rt_context *ctx, whale_rt_tensor *q,
                                      whale_rt_tensor *k, whale_rt_tensor *v,
                                      whale_rt_tensor *key_cache,
                                      whale_rt_tensor *value_cache,
                                      whale_rt_tensor *position, double scale,
                                      whale_rt_tensor *out,
                                      whale_rt_tensor *new_key_cache,
                                      whale_rt_tensor *new_value_cache);
whale_rt_status
whale_rt_attention_grad(whale_rt_context *ctx, whale_rt_tensor *q,
                        whale_rt_tensor *k, whale_rt_tensor *v,
                        whale_rt_tensor *out, whale_rt_tensor *dout,
                        double scale, int32_t form, whale_rt_tensor *dq,
                        whale_rt_tensor *dk, whale_rt_tensor *dv);
whale_rt_status whale_rt_softmax_grad(whale_rt_context *ctx, whale_rt_tensor *y,
                                      whale_rt_tensor *dy, int64_t axis,
                                      whale_rt_tensor *dx);
whale_rt_status whale_rt_causal_mask_grad(whale_rt_context *ctx,
                                          whale_rt_tensor *dy,
                                          whale_rt_tensor *dx);
whale_rt_status
whale_rt_layernorm_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                        whale_rt_tensor *gamma, double eps, whale_rt_tensor *dy,
                        whale_rt_tensor *dx, whale_rt_tensor *dgamma,
                        whale_rt_tensor *dbeta);
/* The same with dx = residual + the input's gradient (the gradient of a
 * residual sum the normalized value also fed, added in the same pass). */
whale_rt_status whale_rt_layernorm_grad_residual(
    whale_rt_context *ctx, whale_rt_tensor *x, whale_rt_tensor *gamma,
    double eps, whale_rt_tensor *dy, whale_rt_tensor *residual,
    whale_rt_tensor *dx, whale_rt_tensor *dgamma, whale_rt_tensor *dbeta);
/* RMS normalization's gradients of x and of weight; each row's statistic
 * is recomputed from x. The _residual form: dx = residual + the input's
 * gradient, in the same pass (as layernorm_grad_residual). */
whale_rt_status whale_rt_rms_norm_grad(whale_rt_context *ctx,
                                       whale_rt_tensor *x,
                                       whale_rt_tensor *weight, double eps,
                                       whale_rt_tensor *dy, whale_rt_tensor *dx,
                                       whale_rt_tensor *dweight);
whale_rt_status
whale_rt_rms_norm_grad_residual(whale_rt_context *ctx, whale_rt_tensor *x,
                                whale_rt_tensor *weight, double eps,
                                whale_rt_tensor *dy, whale_rt_tensor *residual,
                                whale_rt_tensor *dx, whale_rt_tensor *dweight);
/* dx or dw may be null (not both): that gradient is not computed. */
whale_rt_status whale_rt_conv2d_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                                     whale_rt_tensor *w, whale_rt_tensor *dy,
                                     const int64_t *geometry,
                                     whale_rt_tensor *dx, whale_rt_tensor *dw);
whale_rt_status whale_rt_topk_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                                   int64_t k, whale_rt_tensor *dy,
                                   whale_rt_tensor *dx);
whale_rt_status whale_rt_pool2d_grad(whale_rt_context *ctx, int32_t kind,
                                     whale_rt_tensor *x, whale_rt_tensor *dy,
                                     const int64_t *geometry,
                                     whale_rt_tensor *dx);
whale_rt_status whale_rt_embedding_grad(whale_rt_context *ctx,
                                        whale_rt_tensor *ids,
                                        whale_rt_tensor *dout,
                                        whale_rt_tensor *dtable);
whale_rt_status whale_rt_cross_entropy_grad(whale_rt_context *ctx,
                                            whale_rt_tensor *logits,
                                            whale_rt_tensor *labels,
                                            whale_rt_tensor *dloss,
                                            whale_rt_tensor *dlogits);
/* The same gradient (logits f32 or bf16) computed in f32 and never stored
 * so: `rounded` (bf16, the logits' shape) holds it rounded as
 * whale_rt_cast rounds, `sum` (f32, the logits' last dimensions) holds it
 * summed over the rest as whale_rt_round_and_sum sums: the bits of
 * whale_rt_cross_entropy_grad then whale_rt_round_and_sum. */
whale_rt_status whale_rt_cross_entropy_grad_rounded(
    whale_rt_context *ctx, whale_rt_tensor *logits, whale_rt_tensor *labels,
    whale_rt_tensor *dloss, whale_rt_tensor *rounded, whale_rt_tensor *sum);
whale_rt_status whale_rt_reduce_grad(whale_rt_context *ctx, int32_t op,
                                     whale_rt_tensor *x, int32_t num_axes,
                                     const int64_t *axes, whale_rt_tensor *dout,
                                     whale_rt_tensor *dx);
whale_rt_status whale_rt_slice_grad(whale_rt_context *ctx,
                                    whale_rt_tensor *dout, int64_t axis,
                                    int64_t start, whale_rt_tensor *dx);

/* Optimizer steps on a parameter (from whale_rt_param) with its gradient.
 * State (momentum, Adam's moments) lives in the context, per parameter,
 * zero at first use. `step` counts from 1. */
whale_rt_status whale_rt_sgd_update(whale_rt_context *ctx,
                                    whale_rt_tensor *param,
                                    whale_rt_tensor *grad, double lr,
                                    double momentum, double weight_decay);
whale_rt_status whale_rt_adam_update(whale_rt_context *ctx,
                                     whale_rt_tensor *param,
                                     whale_rt_tensor *grad, int64_t step,
                                     double lr, double beta1, double beta2,
                                     double eps, double weight_decay,
                                     int32_t decoupled);
/* The training state a train step reads: the step number (from 1, for
 * Adam's bias correction) and the factor the learning-rate schedule applies
 * to every optimizer's base rate. The driver sets them before each step. */
whale_rt_status whale_rt_set_train_state(whale_rt_context *ctx, int64_t step,
                                         double lr_scale);
/* A train step held by the device and replayed: one launch a step where
 * the device can hold one (CUDA graphs; runtime/core/StepCapture.h), driven
 * by runtime/run/StepGraphs.h. Each call fails with WHALE_RT_INVALID_ARGUMENT
 * and the reason in whale_rt_last_error where the device cannot hold a
 * step (the CPU runs each op as it is called) or the context traces (a
 * trace times each op as it runs).
 *
 * probe (on = 1, then 0 after the step): the step runs as usual while the
 * device notes the first thing it does that a capture could not hold;
 * whale_rt_step_capture_blocker then says what, naming the op ("" when the
 * step can be held; the string lives until the next probe or capture).
 * begin ... end: the step's calls are held, not run; `held` (4 values, or
 * null) gets the operations held, of which kernels, copies and fills.
 * replay: runs the held step at the context's train state
 * (whale_rt_set_train_state), on the same tensors; a loss the held step
 * returned is written again. drop: forgets the held step; dropping a
 * capture that did not end (its step failed, or its end did) also frees
 * every tensor made since its begin. */
whale_rt_status whale_rt_step_capture_probe(whale_rt_context *ctx, int32_t on);
const char *whale_rt_step_capture_blocker(whale_rt_context *ctx);
whale_rt_status whale_rt_step_capture_begin(whale_rt_context *ctx);
whale_rt_status whale_rt_step_capture_end(whale_rt_context *ctx, int64_t *held);
whale_rt_status whale_rt_step_replay(whale_rt_context *ctx);
void whale_rt_step_capture_drop(whale_rt_context *ctx);
/* The updates a train step makes: as whale_rt_sgd_update and
 * whale_rt_adam_update with the context's step and lr = base_lr * scale. */
whale_rt_status whale_rt_sgd_step(whale_rt_context *ctx, whale_rt_tensor *param,
                                  whale_rt_tensor *grad, double base_lr,
                                  double momentum, double weight_decay);
whale_rt_status whale_rt_adam_step(whale_rt_context *ctx,
                                   whale_rt_tensor *param,
                                   whale_rt_tensor *grad, double base_lr,
                                   double beta1, double beta2, double eps,
                                   double weight_decay, int32_t decoupled);
/* As whale_rt_adam_step on each of num_params parameters with its
 * gradient, all with the same hyperparameters: a GPU updates many
 * parameters in one launch. Every parameter and gradient is checked
 * before any is updated. */
whale_rt_status whale_rt_adam_steps(whale_rt_context *ctx, int32_t num_params,
                                    whale_rt_tensor *const *params,
                                    whale_rt_tensor *const *grads,
                                    double base_lr, double beta1, double beta2,
                                    double eps, double weight_decay,
                                    int32_t decoupled);

/* A parameter's optimizer state tensor `index` (0: SGD's velocity or Adam's
 * first moment; 1: Adam's second moment), created zeroed when missing, so a
 * checkpoint can save and restore it. */
whale_rt_status whale_rt_optimizer_state(whale_rt_context *ctx,
                                         whale_rt_tensor *param, int32_t index,
                                         whale_rt_tensor **out);

/* Scales the gradients together so their global L2 norm is at most
 * max_norm; the norm before clipping goes to *norm (may be null). */
whale_rt_status whale_rt_clip_grad_norm(whale_rt_context *ctx,
                                        int32_t num_grads,
                                        whale_rt_tensor *const *grads,
                                        double max_norm, double *norm);

/* Mixed precision (the config key amp): WHALE_RT_AMP_BF16 rounds every
 * matmul's inputs to bf16 and accumulates in fp32 (tensor cores on a GPU);
 * parameters, gradients and optimizer state stay fp32. */
enum { WHALE_RT_AMP_OFF = 0, WHALE_RT_AMP_BF16 = 1 };
whale_rt_status whale_rt_set_amp(whale_rt_context *ctx, int32_t mode);

/* The calling thread drives ctx's device from now on: under a share of its
 * cores' time (cpu:N@share=S), it joins the kernel's limit on the device's
 * threads, and leaves one it was under for a device without a share
 * (runtime/core/CpuShare.h). A rank's thread calls it before each step. */
whale_rt_status whale_rt_context_enter(whale_rt_context *ctx);

/* The share of its cores' time the kernel enforces on ctx's device now
 * (cpu:N@share=S: its group's quota over its period and threads, which a
 * rewrite of the group's cpu.cfs_quota_us changes under a running job),
 * and the group's directory in `group` (group_size bytes, "" for none). 1
 * and "" for a device without a share; WHALE_RT_INTERNAL where the group's
 * files cannot be read. */
whale_rt_status whale_rt_context_cpu_share(whale_rt_context *ctx, double *share,
                                           char *group, int64_t group_size);

/* Binds the device's own worker threads to cpus[1..count): a CPU device's
 * pool, whose driving thread (cpus[0]) its driver binds itself
 * (runtime/core/CpuPlacement.h). A device without workers binds none. */
whale_rt_status whale_rt_context_pin_workers(whale_rt_context *ctx,
                                             const int32_t *cpus,
                                             int32_t count);

/* Tracing: from now on every op's time is recorded (one Chrome-trace event
 * each), and each op's outputs are checked for NaN and infinity.
 * whale_rt_first_nonfinite names the first op whose output held one ("" if
 * none); whale_rt_write_trace writes the events as Chrome trace JSON. */
whale_rt_status whale_rt_enable_trace(whale_rt_context *ctx);
/* Names the op that the following calls run for: its position in its rank
 * program. A trace then carries it with each op's time, so `whale profile`
 * can match what ran to the program's ops. Lowered code calls it only when
 * compiled to (-whale-to-runtime{sites=true}). */
void whale_rt_set_site(whale_rt_context *ctx, int64_t site);
const char *whale_rt_first_nonfinite(const whale_rt_context *ctx);
whale_rt_status whale_rt_write_trace(whale_rt_context *ctx, const char *path);

/* --- Many ranks in one process -------------------------------------------
 * A plan runs one context per rank, each on its own thread. Its ranks form a
 * grid of stages (pipeline) x replicas (data parallelism); the rank programs
 * name peers by stage and groups by kind, so ranks of one role share code. */
typedef struct whale_rt_comm whale_rt_comm;

/* An in-process communicator for `size` ranks; every wait gives up after
 * timeout_seconds with an error naming the op and the ranks. */
whale_rt_comm *whale_rt_comm_create(int32_t size, double timeout_seconds);
void whale_rt_comm_destroy(whale_rt_comm *comm);

/* --- Ranks as processes (mpirun, srun) ------------------------------------
 * Whether this process was started by an MPI launcher. */
int32_t whale_rt_launched_by_mpi(void);
/* Initializes MPI (once per process) and gives this process's rank and the
 * world's size; an error (and why, in `error`) where Whale was built
 * without MPI or MPI cannot start. */
whale_rt_status whale_rt_mpi_init(int32_t *rank, int32_t *size, char *error,
                                  int64_t error_size);
/* The same over a host's own communicator: `mpi_comm` points to its
 * MPI_Comm (NULL: the world). */
whale_rt_status whale_rt_mpi_init_on(const void *mpi_comm, int32_t *rank,
                                     int32_t *size, char *error,
                                     int64_t error_size);
void whale_rt_mpi_finalize(void);
/* Ends this process with `code` without MPI_Finalize, after flushing the C
 * streams: once processes of the job were lost, Open MPI's MPI_Finalize
 * (4.1, no ULFM) may wait for them for ever in its closing fence. */
void whale_rt_mpi_leave(int32_t code);
/* Every process's host name (`each` bytes a name, NUL-ended, at
 * names[r * each]) and cores, in rank order, on every process. */
whale_rt_status whale_rt_mpi_allocation(char *names, int64_t each,
                                        int32_t *cores);
whale_rt_status whale_rt_mpi_allocation_on(const void *mpi_comm, char *names,
                                           int64_t each, int32_t *cores);
/* Ends every process of the world (after a failure others would wait on). */
void whale_rt_mpi_abort(int32_t code);
/* A communicator over the MPI world, one rank per process (the rank its
 * MPI rank); NULL when MPI is not initialized or not built in. */
whale_rt_comm *whale_rt_comm_create_mpi(double timeout_seconds);
/* The same over a host's own communicator (`mpi_comm` points to its
 * MPI_Comm; the ranks are its ranks), duplicated for Whale's use. */
whale_rt_comm *whale_rt_comm_create_mpi_on(const void *mpi_comm,
                                           double timeout_seconds);
/* The same with each process holding `ranks_per_process` consecutive ranks
 * (threads): rank r is process r / ranks_per_process's. */
whale_rt_comm *whale_rt_comm_create_mpi_ranks(const void *mpi_comm,
                                              int32_t ranks_per_process,
                                              double timeout_seconds);
/* For the driver of each process: `count` doubles from every process of an
 * MPI communicator, process p's at out[p * count], on every process;
 * `rank` is this process's first rank (its process number times the ranks
 * each holds). */
whale_rt_status whale_rt_comm_gather_doubles(whale_rt_comm *comm, int32_t rank,
                                             const double *in, int64_t count,
                                             double *out);
/* The same for `count` floats a process (their bits as they are). */
whale_rt_status whale_rt_comm_gather_floats(whale_rt_comm *comm, int32_t rank,
                                            const float *in, int64_t count,
                                            float *out);
/* For the driver between steps, while the ranks are idle: `bytes` (a
 * multiple of 4) from rank `from` (this process's) to rank `to`, matched by
 * `tag` as the ranks' messages are; a send is buffered. */
whale_rt_status whale_rt_comm_driver_send(whale_rt_comm *comm, int32_t from,
                                          int32_t to, int64_t tag,
                                          const void *data, int64_t bytes);
whale_rt_status whale_rt_comm_driver_recv(whale_rt_comm *comm, int32_t to,
                                          int32_t from, int64_t tag,
                                          void *data, int64_t bytes);
/* Ends every wait of every rank with `reason` (when one rank has failed). */
void whale_rt_comm_abort(whale_rt_comm *comm, const char *reason);
/* The processes of an MPI communicator found dead (by the connections each
 * process keeps to the others), in the order noticed: their count, the
 * first `capacity` in `out`. 0 in one process. */
int32_t whale_rt_comm_lost_processes(whale_rt_comm *comm, int32_t *out,
                                     int32_t capacity);
/* After processes of `mpi_comm` (NULL: the world) died: a communicator of
 * the others, made by them alone, in `*survivors` (an MPI_Comm to pass as
 * `mpi_comm` from then on; whale_rt_mpi_comm_free frees it). The lost
 * processes' numbers are those of `mpi_comm`. */
whale_rt_status whale_rt_mpi_survivors(const void *mpi_comm,
                                       const int32_t *lost, int32_t count,
                                       void **survivors, char *error,
                                       int64_t error_size);
void whale_rt_mpi_comm_free(void *comm);
/* Traces every rank bound to `comm` into one Chrome trace: per rank a
 * compute track and a communication track. */
whale_rt_status whale_rt_comm_enable_trace(whale_rt_comm *comm);
/* With `on` 0, a trace of `comm` (enabled first) only times the ranks' ops:
 * their outputs are not checked for NaN and infinity. `whale profile`
 * traces so, that its steps run as an untraced step does. */
whale_rt_status whale_rt_comm_set_trace_checks(whale_rt_comm *comm,
                                               int32_t on);
int32_t whale_rt_comm_write_trace(whale_rt_comm *comm, const char *path);
/* With `paused` 1, the ranks of `comm` run their ops untraced (nothing is
 * timed, nothing checked) until it is called with 0; the driver's spans
 * are still recorded, in category "untraced". A run that alternates traced
 * and untraced steps so measures in one process what tracing costs. */
whale_rt_status whale_rt_comm_pause_trace(whale_rt_comm *comm, int32_t paused);
/* The driver's own work in a traced run (one step: its data, the inputs
 * handed to the ranks, the ranks' threads), on a "driver" process after the
 * ranks': category "driver", or "untraced" while the trace is paused.
 * Times are whale_rt_now_ns() readings. Does nothing when the
 * communicator does not trace. */
void whale_rt_comm_trace_driver(whale_rt_comm *comm, const char *name,
                                int64_t start_ns, int64_t duration_ns);
int64_t whale_rt_now_ns(void);

/* Places ctx at (stage, replica) of the grid: grid[s * replicas + r] is the
 * rank at stage s, replica r. */
whale_rt_status whale_rt_context_bind(whale_rt_context *ctx,
                                      whale_rt_comm *comm, int32_t stages,
                                      int32_t replicas, const int32_t *grid,
                                      int32_t stage, int32_t replica);

enum {
  WHALE_RT_GROUP_REPLICAS = 0, /* the ranks of my stage, by replica */
  WHALE_RT_GROUP_STAGES = 1,   /* the ranks of my replica, by stage */
  WHALE_RT_GROUP_SHARD_PEERS = 2, /* the ranks of my stage holding my part */
};

/* A data-parallel group (WHALE_RT_GROUP_REPLICAS, or
 * WHALE_RT_GROUP_SHARD_PEERS with `shards`) cut into sharding groups of
 * `size` consecutive members (hybrid sharding, HSDP: shard within a group,
 * replicate across groups). As a group argument it names the sharding group
 * around the context, and owners are positions in it, so the members at
 * one position of every sharding group own the same tensors. A reduction to
 * owners over it sums over the whole data-parallel group: to the owners
 * within each sharding group, then each owner's part over the owners at its
 * position in the other groups (its copies). A size of 0 is the whole
 * group. */
#define WHALE_RT_GROUP_SHARDING(group, size) ((group) | ((size) << 8))

/* To and from the rank of my replica at another stage. */
whale_rt_status whale_rt_send(whale_rt_context *ctx, int32_t to_stage,
                              int64_t tag, whale_rt_tensor *t);
whale_rt_status whale_rt_recv(whale_rt_context *ctx, int32_t from_stage,
                              int64_t tag, whale_rt_tensor *out);
/* Sums the tensors in place over a group, as one bucket: they are packed
 * into one buffer, reduced together and unpacked. */
whale_rt_status whale_rt_all_reduce(whale_rt_context *ctx, int32_t group,
                                    int32_t num_tensors,
                                    whale_rt_tensor *const *ts);
/* Starts summing the tensors over a group (WHALE_RT_GROUP_*; `shards` for
 * WHALE_RT_GROUP_SHARD_PEERS) as one bucket, and returns at once: the sum
 * runs on the rank's collective thread while the rank computes. `*request`
 * names it for whale_rt_all_reduce_wait, which must come before anything
 * reads or writes the tensors. Every member starts its collectives over a
 * group in the same order. Where the communicator or the devices cannot
 * overlap, the sum is done here and the wait does nothing. */
whale_rt_status whale_rt_all_reduce_start(whale_rt_context *ctx, int32_t group,
                                          int32_t shards, int32_t num_tensors,
                                          whale_rt_tensor *const *ts,
                                          int64_t *request);
/* Waits for a started all-reduce and writes its sums into its tensors. */
whale_rt_status whale_rt_all_reduce_wait(whale_rt_context *ctx,
                                         int64_t request);
/* Sums each tensor over a group on its owner alone (ZeRO's gradients
 * reduced to the ranks that update them): owners[i] is tensor i's owner, a
 * position in the group (WHALE_RT_GROUP_*; `shards` for
 * WHALE_RT_GROUP_SHARD_PEERS). The owner gets the all-reduce's sum, bit for
 * bit; what the others' copies hold after is unspecified (their own values,
 * or the sums). Each member sends the parts it does not own: half an
 * all-reduce's traffic. */
whale_rt_status whale_rt_reduce_to_owners(whale_rt_context *ctx, int32_t group,
                                          int32_t shards, int32_t num_tensors,
                                          whale_rt_tensor *const *ts,
                                          const int32_t *owners);
/* whale_rt_reduce_to_owners begun as whale_rt_all_reduce_start begins an
 * all-reduce; whale_rt_all_reduce_wait ends it. */
whale_rt_status whale_rt_reduce_to_owners_start(
    whale_rt_context *ctx, int32_t group, int32_t shards, int32_t num_tensors,
    whale_rt_tensor *const *ts, const int32_t *owners, int64_t *request);
/* Gradients sharded while micro-batches accumulate (ZeRO stage 2): each
 * grads[i], already summed over `group` on its owner (by
 * whale_rt_reduce_to_owners or its started pair), added there alone into
 * sums[i] in place. Every gradient is freed after, and so are the sums this
 * rank does not own (nothing reads them here). */
whale_rt_status whale_rt_add_into_owners(whale_rt_context *ctx, int32_t group,
                                         int32_t shards, int32_t num_tensors,
                                         whale_rt_tensor *const *grads,
                                         whale_rt_tensor *const *sums,
                                         const int32_t *owners);
/* Optimizer state sharded over a group (ZeRO stage 1): *mine is 1 when
 * ctx is the member at position `owner` of `group` (WHALE_RT_GROUP_*;
 * `shards` for WHALE_RT_GROUP_SHARD_PEERS), else 0. */
whale_rt_status whale_rt_owns(whale_rt_context *ctx, int32_t group,
                              int32_t shards, int32_t owner, int32_t *mine);
/* Each tensor copied, in place, from its owner (owners[i], a position in
 * the group, as for whale_rt_reduce_to_owners) to every other member, as
 * one bucket: ZeRO's updated parameters, each member's part sent once to
 * the others (an all-gather of parts). */
whale_rt_status whale_rt_broadcast_from_owners(whale_rt_context *ctx,
                                               int32_t group, int32_t shards,
                                               int32_t num_tensors,
                                               whale_rt_tensor *const *ts,
                                               const int32_t *owners);
/* Parameters sharded over a group (ZeRO stage 3): the handle of parameter
 * `name` on a member that does not hold it. It has no values (shape [0]);
 * only whale_rt_gather_params reads it. A copy the context kept from an
 * earlier plan, and its optimizer state, are freed: the owner holds them. */
whale_rt_status whale_rt_param_elsewhere(whale_rt_context *ctx,
                                         const char *name,
                                         whale_rt_tensor **out);
/* Parameters sharded over a group (ZeRO stage 3): each of params[i] is
 * held by the member at position owners[i] of `group` (`shards` as for
 * whale_rt_owns); every member gets its values in outs[i] (tensors of the
 * parameters' shapes), the owners' parts sent as one bucket (an all-gather
 * of parts, as whale_rt_broadcast_from_owners). Where bf16 (may be null)
 * marks parameter i (non-zero), it travels rounded to bf16 (to nearest,
 * ties to even; two to a 32-bit word) and outs[i] gets the rounded values
 * widened: what amp's products read of it anyway. Between devices with
 * collectives of their own every parameter travels in f32. */
whale_rt_status whale_rt_gather_params(whale_rt_context *ctx, int32_t group,
                                       int32_t shards, int32_t num_tensors,
                                       whale_rt_tensor *const *params,
                                       const int32_t *owners,
                                       const int32_t *bf16,
                                       whale_rt_tensor *const *outs);
/* whale_rt_gather_params begun: each owner packs its parameters (counts[i]:
 * parameter i's elements, which the other members' handles lack) and the
 * rank's collective thread gathers the bucket while the rank goes on;
 * whale_rt_gather_params_wait ends it. Where collectives cannot run on a
 * thread of their own (device collectives, a communicator that takes one
 * call at a time), the wait gathers instead. */
whale_rt_status whale_rt_gather_params_start(
    whale_rt_context *ctx, int32_t group, int32_t shards, int32_t num_tensors,
    whale_rt_tensor *const *params, const int64_t *counts,
    const int32_t *owners, const int32_t *bf16, int64_t *request);
/* Blocks until the gather `request` names is complete and writes parameter
 * i's values into outs[i] (tensors of its shape). */
whale_rt_status whale_rt_gather_params_wait(whale_rt_context *ctx,
                                            int64_t request,
                                            int32_t num_tensors,
                                            whale_rt_tensor *const *outs);
/* As whale_rt_clip_grad_norm_sharded (sharded may be null: no parts),
 * where owners[i] is gradient i's owner or -1: whale_rt_reduce_to_owners
 * summed an owned gradient on its owner alone (among the replicas for a
 * whole gradient, among the shard peers for a part), so its squares count
 * there, summed over the replicas. With `sharding` > 0 the owners are
 * positions in sharding groups (WHALE_RT_GROUP_SHARDING) of `sharding`
 * consecutive replicas (sharding / shards shard peers), whose copies hold
 * the same sums: the squares are summed over the replicas of ctx's sharding
 * group alone. A gradient of -1 counts as in
 * whale_rt_clip_grad_norm_sharded. */
whale_rt_status whale_rt_clip_grad_norm_owned(
    whale_rt_context *ctx, int32_t group, int32_t shards, int32_t sharding,
    int32_t num_grads, whale_rt_tensor *const *grads, const int32_t *sharded,
    const int32_t *owners, double max_norm, double *norm);
/* As whale_rt_clip_grad_norm, with the squares summed over a group: the
 * norm of gradients spread over the stages of a pipeline. */
whale_rt_status whale_rt_clip_grad_norm_group(whale_rt_context *ctx,
                                              int32_t group, int32_t num_grads,
                                              whale_rt_tensor *const *grads,
                                              double max_norm, double *norm);
/* The global batch's row of this rank's first input row (its replica's or
 * group's share starts there), and whether the next calls train (1:
 * dropout drops) or evaluate (0: dropout is the identity).
 * whale_rt_set_train_state sets training. */
whale_rt_status whale_rt_set_rows(whale_rt_context *ctx, int64_t first_row,
                                  int32_t training);
/* Dropout of x [N, ...] into y (also its own gradient): while training each
 * element is zeroed with probability `rate`, the rest scaled by
 * 1 / (1 - rate); which ones is a hash of the context's seed, the step,
 * `key` and the element's index in the global batch, its row being the
 * first row + `row_offset` + n (runtime/ops/DropoutMath.h). */
whale_rt_status whale_rt_dropout(whale_rt_context *ctx, whale_rt_tensor *x,
                                 double rate, int64_t key, int64_t row_offset,
                                 whale_rt_tensor *y);
/* Batch normalization of x [N, C, ...] per channel over the whole batch:
 * while training, the replicas of the rank's stage (none without a
 * communicator) add their rows' channel sums, y = (x - mean) x invstd x
 * gamma + beta, and the running statistics move toward the batch's mean
 * and unbiased variance by `momentum` (0: they stay); while evaluating the
 * running statistics normalize. `mean` and `invstd` [C] are the statistics
 * used. `row_copies` ranks of the group hold each row (1 unless shard
 * groups share their rows). */
whale_rt_status whale_rt_batch_norm(whale_rt_context *ctx, whale_rt_tensor *x,
                                    whale_rt_tensor *gamma,
                                    whale_rt_tensor *beta,
                                    whale_rt_tensor *running_mean,
                                    whale_rt_tensor *running_var,
                                    double momentum, double eps,
                                    int64_t row_copies, whale_rt_tensor *y,
                                    whale_rt_tensor *mean,
                                    whale_rt_tensor *invstd);
/* dx from the whole batch's sums of dy and dy x xhat (added over the
 * replicas as the forward's statistics are); dgamma and dbeta of this
 * rank's rows. */
whale_rt_status whale_rt_batch_norm_grad(
    whale_rt_context *ctx, whale_rt_tensor *x, whale_rt_tensor *gamma,
    whale_rt_tensor *mean, whale_rt_tensor *invstd, whale_rt_tensor *dy,
    whale_rt_tensor *dx, whale_rt_tensor *dgamma, whale_rt_tensor *dbeta);
/* Bytes this rank has moved: 0 all-reduce, 1 send, 2 recv, 3 all-gather,
 * 4 all-to-all (the chunks it sent to others), 5 broadcast, 6 reduce to
 * owners (the parts it sent to others). */
int64_t whale_rt_comm_bytes(const whale_rt_context *ctx, int32_t kind);

/* Tensor parallelism. A shard group is `shards` consecutive replicas of a
 * stage; this rank's part is its replica modulo `shards`. `weights` (NULL:
 * equal parts) makes the parts uneven: the extent is cut in sum(weights)
 * equal units and part i takes weights[i] of them, in order. */

/* As whale_rt_param, keeping part (replica % shards) of `shards` along
 * `axis` of a parameter of `whole_shape`, initialized whole as on one
 * device. */
whale_rt_status whale_rt_param_shard(whale_rt_context *ctx, const char *name,
                                     int32_t init_kind, const double *init_args,
                                     int32_t num_args, int32_t rank,
                                     const int64_t *whole_shape, int32_t axis,
                                     int32_t shards, const int64_t *weights,
                                     whale_rt_tensor **out);
/* The group's all-to-all: `in` is this rank's part along `concat_axis` of
 * a whole whose part along `split_axis` is `out`. Chunk j of `in` along
 * split_axis goes to member j; `out` joins along concat_axis the chunks
 * every member sent, in group order. Parts are equal, or cut by `weights`
 * as all_gather's are. */
whale_rt_status whale_rt_all_to_all(whale_rt_context *ctx, int32_t shards,
                                    const int64_t *weights, int64_t split_axis,
                                    int64_t concat_axis, whale_rt_tensor *in,
                                    whale_rt_tensor *out);
/* The group's parts joined along `axis`, in group order. */
whale_rt_status whale_rt_all_gather(whale_rt_context *ctx, int32_t shards,
                                    const int64_t *weights, int64_t axis,
                                    whale_rt_tensor *in, whale_rt_tensor *out);
/* This rank's part of `in` along `axis`; nothing moves. */
whale_rt_status whale_rt_shard_slice(whale_rt_context *ctx, int32_t shards,
                                     const int64_t *weights, int64_t axis,
                                     whale_rt_tensor *in, whale_rt_tensor *out);
/* Part (my position * parts / shards) of `parts` equal parts of `in` along
 * `axis`, each part held by shards / parts consecutive ranks of the group
 * (parts < shards, dividing it); nothing moves. */
whale_rt_status whale_rt_shard_slice_shared(whale_rt_context *ctx,
                                            int32_t shards, int32_t parts,
                                            int64_t axis, whale_rt_tensor *in,
                                            whale_rt_tensor *out);
/* out = the sum of `in` over the group. */
whale_rt_status whale_rt_shard_sum(whale_rt_context *ctx, int32_t shards,
                                   whale_rt_tensor *in, whale_rt_tensor *out);
/* As whale_rt_all_reduce, over the ranks of my stage that hold my part. */
whale_rt_status whale_rt_all_reduce_peers(whale_rt_context *ctx, int32_t shards,
                                          int32_t num_tensors,
                                          whale_rt_tensor *const *ts);
/* Cross entropy over classes split across the group: `logits` holds this
 * rank's classes; the loss per sample uses a distributed max and sum. */
whale_rt_status
whale_rt_sharded_cross_entropy(whale_rt_context *ctx, int32_t shards,
                               const int64_t *weights, whale_rt_tensor *logits,
                               whale_rt_tensor *labels, whale_rt_tensor *out);
whale_rt_status whale_rt_sharded_cross_entropy_grad(
    whale_rt_context *ctx, int32_t shards, const int64_t *weights,
    whale_rt_tensor *logits, whale_rt_tensor *labels, whale_rt_tensor *dloss,
    whale_rt_tensor *out);
/* As whale_rt_clip_grad_norm_group (group < 0: no group), where
 * sharded[i] != 0 marks a gradient that is this rank's part of a whole. */
whale_rt_status whale_rt_clip_grad_norm_sharded(whale_rt_context *ctx,
                                                int32_t group, int32_t shards,
                                                int32_t num_grads,
                                                whale_rt_tensor *const *grads,
                                                const int32_t *sharded,
                                                double max_norm, double *norm);

#ifdef __cplusplus
}
#endif

#endif /* WHALE_RUNTIME_WHALERUNTIME_H */
