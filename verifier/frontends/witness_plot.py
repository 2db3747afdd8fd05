"""``--plot FILE``: the witness's law against p, the signed difference per token, and
the support violations marked; and the check of FILE made before anything runs."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from specexact.errors import InvalidArgument, MissingDependency
from specexact.validation import check_output_path

__all__ = ["check_plot_path", "plot_witness", "pyplot", "witness_laws"]

#: What matplotlib writes, by suffix (its savefig formats that need no extra backend).
SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def pyplot(purpose: str) -> Any:
    """matplotlib.pyplot on the Agg backend, or the error naming the ``plot`` extra."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency.of("matplotlib", purpose) from None
    return plt


def check_plot_path(path: str, option: str = "--plot") -> None:
    """Before anything is computed: :class:`OutputUnwritable` (exit 3) when ``path``
    cannot be written (its folder is missing or read-only, it is a folder), a usage
    error when its suffix is not an image format, and the install hint when matplotlib
    is missing."""
    if Path(path).is_dir():
        check_output_path(path, option)  # refused: it is a folder
    if Path(path).suffix.lower() not in SUFFIXES:
        msg = (f"{option} {path}: the file's suffix names its format; use one of "
               f"{', '.join(SUFFIXES)}")
        raise InvalidArgument(msg)
    check_output_path(path, option)
    pyplot(option)


def _fractions(law: Mapping[str, Any]) -> dict[str, Fraction]:
    return {str(k): Fraction(str(v)) for k, v in law.items()}


def witness_laws(payload: Mapping[str, Any]) -> tuple[dict[str, Fraction],
                                                      dict[str, Fraction], str] | None:
    """The expected law (p), the actual law and a caption, read from an audit's or a
    proof's JSON payload; None when it has no witness with a law."""
    example = payload.get("counterexample")
    if isinstance(example, Mapping) and example.get("expected") is not None \
            and example.get("actual") is not None:
        where = ""
        if "p" in example and "q" in example:
            where = f" at p = ({', '.join(example['p'])}), q = ({', '.join(example['q'])})"
        return (_fractions(example["expected"]), _fractions(example["actual"]),
                f"{payload.get('target')}: {example.get('reason', 'violation')}{where}")
    for case in payload.get("refuting") or ():
        witness, law = case.get("witness"), case.get("witness_law")
        if witness and law:
            p = {str(i): Fraction(v) for i, v in enumerate(witness["p"])}
            return (p, _fractions(law), f"{payload.get('target')}: refuted at p = "
                    f"({', '.join(witness['p'])}), q = ({', '.join(witness['q'])})")
    return None


def plot_witness(expected: Mapping[str, Fraction], actual: Mapping[str, Fraction],
                 path: str, *, caption: str) -> None:
    """Bars of p and of the code's exact law per outcome, and below them the signed
    difference; outcomes where p = 0 but the code puts mass are hatched and marked."""
    plt = pyplot("--plot")
    outcomes = list(expected) + [k for k in actual if k not in expected]
    p = [float(expected.get(k, 0)) for k in outcomes]
    law = [float(actual.get(k, 0)) for k in outcomes]
    diff = [float(actual.get(k, 0) - expected.get(k, 0)) for k in outcomes]
    support = [expected.get(k, 0) == 0 and actual.get(k, 0) > 0 for k in outcomes]
    xs = range(len(outcomes))
    width = max(4.5, 0.55 * len(outcomes) + 2.0)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(width, 4.8), sharex=True,
                                      gridspec_kw={"height_ratios": (3, 2)})
    top.bar([x - 0.2 for x in xs], p, 0.4, label="p (target)", color="#4a5568")
    bars = top.bar([x + 0.2 for x in xs], law, 0.4, label="the code's exact law",
                   color="#2b6cb0")
    for bar, bad in zip(bars, support, strict=True):
        if bad:
            bar.set_color("#c53030")
            bar.set_hatch("//")
            top.annotate("p = 0", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                         ha="center", va="bottom", fontsize=7, color="#c53030")
    from matplotlib.patches import Patch

    handles = [Patch(color="#4a5568", label="p (target)"),
               Patch(color="#2b6cb0", label="the code's exact law")]
    if any(support):
        handles.append(Patch(facecolor="#c53030", hatch="//",
                             label="mass where p = 0 (support violation)"))
    top.set_ylabel("probability")
    top.legend(handles=handles, fontsize=7, frameon=False, loc="best")
    top.set_title("\n".join(textwrap.wrap(caption, width=int(width * 14))), fontsize=8)
    colours = ["#c53030" if d > 0 else "#2f855a" for d in diff]
    diffs = bottom.bar(list(xs), diff, 0.6, color=colours)
    for bar, bad in zip(diffs, support, strict=True):
        if bad:
            bar.set_hatch("//")
    bottom.axhline(0, color="black", linewidth=0.6)
    for x, d, k in zip(xs, diff, outcomes, strict=True):
        if d:
            exact = actual.get(k, Fraction(0)) - expected.get(k, Fraction(0))
            text = f"{'+' * (exact > 0)}{exact}" if len(str(exact)) <= 12 else f"{d:+.3g}"
            bottom.annotate(text, (x, d), ha="center", va="bottom" if d > 0 else "top",
                            fontsize=7)
    bottom.set_ylabel("actual - p")
    bottom.set_xticks(list(xs), outcomes, fontsize=7,
                      rotation=30 if max(map(len, outcomes)) > 3 else 0)
    bottom.set_xlabel("outcome")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
