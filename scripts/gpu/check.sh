#!/usr/bin/env bash
# Runs on the GPU machine, from the pack scripts/gpu-pack.sh made (no MLIR,
# no LLVM, no packages needed there):
#
#   gpu-pack/check.sh [OUT]
#
# 1. whale-gpu-tests: every op, gradient and collective on cuda:0 against
#    the CPU device;
# 2. every compiled plan in plans/ (the equivalence suite's strategies on
#    cuda devices) trained by whale-exec and compared with its one-CPU
#    reference (losses and parameters within 1e-4);
# 3. with torch there, bench/gpt2_gpu.py on the compiled GPT-2 small plans
#    (bf16, fp32; batch 8 and 16; WHALE_GPU_BENCH_RUNS narrows them)
#    against PyTorch as its users write it, eager and under torch.compile
#    (bench/torch_gpt.py), each batch-8 plan's
#    time by op (trace_summary.py), and bf16 again with the element
#    programs in the interpreter, and with its steps op by op rather
#    than replayed as one CUDA graph, and bf16 as two ranks on the GPU
#    (data parallel, a two-stage pipeline: gpt2/bf16-dp2, -pp2);
# 3b. whale-attention-sweep (and, with torch, sdpa_sweep.py): attention's
#    chunked GEMMs against the fused kernels, bf16 and fp32, beside
#    PyTorch's SDPA, and
#    GPT-2 small bf16 with the fused kernels (WHALE_CUDA_FLASH=1);
# 4. whale-gemm-sweep: the runtime's matmul at the published GPT runs'
#    shapes, GPT-2 small's and squares, fp32, bf16 under amp and bf16
#    storage, beside what the simulator's device model predicts for this
#    GPU (docs/simulation.md); GPT-2 small's and two squares again through
#    cuBLAS's classic API (WHALE_CUDA_LT=0);
# 5. with WHALE_GPU_ACCURACY=1, the simulator's accuracy plans
#    (accuracy/run.sh), for bench/sim_accuracy.py --collect;
# 6. with WHALE_GPU_BALANCE=1, GPT on two shares of the GPU's SMs, each
#    alone and together, balanced and even (balance/run.sh), for
#    bench/balance_hetero.py --collect-gpu.
# Logs and metrics go to OUT (default: ./gpu-results). Each step has a time
# limit (WHALE_GPU_TESTS_TIMEOUT, WHALE_GPU_PLAN_TIMEOUT,
# WHALE_GPU_BENCH_TIMEOUT, in seconds), so a hang costs one step, not the
# lease; WHALE_GPU_BENCH_ARGS adds flags to the benchmark (--no-compile).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$PWD/gpu-results}"
mkdir -p "$out"
# cuBLAS and NCCL: the CUDA toolkit's where installed, else the ones the
# machine's PyTorch carries.
extra="$here/lib"
for d in /usr/local/cuda/lib64 \
    $(python3 -c 'import os, glob, nvidia; print(" ".join(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib"))))' 2>/dev/null); do
  [ -d "$d" ] && extra="$extra:$d"
done
export LD_LIBRARY_PATH="$extra:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
status=0

echo "== whale-gpu-tests"
timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" "$here/bin/whale-gpu-tests" 2>&1 | tee "$out/gpu-tests.log" | tail -3
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

echo "== compiled plans against one CPU device"
# No pipe around the loop: a status set in a piped loop is set in a
# subshell, and lost.
: > "$out/plans.txt"
for plan in "$here"/plans/*/; do
  name="$(basename "$plan")"
  data=()
  [ -e "$plan/data" ] && data=(--data "$plan/data")
  if timeout "${WHALE_GPU_PLAN_TIMEOUT:-120}" "$here/bin/whale-exec" "$plan" --steps 5 --threads 1 "${data[@]}" \
      --metrics "$out/$name.jsonl" --save "$out/$name.safetensors" \
      > "$out/$name.log" 2>&1; then
    verdict="$(python3 "$here/compare_runs.py" "$out/$name.jsonl" \
      "$plan/ref.jsonl" "$out/$name.safetensors" "$plan/ref.safetensors" \
      2>&1)" || { status=1; verdict="FAILED: ${verdict:-compare_runs.py failed}"; }
  else
    verdict="FAILED: $(tail -1 "$out/$name.log")"
    status=1
  fi
  printf '%-28s %s\n' "$name" "$verdict" | tee -a "$out/plans.txt"
done
grep -q "DIFFERENT\|FAILED" "$out/plans.txt" && status=1

if python3 -c "import torch" 2>/dev/null; then
  # The fair benchmark (bench/torch_gpt.py's peer): each plan in
  # WHALE_GPU_BENCH_RUNS, bf16 and fp32 at batch 8 and 16 unless narrowed;
  # the batch-8 runs also write Whale's trace.
  for run in ${WHALE_GPU_BENCH_RUNS:-bf16 fp32 bf16-b16 fp32-b16}; do
    echo "== GPT-2 small, $run"
    flag=(); [ "${run%-b16}" = bf16 ] && flag=(--amp)
    batch=8; trace=(--whale-trace "$out/gpt2-$run-trace.json")
    [ "${run%-b16}" != "$run" ] && { batch=16; trace=(); }
    PYTHONUNBUFFERED=1 timeout "${WHALE_GPU_BENCH_TIMEOUT:-600}" \
      python3 "$here/gpt2_gpu.py" "${flag[@]}" --batch "$batch" \
      --whale-exec "$here/bin/whale-exec" --bundle "$here/gpt2/$run" \
      "${trace[@]}" ${WHALE_GPU_BENCH_ARGS:-} 2>&1 | tee "$out/gpt2-$run.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
  # Where the time goes, and the generated element kernels against the
  # interpreter they replace (docs/gpu.md), Whale alone.
  for amp in bf16 fp32; do
    [ -f "$out/gpt2-$amp-trace.json" ] &&
      python3 "$here/trace_summary.py" "$out/gpt2-$amp-trace.json" |
      tee "$out/gpt2-$amp-ops.txt"
  done
  # The fused attention kernels (WHALE_CUDA_FLASH=1; off by default until
  # measured): Whale alone on the bf16 plan, with its trace.
  echo "== GPT-2 small, bf16, flash attention"
  WHALE_CUDA_FLASH=1 PYTHONUNBUFFERED=1 \
    timeout "${WHALE_GPU_BENCH_TIMEOUT:-600}" python3 "$here/gpt2_gpu.py" \
    --amp --no-torch --whale-exec "$here/bin/whale-exec" \
    --bundle "$here/gpt2/bf16" --whale-trace "$out/gpt2-bf16-flash-trace.json" \
    2>&1 | tee "$out/gpt2-bf16-flash.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  [ -f "$out/gpt2-bf16-flash-trace.json" ] &&
    python3 "$here/trace_summary.py" "$out/gpt2-bf16-flash-trace.json" |
    tee "$out/gpt2-bf16-flash-ops.txt"
  # amp's storage (whale run --bf16-activations), Whale alone, beside the
  # bf16 run above.
  echo "== GPT-2 small, bf16 activations (amp's storage)"
  PYTHONUNBUFFERED=1 timeout "${WHALE_GPU_BENCH_TIMEOUT:-600}" \
    python3 "$here/gpt2_gpu.py" --bf16-activations --no-torch \
    --whale-exec "$here/bin/whale-exec" --bundle "$here/gpt2/bf16-storage" \
    2>&1 | tee "$out/gpt2-bf16-storage.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  # Two ranks on the one GPU (data parallel; a two-stage pipeline) at the
  # same global batch, beside one context's bf16 run above: each should
  # reach 0.9 of its tokens/s.
  for plan in dp2 pp2; do
    echo "== GPT-2 small, bf16, two ranks on the GPU ($plan)"
    PYTHONUNBUFFERED=1 timeout "${WHALE_GPU_BENCH_TIMEOUT:-600}" \
      python3 "$here/gpt2_gpu.py" --amp --no-torch --plan "$plan" \
      --whale-exec "$here/bin/whale-exec" --bundle "$here/gpt2/bf16-$plan" \
      2>&1 | tee "$out/gpt2-bf16-$plan.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
  echo "== attention: scaled_dot_product_attention at the sweep's shapes"
  timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" python3 "$here/sdpa_sweep.py" \
    2>&1 | tee "$out/sdpa-sweep.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" python3 "$here/sdpa_sweep.py" \
    --dtype fp32 2>&1 | tee "$out/sdpa-sweep-fp32.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  # The step replayed as one CUDA graph (the default) against op by op.
  echo "== GPT-2 small, bf16, steps op by op (WHALE_CUDA_GRAPHS=0)"
  PYTHONUNBUFFERED=1 timeout "${WHALE_GPU_BENCH_TIMEOUT:-600}" \
    python3 "$here/gpt2_gpu.py" --amp --no-torch --no-graphs \
    --whale-exec "$here/bin/whale-exec" --bundle "$here/gpt2/bf16" \
    2>&1 | tee "$out/gpt2-bf16-no-graphs.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== GPT-2 small, bf16, element programs in the interpreter"
  WHALE_CUDA_ELEMENT_KERNELS=0 PYTHONUNBUFFERED=1 \
    timeout "${WHALE_GPU_BENCH_TIMEOUT:-600}" python3 "$here/gpt2_gpu.py" \
    --amp --no-torch --whale-exec "$here/bin/whale-exec" \
    --bundle "$here/gpt2/bf16" 2>&1 | tee "$out/gpt2-bf16-interpreter.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "== no torch here: the GPT-2 comparison did not run"
fi

# Attention's two paths, the chunked GEMMs and the fused kernels, at
# GPT-2 small's shape and long contexts (bench/AttentionSweep.cpp).
echo "== attention: chunked GEMMs against the fused kernels"
timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" "$here/bin/whale-attention-sweep" \
  2>&1 | tee "$out/attention-sweep.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" "$here/bin/whale-attention-sweep" \
  --amp off 2>&1 | tee "$out/attention-sweep-fp32.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# What cuBLAS sustains here, against the device model of this GPU's kind
# (named from nvidia-smi; H100 when it names none the model knows).
echo "== GEMM rates against the device model"
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
case "$gpu_name" in
  *H200*) model=H200 ;;
  *A100*80GB*) model=A100-80GB ;;
  *A100*) model=A100-40GB ;;
  *V100*) model=V100 ;;
  *T4*) model=T4 ;;
  *) model=H100-SXM ;;
esac
timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" "$here/bin/whale-gemm-sweep" \
  --device cuda:0 --model "$model" 2>&1 | tee "$out/gemm-sweep.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# GPT-2 small's products and the squares through cuBLAS's classic API, the
# path before cuBLASLt (LtGemm.h): the A/B for "at least as fast".
echo "== the same GEMMs through cuBLAS's classic API (WHALE_CUDA_LT=0)"
WHALE_CUDA_LT=0 timeout "${WHALE_GPU_TESTS_TIMEOUT:-300}" \
  "$here/bin/whale-gemm-sweep" --device cuda:0 --model "$model" \
  --shapes 8192x2304x768,8192x768x768,8192x3072x768,8192x768x3072,8192x50304x768,2048x2048x2048,4096x4096x4096 \
  2>&1 | tee "$out/gemm-sweep-classic.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# The simulator's accuracy plans on this machine's cores and GPU
# (WHALE_GPU_ACCURACY=1; one round took 6.5 minutes on the 2-core
# development VM, most of it the hybrid classifier): bring OUT/accuracy
# back to
# `bench/sim_accuracy.py --collect gpu-pack/accuracy OUT/accuracy`.
if [ "${WHALE_GPU_ACCURACY:-0}" = 1 ] && [ -x "$here/accuracy/run.sh" ]; then
  echo "== the simulator's accuracy plans"
  WHALE_EXEC="$here/bin/whale-exec" timeout \
    "${WHALE_GPU_ACCURACY_TIMEOUT:-600}" "$here/accuracy/run.sh" \
    "$out/accuracy" || echo "the accuracy runs stopped: $?"
fi
# Balancing over unequal devices made of one GPU (cuda:0@sms=K each):
# bring OUT/balance back to
# `bench/balance_hetero.py --collect-gpu gpu-pack/balance OUT/balance`.
if [ "${WHALE_GPU_BALANCE:-0}" = 1 ] && [ -x "$here/balance/run.sh" ]; then
  echo "== balancing over shares of the GPU's SMs"
  WHALE_EXEC="$here/bin/whale-exec" timeout \
    "${WHALE_GPU_BALANCE_TIMEOUT:-300}" "$here/balance/run.sh" \
    "$out/balance" || echo "the balance runs stopped: $?"
fi
exit $status
