#!/usr/bin/env bash
# The reference clients the interop tests check Whale's files against
# (numpy and safetensors reading our checkpoints and .npy files), and
# pytest for the Python package's suite, in a virtual environment of the
# build: from PyPI, as the project allows for
# cross-checks, never for the product itself. Prints the environment's
# python. Idempotent: a second call finds it made.
#
#   scripts/interop-env.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: interop-env.sh BUILD_DIR}"
venv="$build/interop-venv"
if [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import numpy, safetensors, pytest" 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv" >&2
for attempt in 1 2 3; do
  if "$venv/bin/pip" install -q --disable-pip-version-check numpy safetensors pytest >&2; then
    echo "$venv/bin/python"
    exit 0
  fi
  echo "interop-env: pip failed (attempt $attempt of 3)" >&2
  sleep 5
done
echo "interop-env: cannot install numpy, safetensors and pytest from PyPI" >&2
exit 1
