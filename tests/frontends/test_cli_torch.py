"""``specexact audit --torch``: torch code through the existing audit and search."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from specexact.frontends.cli import main
from tests.helpers import run_cli as run
from tests.helpers import run_cli_json

SOURCE = '''
import torch

def textbook(p, q, generator):
    x = torch.multinomial(q, 1, generator=generator)
    if torch.rand(1, generator=generator) < p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1, generator=generator)

def naive(p, q):
    x = torch.multinomial(q, 1)
    if torch.rand(1) < p[x] / q[x]:
        return x
    return torch.multinomial(p, 1)

def inclusive(p, q):
    x = torch.multinomial(q, 1)
    if torch.rand(1) <= p[x] / q[x]:
        return x
    r = torch.clamp(p - q, min=0)
    return torch.multinomial(r / r.sum(), 1)

def chain(ids, draft_probs, target_probs):
    k = ids.shape[1]
    out = torch.full((1, k + 1), -1, dtype=torch.long)
    for i in range(k):
        x = ids[0, i]
        if torch.rand(1) < target_probs[0, i, x] / draft_probs[0, i, x]:
            out[0, i] = x
        else:
            r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
            out[0, i] = torch.multinomial(r, 1)[0]
            return out
    out[0, k] = torch.multinomial(target_probs[0, k], 1)[0]
    return out
'''


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "torch_rules.py"
    path.write_text(SOURCE)
    return path


SMALL = ("--vocab-sizes", "2..2", "--examples", "2")


def test_without_torch_mode_the_cli_says_use_torch(module: Path) -> None:
    for name in ("textbook", "naive"):
        code, _, err = run("audit", f"{module}:{name}", *SMALL)
        assert code == 2
        assert "this function draws from torch's generator; use --torch" in err


def test_torch_mode_passes_and_fails(module: Path) -> None:
    assert run("audit", f"{module}:textbook", "--torch", *SMALL)[0] == 0
    code, out, _ = run("audit", f"{module}:naive", "--torch", *SMALL)
    assert code == 1 and "FAIL" in out
    code, out, _ = run("audit", f"{module}:inclusive", "--torch", "--uniform-bits", "24",
                       *SMALL)
    assert code == 1 and "FAIL" in out


def test_torch_chain_step(module: Path) -> None:
    code, out, _ = run("audit", f"{module}:chain", "--torch", "--signature", "chain",
                       "--gamma", "2", "--kind", "step", "--vocab-sizes", "2..2",
                       "--examples", "1", "--horizon", "2")
    assert code == 0, out


def test_a_signature_that_does_not_fit_the_parameters_is_a_usage_error(module: Path) -> None:
    # chain(ids, draft_probs, target_probs) without --signature chain: a clear exit 2,
    # not a crash "finding" of correct code run the wrong way.
    code, out, err = run("audit", f"{module}:chain", "--torch", *SMALL)
    assert code == 2 and not out
    assert "give --signature chain --gamma K" in err
    code, out, err = run("audit", f"{module}:textbook", "--torch", "--signature", "chain",
                         *SMALL)
    assert code == 2 and "give --signature single" in err


def test_a_function_that_cannot_take_the_signatures_arguments_is_a_usage_error(
        tmp_path: Path) -> None:
    path = tmp_path / "arity.py"
    path.write_text("import torch\n\ndef one(p):\n    return torch.multinomial(p, 1)\n")
    code, out, err = run("audit", f"{path}:one", "--torch", *SMALL)
    assert code == 2 and not out, (code, out, err)
    assert "--signature single calls fn(p, q[, generator])" in err and "(p)" in err
    code, out, err = run("audit", f"{path}:one", "--torch", "--signature", "chain",
                         "--gamma", "2", *SMALL)
    assert code == 2 and "fn(draft_token_ids, draft_probs, target_probs[, generators])" in err


NUMPY_SOURCE = '''
import numpy as np

def textbook(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < p[x] / q[x]:
        return x
    r = np.maximum(p - q, 0)
    return rng.choice(len(r), p=r / r.sum())

def naive(p, q, rng):
    x = rng.choice(len(q), p=q)
    if rng.random() < p[x] / q[x]:
        return x
    return rng.choice(len(p), p=p)
'''


def test_numpy_mode(tmp_path: Path) -> None:
    path = tmp_path / "numpy_rules.py"
    path.write_text(NUMPY_SOURCE)
    assert run("audit", f"{path}:textbook", "--numpy", *SMALL)[0] == 0
    assert run("audit", f"{path}:naive", "--numpy", *SMALL)[0] == 1


INCLUSIVE_CHAIN = '''
import torch

def chain(ids, draft_probs, target_probs):
    k = ids.shape[1]
    out = torch.full((1, k + 1), -1, dtype=torch.long)
    for i in range(k):
        x = ids[0, i]
        if torch.rand(1) <= target_probs[0, i, x] / draft_probs[0, i, x]:
            out[0, i] = x
        else:
            r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
            out[0, i] = torch.multinomial(r, 1)[0]
            return out
    out[0, k] = torch.multinomial(target_probs[0, k], 1)[0]
    return out
'''


def test_default_audit_sees_the_float32_zero_of_torch_rand(module: Path) -> None:
    """``u <= p/q`` accepts a p = 0 token when torch.rand returns exactly 0 (2**-24)."""
    code, report = run_cli_json("audit", f"{module}:inclusive", "--torch")
    assert code == 1
    assert report["verdict"] == "fail"
    witness = report["counterexample"]
    p = [Fraction(x) for x in witness["p"]]
    q = [Fraction(x) for x in witness["q"]]
    actual = {int(k): Fraction(v) for k, v in witness["actual"].items()}
    leaked = {t: m for t, m in actual.items() if p[t] == 0}
    assert leaked, witness
    # exactly 2**-24 q(x) on every token the target filtered out
    assert all(m == q[t] / 2**24 for t, m in leaked.items())
    code, text, _ = run("audit", f"{module}:inclusive", "--torch")
    assert code == 1 and "The failure shows only under torch.rand's grid for the dtype" in \
        " ".join(text.split())


@pytest.mark.slow
def test_continuous_uniform_hides_it_and_the_textbook_rule_passes_in_exact_semantics(
        module: Path) -> None:
    assert run("audit", f"{module}:inclusive", "--torch", "--uniform", "continuous")[0] == 0
    assert run("audit", f"{module}:textbook", "--torch", "--semantics", "exact")[0] == 0
    # in its dtype, rows that round to p <= q make r / r.sum() divide 0 by 0: float-only
    code, out, _ = run("audit", f"{module}:textbook", "--torch")
    assert code == 1 and "class: float-only" in out, out
    assert "rows as the float32 run got them" in out


@pytest.mark.slow
def test_default_chain_audit_sees_the_float32_zero(tmp_path: Path) -> None:
    path = tmp_path / "chain_rules.py"
    path.write_text(INCLUSIVE_CHAIN)
    code, out, _ = run("audit", f"{path}:chain", "--torch", "--signature", "chain")
    assert code == 1, out
    assert "1/16777216" in out
    code, out, _ = run("audit", f"{path}:chain", "--torch", "--signature", "chain",
                       "--uniform", "continuous")
    assert code == 0, out


def test_torch_flags_without_torch_are_refused(module: Path) -> None:
    for flags in (("--signature", "chain"), ("--dtype", "float64")):
        code, _, err = run("audit", f"{module}:textbook", *flags)
        assert code == 2
        assert "add --torch" in err


@pytest.mark.slow
def test_decode_signature_audits_a_whole_loop() -> None:
    target = "tests.torch.test_decode"
    code, out, _ = run("audit", f"{target}:speculative_loop", "--torch", "--signature",
                       "decode", "--vocab-sizes", "2..2", "--examples", "3", "--horizon", "2")
    assert code == 0, out
    code, out, _ = run("audit", f"{target}:naive_loop", "--torch", "--signature", "decode",
                       "--vocab-sizes", "2..2", "--examples", "3", "--horizon", "2")
    assert code == 1, out


# -- from a review: what the report says about code that returns the wrong thing ------


def _chain_source(tmp_path, body):
    path = tmp_path / "chain_rules.py"
    path.write_text("import torch\n\n" + body)
    return path


def test_a_chain_returning_the_wrong_shape_is_named(tmp_path, capsys):

    path = _chain_source(tmp_path, "def flat(draft_token_ids, draft_probs, target_probs):\n"
                                   "    return draft_token_ids[0]\n")
    code = main(["audit", f"{path}:flat", "--torch", "--signature", "chain", "--gamma", "2",
                 "--examples", "2"])
    out = capsys.readouterr().out
    assert code == 1
    assert "returned a tensor of shape [2] (--signature chain returns [1, gamma + 1] = " \
           "[1, 3]), not token ids" in out


def test_uninitialised_padding_read_after_the_code_returned_names_no_specexact_file(
        tmp_path, capsys):

    path = _chain_source(tmp_path, (
        "def padded(draft_token_ids, draft_probs, target_probs):\n"
        "    k = draft_token_ids.shape[1]\n"
        "    out = torch.empty((1, k + 1), dtype=torch.long)\n"
        "    out[0, 0] = torch.multinomial(target_probs[0, 0], 1)[0]\n"
        "    return out  # the rest never written\n"))
    code = main(["audit", f"{path}:padded", "--torch", "--signature", "chain", "--gamma", "2",
                 "--examples", "2"])
    out = capsys.readouterr().out
    assert code == 1 and "UninitialisedRead" in out
    assert "chain_rules.py:5 was never written" in out
    assert "the value the code returned" in out
    assert "verifier/" not in out
