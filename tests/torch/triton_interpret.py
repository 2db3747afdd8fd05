"""Launch kernels of triton_kernels.py with Triton's own CPU interpreter (a helper of
test_triton.py, run as a script with TRITON_INTERPRET=1): reads a JSON list of
``[kernel name, argument values, dtypes]`` on stdin and prints, as JSON, the first
argument's values after each launch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

import triton_kernels as k


def main() -> None:
    out = []
    for name, values, dtypes in json.load(sys.stdin):
        args = [torch.tensor(v, dtype=getattr(torch, d)) if d is not None else v
                for v, d in zip(values, dtypes, strict=True)]
        getattr(k, name)[(1,)](*args)
        out.append(args[0].tolist())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
