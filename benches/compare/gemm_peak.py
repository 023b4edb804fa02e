"""Peak f32 GEMM throughput of the machine with numpy (OpenBLAS): the denominator of the MFU.

For each size n, C = A @ B on n x n f32 matrices, best of `--reps` timed products after one
untimed product; 2 n^3 FLOPs per product.
"""

import argparse
import time

from common import emit


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="2048,3072,4096")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()

    import numpy as np

    rng = np.random.default_rng(0)
    per_size = {}
    for n in [int(s) for s in a.sizes.split(",")]:
        x = rng.standard_normal((n, n), dtype=np.float32)
        y = rng.standard_normal((n, n), dtype=np.float32)
        x @ y
        best = min(_timed(x, y) for _ in range(a.reps))
        per_size[str(n)] = 2.0 * n**3 / best / 1e9
    config = {}
    try:
        from threadpoolctl import threadpool_info

        config = threadpool_info()
    except ImportError:
        pass
    emit({
        "workload": "gemm_peak",
        "value": max(per_size.values()),
        "unit": "GFLOP/s",
        "per_size": per_size,
        "blas": config,
    })


def _timed(x, y):
    start = time.perf_counter()
    x @ y
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
