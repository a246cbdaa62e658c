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
(cd "$root/build" && ctest --output-on-failure -j"$(nproc)" "$@")
if [ -z "${WHALE_NO_SANITIZE:-}" ]; then
  "$root/scripts/sanitize.sh"
fi
