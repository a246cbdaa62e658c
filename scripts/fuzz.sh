#!/usr/bin/env bash
# Fuzzes an input format of Whale with libFuzzer.
#
#   scripts/fuzz.sh [TARGET] [SECONDS]
#
# TARGET: frontend (the lexer, parser and sema; default), safetensors (the
# checkpoint reader), tokens (the pre-tokenized corpus reader), npy (the
# numpy array reader), plan (the compiled plan's manifest), program (the
# fused regions' element programs), json (cluster files and specs, profile databases,
# elastic schedules, Hugging Face names files; it
# links the runtime of build/, so run scripts/build.sh first) or opt
# (whale-opt's inputs: every pass over every module that verifies; it links
# the dialect and passes of build/ as they are, so libFuzzer's coverage is
# the harness's and the crashes any pass's). SECONDS: default 600. Builds build-fuzz/whale-fuzz-TARGET
# with clang-22 (-fsanitize=fuzzer,address,undefined), runs it on a copy of
# the target's corpus for SECONDS, then merges the inputs that found new
# coverage back into the corpus (minimized, so it stays small). Crashing
# inputs are left in fuzz/ as crash-*.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="frontend"
case "${1:-}" in
  frontend|safetensors|json|tokens|npy|plan|program|opt) target="$1"; shift ;;
esac
seconds="${1:-600}"

need=()
for p in clang-22 libclang-rt-22-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

out="$root/build-fuzz/$target"
mkdir -p "$out"
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$root" -I"$root/include"
       -isystem /usr/lib/llvm-22/include)
if [ "$target" = frontend ]; then
  corpus="$root/fuzz/corpus"
  sources=()
  for f in "$root"/lang/*.cpp; do
    case "$f" in */MLIRGen.cpp) continue ;; esac
    sources+=("$f")
  done
  clang++-22 "${flags[@]}" -DWHALE_FUZZ_STDLIB_DIR="\"$root/stdlib\"" \
    "${sources[@]}" "$root/support/InputFile.cpp" \
    "$root/fuzz/FuzzFrontend.cpp" -o "$out/whale-fuzz"
  extra=(-dict="$root/fuzz/whale.dict" -max_len=4096)
elif [ "$target" = json ]; then
  corpus="$root/fuzz/corpus-json"
  clang++-22 "${flags[@]}" $(/usr/lib/llvm-22/bin/llvm-config --cxxflags |
      tr ' ' '\n' | grep -E '^-D') \
    "$root/lib/compile/Cluster.cpp" "$root/runtime/run/ElasticSchedule.cpp" \
    "$root/support/JsonFields.cpp" \
    "$root/perfmodel/DeviceModel.cpp" "$root/perfmodel/DeviceSpeed.cpp" \
    "$root/perfmodel/AttentionCost.cpp" \
    "$root/sim/ProfileDb.cpp" "$root/sim/EventProgram.cpp" \
    "$root/sim/Collectives.cpp" "$root/lib/api/HfNames.cpp" \
    "$root/lib/api/HfLlamaNames.cpp" "$root/fuzz/FuzzJsonInputs.cpp" \
    "$root/build/lib/libWhaleRuntime.a" \
    "$root/build/lib/libWhaleSupport.a" -L/usr/lib/llvm-22/lib -lLLVM-22 \
    $(mpicxx --showme:link 2>/dev/null) \
    -lopenblas -lpthread -ldl -Wl,-rpath,/usr/lib/llvm-22/lib \
    -o "$out/whale-fuzz"
  extra=(-max_len=4096)
elif [ "$target" = opt ]; then
  corpus="$root/fuzz/corpus-opt"
  clang++-22 "${flags[@]}" -I"$root/build" $(/usr/lib/llvm-22/bin/llvm-config --cxxflags |
      tr ' ' '\n' | grep -E '^-D') \
    "$root/fuzz/FuzzWhaleOpt.cpp" \
    "$root/build/lib/libWhaleLowering.a" "$root/build/lib/libWhalePerfModel.a" \
    "$root/build/lib/libWhaleDialect.a" "$root/build/lib/libWhaleJsonFields.a" \
    "$root/build/lib/libWhaleSupport.a" -L/usr/lib/llvm-22/lib -lMLIR -lLLVM-22 \
    -lpthread -ldl -Wl,-rpath,/usr/lib/llvm-22/lib -o "$out/whale-fuzz"
  extra=(-max_len=8192)
elif [ "$target" = npy ]; then
  corpus="$root/fuzz/corpus-npy"
  clang++-22 "${flags[@]}" "$root/runtime/data/NpyArray.cpp" "$root/runtime/data/MappedFile.cpp" \
    "$root/fuzz/FuzzNpy.cpp" -o "$out/whale-fuzz"
  extra=(-max_len=4096)
elif [ "$target" = plan ]; then
  corpus="$root/fuzz/corpus-plan"
  clang++-22 "${flags[@]}" "$root/runtime/bundle/PlanManifest.cpp" \
    "$root/support/JsonValue.cpp" "$root/support/JsonString.cpp" \
    "$root/support/InputFile.cpp" \
    "$root/support/OutputFile.cpp" "$root/fuzz/FuzzPlanManifest.cpp" \
    -o "$out/whale-fuzz"
  extra=(-max_len=16384)
elif [ "$target" = program ]; then
  corpus="$root/fuzz/corpus-program"
  clang++-22 "${flags[@]}" "$root/fuzz/FuzzFusedProgram.cpp" \
    -o "$out/whale-fuzz"
  extra=(-max_len=4096)
elif [ "$target" = tokens ]; then
  corpus="$root/fuzz/corpus-tokens"
  clang++-22 "${flags[@]}" "$root/runtime/data/TokenDataset.cpp" "$root/runtime/data/MappedFile.cpp" \
    "$root/fuzz/FuzzTokens.cpp" -o "$out/whale-fuzz"
  extra=(-max_len=4096)
else
  corpus="$root/fuzz/corpus-safetensors"
  clang++-22 "${flags[@]}" "$root/runtime/store/Safetensors.cpp" \
    "$root/support/JsonString.cpp" \
    "$root/support/InputFile.cpp" "$root/support/OutputFile.cpp" \
    "$root/fuzz/FuzzSafetensors.cpp" -o "$out/whale-fuzz"
  extra=(-max_len=8192)
fi

work="$out/corpus"
rm -rf "$work"
mkdir -p "$work"
cp "$corpus"/* "$work"/
cd "$root/fuzz"
"$out/whale-fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "${extra[@]}" "$work" \
  2>&1 | tee "$out/fuzz.log" | grep -E "^#[0-9]+ +(INITED|DONE)|stat::|ERROR|SUMMARY" || true

# The opt corpus is the lit tests' modules, kept whole: its coverage is the
# harness's alone (the passes are not instrumented), which would merge
# away the modules that reach them.
if [ "$target" = opt ]; then
  exit 0
fi
# Keep only what adds coverage: merge the run's finds with the corpus into
# a minimal set and make that the corpus. regress-* inputs (past crashes)
# are always kept.
rm -rf "$out/merged"
mkdir -p "$out/merged"
before=$(ls "$corpus" | wc -l)
"$out/whale-fuzz" -merge=1 "$out/merged" "$corpus" "$work" >/dev/null 2>&1
find "$corpus" -type f ! -name 'regress-*' ! -name 'seed-*' -delete
cp "$out/merged"/* "$corpus/"
echo "$target corpus: $before inputs before, $(ls "$corpus" | wc -l) after merging"
