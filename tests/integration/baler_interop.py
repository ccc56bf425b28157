"""PyTorch side of test_baler_interop.cpp, run by Debian's python3 with python3-torch.

usage: baler_interop.py model OURS.pt [BALERS.pt]

OURS.pt must load with torch.load(..., weights_only=True), PyTorch >= 2.6's default, as the
collections.OrderedDict torch.save(model.state_dict()) gives; with BALERS.pt (written by the real
Baler), both must hold the same keys in the same order, with the same dtypes and shapes. Prints one
line per check; exits 1 at the first that fails.
"""
import collections
import sys

import torch


def load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def main(ours_path, balers_path=None):
    ours = load(ours_path)
    if not isinstance(ours, collections.OrderedDict):
        print(f"{ours_path}: loads as {type(ours).__name__}, not an OrderedDict")
        return 1
    print(f"{ours_path}: weights_only load ok, {len(ours)} tensors, last {list(ours)[-1]}")
    if balers_path is None:
        return 0
    balers = load(balers_path)
    described = [[(k, str(v.dtype), tuple(v.shape)) for k, v in d.items()] for d in (ours, balers)]
    if described[0] != described[1]:
        print(f"differs from Baler's:\n  ours   {described[0]}\n  Baler's {described[1]}")
        return 1
    print("same keys, order, dtypes and shapes as Baler's model.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[2:]) if len(sys.argv) >= 3 and sys.argv[1] == "model" else 2)
