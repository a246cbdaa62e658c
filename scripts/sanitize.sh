#!/usr/bin/env bash
# Builds Whale with AddressSanitizer and UndefinedBehaviorSanitizer and runs
# tests there; any report fails the run.
#
#   scripts/sanitize.sh         the parts without MLIR (the runtime, the
#                               front end, the checkpoint reader) into
#                               build-asan/: the runtime's unit tests and every
#                               fuzz corpus input of the script and checkpoint
#                               readers. scripts/test.sh runs this after the
#                               main suite (about 4 minutes cold on 2 cores).
#   scripts/sanitize.sh full    everything into build-asan-full/, then the
#                               unit, balance and equivalence suites (tens of
#                               minutes on 2 cores: by hand, not in CI).
#
# Debian's libLLVM and libMLIR are not instrumented, while LLVM's headers
# compiled here poison the tails of BumpPtrAllocator slabs the libraries also
# use: allow_user_poisoning=0 keeps those false reports out (every other
# check stays on, leaks included).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-subset}"
build="$root/build-asan"
[ "$mode" = full ] && build="$root/build-asan-full"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHALE_SANITIZE=ON -DWHALE_CUDA=OFF \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allow_user_poisoning=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if [ "$mode" = full ]; then
  targets=(whale-unittests whale-balance-tests whale-equivalence-tests)
  cmake --build "$build" --target "${targets[@]}" -- -j"$(nproc)"
  for t in "${targets[@]}"; do
    "$build/bin/$t" --gtest_brief=1
  done
  echo "sanitize full: unit, balance and equivalence suites clean under ASan+UBSan"
  exit 0
fi
targets=(whale-runtime-tests whale-fuzz-replay whale-fuzz-replay-safetensors
         whale-fuzz-replay-tokens whale-fuzz-replay-npy whale-fuzz-replay-plan
         whale-fuzz-replay-program
         whale-exec)
cmake --build "$build" --target "${targets[@]}" -- -j"$(nproc)"
"$build/bin/whale-runtime-tests" --gtest_brief=1
"$build/bin/whale-fuzz-replay" "$root/fuzz/corpus"
"$build/bin/whale-fuzz-replay-safetensors" "$root/fuzz/corpus-safetensors"
"$build/bin/whale-fuzz-replay-tokens" "$root/fuzz/corpus-tokens"
"$build/bin/whale-fuzz-replay-npy" "$root/fuzz/corpus-npy"
"$build/bin/whale-fuzz-replay-plan" "$root/fuzz/corpus-plan"
"$build/bin/whale-fuzz-replay-program" "$root/fuzz/corpus-program"
# The runner of compiled plans needs no MLIR, so it runs instrumented here:
# plans compiled by the main build's whale (when there is one), trained,
# saved and resumed.
whale="$root/build/bin/whale"
if [ -x "$whale" ]; then
  plans="$(mktemp -d)"
  trap 'rm -rf "$plans"' EXIT
  "$whale" compile "$root/examples/cnn.whl" --emit=bundle \
    --cluster cpu:2@threads=1 -o "$plans/hybrid" >/dev/null
  "$whale" compile "$root/examples/gpt.whl" --config num_micro_batch=4 \
    --emit=bundle --cluster cpu:2@threads=1 -o "$plans/pipeline" >/dev/null
  for p in hybrid pipeline; do
    "$build/bin/whale-exec" "$plans/$p" --steps 2 --save "$plans/$p.safetensors" \
      >/dev/null
    "$build/bin/whale-exec" "$plans/$p" --steps 3 --load "$plans/$p.safetensors" \
      >/dev/null
  done
fi
echo "sanitize: runtime tests, fuzz corpora and whale-exec clean under ASan+UBSan"
