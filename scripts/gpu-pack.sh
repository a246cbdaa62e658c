#!/usr/bin/env bash
# Makes gpu-pack.tar.gz: what a GPU machine without MLIR, LLVM or package
# access needs to test and measure Whale's CUDA backend (issue 22), small
# enough to travel to it (64 MiB at most; OpenBLAS alone is 35 MiB
# unpacked, so it travels packed):
#
#   scripts/gpu-pack.sh                                  # here
#   tar xzf gpu-pack.tar.gz && gpu-pack/check.sh OUT     # there
#
# (scripts/gpu/check.sh says what the second runs.) The folder gpu-pack/
# holds:
#
# bin/       whale-exec (the runner of compiled plans), whale-gpu-tests,
#            whale-gemm-sweep, whale-attention-sweep and the CUDA plugin,
#            all linking the runtime only
# lib/       the shared libraries they need that a bare machine may lack
#            (OpenBLAS, OpenMPI, the C++ runtime); the C library, the driver,
#            cuBLAS and NCCL are the GPU machine's own
# plans/     the equivalence suite's strategies compiled for cuda devices,
#            each with its reference run on one CPU device here
# gpt2/      GPT-2 small compiled for cuda:0, fp32 and bf16, batch 8 and 16;
#            bf16 at batch 8 as two ranks on the GPU too
# accuracy/  the simulator's accuracy plans, CPU and one-GPU, with run.sh
# balance/   GPT on two shares of the GPU's SMs, balanced and even, with run.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build"
pack="$root/gpu-pack"
ninja -C "$build" whale-cli whale-exec whale-gpu-tests whale-gemm-sweep \
  whale-attention-sweep >/dev/null
plugin="$build/lib/libwhale_cuda.so"
[ -f "$plugin" ] || { echo "gpu-pack: no CUDA plugin in $build (nvcc missing at configure time?)" >&2; exit 1; }
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib" "$pack/plans" "$pack/gpt2"
cp "$build/bin/whale-exec" "$build/bin/whale-gpu-tests" \
   "$build/bin/whale-gemm-sweep" "$build/bin/whale-attention-sweep" \
   "$plugin" "$pack/bin/"
cp "$root/scripts/gpu/check.sh" "$root/scripts/gpu/compare_runs.py" \
   "$root/scripts/gpu/trace_summary.py" "$root/bench/gpt2_gpu.py" \
   "$root/bench/torch_gpt.py" "$root/bench/sdpa_sweep.py" "$pack/"

# Libraries: whatever ldd resolves outside glibc and the GPU stack.
for bin in "$pack"/bin/*; do
  ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|\
    libcuda.so*|libcublas*|libnccl*|libcudart*) ;;
    *) cp -L "$lib" "$pack/lib/" ;;
  esac
done

whale="$build/bin/whale"
# The strategies of test/unit/gpu/CudaEquivalenceTest.cpp, on contexts of
# GPU 0 (a machine with one GPU; the collectives then go through the host).
plan() { # name script cluster
  local dir="$pack/plans/$1" script="$root/$2"
  "$whale" compile "$script" --emit=bundle --cluster "$3" -o "$dir" >/dev/null
  "$whale" run "$script" --steps 5 --threads 1 --metrics "$dir/ref.jsonl" \
    --save "$dir/ref.safetensors" >/dev/null 2>&1
  # A text corpus travels with its plan, its symbolic links kept as links:
  # the text reader skips them, so copied as files they would add text the
  # reference run never read (the first GPU run's GPT plans differed so).
  local data
  data="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["data"]; print(d["path"] if d["kind"] in ("text", "tokens") else "")' "$dir/plan.json")"
  if [ -d "$data" ]; then
    mkdir -p "$dir/data" && cp -a "$data/." "$dir/data/"
  elif [ -n "$data" ]; then
    cp -L "$data" "$dir/data"
  fi
  return 0
}
plan mlp-one-gpu examples/mlp.whl cuda:0
plan gpt-one-gpu examples/gpt.whl cuda:0
plan gpt-pipeline examples/gpt.whl cuda:0,cuda:0
plan mlp-split test/equivalence/mlp_split.whl cuda:0,cuda:0,cuda:0,cuda:0
plan classify-hybrid test/equivalence/classify_hybrid.whl cuda:0,cuda:0
plan mlp-data-parallel examples/mlp.whl cuda:0,cuda:0
plan cnn-hybrid examples/cnn.whl cuda:0,cuda:0
plan cnn-batch-norm test/equivalence/cnn_bn.whl cuda:0,cuda:0

# GPT-2 small at batch 8 (gpt2/fp32, gpt2/bf16) and 16 (the -b16 ones): a
# plan's batch is fixed when it is compiled.
for batch in 8 16; do
  suffix=""; [ "$batch" = 16 ] && suffix="-b16"
  python3 "$root/bench/gpt2_gpu.py" --batch "$batch" \
    --emit-bundle "$pack/gpt2/fp32$suffix" >/dev/null
  python3 "$root/bench/gpt2_gpu.py" --batch "$batch" --amp \
    --emit-bundle "$pack/gpt2/bf16$suffix" >/dev/null
done
# amp's storage at batch 8 (gpt2/bf16-storage): bf16 matmul operands stored
# so, one bf16 copy of each weight a step.
python3 "$root/bench/gpt2_gpu.py" --batch 8 --bf16-activations \
  --emit-bundle "$pack/gpt2/bf16-storage" >/dev/null
# Two ranks on the one GPU at the same global batch (gpt2/bf16-dp2,
# gpt2/bf16-pp2): data parallel, and two stages of 1F1B over 4
# micro-batches; they reduce and send in the GPU's memory.
for plan in dp2 pp2; do
  python3 "$root/bench/gpt2_gpu.py" --batch 8 --amp --plan "$plan" \
    --emit-bundle "$pack/gpt2/bf16-$plan" >/dev/null
done

# The simulator's accuracy plans (bench/sim_accuracy.py), to profile and
# measure on that machine's cores and its GPU; --collect predicts them here.
python3 "$root/bench/sim_accuracy.py" --emit-pack "$pack/accuracy" --gpu \
  --rounds 1 --steps 16 >/dev/null

# Balancing over shares of one GPU's SMs (bench/balance_hetero.py), run
# there with WHALE_GPU_BALANCE=1; --collect-gpu makes the table here.
python3 "$root/bench/balance_hetero.py" --emit-gpu-pack "$pack/balance" \
  --steps 16 >/dev/null

tar -C "$root" -cf - gpu-pack | gzip -9 > "$root/gpu-pack.tar.gz"
size=$(du -sb "$pack" | cut -f1)
packed=$(stat -c %s "$root/gpu-pack.tar.gz")
echo "gpu-pack: $((size / 1048576)) MiB in $(find "$pack" -type f | wc -l) files; gpu-pack.tar.gz $((packed / 1048576)) MiB"
