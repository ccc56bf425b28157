#!/usr/bin/env python3
"""make_seeds.py: the seed corpora that are data files, written by NumPy at fuzzing time (data files
are not committed). usage: fuzz/make_seeds.py OUT_DIR  -> OUT_DIR/fuzz_npy/*.npy, OUT_DIR/fuzz_npz/*.npz

The .npy seeds cover the dtypes, byte orders, memory orders and header versions balerbench reads;
the .npz seeds are shaped as Baler's files (data + names), deflated, CFD-like (names empty) and empty.
"""
import io
import os
import sys

import numpy as np


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(f"{out}/fuzz_npy", exist_ok=True)
    os.makedirs(f"{out}/fuzz_npz", exist_ok=True)
    arrays = {
        "f8_2d": np.arange(12, dtype="<f8").reshape(3, 4),
        "f4_1d": np.linspace(0, 1, 5, dtype="<f4"),
        "f2": np.array([1.5, -2.0], dtype="<f2"),
        "i8_fortran": np.asfortranarray(np.arange(6, dtype="<i8").reshape(2, 3)),
        "i4_be": np.arange(4, dtype=">i4"),
        "u1": np.arange(5, dtype="u1"),
        "bool": np.array([True, False]),
        "scalar": np.array(3.25),
        "empty": np.zeros((0, 24)),
        "i2_3d": np.arange(8, dtype="<i2").reshape(2, 2, 2),
        "unicode": np.array(["pt", "eta", ""]),
    }
    for name, a in arrays.items():
        np.save(f"{out}/fuzz_npy/{name}.npy", a)
    with open(f"{out}/fuzz_npy/v2.npy", "wb") as f:
        np.lib.format.write_array(f, np.arange(3.0), version=(2, 0))

    def savez(name, compressed, **members):
        buf = io.BytesIO()
        (np.savez_compressed if compressed else np.savez)(buf, **members)
        with open(f"{out}/fuzz_npz/{name}.npz", "wb") as f:
            f.write(buf.getvalue())

    savez("baler_like", False, data=np.arange(48, dtype="<f8").reshape(2, 24),
          names=np.array([f"c{i}" for i in range(24)]))
    savez("compressed", True, data=np.arange(20, dtype="<f4").reshape(4, 5))
    savez("cfd_like", False, data=np.zeros((2, 5, 5)), names=np.array([], dtype="<f8"))
    savez("empty", False)


if __name__ == "__main__":
    main()
