"""The verdict on torch code: which semantics it used, and each finding's class.

A finding is classified by running the code in both semantics
(:func:`classify`):

* ``structural``: the exact run (exact rationals, continuous uniform) deviates
  and so does the dtype run;
* ``float-only``: only the dtype run deviates: it is reachable only through the
  dtype's rounding, and the witness is the rows as the dtype's values;
* ``exact-only``: the exact run puts mass where p = 0 (or crashes) and the dtype
  run, on the same rows in the dtype, is clean with no mass there: a deviation
  the dtype cannot produce.  A note, not a FAIL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import torch

from specexact.distribution import Distribution
from specexact.floats.check import Finding, FloatVerdict
from specexact.torch.rows import dtype_rows, torch_dtype

__all__ = ["CLASSES", "TorchVerdict", "classify", "dtype_witness_rows"]

#: The classes of a finding, and what each means.
CLASSES: dict[str, str] = {
    "structural": "shows in exact arithmetic and in the dtype",
    "float-only": "reachable only through the dtype's rounding",
    "exact-only": "an exact-arithmetic deviation the dtype does not produce: a note, "
                  "not a FAIL",
}


def _zero_mass_where_p_is_zero(law: Distribution, p: tuple[Fraction, ...]) -> bool:
    return all(not (isinstance(t, int) and 0 <= t < len(p) and not p[t] and w)
               for t, w in law.items())


def classify(exact: list[Finding], dtype: list[Finding], dtype_law: Distribution | None,
             p: tuple[Fraction, ...], semantics: str | None
             ) -> tuple[str | None, list[Finding], list[str]]:
    """The class of the verdict's findings, the findings that fail it, and notes.

    Only a dtype-semantics run classifies (``semantics == "dtype"``); otherwise
    every finding fails, unclassified.
    """
    if semantics != "dtype":
        return None, [*exact, *dtype], []
    if exact and dtype:
        return "structural", [*exact, *dtype], []
    if dtype:
        return "float-only", list(dtype), []
    if not exact:
        return None, [], []
    decisive = any(f.kind in ("support", "crash") for f in exact)
    if decisive and dtype_law is not None and _zero_mass_where_p_is_zero(dtype_law, p):
        notes = [f"exact-only ({CLASSES['exact-only']}): {f.message}" for f in exact]
        return "exact-only", [], notes
    return "structural", list(exact), []


def _row_text(row: tuple[Fraction, ...], dtype: torch.dtype) -> str:
    total = sum(row, Fraction(0))
    values = ", ".join(repr(float(x)) for x in row)
    return f"[{values}] ({dtype}, sum {float(total)!r}{'' if total == 1 else ' != 1'})"


def dtype_witness_rows(p: Sequence[Fraction], q: Sequence[Fraction], dtype: str
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
    """An exact witness's p and q as a dtype run receives them: the values (as Python
    floats, exact for every torch float dtype), their sum, and a line of text."""
    tdtype = torch_dtype(dtype)
    out = []
    for name, row in (("p", p), ("q", q)):
        stored = dtype_rows([Fraction(x) for x in row], tdtype, f"the witness's {name}")
        total = sum(stored, Fraction(0))
        out.append({"values": [float(x) for x in stored], "sum": str(total),
                    "sums_to_one": total == 1, "text": _row_text(stored, tdtype)})
    return out[0], out[1]


@final
@dataclass(frozen=True)
class TorchVerdict:
    """A :class:`~specexact.floats.check.FloatVerdict` with the semantics it used.

    ``finding_class`` is one of :data:`CLASSES` (None when nothing was found or
    the run was not classified); ``rows`` are p and q as the dtype run received
    them; ``idealised`` says, in words, what the runs idealised (empty: nothing).
    """

    verdict: FloatVerdict
    semantics: str
    finding_class: str | None
    notes: tuple[str, ...]
    rows: tuple[tuple[Fraction, ...], tuple[Fraction, ...]]
    dtype: torch.dtype
    idealised: tuple[str, ...] = ()
    #: Certified: the TV between the dtype run's true law and the one computed.
    mass_error: Fraction = Fraction(0)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def severity(self) -> str:
        return self.verdict.severity

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.verdict.findings

    def __getattr__(self, name: str) -> Any:
        # The rest of FloatVerdict's reading API (laws, TVs, tolerances, table).
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.verdict, name)

    def semantics_line(self) -> str:
        if self.semantics == "dtype":
            return (f"semantics: dtype (values as torch {torch.__version__} computes them "
                    f"in {self.dtype} on this CPU, "
                    f"{torch.backends.cpu.get_cpu_capability()}; torch.rand on its grid)")
        return "semantics: exact (exact rationals; float rounding of the arithmetic not modelled)"

    def masses_line(self) -> str:
        if not self.idealised:
            return "masses: exact"
        text = "masses: exact, except (idealised) " + "; ".join(self.idealised)
        if self.mass_error:
            text += (f"; certified for the races: the dtype run's law is within TV "
                     f"{float(self.mass_error):.3g} of the one shown")
        return text

    def _mode(self, text: str) -> str:
        """FloatVerdict's bracketed mode, with what the dtype run received."""
        if self.semantics != "dtype":
            return text
        mode = self.verdict.mode
        return text.replace(f"[{mode}]", f"[{mode.replace('exact inputs', 'dtype semantics')}]")

    def headline(self) -> str:
        return self._mode(self.verdict.headline())

    def format(self) -> str:
        lines = self.verdict.format().splitlines()
        lines[0] = self._mode(lines[0])
        extra = [f"  {self.semantics_line()}", f"  {self.masses_line()}"]
        if self.finding_class is not None:
            extra.append(f"  class: {self.finding_class} ({CLASSES[self.finding_class]})")
        if self.semantics == "dtype":
            extra.append(f"  rows as the dtype run got them: p = "
                         f"{_row_text(self.rows[0], self.dtype)}")
            extra.append(f"                                  q = "
                         f"{_row_text(self.rows[1], self.dtype)}")
        extra.extend(f"  note: {n}" for n in self.notes)
        return "\n".join([lines[0], *extra, *lines[1:]])

    __str__ = format

    def to_json(self) -> dict[str, Any]:
        base = self.verdict.to_json() if hasattr(self.verdict, "to_json") else {}
        return {**base, "semantics": self.semantics, "class": self.finding_class,
                "notes": list(self.notes), "idealised": list(self.idealised),
                "mass_error": str(self.mass_error)}
