#!/usr/bin/env bash
# The Python package's pytest suite (python/tests), against the package a
# build assembled (BUILD/python) or, with --installed, against
# `pip install ./python` in a fresh virtual environment (what a user
# does; its build requirements come from PyPI). Extra arguments go to
# pytest.
#
#   scripts/python-tests.sh BUILD_DIR [--installed] [PYTEST ARGS...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:?usage: python-tests.sh BUILD_DIR [--installed]}" && pwd)"
shift
export WHALE_ROOT="$root" WHALE_BIN="$build/bin/whale"
if [ "${1:-}" = --installed ]; then
  shift
  venv="$build/python-install-venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  for attempt in 1 2 3; do
    if WHALE_BUILD_DIR="$build" "$venv/bin/pip" install -q \
        --disable-pip-version-check "$root/python[test]"; then
      break
    fi
    echo "python-tests: pip install ./python failed (attempt $attempt of 3)" >&2
    [ "$attempt" = 3 ] && exit 1
    sleep 5
  done
  python="$venv/bin/python"
  unset PYTHONPATH
else
  python="$("$root/scripts/interop-env.sh" "$build")"
  export PYTHONPATH="$build/python"
fi
# From elsewhere than the repository, so that `import whale` finds the
# package under test and never python/whale's sources.
cd "$build"
exec "$python" -m pytest -q -p no:cacheprovider "$root/python/tests" "$@"
