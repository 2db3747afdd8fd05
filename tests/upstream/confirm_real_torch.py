"""Real torch confirms each upstream verdict (issue 22): ``python confirm_real_torch.py``.

For every audited upstream function (loaded, unmodified, as the audits load it), this
runs the function with real torch, no specexact mode, and checks two things:

* **draws**: ``N`` real calls on a context-free pair ``(p, q)``; the first emitted
  token's counts are compared (Pearson chi-square) with the law the exact audit
  predicts for that pair.  A lossless-in-bulk function must match ``p``; a
  structurally biased one must match its biased exact law and *not* ``p``;
* **mechanism**: a finding whose mass is a grid point (``2**-24``, ``2**-53``) cannot be
  seen in ``N`` draws, so the grid point itself is forced (``torch.rand`` returning 0,
  ``exponential_`` returning 0, ``random.random()`` returning 0) and real torch must
  then emit the token the witness names.

It prints one line per function and exits 1 if any check disagrees.  Needs the local
sources (see upstream_load.py).  About a minute of CPU at the default ``N``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# vLLM's _multinomial is @torch.jit.script: run it eagerly, so that forcing a grid point
# of exponential_ reaches it (the eager and scripted ops are the same kernels)
os.environ.setdefault("PYTORCH_JIT", "0")

import torch

sys.path.insert(0, str(Path(__file__).parent))

import served_engines as served
import upstream_engines as engines

P = [0.5, 0.25, 0.25]
Q = [0.25, 0.25, 0.5]


def chi_square_ok(counts: Counter[int], law: dict[int, float], n: int) -> bool:
    """Whether counts fit ``law`` (Pearson, 0.1% level; a count outside the law's support
    is a misfit)."""
    if any(law.get(k, 0.0) == 0 for k in counts):
        return False
    cells = [k for k, w in law.items() if w > 0]
    stat = sum((counts.get(k, 0) - n * law[k]) ** 2 / (n * law[k]) for k in cells)
    dof = max(len(cells) - 1, 1)
    # Wilson-Hilferty approximation of the chi-square 99.9% quantile
    z = 3.09
    quantile = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
    return stat <= quantile


def sample(fn: Callable[[], int], n: int, seed: int = 0) -> Counter[int]:
    torch.manual_seed(seed)
    random.seed(seed)
    return Counter(fn() for _ in range(n))


# -- how each signature is called with real tensors -----------------------------------


def single(fn: Callable[..., Any], p: list[float], q: list[float]) -> Callable[[], int]:
    pt, qt = torch.tensor(p), torch.tensor(q)
    return lambda: int(fn(pt, qt))


def chain(fn: Callable[..., Any], p: list[float], q: list[float], gamma: int = 2,
          generator: bool = False) -> Callable[[], int]:
    """The first token a chain verifier emits, drafts drawn from q (context-free rows)."""
    qt = torch.tensor([q] * gamma)[None]
    pt = torch.tensor([p] * (gamma + 1))[None]
    gens = [torch.Generator().manual_seed(1)] if generator else []

    def call() -> int:
        ids = torch.multinomial(qt[0], 1).T
        return int(fn(ids, qt, pt, *([gens] if generator else []))[0, 0])

    return call


def hf(fn: Callable[..., Any], p: list[float], q: list[float], gamma: int = 2
       ) -> Callable[[], int]:
    qt = torch.tensor([q] * gamma)
    logq, logp = qt.log()[None], torch.tensor([p] * (gamma + 1)).log()[None]

    def call() -> int:
        ids = torch.cat([torch.tensor([[0]]), torch.multinomial(qt, 1).T], dim=1)
        valid, _n = fn(ids, logq, gamma, logp, False)
        return int(valid[0, 0])

    return call


# -- forcing a grid point --------------------------------------------------------------


@contextmanager
def forced(name: str) -> Iterator[None]:
    """``torch.rand``/``rand_like`` return 0, ``exponential_`` writes 0, or
    ``random.random()`` returns 0: the grid point a support witness needs."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, attr: str, value: Any) -> None:
        saved.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, value)

    if name == "rand":
        real_rand = torch.rand
        patch(torch, "rand", lambda *a, **k: torch.zeros_like(real_rand(*a, **k)))
        patch(torch, "rand_like", lambda t, **k: torch.zeros_like(t, **k))
    elif name == "exponential":
        real_exponential = torch.Tensor.exponential_

        def first_zero(self: torch.Tensor, *a: Any, **k: Any) -> torch.Tensor:
            real_exponential(self, *a, **k)
            if self.numel():  # E = 0 for the first entry only (u = 0 of its grid)
                self.view(-1)[0] = 0.0
            return self

        patch(torch.Tensor, "exponential_", first_zero)
    elif name == "random":
        patch(random, "random", lambda: 0.0)
    try:
        yield
    finally:
        for owner, attr, value in reversed(saved):
            setattr(owner, attr, value)


# -- the checks ------------------------------------------------------------------------


def rows(p: list[float], q: list[float]) -> dict[int, float]:
    """The target law of a context-free pair: p (q is the draft's)."""
    del q
    return dict(enumerate(p))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000, help="real calls per function")
    n = parser.parse_args(argv).n
    medusa, vllm = engines.medusa(), served.vllm_rejection()
    _cached, feifeibear_v2 = engines.feifeibear()
    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, what: str) -> None:
        results.append((name, ok, what))
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {what}", flush=True)

    # EAGLE evaluate_posterior: exact in bulk; random.random() = 0 accepts p = 0
    eagle = engines.eagle()
    check("EAGLE evaluate_posterior", chi_square_ok(sample(single(eagle, P, Q), n), rows(P, Q), n),
          f"{n} draws fit p")
    with forced("random"):
        x = single(eagle, [0.0, 0.5, 0.5], [0.5, 0.25, 0.25])()
    check("EAGLE evaluate_posterior", x == 0, "random.random() = 0 emits the p = 0 token 0")

    # Medusa typical: deterministic acceptance of the top draft: the exact law {2: 1}
    counts = sample(single(medusa["typical"], P, Q), n)
    check("Medusa typical posterior", counts == Counter({2: n}),
          f"{n} draws all emit 2, the exact law (p(2) = 1/4 > min(0.09, 0.3 e^-H))")
    # Medusa nucleus (top_p = 1): p(c) + (1 - p(c)) p(c) on the candidate
    law = {0: 3 / 8, 1: 3 / 16, 2: 7 / 16}
    counts = sample(single(medusa["nucleus"], P, Q), n)
    check("Medusa nucleus posterior",
          chi_square_ok(counts, law, n) and not chi_square_ok(counts, rows(P, Q), n),
          f"{n} draws fit the exact biased law (3/8, 3/16, 7/16), not p")

    # transformers _speculative_sampling: exact in bulk; r = 0 accepts a p = 0 draft
    fn = served.transformers_sampling()
    check("transformers _speculative_sampling",
          chi_square_ok(sample(hf(fn, P, Q), n), rows(P, Q), n), f"{n} draws fit p")
    with forced("rand"):
        x = hf(fn, [0.0, 1.0], [1.0, 0.0])()
    check("transformers _speculative_sampling", x == 0,
          "torch.rand_like = 0 accepts the draft 0, where p = 0 ('r <= p/q')")

    # vLLM v0 RejectionSampler: exact in bulk (chain; every row seeded); E = 0 puts the
    # tiny-floored p = 0 token first
    for name, fn, gen in (("chain", vllm["chain"], False), ("seeded", vllm["seeded"], True)):
        check(f"vLLM v0 RejectionSampler ({name})",
              chi_square_ok(sample(chain(fn, P, Q, generator=gen), n), rows(P, Q), n),
              f"{n} draws fit p")
        with forced("exponential"):
            x = chain(fn, [0.0, 1.0], [1.0, 0.0], generator=gen)()
        check(f"vLLM v0 RejectionSampler ({name})", x == 0,
              "E_0 = 0 (its draw u = 0) makes the tiny-floored p = 0 token 0 win "
              "(tiny / 0 = inf)")
    # mixed batch: q[non_seeded_indices].exponential_() writes into a copy, so the
    # unseeded row's race reads torch.empty_like memory that was never written
    probe = torch.full((2, 3), -7.0)
    probe[[1]].exponential_(1.0)
    check("vLLM v0 RejectionSampler (mixed batch)", bool((probe == -7.0).all()),
          "x[[rows]].exponential_() leaves x unwritten: the unseeded row races on never-"
          "written torch.empty_like memory (the audit's UninitialisedRead)")

    # vLLM TypicalAcceptanceSampler and LMDeploy's greedy RejectionSampler: deterministic
    # given the drafts; the draft 1 on p = (1/2, 1/2) is always accepted / the argmax 0
    for name, fn, expected in (("vLLM TypicalAcceptanceSampler", served.vllm_typical(), 1),
                               ("LMDeploy RejectionSampler", served.lmdeploy(), 0)):
        counts = sample(chain(fn, [0.5, 0.5], [0.0, 1.0]), n)
        check(name, counts == Counter({expected: n}),
              f"{n} draws all emit {expected}, the exact law on the audit's witness "
              "(p = (1/2, 1/2), the draft always 1)")

    # feifeibear: sample() raises on token 0 (the audit's crash)
    model = engines.RealLM([0.5, 0.5])
    try:
        torch.manual_seed(0)
        for _ in range(100):  # token 0 is drawn with probability 1/2 per sample
            feifeibear_v2(torch.tensor([[1]]), model, model, 2)
        crashed = False
    except RuntimeError:
        crashed = True
    check("feifeibear speculative_sampling_v2", crashed,
          "real torch raises RuntimeError (sample() on token 0)")

    bad = [name for name, ok, _ in results if not ok]
    print(f"{len(results) - len(bad)} of {len(results)} checks agree with the audits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
