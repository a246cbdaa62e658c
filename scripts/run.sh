#!/usr/bin/env bash
# Builds Whale and runs it. Without arguments: the showcase, training the
# GPT example on the license texts of /usr/share/common-licenses (300 steps,
# a progress line, metrics in build/gpt-metrics.jsonl, the trained state in
# build/gpt.safetensors). With arguments: `whale ARGS...`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" >&2
if [ $# -eq 0 ]; then
  set -- run "$root/examples/gpt.whl" --metrics "$root/build/gpt-metrics.jsonl" \
    --save "$root/build/gpt.safetensors"
fi
exec "$root/build/bin/whale" "$@"
