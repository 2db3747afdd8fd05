"""Argument checking, in one place and one message style.

Every option the toolkit takes is checked by one of these functions, and
every failed check raises :class:`~specexact.errors.InvalidArgument` with a
message that names the argument, shows the value and says what is valid::

    >>> check_integer(True, "n", min_value=1)
    Traceback (most recent call last):
    ...
    specexact.errors.InvalidArgument: n=True must be an integer >= 1 (a bool is not an integer)

Bools are never accepted as integers, and numpy integers are (they are what
numpy code hands over); floats with an integral value are not.
"""

from __future__ import annotations

import difflib
import operator
import os
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, NoReturn

from specexact.errors import InvalidArgument, OutputUnwritable

__all__ = [
    "check_choice",
    "check_integer",
    "check_keys",
    "check_optional_integer",
    "check_output_path",
    "check_positive_number",
    "check_type",
    "fail",
]


def fail(name: str, value: Any, valid: str) -> NoReturn:
    """Raise the one message shape: ``name=value must be valid``."""
    msg = f"{name}={value!r} must be {valid}"
    raise InvalidArgument(msg)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _bounds_text(min_value: int | None, max_value: int | None) -> str:
    if min_value is not None and max_value is not None:
        return f"an integer in {min_value}..{max_value}"
    if min_value is not None:
        return f"an integer >= {min_value}"
    if max_value is not None:
        return f"an integer <= {max_value}"
    return "an integer"


def check_integer(value: Any, name: str, *, min_value: int | None = None,
                  max_value: int | None = None) -> int:
    """``value`` as an ``int`` within the bounds; a bool or a float is refused."""
    valid = _bounds_text(min_value, max_value)
    if _is_bool(value):
        fail(name, value, f"{valid} (a bool is not an integer)")
    if isinstance(value, float):
        fail(name, value, valid)
    try:
        number = operator.index(value)
    except TypeError:
        fail(name, value, valid)
    if (min_value is not None and number < min_value) \
            or (max_value is not None and number > max_value):
        fail(name, value, valid)
    return number


def check_optional_integer(value: Any, name: str, *, min_value: int | None = None,
                           max_value: int | None = None) -> int | None:
    """:func:`check_integer`, or ``None``."""
    if value is None:
        return None
    try:
        return check_integer(value, name, min_value=min_value, max_value=max_value)
    except InvalidArgument:
        fail(name, value, f"{_bounds_text(min_value, max_value)} or None")


def check_positive_number(value: Any, name: str, *, allow_none: bool = False,
                          allow_zero: bool = False) -> Fraction | float | int | None:
    """A real number > 0 (``>= 0`` with ``allow_zero``), or None when allowed."""
    if value is None and allow_none:
        return None
    valid = "a number >= 0" if allow_zero else "a positive number"
    if allow_none:
        valid += " or None"
    if _is_bool(value) or not isinstance(value, (int, float, Fraction)):
        fail(name, value, valid)
    if value != value or value in (float("inf"), float("-inf")):  # NaN or inf
        fail(name, value, valid)
    if value < 0 or (value == 0 and not allow_zero):
        fail(name, value, valid)
    return value


def check_type(value: Any, name: str, types: type | tuple[type, ...], valid: str) -> Any:
    """``value`` if it is an instance of ``types``; ``valid`` says what is expected."""
    if not isinstance(value, types) or (_is_bool(value) and bool not in _as_tuple(types)):
        fail(name, value, valid)
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def check_choice(value: Any, name: str, choices: tuple[Any, ...]) -> Any:
    """``value`` if it is one of ``choices``."""
    if isinstance(value, (list, dict, set)) or value not in choices:
        fail(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_output_path(path: str, name: str) -> str:
    """``path`` if a file can be written there (checked before any computing): its folder
    exists and is writable, and it is not a folder nor a read-only file; else
    :class:`~specexact.errors.OutputUnwritable` naming ``name`` and why."""
    folder = os.path.dirname(os.path.abspath(path))
    why = None
    if os.path.isdir(path):
        why = "it is a folder"
    elif not os.path.isdir(folder):
        why = f"its folder {folder} does not exist"
    elif os.path.exists(path) and not os.access(path, os.W_OK):
        why = "the file is read-only"
    elif not os.path.exists(path) and not os.access(folder, os.W_OK | os.X_OK):
        why = f"its folder {folder} is not writable"
    if why is not None:
        msg = f"cannot write {name} {path}: {why}; give a path in a writable folder"
        raise OutputUnwritable(msg)
    return path


def check_keys(mapping: Mapping[str, Any], name: str, valid: Iterable[str]) -> None:
    """Refuse the keys of ``mapping`` (a configuration table called ``name``) that are not
    in ``valid``, naming each with its nearest valid key and listing the valid ones."""
    allowed = sorted(valid)
    unknown = [key for key in mapping if key not in allowed]
    if not unknown:
        return
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), allowed, n=1)
        parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    msg = (f"{name}: unknown key{'s' * (len(unknown) != 1)} {', '.join(parts)}; "
           f"valid keys: {', '.join(allowed)}")
    raise InvalidArgument(msg)
