"""Float mode: judge float code exactly and split its error into rounding and structure.

The sampler runs up to three times, each run enumerated exactly:

1. ``exact``: on the exact inputs with a continuous uniform.  Any deviation
   from p here is *structural*: it is in the rule, not in the arithmetic.
2. ``grid`` (when ``uniform_bits=K``): exact inputs, ``rng.random()`` on the
   grid {k / 2**K}.  What changes from run 1 is grid-level rounding.
3. ``float`` (unless ``fmt=None``): the nearest floats of p and q, as Python
   floats or numpy arrays, with the uniform of run 2.  Every float the code
   produces is still judged by its exact binary value.

The chain p -> exact -> grid -> float splits the deviation.  Rounding alone
passes when it stays within a tolerance stated from the float format and the
grid; mass on tokens with p = 0 and ids outside the vocabulary fail whatever
their size.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, final

from specexact.distribution import Distribution, total_variation
from specexact.errors import InvalidArgument, SamplerFailure, Undecided
from specexact.exact.engine import Sampler, enumerate_law
from specexact.exact.random_source import check_uniform_bits
from specexact.exact.tree import Budget
from specexact.exact.verdict import compare_laws, tokens_only
from specexact.floats.scalars import exact_inputs, float_casts, numpy_module
from specexact.numbers import as_weights, check_same_vocabulary
from specexact.tables import exact_text, render_table, signed
from specexact.validation import check_type, fail
from specexact.witness import law_json

__all__ = [
    "FORMATS",
    "Finding",
    "FloatVerdict",
    "check_float_options",
    "check_floats",
    "check_grid",
    "float_tolerance",
    "grid_tolerance",
    "law_findings",
]

#: Unit roundoff of each supported float format.
FORMATS: dict[str, Fraction] = {"float64": Fraction(1, 2**53), "float32": Fraction(1, 2**24)}

Run = Literal["exact", "grid", "float"]
Kind = Literal["crash", "invalid", "support", "structural", "rounding-excess"]
_SEVERITY_ORDER: tuple[str, ...] = ("crash", "invalid", "support", "structural",
                                    "rounding-excess")


def float_tolerance(vocab_size: int, fmt: str) -> Fraction:
    """The stated bound on the TV that float rounding alone may cause: ``4 (V + 2) u``.

    ``u`` is the unit roundoff (2**-53 for float64, 2**-24 for float32).  The
    textbook rule rounds each input once, each ratio and residual entry once,
    and sums V entries a couple of times; each of these moves at most about
    ``V u`` of probability, so a correct float implementation stays well
    inside this bound while any deviation larger than it is not rounding.
    """
    return 4 * (vocab_size + 2) * _unit(fmt)


def grid_tolerance(vocab_size: int, uniform_bits: int) -> Fraction:
    """The stated bound on grid-level rounding: ``(V + 1) 2**-K``.

    On the grid each comparison of the uniform with a threshold shifts that
    comparison's probability by less than 2**-K; a run compares one uniform
    with at most about V thresholds (an inverse-CDF walk), plus the test.
    """
    return Fraction(vocab_size + 1, 2**uniform_bits)


def _unit(fmt: str) -> Fraction:
    try:
        return FORMATS[fmt]
    except (KeyError, TypeError):
        msg = f"fmt={fmt!r} is not a supported float format; valid: {sorted(FORMATS)} or None"
        raise InvalidArgument(msg) from None


@final
@dataclass(frozen=True)
class Finding:
    """One reason a float-mode check fails.

    ``kind`` is ``"crash"``, ``"invalid"`` (ids outside the vocabulary or
    non-tokens), ``"support"`` (mass on tokens with p = 0), ``"structural"``
    or ``"rounding-excess"``; ``run`` names the run that showed it and
    ``mass`` the probability (or TV) involved.
    """

    kind: Kind
    run: Run
    mass: Fraction
    message: str
    crash: SamplerFailure | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "run": self.run, "mass": str(self.mass),
                "message": self.message}


def _fraction_text(x: Fraction) -> str:
    return str(x) if x == 0 or x.denominator < 10**12 else f"~{float(x):.3g}"


def _approx(x: Fraction) -> str:
    """A Fraction for people: exact when short, with its decimal value."""
    if x == 0:
        return "0"
    if x.denominator < 10**6:
        return f"{x} ~ {float(x):.3g}"
    return f"~{float(x):.3g}"


def _law_json(law: Distribution | None) -> dict[str, str] | None:
    return None if law is None else law_json(law)


@final
@dataclass(frozen=True)
class FloatVerdict:
    """The float/grid-mode verdict on one exact (p, q).  See the module docstring.

    ``passed`` is True only when every run completed, no run put mass on a
    token with p = 0 or outside the vocabulary, the exact run equals p, and
    the rounding part is within ``grid_tolerance + float_tolerance``.
    """

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    fmt: str | None
    arrays: bool
    uniform_bits: int | None
    p_float: tuple[float, ...] | None
    q_float: tuple[float, ...] | None
    exact_law: Distribution | None
    grid_law: Distribution | None
    float_law: Distribution | None
    grid_tolerance: Fraction
    float_tolerance: Fraction
    findings: tuple[Finding, ...]
    float_casts: tuple[str, ...] = ()
    #: What the rows p and q summed to as given (float rows rarely sum to exactly
    #: 1); ``p`` and ``q`` are their normalisations, the laws they stand for.
    given_sums: tuple[Fraction, Fraction] = (Fraction(1), Fraction(1))
    structural_tv: Fraction = field(init=False)
    grid_tv: Fraction = field(init=False)
    float_tv: Fraction = field(init=False)
    rounding_tv: Fraction = field(init=False)
    total_tv: Fraction = field(init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        target = Distribution.from_probabilities(self.p)
        exact, grid, flt = self.exact_law, self.grid_law, self.float_law
        set_(self, "structural_tv", _tv(exact, target))
        set_(self, "grid_tv", _tv(grid, exact))
        set_(self, "float_tv", _tv(flt, grid if self.uniform_bits is not None else exact))
        set_(self, "rounding_tv", _tv(self.actual, exact))
        set_(self, "total_tv", _tv(self.actual, target))

    @property
    def actual(self) -> Distribution | None:
        """The law of the most realistic run: float, else grid, else exact."""
        for law, wanted in ((self.float_law, self.fmt is not None),
                            (self.grid_law, self.uniform_bits is not None)):
            if wanted:
                return law
        return self.exact_law

    @property
    def tolerance(self) -> Fraction:
        """The stated bound on the rounding part: grid plus float tolerance."""
        return self.grid_tolerance + self.float_tolerance

    @property
    def severity(self) -> str:
        """The worst finding's kind, or ``"rounding"`` / ``"exact"`` for a pass."""
        kinds = {f.kind for f in self.findings}
        for kind in _SEVERITY_ORDER:
            if kind in kinds:
                return kind
        return "rounding" if self.rounding_tv else "exact"

    @property
    def passed(self) -> bool:
        return not self.findings

    @property
    def expected(self) -> Distribution:
        """The target: p."""
        return Distribution.from_probabilities(self.p)

    @property
    def tv(self) -> Fraction:
        """TV(actual, p): the whole deviation, rounding included."""
        return self.total_tv

    @property
    def reason(self) -> str:
        """What the worst finding is, in the run it showed in ('' for a pass)."""
        sev = self.severity
        first = next((f for f in self.findings if f.kind == sev), None)
        return "" if first is None else f"{sev} in the {first.run} run: {first.message}"

    @property
    def crash(self) -> None:
        """Crashes are findings here (kind "crash"), listed by :meth:`format`."""
        return None

    @property
    def mode(self) -> str:
        parts = []
        if self.fmt is not None:
            parts.append(f"{self.fmt} {'numpy arrays' if self.arrays else 'Python floats'}")
        else:
            parts.append("exact inputs")
        parts.append(f"{self.uniform_bits}-bit grid uniform" if self.uniform_bits is not None
                     else "continuous uniform")
        return ", ".join(parts)

    def headline(self) -> str:
        sev = self.severity
        if sev == "exact":
            return f"PASS (exact): no deviation at all [{self.mode}]"
        if sev == "rounding":
            return (f"PASS (rounding only): rounding TV {_approx(self.rounding_tv)} <= "
                    f"tolerance {_approx(self.tolerance)}; no structural deviation "
                    f"[{self.mode}]")
        first = next(f for f in self.findings if f.kind == sev)
        return f"FAIL ({sev}, {first.run} run): {first.message} [{self.mode}]"

    def format(self) -> str:
        """Headline, the split of the deviation, every finding, and the laws."""
        lines = [self.headline(),
                 f"  structural (exact inputs, continuous uniform): TV = "
                 f"{_approx(self.structural_tv)}"]
        if self.uniform_bits is not None:
            lines.append(f"  grid rounding ({self.uniform_bits}-bit uniform): TV = "
                         f"{_approx(self.grid_tv)}  (tolerance {_approx(self.grid_tolerance)})")
        if self.fmt is not None:
            lines.append(f"  float rounding ({self.fmt} inputs): TV = {_approx(self.float_tv)}"
                         f"  (tolerance {_approx(self.float_tolerance)})")
        lines.append(f"  total: TV(actual, p) = {_approx(self.total_tv)}")
        for f in self.findings:
            lines.append(f"  [{f.kind}] {f.run} run: {f.message}")
            if f.crash is not None:
                lines.extend("    " + line for line in str(f.crash).splitlines())
        for name, total in zip(("p", "q"), self.given_sums, strict=True):
            if total != 1:
                lines.append(f"  note: {name} as given sums to {exact_text(total)}, not 1: "
                             f"judged against {name} / sum({name}), the law it stands for; "
                             "the float run gets the row as given, the exact runs its "
                             "normalisation")
        if self.float_casts:
            lines.append("  note: the exact run converted exact values to float "
                         f"({'; '.join(self.float_casts[:3])})")
        lines.append(self.table())
        return "\n".join(lines)

    __str__ = format

    def table(self, *, verbose: bool = True) -> str:
        """token | p | q | exact run | deviations of the later runs (approximate); never
        cut (``verbose`` is accepted for the common verdict protocol)."""
        header = ["token", "p", "q", "exact run - p"]
        laws: list[tuple[str, Distribution | None, Distribution | None]] = []
        if self.uniform_bits is not None:
            header.append("grid - exact")
            laws.append(("grid", self.grid_law, self.exact_law))
        if self.fmt is not None:
            header.append("float - " + ("grid" if self.uniform_bits is not None else "exact"))
            laws.append(("float", self.float_law,
                         self.grid_law if self.uniform_bits is not None else self.exact_law))
        keys: list[Hashable] = list(range(len(self.p)))
        for law in (self.exact_law, self.grid_law, self.float_law):
            for k in law or ():
                if k not in keys:
                    keys.append(k)
        rows: list[list[str]] = []
        for k in keys:
            inside = isinstance(k, int) and 0 <= k < len(self.p)
            i = k if isinstance(k, int) and inside else 0
            pk = self.p[i] if inside else Fraction(0)
            row = [str(k) if inside else f"{k!r} (not a token)",
                   str(pk) if inside else "", str(self.q[i]) if inside else "",
                   _cell(self.exact_law, None, k, pk)]
            for _, law, base in laws:
                row.append(_cell(law, base, k, Fraction(0)))
            rows.append(row)
        return render_table(header, rows)

    def to_json(self) -> dict[str, Any]:
        """Plain data; every Fraction as a string such as ``"3/10"``."""
        return {
            "passed": self.passed, "severity": self.severity, "mode": self.mode,
            "fmt": self.fmt, "arrays": self.arrays, "uniform_bits": self.uniform_bits,
            "p": [str(x) for x in self.p], "q": [str(x) for x in self.q],
            "p_float": None if self.p_float is None else [repr(x) for x in self.p_float],
            "q_float": None if self.q_float is None else [repr(x) for x in self.q_float],
            "structural_tv": str(self.structural_tv), "grid_tv": str(self.grid_tv),
            "float_tv": str(self.float_tv), "rounding_tv": str(self.rounding_tv),
            "total_tv": str(self.total_tv),
            "grid_tolerance": str(self.grid_tolerance),
            "float_tolerance": str(self.float_tolerance),
            "tolerance": str(self.tolerance),
            "findings": [f.to_json() for f in self.findings],
            "float_casts": list(self.float_casts),
            "given_sums": [str(x) for x in self.given_sums],
            "exact_law": _law_json(self.exact_law), "grid_law": _law_json(self.grid_law),
            "float_law": _law_json(self.float_law),
        }


def _cell(law: Distribution | None, base: Distribution | None, k: Hashable,
          expected: Fraction) -> str:
    if law is None:
        return "-"
    ref = base.prob(k) if base is not None else expected
    diff = law.prob(k) - ref
    return signed(diff) if diff.denominator < 10**9 else f"{float(diff):+.3g}"


def _tv(a: Distribution | None, b: Distribution | None) -> Fraction:
    return Fraction(0) if a is None or b is None else total_variation(a, b)


# --------------------------------------------------------------------------
# Running and judging
# --------------------------------------------------------------------------


def _float_inputs(p: Sequence[Fraction], q: Sequence[Fraction], fmt: str, arrays: bool
                  ) -> tuple[tuple[float, ...], tuple[float, ...], Callable[[], tuple[Any, Any]]]:
    """The floats handed to the sampler, and a factory of fresh copies per execution."""
    pf = tuple(float(x) for x in p)  # float(Fraction) rounds correctly
    qf = tuple(float(x) for x in q)
    if not arrays:
        return pf, qf, lambda: (list(pf), list(qf))
    np = numpy_module("float mode with arrays=True")
    pa = np.array(pf, dtype=fmt)
    qa = np.array(qf, dtype=fmt)
    # What the code really receives (float32 rounds again).
    pf = tuple(float(x) for x in pa)
    qf = tuple(float(x) for x in qa)
    return pf, qf, lambda: (pa.copy(), qa.copy())


def _law(sampler: Sampler, make: Callable[[], tuple[Any, Any]], *, run: Run,
         uniform_bits: int | None, budget: Budget | None, context: dict[str, Any]
         ) -> tuple[Distribution | None, SamplerFailure | None]:
    def execute(rng: Any) -> Any:
        p, q = make()
        return sampler(p, q, rng)

    try:
        return enumerate_law(execute, budget=budget, uniform_bits=uniform_bits,
                             context={**context, "run": run}), None
    except SamplerFailure as failure:
        return None, failure


def law_findings(law: Distribution | None, run: Run, p: tuple[Fraction, ...]
                 ) -> list[Finding]:
    """The findings no rounding explains in one run's law: invalid ids, mass where p = 0."""
    if law is None:
        return []
    target = Distribution.from_probabilities(p)
    c = compare_laws(target, tokens_only(law), len(p))
    out = []
    if c.invalid_mass:
        shown = ", ".join(repr(o) for o in c.invalid_outcomes[:3])
        out.append(Finding("invalid", run, c.invalid_mass,
                           f"mass {_fraction_text(c.invalid_mass)} on values that are not "
                           f"tokens of the vocabulary 0..{len(p) - 1} ({shown})"))
    if c.support_violation:
        tokens = [k for k in law if isinstance(k, int) and 0 <= k < len(p) and not p[k]]
        out.append(Finding("support", run, c.support_violation,
                           f"mass {_fraction_text(c.support_violation)} on tokens where "
                           f"p = 0 ({', '.join(map(str, tokens))})"))
    return out


def check_floats(sampler: Sampler, p: Sequence[Any], q: Sequence[Any], *,
                 fmt: str | None = "float64", arrays: bool = False,
                 uniform_bits: int | None = None, budget: Budget | None = None,
                 float_tolerance: Fraction | None = None,
                 grid_tolerance: Fraction | None = None) -> FloatVerdict:
    """Judge ``sampler`` on float inputs, splitting its deviation from p.

    ``p`` and ``q`` are the exact target and draft, or float rows as an
    engine has them, which need not sum to exactly 1 (within 2^-10 of it):
    such a row is judged against its own normalisation, the exact runs get
    that normalisation, the float run the row as given, and the verdict says
    so (``given_sums``).  The float run hands the sampler their nearest
    floats: Python floats, or numpy arrays of ``fmt`` (``"float64"`` or
    ``"float32"``) with ``arrays=True``.  ``fmt=None``
    skips the float run (see :func:`check_grid`).  ``uniform_bits=K`` models
    ``rng.random()`` as the K-bit grid in the grid and float runs.

    Returns a :class:`FloatVerdict`.  Raises :class:`~specexact.errors.Undecided`
    when no verdict is possible: budget, hidden randomness, or code that only
    fails on exact values / casts them to float so that rounding and
    structure cannot be told apart.

    >>> def textbook(p, q, rng):
    ...     x = rng.categorical(q)
    ...     if rng.random() < p[x] / q[x]:
    ...         return x
    ...     return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
    >>> check_floats(textbook, ["1/5", "1/2", "3/10"], ["1/2", "3/10", "1/5"]).severity
    'rounding'
    """
    p_given, pf = as_weights(p, name="p")
    q_given, qf = as_weights(q, name="q")
    check_same_vocabulary(pf, qf)
    check_float_options(fmt, arrays, uniform_bits)
    vocab = len(pf)
    f_tol = Fraction(0) if fmt is None else (
        _check_tolerance(float_tolerance, "float_tolerance")
        if float_tolerance is not None else _default_float_tolerance(vocab, fmt))
    g_tol = Fraction(0) if uniform_bits is None else (
        _check_tolerance(grid_tolerance, "grid_tolerance")
        if grid_tolerance is not None else _default_grid_tolerance(vocab, uniform_bits))
    context: dict[str, Any] = {"p": pf, "q": qf}

    make_exact = exact_inputs(pf, qf, arrays=arrays)
    with float_casts() as casts:
        exact_law, exact_crash = _law(sampler, make_exact, run="exact", uniform_bits=None,
                                      budget=budget, context=context)
        grid_law = grid_crash = None
        if uniform_bits is not None:
            grid_law, grid_crash = _law(sampler, make_exact, run="grid",
                                        uniform_bits=uniform_bits, budget=budget,
                                        context=context)
    p_float = q_float = None
    float_law = float_crash = None
    if fmt is not None:
        p_float, q_float, make_float = _float_inputs(p_given, q_given, fmt, arrays)
        float_law, float_crash = _law(sampler, make_float, run="float",
                                      uniform_bits=uniform_bits, budget=budget,
                                      context={**context, "p_float": p_float,
                                               "q_float": q_float})

    verdict_casts = tuple(casts)
    findings = _judge(pf, [("exact", exact_law, exact_crash), ("grid", grid_law, grid_crash),
                           ("float", float_law, float_crash)],
                      fmt=fmt, casts=verdict_casts, tolerance=f_tol + g_tol)
    return FloatVerdict(pf, qf, fmt, arrays, uniform_bits, p_float, q_float, exact_law,
                        grid_law, float_law, g_tol, f_tol, tuple(findings), verdict_casts,
                        (sum(p_given, Fraction(0)), sum(q_given, Fraction(0))))


def _judge(p: tuple[Fraction, ...],
           runs: list[tuple[Run, Distribution | None, SamplerFailure | None]], *,
           fmt: str | None, casts: tuple[str, ...], tolerance: Fraction) -> list[Finding]:
    """The findings of the runs, worst first; raise Undecided when no verdict is possible."""
    laws = {run: law for run, law, _ in runs}
    crashes = [(run, crash) for run, _, crash in runs if crash is not None]
    if fmt is not None and crashes and crashes[0][0] != "float" \
            and laws["float"] is not None:
        # The float code ran; only the exact stand-ins failed.  That says
        # nothing about the sampler, so there is no verdict.
        run, crash = crashes[0]
        msg = (f"the sampler runs on float inputs but fails on exact ones ({run} run: "
               f"{str(crash).splitlines()[0]}); rounding cannot be separated from "
               "structure for this code")
        raise Undecided(msg) from crash
    findings = [Finding("crash", run, Fraction(0),
                        f"the sampler raised on valid input: {str(crash).splitlines()[0]}",
                        crash) for run, crash in crashes]
    for run, law, _ in runs:
        findings.extend(law_findings(law, run, p))
    target = Distribution.from_probabilities(p)
    exact = laws["exact"]
    if exact is not None and exact != target:
        tv = total_variation(exact, target)
        if casts and not findings \
                and tv <= max(tolerance, _default_float_tolerance(len(p), "float32")):
            msg = (f"the exact run deviates from p by TV {_approx(tv)}, but the code "
                   f"converted exact values to float ({casts[0]}), so that deviation "
                   "may be rounding; no verdict (let the code keep its inputs' types)")
            raise Undecided(msg)
        findings.append(Finding("structural", "exact", tv,
                                f"biased with exact inputs: TV(exact run, p) = {_approx(tv)}"))
    last: Run = "float" if fmt is not None else "grid"
    actual = laws[last]
    if actual is not None and exact == target:
        rounding = total_variation(actual, target)
        if rounding > tolerance:
            findings.append(Finding(
                "rounding-excess", last, rounding,
                f"rounding TV {_approx(rounding)} exceeds the stated tolerance "
                f"{_approx(tolerance)}: more than float/grid rounding explains"))
    findings.sort(key=lambda f: _SEVERITY_ORDER.index(f.kind))
    return findings


def check_float_options(fmt: Any, arrays: Any, uniform_bits: Any) -> None:
    """Check the options of a float-mode run (``check_floats``, ``search_floats``)."""
    if uniform_bits is not None:
        check_uniform_bits(uniform_bits)
    check_type(arrays, "arrays", bool, "True or False")
    if fmt is not None:
        _unit(fmt)
        if fmt != "float64" and not arrays:
            fail("fmt", fmt, "'float64' unless arrays=True (Python floats are float64)")
    elif arrays:
        fail("arrays", arrays, "False without a float format (fmt='float64' or 'float32')")


def _check_tolerance(value: Any, name: str) -> Fraction:
    valid = "a nonnegative Fraction (or int)"
    check_type(value, name, (int, Fraction), valid)
    if value < 0:
        fail(name, value, valid)
    return Fraction(value)


def check_grid(sampler: Sampler, p: Sequence[Any], q: Sequence[Any], *, uniform_bits: int,
               budget: Budget | None = None,
               grid_tolerance: Fraction | None = None) -> FloatVerdict:
    """Exact inputs, ``rng.random()`` on the K-bit grid; grid rounding is not structure.

    >>> def inclusive(p, q, rng):      # accepts p(x) = 0 when u is exactly 0
    ...     x = rng.categorical(q)
    ...     if rng.random() <= p[x] / q[x]:
    ...         return x
    ...     return rng.categorical([max(a - b, 0) for a, b in zip(p, q)])
    >>> check_grid(inclusive, ["1/2", "1/2", "0"], ["0", "0", "1"], uniform_bits=24).severity
    'support'
    """
    return check_floats(sampler, p, q, fmt=None, uniform_bits=uniform_bits, budget=budget,
                        grid_tolerance=grid_tolerance)



# The keyword arguments of check_floats shadow these names inside it.
_default_float_tolerance = float_tolerance
_default_grid_tolerance = grid_tolerance
