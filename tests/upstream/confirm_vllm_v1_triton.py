"""Real torch and Triton's real CPU interpreter confirm the vLLM v1 verdict (issue 22).

``python tests/upstream/confirm_vllm_v1_triton.py`` runs vLLM v1's ``rejection_sample``
(loaded unmodified, as tests/upstream/test_vllm_v1_triton.py loads it) with real torch
tensors and ``TRITON_INTERPRET=1``, no specexact mode, and checks:

* **draws**: ``N`` real calls on one draft (k = 1) with p = (1/2, 1/4, 1/4) and
  q = (1/4, 1/4, 1/2); the first emitted token's counts must fit p (chi-square);
* **mechanism**: the audit's witness is a grid point (``torch.rand`` returning 0,
  mass 2^-24), which no sample of feasible size shows, so the grid point is forced:
  with ``torch.rand`` returning its grid zero, target (0, 1) and draft (1, 0), the
  kernel emits the draft token 0, which the target never emits (``0 / 1 >= 0``).

It prints one line per check and exits 1 if either disagrees.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # Triton's own CPU interpreter runs the kernels

import torch

sys.path.insert(0, str(Path(__file__).parent))

import vllm_v1_triton as v1
from confirm_real_torch import chi_square_ok

P = [0.5, 0.25, 0.25]
Q = [0.25, 0.25, 0.5]


def _call(rs: object, draft: int, p: list[float], q: list[float]) -> list[int]:
    target = torch.tensor([p, p], dtype=torch.float32)     # row k = 1 is the bonus row
    bonus = torch.multinomial(target[1:], 1)
    out = rs.rejection_sample(  # type: ignore[attr-defined]
        torch.tensor([draft]), [1], 1, torch.tensor([1], dtype=torch.int32),
        torch.tensor([q], dtype=torch.float32), target[:1], bonus,
        v1.Sampling(temperature=torch.ones(1)))
    return [int(t) for t in out[0].tolist()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=5_000, help="real calls for the draws check")
    n = parser.parse_args().n
    rs = v1.rejection_sampler()
    torch.manual_seed(0)
    counts: Counter[int] = Counter()
    for _ in range(n):
        draft = int(torch.multinomial(torch.tensor(Q), 1))
        counts[_call(rs, draft, P, Q)[0]] += 1
    draws = chi_square_ok(counts, dict(enumerate(P)), n)
    print(f"draws: first token over {n} real calls {dict(sorted(counts.items()))} "
          f"{'fits' if draws else 'does NOT fit'} p = {P}")
    real_rand = torch.rand

    def grid_zero(*args: object, **kwargs: object) -> torch.Tensor:
        return torch.zeros_like(real_rand(*args, **kwargs))   # torch.rand's k = 0

    torch.rand = grid_zero  # type: ignore[assignment]
    try:
        emitted = _call(rs, 0, [0.0, 1.0], [1.0, 0.0])
    finally:
        torch.rand = real_rand
    mechanism = emitted[0] == 0
    print(f"mechanism: torch.rand = 0, p = (0, 1), q = (1, 0), draft 0: emitted "
          f"{emitted} ({'token 0 with p = 0, as the audit says' if mechanism else 'NOT 0'})")
    return 0 if draws and mechanism else 1


if __name__ == "__main__":
    sys.exit(main())
