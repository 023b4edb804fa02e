"""Shared helpers of the reference scripts of `cargo xtask bench-compare`.

Each script does the same work as one `bench_worker` subcommand (benches/src/bin/bench_worker/)
and prints one JSON line with its measurement, warm-up excluded.
"""

import json
import os
import statistics
import sys


def set_threads(threads):
    """Pins torch's intra-op pool to `threads` (the harness also sets OMP_NUM_THREADS)."""
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def default_threads():
    return int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))


def token_ids(b, t, vocab):
    """The `[b, t]` ids `(i*7919 + 13) % vocab` over the flattened index, as bench_worker builds them."""
    import torch

    flat = (torch.arange(b * t, dtype=torch.int64) * 7919 + 13) % vocab
    return flat.reshape(b, t)


def emit(record):
    """Prints the measurement as the last line of stdout."""
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def median(xs):
    return statistics.median(xs)
