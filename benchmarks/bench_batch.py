"""The default batch audit (``--signature batch``): its CPU time, and what sharing joint laws saves.

Issue 23's target: a default batch audit at B = 2, k = 2 (``--gamma 2``), V = 2..3
(the batch kind's default vocabulary sizes), faithful run included, takes **under
60 CPU s**.  The kernel is vLLM's native rejection sampler
(``specexact.counterexamples.batch_kernels:vllm_rejection``), which passes every
property, so every case of the panel is judged (a failing kernel stops a property at
its first failure and costs less).

The ratio compares, in one run, the audit as it runs (one
:class:`~specexact.torch.batch_check.JointLaws` shared by every case, so a batch the
row law, independence, padding and batch invariance cases have in common is
enumerated once) with the same panel judged case by case (each case enumerates its own
batches: what the audit did before the laws were shared).  Both must reach the same
verdict on every property before a figure is printed.

Run from the repository root::

    python benchmarks/bench_batch.py           # the default audit, shared and not (3 CPU min)
    python benchmarks/bench_batch.py --quick   # k = 1, V = 2 (a few CPU s)
"""

from __future__ import annotations

import argparse

from common import CLOCK, Figures, add_quick, at_least, at_most, timed

from specexact.counterexamples import batch_kernels
from specexact.properties.batch_search import batch_cases, search_batch
from specexact.torch.batch import BatchKernel
from specexact.torch.batch_check import BatchRun, check_batch_case


def _case_by_case(kernel: BatchKernel, vocab: tuple[int, int]) -> dict[str, bool]:
    """The panel judged with no law shared between cases: per property, all passed."""
    passed: dict[str, bool] = {}
    for k in range(1, kernel.k + 1):
        runs = [BatchRun(k=k, dtype=kernel.dtype),
                BatchRun(k=k, dtype=kernel.dtype, uniform="dtype", semantics="dtype")]
        for v in range(vocab[0], vocab[1] + 1):
            for case in batch_cases(k, v):
                for run in runs:
                    ok = check_batch_case(kernel.fn, case, run).passed
                    passed[case.property] = passed.get(case.property, True) and ok
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_quick(parser)
    args = parser.parse_args()
    k, vocab = (1, (2, 2)) if args.quick else (2, (2, 3))
    size = f"k = {k}, V = {vocab[0]}..{vocab[1]}"
    kernel = BatchKernel(batch_kernels.vllm_rejection, k=k)
    print(CLOCK)
    figures = Figures()
    result, shared = timed(search_batch, kernel, vocab_sizes=vocab)
    report = result.witness.report
    statuses = {name: report.status(name) for name in report.names}
    alone, separate = timed(_case_by_case, kernel, vocab)
    if statuses != {name: "pass" if ok else "fail" for name, ok in alone.items()}:
        print(f"the two runs disagree: {statuses} against {alone}", flush=True)
        raise SystemExit(1)
    target = at_most(60, "CPU s", source="issue 23")
    ratio = at_least(1.2, source="the laws the properties share, see docstring")
    if args.quick:
        target, ratio = target.elsewhere("k = 2, V = 2..3"), ratio.elsewhere("k = 2, V = 2..3")
    figures.show(f"default batch audit, vllm_rejection, {size}, {result.cases} cases",
                 shared, target=target)
    figures.show(f"same panel case by case / shared joint laws, {size}", separate / shared,
                 "x", ratio, note=f"case by case {separate:.2f} CPU s")
    figures.close()


if __name__ == "__main__":
    main()
