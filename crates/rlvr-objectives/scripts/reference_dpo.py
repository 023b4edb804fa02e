"""Independent reference for the DPO objective of rlvr-objectives (`dpo_loss`).

Computes L = mean(-logsigmoid(beta * ((pc - rc) - (pr - rr)))) with PyTorch autograd in float64
on fixed sequence log-probs, and writes the loss, the gradients with respect to the policy's
chosen and rejected log-probs, and the metrics to tests/fixtures/dpo_golden.json.

Run: python crates/rlvr-objectives/scripts/reference_dpo.py (needs torch)
"""

import json
import pathlib

import torch
import torch.nn.functional as F

CASES = [
    {
        "name": "mixed",
        "beta": 0.1,
        "policy_chosen": [-3.2, -10.5, -7.0, -1.25, -20.0],
        "policy_rejected": [-4.0, -9.0, -7.0, -6.5, -2.0],
        "ref_chosen": [-3.0, -11.0, -6.5, -2.0, -19.0],
        "ref_rejected": [-3.5, -9.5, -7.5, -6.0, -2.5],
    },
    {
        "name": "large_beta",
        "beta": 2.0,
        "policy_chosen": [-1.0, -30.0, -0.5],
        "policy_rejected": [-2.0, -1.0, -40.0],
        "ref_chosen": [-1.5, -2.0, -0.5],
        "ref_rejected": [-1.5, -2.0, -0.5],
    },
]


def run(case):
    pc = torch.tensor(case["policy_chosen"], dtype=torch.float64, requires_grad=True)
    pr = torch.tensor(case["policy_rejected"], dtype=torch.float64, requires_grad=True)
    rc = torch.tensor(case["ref_chosen"], dtype=torch.float64)
    rr = torch.tensor(case["ref_rejected"], dtype=torch.float64)
    z = case["beta"] * ((pc - rc) - (pr - rr))
    loss = -F.logsigmoid(z).mean()
    loss.backward()
    ref_margin = rc - rr
    return {
        **case,
        "loss": loss.item(),
        "grad_chosen": pc.grad.tolist(),
        "grad_rejected": pr.grad.tolist(),
        "margin": z.mean().item(),
        "accuracy": (z > 0).double().mean().item(),
        "ref_margin": ref_margin.mean().item(),
        "ref_margin_std": ref_margin.std(unbiased=False).item(),
        "ref_prefers_chosen": (ref_margin > 0).double().mean().item(),
    }


def main():
    out = [run(c) for c in CASES]
    path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "dpo_golden.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
