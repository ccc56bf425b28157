"""PyTorch side of the golden test: Baler's AE as Baler defines it, loaded from
balerbench's model.pt, must reproduce balerbench's latent code.

usage: torch_golden.py INPUT.npz OUT_DIR
"""
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class AE(nn.Module):  # baler/modules/models.py, HEAD: float64, LeakyReLU(0.01)
    def __init__(self, n_features, z_dim):
        super().__init__()
        self.en1 = nn.Linear(n_features, 200, dtype=torch.float64)
        self.en2 = nn.Linear(200, 100, dtype=torch.float64)
        self.en3 = nn.Linear(100, 50, dtype=torch.float64)
        self.en4 = nn.Linear(50, z_dim, dtype=torch.float64)
        self.de1 = nn.Linear(z_dim, 50, dtype=torch.float64)
        self.de2 = nn.Linear(50, 100, dtype=torch.float64)
        self.de3 = nn.Linear(100, 200, dtype=torch.float64)
        self.de4 = nn.Linear(200, n_features, dtype=torch.float64)

    def encode(self, x):
        h1 = F.leaky_relu(self.en1(x))
        h2 = F.leaky_relu(self.en2(h1))
        h3 = F.leaky_relu(self.en3(h2))
        return self.en4(h3)


def main(input_path, out):
    data = np.load(input_path)["data"]
    norm = np.load(f"{out}/training/normalization_features.npy")
    x = (data - norm[0]) / norm[1]
    state = torch.load(f"{out}/training/model.pt")
    z_dim = state["en4.weight"].shape[0]
    model = AE(data.shape[1], z_dim)
    model.load_state_dict(state)
    model.eval()
    with torch.no_grad():
        z = model.encode(torch.tensor(x, dtype=torch.float64)).numpy()
    ours = np.load(f"{out}/compressed_output/compressed.npz")["data"]
    err = np.abs(z - ours).max()
    print(f"max |z_pytorch - z_balerbench| = {err:.3e}")
    sys.exit(0 if err < 1e-10 else 1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
