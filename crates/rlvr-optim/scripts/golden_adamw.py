"""Golden numbers for rlvr-optim's AdamW config: three steps of torch.optim.AdamW.

rlvr-optim's `kind = "adamw"` is burn's AdamW configured from `AdamwConfig`; this fixture checks
that the knobs (betas, eps, decoupled weight decay) mean what torch means by them.
The tensor is a 1-D bias-like vector and a [3, 4] matrix; torch's layout is irrelevant here
(AdamW is element-wise), so arrays are written as is, row-major.

Run:  python3 crates/rlvr-optim/scripts/golden_adamw.py   (needs torch)
Writes crates/rlvr-optim/tests/fixtures/golden_adamw.json
"""

import json
import os

import torch

torch.manual_seed(20261203)
lr, betas, eps, wd = 0.01, (0.9, 0.999), 1e-8, 0.01
w0 = torch.randn(3, 4, dtype=torch.float64)
grads = [torch.randn(3, 4, dtype=torch.float64) for _ in range(3)]
p = torch.nn.Parameter(w0.clone())
opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=wd)
for g in grads:
    p.grad = g.clone()
    opt.step()
out = {
    "source": "scripts/golden_adamw.py (torch.optim.AdamW, float64)",
    "lr": lr, "beta1": betas[0], "beta2": betas[1], "epsilon": eps, "weight_decay": wd,
    "dims": [3, 4],
    "w0": w0.ravel().tolist(),
    "grads": [g.ravel().tolist() for g in grads],
    "expected": p.detach().ravel().tolist(),
}
path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "golden_adamw.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", os.path.normpath(path))
