"""Checks of the values given to the Python API (``Scene.add_*``, ``Simulation(...)``), shared so that each
rule is written once: a bad value raises FieldError, a ValueError naming the object and the field, e.g.
``ellipsoid 'Rock' (body 3): position must be 3 numbers, got 'x'``.
"""
from __future__ import annotations

import math
import numbers

import numpy as np


class FieldError(ValueError):
    """A bad value passed to the API: ``owner`` (the object), ``field`` and ``problem`` (expected, found)."""

    def __init__(self, owner: str, field: str, problem: str):
        super().__init__(f"{owner}: {field} {problem}")
        self.owner, self.field, self.problem = owner, field, problem


def describe(value) -> str:
    """A short repr of a value found where something else was expected (long ones cut)."""
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"an array of shape {value.shape}"
    try:
        text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    except ValueError:  # an int too long to print
        text = f"a {type(value).__name__} too long to show"
    return text if len(text) <= 80 else text[:77] + "..."


# ------------------------------------------------------------------------------------ values
def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def number(owner: str, field: str, value, minimum=None, maximum=None, positive=False) -> float:
    """A finite float (> 0 if ``positive``, within [minimum, maximum] if given); FieldError otherwise."""
    if not _is_number(value):
        raise FieldError(owner, field, f"must be a number, got {describe(value)}")
    try:
        result = float(value)
    except OverflowError:  # an int beyond the float range
        result = math.inf
    if positive and not (math.isfinite(result) and result > 0.0):
        raise FieldError(owner, field, f"must be positive and finite, got {describe(value)}")
    if not math.isfinite(result):
        raise FieldError(owner, field, f"must be finite, got {describe(value)}")
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
        bounds = f">= {minimum:g}" if maximum is None else f"in [{minimum:g}, {maximum:g}]"
        raise FieldError(owner, field, f"must be {bounds}, got {describe(value)}")
    return result


def integer(owner: str, field: str, value, minimum=None, maximum=None, what="an integer") -> int:
    """An int (integral floats accepted) within [minimum, maximum] where given; FieldError otherwise."""
    try:
        whole = _is_number(value) and float(value).is_integer() and abs(value) < 2 ** 63
    except OverflowError:
        whole = False
    if not whole:
        raise FieldError(owner, field, f"must be {what}, got {describe(value)}")
    result = int(value)
    if maximum is not None and not minimum <= result <= maximum:
        raise FieldError(owner, field, f"{result} is out of range: expected {what} from {minimum} to {maximum}")
    if minimum is not None and result < minimum:
        raise FieldError(owner, field, f"must be {what} >= {minimum}, got {result}")
    return result


def flag(owner: str, field: str, value) -> bool:
    """True or False (numpy bools and 0/1 accepted); FieldError otherwise."""
    if isinstance(value, (bool, np.bool_)) or (_is_number(value) and value in (0, 1)):
        return bool(value)
    raise FieldError(owner, field, f"must be true or false, got {describe(value)}")


def name_or_none(owner: str, field: str, value):
    """A string or None (names of bodies, colliders, ropes); FieldError otherwise."""
    if value is None or isinstance(value, str):
        return value
    raise FieldError(owner, field, f"must be a string or None, got {describe(value)}")


def array(owner: str, field: str, value, shape: tuple, what: str) -> np.ndarray:
    """A finite float64 array of ``shape`` (None: any length there); FieldError naming ``what`` otherwise."""
    try:
        result = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting
        raise FieldError(owner, field, f"must be {what}, got {describe(value)}") from None
    if result.dtype.kind not in "iuf":
        raise FieldError(owner, field, f"must be {what}, got {describe(value)}")
    if result.ndim != len(shape) or any(want is not None and got != want for got, want in zip(result.shape, shape)):
        raise FieldError(owner, field, f"must be {what}, got shape {result.shape}")
    result = result.astype(np.float64)
    if not np.all(np.isfinite(result)):
        raise FieldError(owner, field, f"contains NaN or infinity: {describe(result)}")
    return result


def vector(owner: str, field: str, value, size: int) -> tuple:
    """``size`` finite numbers as a tuple of floats; FieldError otherwise."""
    return tuple(float(x) for x in array(owner, field, value, (size,), f"{size} numbers"))


def _normalised(values: np.ndarray, norm: float) -> tuple:
    """values / norm, left as they are when their norm is 1 to rounding: normalising twice (as a save and a
    load do) then changes no bit, so a scene's content hash survives its file."""
    unit = values if abs(norm - 1.0) <= 4.0 * np.finfo(np.float64).eps else values / norm
    return tuple(float(x) for x in unit)


def unit_vector(owner: str, field: str, value, size: int) -> tuple:
    """A non-zero vector of ``size`` numbers, normalised."""
    result = np.array(vector(owner, field, value, size))
    norm = float(np.linalg.norm(result))
    if not norm >= 1e-12 or not math.isfinite(norm):
        raise FieldError(owner, field, f"must be a non-zero direction, got {describe(result)}")
    return _normalised(result, norm)


def unit_quaternion(owner: str, field: str, value) -> tuple:
    """A quaternion (w, x, y, z) of norm 1 within 1e-5, renormalised."""
    q = np.array(vector(owner, field, value, 4))
    norm = float(np.linalg.norm(q))
    if not abs(norm - 1.0) <= 1e-5:
        raise FieldError(owner, field, f"must be a unit quaternion (w, x, y, z), got norm {norm:.6g}")
    return _normalised(q, norm)
