# lit configuration of the Whale test suite.
import os

import lit.formats

config.name = "Whale"
config.test_format = lit.formats.ShTest(not lit.util.which("bash") is None)
config.suffixes = [".mlir", ".whl", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.whale_obj_root, "test", "lit")

# Tools come from the build, FileCheck/not/count from LLVM 22.
config.environment["PATH"] = os.pathsep.join(
    [config.whale_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Tests never see a WHALE_PATH from the developer's shell.
config.environment.pop("WHALE_PATH", None)
# WHALE_CPU_LEVEL reaches the tools, so the suite runs on a lower kernel path
# as well (WHALE_CPU_LEVEL=avx2 lit ... on an AVX-512 machine).
if os.environ.get("WHALE_CPU_LEVEL"):
    config.environment["WHALE_CPU_LEVEL"] = os.environ["WHALE_CPU_LEVEL"]

import sys
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%whale_src", config.whale_src_root))
config.substitutions.append(("%whale_tools", config.whale_tools_dir))
config.substitutions.append(("%examples", os.path.join(config.whale_src_root, "examples")))
config.substitutions.append(("%stdlib", os.path.join(config.whale_src_root, "stdlib")))

# Machines with an NVIDIA driver run cuda:N for real; the tests of the
# no-driver message are for the others.
import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass

# Ranks as processes: where Whale was built with MPI and a launcher is
# there. Open MPI asks for consent to run as root (CI containers do).
if getattr(config, "whale_mpiexec", "") and "NOTFOUND" not in config.whale_mpiexec:
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", config.whale_mpiexec + " --oversubscribe"))
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

# The run report renders in headless Chromium (Debian's chromium).
if lit.util.which("chromium"):
    config.available_features.add("chromium")
