#!/usr/bin/env bash
# Builds Whale and runs every test: the lit suite (passes, dialect, language,
# diagnostics, examples, fuzz-corpus replay) and the unit tests, through
# ctest; then the parts without MLIR again under ASan+UBSan
# (scripts/sanitize.sh; WHALE_NO_SANITIZE=1 skips it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh"
# numpy and safetensors for the interop checks (WHALE_NO_INTEROP=1: none).
if [ "${WHALE_NO_INTEROP:-0}" != 1 ]; then
  "$root/scripts/interop-env.sh" "$root/build" > /dev/null
fi
status=0
(cd "$root/build" && ctest --output-on-failure -j"$(nproc)" "$@") || status=$?
if [ "$status" != 0 ]; then
  # A CI log is often read from its end, and lit's verdicts sit far above it:
  # each failing lit test's first error lines, then its name, come last.
  log="$root/build/Testing/Temporary/LastTest.log"
  if [ -f "$log" ] && grep -qE '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): Whale :: ' "$log"; then
    echo "--- failing lit tests, their first errors ---"
    grep -E '^(error|.*: error:|# \| error:|.*CHECK.*: error)' "$log" | head -n 20 || true
    grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): Whale :: ' "$log"
  fi
  exit "$status"
fi
if [ -z "${WHALE_NO_SANITIZE:-}" ]; then
  "$root/scripts/sanitize.sh"
fi
