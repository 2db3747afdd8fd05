"""Issue 24: every mode honours --max-seconds, large inputs stop at the counted budget,
and Decimal inputs are the exact numbers they are.

Before: --max-seconds was refused outside --statistical, check_sampler gave no result
within 120 s at V = 10^4 and 10^5, and Decimal('0.5') was "not an exact number".
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from specexact import BudgetExceeded, check_sampler
from specexact.counterexamples.samplers import naive_resample, textbook
from tests.helpers import run_specexact

SAMPLERS = "specexact.counterexamples.samplers"
TORCH_TEXTBOOK = '''
import torch
def textbook(p, q, generator=None):
    x = torch.multinomial(q, 1, generator=generator)
    if torch.rand(1, generator=generator) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    if r.sum() == 0:  # p <= q in the dtype after rounding: the residual is empty
        r = p
    return torch.multinomial(r / r.sum(), 1, generator=generator)
'''

#: Each mode on work that takes far longer than the limit.
MODES = {
    "prove": ["prove", f"{SAMPLERS}:textbook", "--vocab-size", "9"],
    "step": ["audit", "specexact.counterexamples.chain_steps:chain", "--horizon", "4"],
    "torch": ["audit", "tb.py:textbook", "--torch", "--vocab-sizes", "2..64"],
    "statistical": ["audit", f"{SAMPLERS}:textbook", "--statistical",
                    "--samples", "10000000"],
    "power": ["power"],
    "catalogue": ["audit"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_stops_at_max_seconds_with_an_undecided(tmp_path, mode):
    (tmp_path / "tb.py").write_text(TORCH_TEXTBOOK)
    done = run_specexact(*MODES[mode], "--max-seconds", "1", cwd=tmp_path, timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "went past --max-seconds 1" in done.stderr
    assert "Traceback" not in done.stderr


def test_decimal_inputs_are_exact_numbers():
    half, quarter = Decimal("0.5"), Decimal("0.25")
    verdict = check_sampler(textbook, [half, half], [quarter, 1 - quarter])
    assert verdict.passed
    assert verdict.p == (Fraction(1, 2), Fraction(1, 2))
    assert not check_sampler(naive_resample, [Decimal("0.2"), Decimal("0.8")],
                             [Decimal("0.6"), Decimal("0.4")]).passed


@pytest.mark.slow
@pytest.mark.parametrize("vocab", [10**4, 10**5])
def test_a_huge_vocabulary_stops_at_the_counted_budget_with_what_was_settled(vocab):
    p = [Fraction(1, vocab)] * vocab
    q = [Fraction(2, vocab)] * (vocab // 2) + [Fraction(0)] * (vocab - vocab // 2)
    with pytest.raises(BudgetExceeded, match=r"settled [0-9.]+% .* first undecided path"):
        check_sampler(textbook, p, q)
