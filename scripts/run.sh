#!/usr/bin/env bash
# Builds Whale and runs it. Without arguments: the showcase, training the
# GPT example on the license texts of /usr/share/common-licenses (600 steps,
# a progress line, metrics in build/gpt-metrics.jsonl, the trained state in
# build/gpt.safetensors), then 200 bytes sampled from the trained model.
# With arguments: `whale ARGS...`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" >&2
whale="$root/build/bin/whale"
if [ $# -eq 0 ]; then
  "$whale" run "$root/examples/gpt.whl" --metrics "$root/build/gpt-metrics.jsonl" \
    --save "$root/build/gpt.safetensors"
  echo "--- a sample from the trained model:"
  exec "$whale" sample "$root/examples/gpt.whl" --load "$root/build/gpt.safetensors" \
    --prompt "The " --tokens 200 --temperature 0.8
fi
exec "$whale" "$@"
