"""Every pass that lowering/**/Passes.td declares is in each list that
means to name them all: the whale-opt fuzz target's (fuzz/FuzzWhaleOpt.cpp,
which skips a name that no longer parses without a word) and the empty
module's lit test. Prints each difference, then a summary line.

    python pass_lists.py SOURCE_ROOT
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
declared = set()
for td in (root / "lowering").rglob("*.td"):
    declared |= set(re.findall(r'WhalePass<"([a-z0-9-]+)">', td.read_text()))

fuzz = (root / "fuzz" / "FuzzWhaleOpt.cpp").read_text()
fuzz_list = fuzz[fuzz.index("kPasses[]"):]
fuzz_list = set(re.findall(r'"(whale-[a-z0-9-]+)"',
                           fuzz_list[:fuzz_list.index("};")]))
empty = (root / "test" / "lit" / "Transforms" / "empty-module.mlir").read_text()
empty_list = set(re.findall(r"RUN: whale-opt %s --(whale-[a-z0-9-]+)", empty))

ok = bool(declared)
for name, listed in (("fuzz/FuzzWhaleOpt.cpp", fuzz_list),
                     ("Transforms/empty-module.mlir", empty_list)):
    for missing in sorted(declared - listed):
        print(f"{name} lacks {missing}")
        ok = False
    for stale in sorted(listed - declared - {p for p in listed
                                              if p.endswith("-pipeline")}):
        print(f"{name} names {stale}, which no Passes.td declares")
        ok = False
print(f"{len(declared)} passes, every list whole: {'yes' if ok else 'no'}")
