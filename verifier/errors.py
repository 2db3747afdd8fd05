"""One error hierarchy for the whole toolkit.

Three families, because callers treat them differently:

* :class:`InvalidInput` -- the caller handed us something malformed
  (a distribution that does not sum to 1, a bad option).  Subclasses
  ``ValueError`` so ordinary validation code catches it.
* :class:`SamplerFailure` -- the sampler under test misbehaved on valid
  input (raised, returned a non-token).  This is a *finding* about the
  sampler, not a crash of the tool.
* :class:`Undecided` -- the tool could not reach a verdict (budget
  exceeded, hidden randomness, an operation it cannot model exactly).
  Never a pass, never a fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar

__all__ = [
    "BudgetExceeded",
    "ForeignProtocol",
    "HiddenRandomness",
    "InvalidArgument",
    "InvalidDistribution",
    "InvalidInput",
    "InvalidOutput",
    "MissingDependency",
    "OutputUnwritable",
    "SamplerFailure",
    "SamplerRaised",
    "SpecexactError",
    "Undecided",
    "UnsupportedOperation",
    "describe_exception",
    "package_dirs",
    "raised_at",
]


class SpecexactError(Exception):
    """Base class of every error raised by specexact."""


class InvalidInput(SpecexactError, ValueError):
    """The caller's input is malformed; the message says what is valid."""


class InvalidDistribution(InvalidInput):
    """A probability vector is not a distribution over a vocabulary."""


class InvalidArgument(InvalidInput):
    """An option or argument has a value outside its valid range."""


class OutputUnwritable(SpecexactError, OSError):
    """A file the command was asked to write (a ``--plot`` path) cannot be written there;
    the command checks before it computes anything, and exits 3, as when the report itself
    cannot be written."""


class MissingDependency(SpecexactError, ImportError):
    """An optional dependency (numpy, scipy, torch) needed for this mode is not installed."""

    #: The extra of specexact that installs each optional package.
    EXTRAS: ClassVar[dict[str, str]] = {"numpy": "stats", "scipy": "stats",
                                        "statsmodels": "stats", "torch": "torch",
                                        "matplotlib": "plot", "libcst": "mutate"}

    @classmethod
    def of(cls, package: str, purpose: str) -> MissingDependency:
        """The error for ``purpose`` needing ``package``, naming the extra that installs it:
        "the statistical audit needs scipy; install it with: pip install
        'specexact[stats]' (or pip install scipy)"."""
        extra = cls.EXTRAS.get(package)
        how = f"pip install 'specexact[{extra}]' (or pip install {package})" if extra \
            else f"pip install {package}"
        return cls(f"{purpose} needs {package}; install it with: {how}")


class SamplerFailure(SpecexactError):
    """The code under test misbehaved on valid input: a finding, not a tool crash."""

    def __init__(self, message: str, *, context: dict[str, Any] | None = None,
                 path: Sequence[str] = ()) -> None:
        super().__init__(message)
        #: The exact inputs (``p``, ``q``, prefix, ...) that led here.
        self.context: dict[str, Any] = dict(context or {})
        #: Human-readable choices along the failing execution.
        self.path: tuple[str, ...] = tuple(path)

    def __str__(self) -> str:
        text = super().__str__()
        parts = [text]
        for key, value in self.context.items():
            parts.append(f"  {key} = {_show(value)}")
        if self.path:
            parts.append("  choices: " + "; ".join(self.path))
        return "\n".join(parts)


class SamplerRaised(SamplerFailure):
    """The sampler raised an exception on valid input (see ``__cause__``)."""


class InvalidOutput(SamplerFailure):
    """The sampler or step returned something that is not a valid result."""


class Undecided(SpecexactError):
    """No verdict could be reached; this is never a pass."""


class BudgetExceeded(Undecided):
    """An execution, choice or time budget ran out before enumeration finished."""

    def __init__(self, message: str, *, resolved_mass: Fraction = Fraction(0),
                 limit: str | None = None, path: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: Which Budget field ran out ("max_seconds", "max_executions", ...), if known.
        self.limit = limit
        #: Total probability of the executions that did complete (the settled mass).
        self.resolved_mass = resolved_mass
        #: The choices of the first execution not settled (None: not known).
        self.path: tuple[str, ...] | None = None if path is None else tuple(path)

    def settled(self) -> str:
        """The settled mass in words: ``73.4% (367/500)``, the exact value when short."""
        mass = self.resolved_mass
        exact = str(mass)
        try:
            percent = f"{100 * float(mass):.4g}%"
        except (TypeError, ValueError):
            return exact
        return f"{percent} ({exact})" if len(exact) <= 40 else percent

    def __str__(self) -> str:
        text = f"{self.message}; settled {self.settled()} of the probability mass"
        if self.path is not None:
            text += f"; first undecided path: {self.shown_path()}"
        return text

    def shown_path(self, head: int = 8, tail: int = 3) -> str:
        """The first undecided path in words, its middle elided when it is long."""
        path = self.path or ()
        if not path:
            return "the first execution"
        if len(path) <= head + tail + 1:
            return "; ".join(path)
        return "; ".join((*path[:head], f"... ({len(path) - head - tail} more choices)",
                          *path[-tail:]))


class HiddenRandomness(Undecided):
    """Replay did not reproduce a run: the code draws randomness outside ``rng``."""


class UnsupportedOperation(Undecided, TypeError):
    """The code did something with a lazy random value that cannot be modelled exactly."""


class ForeignProtocol(UnsupportedOperation, AttributeError):
    """The code used an object specexact handed it through another protocol: ``rng`` as
    another library's generator, a same-vocabulary model as a cross-vocabulary one.
    The tool, not the code, chose the wrong protocol: no verdict, and the message names
    the mode that fits."""


def _show(value: Any) -> str:
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return repr(value)


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def raised_at(exc: BaseException) -> str | None:
    """``file:line`` of the innermost frame of ``exc``'s traceback in the user's code.

    Frames in specexact's engine, torch and numpy are skipped (an error torch
    raises is placed at the user's call); None when no frame is the user's.
    """
    skipped = [_PACKAGE]
    for name in ("torch", "numpy"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            skipped.append(os.path.dirname(os.path.abspath(path)))
    catalogue = package_dirs("specexact.counterexamples")
    found = None
    tb = exc.__traceback__
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        in_catalogue = next((root for root in catalogue if filename.startswith(root)), None)
        if in_catalogue is not None:
            # The bundled catalogue's rules are code under test, shown by their place in
            # the package wherever it is installed (reports do not depend on the install).
            relative = os.path.relpath(filename, in_catalogue).replace(os.sep, "/")
            found = f"specexact/counterexamples/{relative}:{tb.tb_lineno}"
        elif not any(filename.startswith(d + os.sep) for d in skipped):
            found = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def package_dirs(*names: str) -> tuple[str, ...]:
    """The folders the packages ``names`` import from (found without importing them),
    each ending in a separator: ``specexact.counterexamples`` sits inside the package
    when installed and beside it in an editable install."""
    import importlib.util

    dirs: list[str] = []
    for name in names:
        spec = importlib.util.find_spec(name)
        locations = () if spec is None else (spec.submodule_search_locations or ())
        dirs.extend(os.path.abspath(location) + os.sep for location in locations)
    return tuple(dirs)


#: The longest message of the code under test's exception a report repeats.
MESSAGE_LIMIT = 2000


def describe_exception(exc: BaseException) -> str:
    """``"ValueError: bad row"``, or ``"RuntimeError (no message)"`` for a bare one; a
    message over :data:`MESSAGE_LIMIT` characters is cut, saying how long it was."""
    try:
        text = str(exc)
    except Exception as error:  # a __str__ that raises: the type still names it
        text = f"<its message could not be read: {type(error).__name__}>"
    if len(text) > MESSAGE_LIMIT:
        text = f"{text[:MESSAGE_LIMIT]}... (cut: {len(text)} characters in all)"
    name = type(exc).__name__
    return f"{name}: {text}" if text else f"{name} (no message)"
