"""Step proofs (issue 14): ``prove_step`` and ``specexact prove --kind step``.

Every proof and refutation here is also checked against the exact numeric
engine at random rational context-dependent models (the prover cross-checks
each case itself; these tests check from the outside too).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from specexact import (
    StepProofResult,
    TableModel,
    Undecided,
    UnsupportedOperation,
    decode_distribution,
    prove_step,
    target_distribution,
)
from specexact.counterexamples.chain_steps import chain
from specexact.counterexamples.steps import get_step_rule
from specexact.errors import InvalidArgument, SamplerFailure


def _random_row(rng: random.Random, v: int) -> tuple[Fraction, ...]:
    ws = [rng.randint(0, 4) for _ in range(v)]
    if not any(ws):
        ws[rng.randrange(v)] = 1
    return tuple(Fraction(w, sum(ws)) for w in ws)


def _random_models(v: int, depth: int, seed: int) -> tuple[TableModel, TableModel]:
    """Context-dependent rational models (zeros included) on every prefix up to ``depth``."""
    rng = random.Random(seed)
    prefixes = [()]
    for _ in range(depth):
        prefixes += [(*p, t) for p in prefixes if len(p) == _ for t in range(v)]
    target = TableModel({p: _random_row(rng, v) for p in prefixes},
                        default=tuple(Fraction(1, v) for _ in range(v)))
    draft = TableModel({p: _random_row(rng, v) for p in prefixes},
                       default=tuple(Fraction(1, v) for _ in range(v)))
    return target, draft


def _numeric_agrees(step, v: int, horizon: int, points: int = 6) -> None:
    """A proved step's decode equals the target's law at random rational models."""
    for seed in range(points):
        target, draft = _random_models(v, horizon + 3, seed)
        assert decode_distribution(step, target, draft, horizon) == \
            target_distribution(target, horizon)


def _confirmed(step, result: StepProofResult) -> None:
    """A refutation's witness rows really give a different joint law (or a crash)."""
    ref = result.refutation
    assert ref is not None
    target = TableModel(dict(ref.target_rows), default=ref.default)
    draft = TableModel(dict(ref.draft_rows), default=ref.default)
    if ref.crash is not None:
        with pytest.raises(SamplerFailure):
            decode_distribution(step, target, draft, result.horizon)
        return
    decoded = decode_distribution(step, target, draft, result.horizon)
    expected = target_distribution(target, result.horizon)
    assert decoded == ref.decoded and expected == ref.expected
    assert decoded != expected
    assert ref.first is not None
    assert decoded.get(ref.first, 0) - expected.get(ref.first, 0) == ref.first_bias != 0


def _named(name: str):
    return get_step_rule(name).rule


# ---- wrong steps small enough for the default run ----------------------------------

def draft_only(target, draft, prefix, rng):
    """Bug: emits the draft's token, never the target's."""
    return (rng.categorical(draft(prefix)),)


def shifted_context(target, draft, prefix, rng):
    """Bug: reads the target one position late (invisible with context-free models)."""
    return (rng.categorical(target(prefix[:-1])),)


def type_sniffing(target, draft, prefix, rng):
    """Behaves differently on symbolic values than on Fractions: no proof is possible."""
    row = target(prefix)
    if isinstance(row[0], Fraction):
        return (rng.categorical(draft(prefix)),)
    return (rng.categorical(row),)


def stateful(target, draft, prefix, rng):
    q = draft.next_distribution()
    return (rng.categorical(q),)


def chain1(target, draft, prefix, rng):
    return chain(target, draft, prefix, rng, gamma=1)


def second_token_unchecked(target, draft, prefix, rng):
    """Right for one token; the second is the draft's whatever its comparison says."""
    x = rng.categorical(target(prefix))
    q, p = draft((*prefix, x)), target((*prefix, x))
    y = rng.categorical(q)
    if rng.random() * q[y] < p[y]:
        return (x, y)
    return (x, y)  # bug: no residual


def no_coin(target, draft, prefix, rng):
    """Bug: accepts the draft exactly when p >= q at it, without a coin."""
    p, q = target(prefix), draft(prefix)
    x = rng.categorical(q)
    if p[x] >= q[x]:
        return (x, rng.categorical(target((*prefix, x))))
    return (rng.categorical([max(a - b, 0) for a, b in zip(p, q, strict=True)]),)


def crash_past_horizon(target, draft, prefix, rng):
    """Right for one token, but raises when two rows after it tie: a crash is a crash."""
    x = rng.categorical(target(prefix))
    q, p = draft((*prefix, x)), target((*prefix, x))
    if not p[0] < q[0] and not p[0] > q[0]:
        raise ZeroDivisionError("tied rows")
    return (x, rng.categorical(p))


# ---- fast subset ----------------------------------------------------------------------

def test_chain_gamma1_is_proved_for_context_dependent_models():
    result = prove_step(chain1, 2, 2)
    assert result.proved and result.status == "proved"
    assert result.states == 3  # (), (0,), (1,)
    assert result.cross_checks > 0  # the symbolic law was compared with the engine's
    assert "PROVED for every pair of context-dependent models" in str(result)
    _numeric_agrees(chain1, 2, 2)


def test_draft_only_is_refuted_with_a_bias_formula():
    result = prove_step(draft_only, 2, 1)
    assert result.status == "refuted"
    ref = result.refutation
    assert ref is not None and ref.crash is None
    assert ref.prefix == () and len(ref.sequence) == 1
    assert "p[]_0" in str(ref.bias) or "q[]_0" in str(ref.bias)
    _confirmed(draft_only, result)


def test_a_decode_that_differs_elsewhere_than_the_state_says_so():
    import dataclasses

    ref = prove_step(draft_only, 2, 1).refutation
    assert ref is not None and ref.first == ref.prefix + ref.sequence
    assert "first differs at" not in ref.describe()
    other = (1 - ref.sequence[0],)
    moved = dataclasses.replace(ref, first=other)
    assert (f"the decode's joint law first differs at ({other[0]},), not at "
            f"({ref.sequence[0]},)") in moved.describe()


def test_a_context_bug_is_refuted_where_context_free_models_see_nothing():
    result = prove_step(shifted_context, 2, 2)
    ref = result.refutation
    assert ref is not None
    # The bug is at the state after one token; its witness rows depend on the context.
    assert ref.prefix in {(0,), (1,)}
    assert ref.target_rows[()] != ref.target_rows[ref.prefix]
    _confirmed(shifted_context, result)
    assert "first differing sequence" in str(result)


@pytest.mark.parametrize("name", ["bonus-from-residual", "stale-context-fallback"])
def test_catalogue_bugs_are_refuted_fast(name):
    step = _named(name)
    result = prove_step(step, 2, 2)
    assert result.status == "refuted"
    _confirmed(step, result)


@pytest.mark.slow
def test_paths_past_the_horizon_are_merged_and_the_verdict_does_not_change():
    # gamma = 3 verifies a third draft past a horizon of 2: merged, it costs the
    # regions of gamma = 2.
    g2 = prove_step(_named("chain-gamma2"), 2, 2)
    g3 = prove_step(_named("chain-gamma3"), 2, 2)
    assert g2.proved and g3.proved and g3.regions == g2.regions
    unmerged = prove_step(_named("chain-gamma2"), 2, 2, merge_subtrees=False)
    assert unmerged.proved and unmerged.regions > g2.regions
    # Merging only hides what is past the horizon.
    assert prove_step(second_token_unchecked, 2, 1).proved
    for merge in (True, False):
        result = prove_step(second_token_unchecked, 2, 2, merge_subtrees=merge)
        assert result.status == "refuted"
        _confirmed(second_token_unchecked, result)


@pytest.mark.parametrize("merge", [True, False])
def test_a_crash_past_the_horizon_is_never_merged_away(merge):
    result = prove_step(crash_past_horizon, 2, 1, merge_subtrees=merge)
    assert result.status == "refuted"
    assert result.refutation is not None and result.refutation.crash is not None
    _confirmed(crash_past_horizon, result)


def one_hot_draft(target, draft, prefix, rng):
    """Right: a deterministic draft of token 0, accepted with probability p[0]."""
    p = target(prefix)
    if rng.random() < p[0]:
        return (0,)
    return (rng.categorical([0, *p[1:]]),)


def test_an_equality_on_one_coordinate_forces_the_others_to_zero():
    # p[]_2 == 1 forces p[]_0 = p[]_1 = 0 on the simplex: the bias p[]_1 there is 0
    # (a blind review found this step undecided at V = 3).
    assert prove_step(one_hot_draft, 3, 1).proved


def test_code_that_sniffs_types_is_undecided_not_proved():
    with pytest.raises(Undecided, match="behaves differently on symbolic values"):
        prove_step(type_sniffing, 2, 1)


def test_a_stateful_step_is_unsupported():
    with pytest.raises(UnsupportedOperation, match="stateful"):
        prove_step(stateful, 2, 1)


def test_too_many_cases_is_undecided_never_proved():
    with pytest.raises(Undecided, match="max_cases=3"):
        prove_step(chain1, 2, 2, max_cases=3)


def test_bad_arguments_are_named():
    with pytest.raises(InvalidArgument, match="horizon"):
        prove_step(chain1, 2, 0)
    with pytest.raises(InvalidArgument, match="callable"):
        prove_step("chain", 2, 1)  # type: ignore[arg-type]


def test_json_of_a_refutation_keeps_exact_numbers():
    data = prove_step(draft_only, 2, 1).to_json()
    assert data["status"] == "refuted" and data["kind"] == "step"
    ref = data["refutation"]
    assert set(ref["witness"]) == {"target", "draft", "default"}
    assert all("/" in x or x in {"0", "1"} for x in ref["witness"]["target"][""])
    json.dumps(data)


def test_first_checks_the_empty_prefix_first_and_says_so():
    # Longest first: the draft-only bug is found at a state after one token, with the
    # decode's own bias formula.
    full = prove_step(draft_only, 2, 2, search_first=False)
    assert full.refutation is not None and len(full.refutation.prefix) == 1
    assert full.refutation.note is None
    quick = prove_step(draft_only, 2, 2, first=True, search_first=False)
    ref = quick.refutation
    assert ref is not None and ref.prefix == () and quick.states == 1
    assert ref.note is not None and "longer states were not checked" in ref.note
    _confirmed(draft_only, quick)
    # A right step is proved whatever the order.
    assert prove_step(chain1, 2, 2, first=True).proved


@pytest.mark.parametrize("step", [draft_only, shifted_context, second_token_unchecked,
                                  no_coin])
@pytest.mark.parametrize("horizon", [2, 3])
def test_a_witness_of_the_exact_engine_guides_the_refutation(step, horizon):
    guided = prove_step(step, 2, horizon)
    alone = prove_step(step, 2, horizon, search_first=False)
    assert guided.status == alone.status == "refuted"
    ref = guided.refutation
    assert ref is not None and ref.note is not None and "found first" in ref.note
    _confirmed(step, guided)
    # The report describes its own witness: it lies in the region, where the bias
    # formula is nonzero (a blind review found witnesses outside their region).
    assert all(_holds_at_witness(c, ref) for c in ref.region), ref.region_text()
    if ref.crash is None:
        assert _at_witness(ref.bias, ref) != 0


def _holds_at_witness(constraint, ref):
    import re

    def value(match):
        name, inside, token = match.group(1), match.group(2), int(match.group(3))
        prefix = tuple(int(t) for t in inside.split(",") if t)
        rows = ref.target_rows if name == "p" else ref.draft_rows
        return f"Fraction('{rows.get(prefix, ref.default)[token]}')"

    text = re.sub(r"\b([pq])\[([0-9,]*)\]_(\d+)", value, str(constraint))
    return eval(text, {"Fraction": Fraction})


def _at_witness(expr, ref):
    """A formula in p[prefix]_i, q[prefix]_i at the refutation's witness rows."""
    values = {}
    for symbol in expr.free_symbols:
        name, rest = str(symbol).split("[", 1)
        inside, token = rest.split("]_")
        prefix = tuple(int(t) for t in inside.split(",") if t)
        rows = ref.target_rows if name == "p" else ref.draft_rows
        values[symbol] = rows.get(prefix, ref.default)[int(token)]
    return expr.xreplace(values)


# ---- the CLI --------------------------------------------------------------------------

STEPS = "tests.symbolic.test_step_proofs"


def test_cli_proves_a_step(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", f"{STEPS}:chain1", "--kind", "step", "--vocab-size", "2",
                 "--horizon", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("PROVED for every pair of context-dependent models on 2 tokens")


def test_cli_refutes_a_step(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", f"{STEPS}:draft_only", "--kind", "step", "--vocab-size", "2",
                 "--horizon", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["status"] == "refuted"


def test_cli_reads_the_kind_from_the_signature(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", f"{STEPS}:draft_only", "--vocab-size", "2", "--horizon", "1"])
    assert code == 1
    assert "REFUTED" in capsys.readouterr().out


def test_cli_undecided_is_exit_2(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", f"{STEPS}:stateful", "--kind", "step", "--vocab-size", "2",
                 "--horizon", "1"])
    assert code == 2
    assert "could not decide" in capsys.readouterr().err


def test_cli_kind_and_signature_must_agree(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", "specexact.counterexamples.samplers:textbook", "--kind", "step",
                 "--vocab-size", "2", "--horizon", "1"])
    assert code == 2
    assert "--kind sampler" in capsys.readouterr().err


def test_cli_horizon_is_for_steps_only(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", "specexact.counterexamples.samplers:textbook", "--vocab-size", "2",
                 "--horizon", "2"])
    assert code == 2
    assert "--horizon is for decoding steps" in capsys.readouterr().err


# ---- the targets of issue 14 (slow) --------------------------------------------------

PROVED = [("chain-gamma1", 2, 2), ("chain-gamma1", 2, 3), ("chain-gamma2", 2, 2),
          ("chain-gamma2", 2, 3), ("chain-gamma3", 2, 2), ("chain-gamma3", 2, 3),
          ("chain-gamma1", 3, 2), ("chain-gamma2", 3, 2), ("chain-gamma3", 3, 2),
          ("block-verification", 2, 2)]
# block-no-ptau is wrong only from V = 3 on.
REFUTED = [("shared-uniform", 2, 2), ("stale-context-fallback", 2, 2),
           ("bonus-from-residual", 2, 2), ("block-no-ptau", 3, 2)]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "v", "horizon"), PROVED)
def test_issue_targets_proved(name, v, horizon):
    step = _named(name)
    result = prove_step(step, v, horizon)
    assert result.proved, str(result)
    _numeric_agrees(step, v, horizon, points=3)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "v", "horizon"), REFUTED)
def test_issue_targets_refuted(name, v, horizon):
    step = _named(name)
    result = prove_step(step, v, horizon)
    assert result.status == "refuted"
    _confirmed(step, result)
    if v == 2:  # region by region too, without the exact engine's witness first
        alone = prove_step(step, v, horizon, search_first=False)
        assert alone.status == "refuted"
        _confirmed(step, alone)


def test_cli_first_on_a_step(capsys):
    from specexact.frontends.cli import main

    code = main(["prove", f"{STEPS}:draft_only", "--vocab-size", "2", "--horizon", "2",
                 "--first"])
    out = capsys.readouterr().out
    assert code == 1
    assert "state: prefix () (the first step)" in out
    assert "found first by the exact engine" in out
    code = main(["prove", f"{STEPS}:draft_only", "--vocab-size", "2", "--horizon", "2",
                 "--uniform-bits", "8"])
    assert code == 2
    assert "--uniform-bits applies to sampler proofs" in capsys.readouterr().err
