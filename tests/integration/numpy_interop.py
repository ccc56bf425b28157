"""NumPy side of the interop tests (run by test_numpy_interop.cpp).

write DIR: writes files our reader must load, with known contents.
check DIR: loads what balerbench wrote and checks the contents; exit 1 on mismatch.
"""
import sys

import numpy as np


def write(d):
    data = np.arange(12, dtype=np.float64).reshape(4, 3) / 4.0
    names = np.array(["pt_", "eta_", "phi_"])
    np.savez(f"{d}/stored.npz", data=data, names=names)
    np.savez_compressed(f"{d}/deflated.npz", data=data, names=names)
    np.savez(f"{d}/fortran.npz", data=np.asfortranarray(data), names=names)
    np.savez(f"{d}/int32.npz", data=np.arange(12, dtype=np.int32).reshape(4, 3))
    np.savez(f"{d}/float32.npz", data=data.astype(np.float32))
    np.savez(f"{d}/float16.npz", data=data.astype(np.float16))
    np.savez(f"{d}/bool.npz", data=(np.arange(12).reshape(4, 3) % 2 == 0))
    np.savez(f"{d}/bigendian.npz", data=data.astype(">f8"))
    np.savez(f"{d}/frames.npz", data=np.arange(24, dtype=np.float64).reshape(2, 3, 4),
             names=np.array([], dtype=np.float64))
    np.savez_compressed(f"{d}/frames_fortran.npz",
                        data=np.asfortranarray(np.arange(24, dtype=np.float64).reshape(2, 3, 4)))
    np.save(f"{d}/plain.npy", data)


def check(d):
    ok = True

    def expect(cond, what):
        nonlocal ok
        if not cond:
            print("MISMATCH:", what)
            ok = False

    a = np.load(f"{d}/ours_stored.npz")
    expect(a["data"].dtype == np.float64 and a["data"].shape == (4, 3), "stored dtype/shape")
    expect(np.array_equal(a["data"], np.arange(12).reshape(4, 3) * 0.5), "stored values")
    expect(list(a["names"]) == ["pt_", "eta_", "\u03bc\u03bd"], f"names {list(a['names'])}")
    b = np.load(f"{d}/ours_deflated.npz")
    expect(np.array_equal(b["data"], a["data"]), "deflated values")
    f = np.load(f"{d}/ours_frames.npz")
    expect(f["data"].shape == (2, 3, 4) and f["data"].dtype == np.float32, "frames shape/dtype")
    expect(np.array_equal(f["data"], np.arange(24, dtype=np.float32).reshape(2, 3, 4)), "frames values")
    h = np.load(f"{d}/ours_half.npy")
    expect(h.dtype == np.float16 and np.array_equal(h, np.array([1.0, -2.0, 65504.0, 0.0], np.float16)), "half")
    i = np.load(f"{d}/ours_int64.npy")
    expect(i.dtype == np.int64 and list(i) == [-5, 1 << 40], "int64")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    {"write": write, "check": check}[sys.argv[1]](sys.argv[2])
