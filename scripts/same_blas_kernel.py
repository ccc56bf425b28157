"""same_blas_kernel.py: run a comparison script's Python (numpy, torch) on the BLAS kernel that
balerbench runs on, so that a ratio between the two compares code, not kernels.

Debian's OpenBLAS picks its kernel when it is loaded; on a CPU newer than the library it falls back to
the generic Prescott kernel, and balerbench then switches itself to the best one
(docs/comparable_results.md). A Python process beside it would stay on Prescott and look 2-3x
slower than it is. Call
align(binary) before numpy or torch is imported: it asks `balerbench system --json` which kernel
balerbench uses and sets OPENBLAS_CORETYPE to it, unless the user set OPENBLAS_CORETYPE. After the
imports, describe() says which kernel this process really runs (OpenBLAS answers by name).
"""
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys


def align(binary):
    """Sets OPENBLAS_CORETYPE to balerbench's kernel; returns a line saying what was done."""
    if "numpy" in sys.modules or "torch" in sys.modules:
        return "BLAS kernel: not aligned (numpy or torch was imported first)"
    if os.environ.get("OPENBLAS_CORETYPE"):
        return f"BLAS kernel: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} set by the user, for both sides"
    try:
        out = subprocess.run([binary, "system", "--json"], capture_output=True, text=True, check=True).stdout
        blas = json.loads(out)["blas"]
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as e:
        return f"BLAS kernel: not aligned ({binary} system --json failed: {e})"
    core = blas.get("core")
    if blas.get("library") != "OpenBLAS" or not core or core == "unknown":
        return "BLAS kernel: not aligned (balerbench's BLAS is not OpenBLAS)"
    os.environ["OPENBLAS_CORETYPE"] = core
    return f"BLAS kernel: {core} for both sides (balerbench: {blas.get('choice', {}).get('reason', '?')})"


def describe():
    """The OpenBLAS kernel this process runs, asked of the library itself, or 'unknown'."""
    for name in ("libblas.so.3", ctypes.util.find_library("openblas") or "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "unknown"
