#!/usr/bin/env bash
# Builds the parts of Whale that need no MLIR (the runtime, the front end,
# the checkpoint reader) with AddressSanitizer and UndefinedBehaviorSanitizer
# into build-asan/, and runs their tests there: the runtime's unit tests and
# every fuzz corpus input of the script and checkpoint readers. Any report
# fails the run. scripts/test.sh runs it after the main suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-asan"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWHALE_SANITIZE=ON -DWHALE_CUDA=OFF \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
fi
targets=(whale-runtime-tests whale-fuzz-replay whale-fuzz-replay-safetensors)
cmake --build "$build" --target "${targets[@]}" -- -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
"$build/bin/whale-runtime-tests" --gtest_brief=1
"$build/bin/whale-fuzz-replay" "$root/fuzz/corpus"
"$build/bin/whale-fuzz-replay-safetensors" "$root/fuzz/corpus-safetensors"
echo "sanitize: runtime tests and fuzz corpora clean under ASan+UBSan"
