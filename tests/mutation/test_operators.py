"""The mutation operators: where each bug class is planted, and that the rest of the
source (formatting, comments) is left as it was."""

from __future__ import annotations

import textwrap

import pytest

from specexact.errors import InvalidArgument
from specexact.mutation import OPERATORS, find_mutants, get_operators

TEXTBOOK = textwrap.dedent('''\
    def residual(p, q):
        return [max(a - b, 0) for a, b in zip(p, q)]


    def unrelated(p):
        return [x / sum(p) for x in p]


    def textbook(p, q, rng):
        x = rng.categorical(q)  # the draft
        if rng.random() < min(1, p[x] / q[x]):
            return x
        r = residual(p, q)
        total = sum(r)
        return rng.categorical([w / total for w in r])
''')


def changes(source, function, names=None):
    """(operator, line, removed lines, added lines) of each mutant."""
    found = []
    for mutant in find_mutants(source, function, path="s.py",
                               operators=get_operators(names) if names else None):
        lines = mutant.diff.splitlines()[2:]
        found.append((mutant.operator, mutant.line,
                      [x[1:].strip() for x in lines if x.startswith("-")],
                      [x[1:].strip() for x in lines if x.startswith("+")]))
    return found


def test_every_bug_class_of_a_textbook_sampler_and_its_helpers():
    found = changes(TEXTBOOK, "textbook")
    assert [(op, line) for op, line, _, _ in found] == [
        ("residual-to-target", 2), ("clamp-floor", 2), ("lt-to-le", 11),
        ("ratio-unclamped", 11), ("ratio-to-one", 11), ("accept-if-p-ge-q", 11),
        ("normalisation-dropped", 15)]
    added = {op: new[0] for op, _, _, new in found}
    assert added["residual-to-target"] == "return [a for a, b in zip(p, q)]"
    assert added["clamp-floor"] == "return [max(a - b, 1e-6) for a, b in zip(p, q)]"
    assert added["lt-to-le"] == "if rng.random() <= min(1, p[x] / q[x]):"
    assert added["ratio-unclamped"] == "if rng.random() < p[x] / q[x]:"
    assert added["ratio-to-one"] == "if rng.random() < 1:"
    assert added["accept-if-p-ge-q"] == "if p[x] >= q[x]:"
    assert added["normalisation-dropped"] == "return rng.categorical([w for w in r])"


def test_the_rest_of_the_file_is_untouched():
    for mutant in find_mutants(TEXTBOOK, "textbook"):
        kept = [a for a, b in zip(TEXTBOOK.splitlines(), mutant.source.splitlines(),
                                  strict=True) if a == b]
        assert len(kept) == len(TEXTBOOK.splitlines()) - 1, mutant.diff
        assert "# the draft" in mutant.source
        assert "def unrelated(p):\n    return [x / sum(p) for x in p]" in mutant.source


def test_a_uniform_is_followed_through_names_and_the_other_comparisons_are_left():
    source = textwrap.dedent('''\
        def step(p, q, rng):
            u = rng.random()
            threshold = u * q[0]
            if len(p) < 3:
                return 0
            if threshold > p[0]:
                return 1
            return 2
    ''')
    assert [(op, line) for op, line, _, _ in changes(source, "step", ["lt-to-le",
                                                                      "le-to-lt"])] == \
        [("lt-to-le", 6)]


def test_torch_kernel_sites():
    source = textwrap.dedent('''\
        import torch

        def verify(draft_ids, draft_probs, target_probs):
            b, k = draft_ids.shape
            uniform_probs = torch.rand(b, k, dtype=torch.float64)
            for i in range(k):
                r = torch.clamp(target_probs[0, i] - draft_probs[0, i], min=0)
                r = (target_probs[0, i] - draft_probs[0, i]).clamp(min=0)
                s = r / r.sum()
            bonus = torch.multinomial(target_probs[:, k], 1)
            last = target_probs[:, -1]
            if (draft_ids == -1).any():
                return None
            return uniform_probs, s, bonus, last
    ''')
    added = {(op, line): new[0] for op, line, _, new in changes(source, "verify")}
    assert added[("shared-uniform", 5)] == \
        "uniform_probs = torch.rand(1, dtype=torch.float64).expand(b, k)"
    assert added[("residual-to-target", 7)] == "r = target_probs[0, i]"
    assert added[("clamp-floor", 8)] == \
        "r = (target_probs[0, i] - draft_probs[0, i]).clamp(min=1e-6)"
    assert added[("normalisation-dropped", 9)] == "s = r"
    # the loop's own index is a position, not the bonus row: only k and -1 move
    assert added[("bonus-off-by-one", 10)] == \
        "bonus = torch.multinomial(target_probs[:, k - 1], 1)"
    assert added[("bonus-off-by-one", 11)] == "last = target_probs[:, -2]"
    assert added[("padding-as-token", 12)] == "if (draft_ids != draft_ids).any():"
    assert not any(op == "bonus-off-by-one" and line == 7 for op, line in added)


def test_a_uniform_drawn_in_a_loop_is_hoisted_out_of_it():
    source = textwrap.dedent('''\
        def chain(target, draft, prefix, rng):
            out = []
            for i in range(3):
                u = rng.random()
                out.append(u)
            return tuple(out)
    ''')
    (mutant,) = find_mutants(source, "chain", operators=get_operators(["shared-uniform"]))
    assert "    u = rng.random()\n    for i in range(3):\n        out.append(u)" \
        in mutant.source


def test_a_processor_applied_to_both_sides_is_dropped_from_each_in_turn():
    source = textwrap.dedent('''\
        def step(p, q, rng, temperature):
            p = apply_temperature(p, temperature)
            q = apply_temperature(q, temperature)
            return p, q
    ''')
    found = changes(source, "step", ["processor-one-side"])
    assert [(line, new) for _, line, _, new in found] == [(2, ["p = p"]), (3, ["q = q"])]


def test_methods_and_wrong_names():
    source = "class S:\n    def run(self, p, q, rng):\n        return rng.random() < p[0]\n"
    (mutant,) = find_mutants(source, "S.run", operators=get_operators(["lt-to-le"]))
    assert mutant.id == "M1" and mutant.location == "<source>:3"
    with pytest.raises(InvalidArgument, match=r"no function 'S\.rn'"):
        find_mutants(source, "S.rn")
    with pytest.raises(InvalidArgument, match="did you mean 'lt-to-le'"):
        get_operators(["lt-to-lee"])
    with pytest.raises(InvalidArgument, match="not valid Python"):
        find_mutants("def f(:\n", "f")


def test_every_operator_names_catalogue_rules_that_exist():
    from specexact.counterexamples.catalogue import catalogue

    names = {entry.name for entry in catalogue()}
    for op in OPERATORS:
        assert op.rules and set(op.rules) <= names, op
