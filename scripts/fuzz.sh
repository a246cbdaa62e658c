#!/usr/bin/env bash
# Fuzzes the front end (lexer, parser, sema) with libFuzzer.
#
#   scripts/fuzz.sh [SECONDS]      default 600
#
# Builds build-fuzz/whale-fuzz with clang-22 (-fsanitize=fuzzer,address,
# undefined), runs it on a copy of fuzz/corpus for SECONDS, then merges the
# inputs that found new coverage back into fuzz/corpus (minimized, so the
# corpus stays small). Crashing inputs are left in fuzz/ as crash-*.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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

out="$root/build-fuzz"
mkdir -p "$out"
sources=()
for f in "$root"/lang/*.cpp; do
  case "$f" in */MLIRGen.cpp) continue ;; esac
  sources+=("$f")
done
clang++-22 -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined \
  -I"$root" -isystem /usr/lib/llvm-22/include \
  -DWHALE_FUZZ_STDLIB_DIR="\"$root/stdlib\"" \
  "${sources[@]}" "$root/fuzz/FuzzFrontend.cpp" -o "$out/whale-fuzz"

work="$out/corpus"
rm -rf "$work"
mkdir -p "$work"
cp "$root"/fuzz/corpus/* "$work"/
cd "$root/fuzz"
"$out/whale-fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=4096 -print_final_stats=1 -dict="$root/fuzz/whale.dict" "$work" \
  2>&1 | tee "$out/fuzz.log" | grep -E "^#[0-9]+ +(INITED|DONE|pulse)|stat::|ERROR|SUMMARY" || true

# Keep only what adds coverage: merge the run's finds with the corpus into
# a minimal set and make that the corpus. regress-* inputs (past crashes)
# are always kept.
rm -rf "$out/merged"
mkdir -p "$out/merged"
before=$(ls "$root/fuzz/corpus" | wc -l)
"$out/whale-fuzz" -merge=1 "$out/merged" "$root/fuzz/corpus" "$work" >/dev/null 2>&1
find "$root/fuzz/corpus" -type f ! -name 'regress-*' -delete
cp "$out/merged"/* "$root/fuzz/corpus/"
echo "corpus: $before inputs before, $(ls "$root/fuzz/corpus" | wc -l) after merging"
