#!/usr/bin/env python3
"""Checks that includes point down the layers of docs/architecture.md.

Each source folder may include only the folders below it. A quoted
#include of another layer's header that the rules do not allow is
reported with its file and line, and the check fails. Run by ctest
(`layers`); run it by hand after moving a file.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What each layer may include besides itself. The runtime is plain C++;
# the compiler knows the runtime only by its ABI header and the element
# programs' layout; the compiler prices through perfmodel, not the
# simulator.
RUNTIME_ABI = {'runtime/WhaleRuntime.h', 'runtime/AbiSymbols.def',
               'runtime/ops/ElementProgram.h'}
# support/ is plain C++ but for the strict JSON reader over llvm::json
# (library WhaleJsonFields), which only layers linking LLVM use.
USES_LLVM = {'support/JsonFields.h', 'support/JsonFields.cpp'}
ALLOWED = {
    'support': set(),
    'runtime': {'support'},
    'dialects': {'support'},
    'lang': {'support', 'dialects'},
    'perfmodel': {'support', 'dialects'},
    'lowering': {'support', 'dialects', 'perfmodel'} | RUNTIME_ABI,
    'sim': {'support', 'dialects', 'perfmodel'},
}
# lowering/ is laid out by what its passes do: the folders of transforms sit
# on lowering/'s own shared headers (Passes.h, Plan.h, ...) and never include
# one another; the conversion to the runtime sits on all of them.
TRANSFORMS = ['lowering/Transforms/' + t
              for t in ('Autodiff', 'Parallel', 'Fusion', 'Precision')]
for t in TRANSFORMS:
    ALLOWED[t] = ALLOWED['lowering'] | {'lowering'}
ALLOWED['lowering/Conversion/ToRuntime'] = (ALLOWED['lowering'] | {'lowering'}
                                            | set(TRANSFORMS))
# lib/'s parts, above all of those; api/ (the top) may use any of them.
LOWER = set(ALLOWED) | {'include'}
ALLOWED.update({
    'lib/compile': LOWER,
    'lib/elastic': LOWER | {'lib/compile'},
    'lib/perf': LOWER | {'lib/compile'},
    'lib/train': LOWER | {'lib/compile', 'lib/elastic'},
    'lib/report': LOWER | {'lib/compile', 'lib/perf'},
})

# Known exceptions, each open work named in docs/architecture.md.
EXCEPTIONS = set()

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


def layer_of(path):
    parts = path.split('/')
    if parts[0] == 'lib' and len(parts) > 2:
        return 'lib/' + parts[1]
    if parts[0] == 'lowering' and len(parts) > 3:
        return '/'.join(parts[:3])
    return parts[0]


def allowed(src, inc):
    mine = layer_of(src)
    rules = ALLOWED.get(mine)
    if rules is None:  # lib, tools, repl, tests: the top may use anything
        return True
    if inc.startswith(('mlir/', 'llvm/')):
        return mine not in ('support', 'runtime') or src in USES_LLVM
    if inc.endswith('.inc') or '/' not in inc:
        return True
    if inc.startswith('whale/'):  # the public API: include/whale
        inc = 'include/' + inc
    target = layer_of(inc)
    if target == mine or inc in rules or target in rules:
        return True
    return (src, inc) in EXCEPTIONS


def main():
    bad = []
    seen = set()
    for top in ALLOWED:
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith(('.h', '.cpp', '.cu', '.cuh', '.def')):
                    continue
                path = os.path.join(folder, name)
                src = os.path.relpath(path, ROOT)
                if src in seen:  # lowering/'s folders are walked twice
                    continue
                seen.add(src)
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    if not allowed(src, m.group(1)):
                        line = text.count('\n', 0, m.start()) + 1
                        bad.append(f'{src}:{line}: includes "{m.group(1)}", '
                                   f'above the {layer_of(src)} layer')
    for b in bad:
        print(b)
    if bad:
        print(f'{len(bad)} include(s) against the layers '
              '(docs/architecture.md)')
        return 1
    print('includes follow the layers')
    return 0


if __name__ == '__main__':
    sys.exit(main())
