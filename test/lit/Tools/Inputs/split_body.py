"""split_body.py SCRIPT OUT: SCRIPT's `model llama` with its body in one
split TaskGraph (a tensor-parallel plan), as compare_with_transformers.py
makes it: the statements, the returned loss bound inside the block."""
import re
import sys

text = open(sys.argv[1]).read()
body = re.search(r"(model llama\([^)]*\) \{\n)(.*?)(  return ([^\n]*)\n\})", text,
                 re.S)
if not body:
    sys.exit("split_body.py: no `model llama` with a final return in " +
             sys.argv[1])
with open(sys.argv[2], "w") as f:
    f.write(text[:body.start(2)] + "  split {\n" + body.group(2) +
            "    loss = " + body.group(4) + "\n  }\n  return loss\n}" +
            text[body.end(3):])
