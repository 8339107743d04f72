"""Input checks shared by the Python API, the scene and recording files and the command line.

Two kinds of error, both ValueError:

- FieldError: a bad argument of the API (``Scene.add_ellipsoid``, ``Simulation(...)``); it names
  the object and the field, e.g. ``Simulation: iterations must be an integer >= 1, got 0``.
- SceneFileError: a file that does not follow its schema; it names the file, the JSON path, what
  was expected and what was found, e.g. ``scene.json: bodies[3].position must be 3 numbers, got 'abc'``.

File loaders check the structure here (objects, lists, required keys, indices) and pass values to
the API, whose FieldErrors ``at()`` turns into SceneFileErrors at the right path, so every rule on
a value is written once. Unknown keys in files are reported with warnings.warn and ignored.
"""
from __future__ import annotations

import contextlib
import json
import math
import numbers
import os
import secrets
import warnings

import numpy as np


class FieldError(ValueError):
    """A bad value passed to the API: ``owner`` (the object), ``field`` and ``problem`` (expected, found)."""

    def __init__(self, owner: str, field: str, problem: str):
        super().__init__(f"{owner}: {field} {problem}")
        self.owner, self.field, self.problem = owner, field, problem


class SceneFileError(ValueError):
    """A scene or recording file that breaks its schema: ``file``, JSON ``path`` ('' for all of it), ``problem``."""

    def __init__(self, file, path: str, problem: str):
        self.file, self.path, self.problem = str(file), path, problem
        super().__init__(f"{self.file}: {path} {problem}" if path else f"{self.file}: {problem}")


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
        raise FieldError(owner, field, f"must be {what}, got {describe(result)}")
    result = result.astype(np.float64)
    if not np.all(np.isfinite(result)):
        raise FieldError(owner, field, f"contains NaN or infinity: {describe(result)}")
    return result


def index_rows(owner: str, field: str, value, n, width: int, what: str, holder: str = "there are") -> np.ndarray:
    """An (m, width) int64 array of indices from 0 to n - 1 (n None: any >= 0); ``what`` names an index in
    errors ('vertex'), ``holder`` what has n of them ('group 2 has')."""
    shape = f"an (m, {width}) array of {what} indices"
    try:
        rows = np.asarray(value)
    except (ValueError, TypeError):
        raise FieldError(owner, field, f"must be {shape}, got {describe(value)}") from None
    if rows.size == 0:
        rows = rows.reshape(0, width)
    if rows.ndim != 2 or rows.shape[1] != width or rows.dtype.kind not in "iuf":
        raise FieldError(owner, field, f"must be {shape}, got {describe(value)}")
    if rows.dtype.kind == "f" and not np.all(np.isfinite(rows) & (rows == np.round(rows))):
        raise FieldError(owner, field, f"must hold whole {what} indices, got {describe(value)}")
    rows = rows.astype(np.int64)
    outside = (rows < 0) if n is None else (rows < 0) | (rows >= n)
    bad = np.flatnonzero(np.any(outside, axis=1))
    if bad.size:
        k = int(bad[0])
        missing = int(rows[k][outside[k]][0])
        there = "indices start at 0" if n is None else f"{holder} {n}, numbered 0 to {n - 1}"
        raise FieldError(owner, f"{field}[{k}]", f"refers to {what} {missing}, which does not exist ({there})")
    return rows


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


# ------------------------------------------------------------------------------------- files
def join(path: str, key) -> str:
    """JSON path of ``key`` (a name or a list index) inside ``path``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def file_object(file, path: str, value, required=(), optional=()) -> dict:
    """The JSON object at ``path`` with its known keys; a warning for each unknown key.

    Raises SceneFileError if it is not an object or lacks a required key.
    """
    if not isinstance(value, dict):
        raise SceneFileError(file, path, f"must be a JSON object, got {describe(value)}")
    for key in required:
        if key not in value:
            raise SceneFileError(file, join(path, key), "is missing")
    known = set(required) | set(optional)
    for key in value:
        if key not in known:
            warnings.warn(f"{file}: {join(path, str(key))} is not a known key; ignored", stacklevel=3)
    return {key: item for key, item in value.items() if key in known}


def file_list(file, path: str, value) -> list:
    """The JSON list at ``path``; SceneFileError if it is something else."""
    if not isinstance(value, list):
        raise SceneFileError(file, path, f"must be a list, got {describe(value)}")
    return value


def file_header(file, path: str, data, file_format: str, newest: int, kind: str) -> int:
    """Check that ``data`` is a JSON object of ``file_format`` in a version this code reads (1 to ``newest``);
    returns the version. The SceneFileError for a newer file says that it needs a newer solver."""
    if not isinstance(data, dict):
        raise SceneFileError(file, path, f"must be a JSON object, got {describe(data)}")
    if data.get("format") != file_format:
        found = "is missing" if "format" not in data else f"is {describe(data['format'])}"
        raise SceneFileError(file, join(path, "format"), f"{found}: not a Quadric Dynamics {kind} "
                                                         f"(expected {file_format!r})")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        found = "is missing" if "version" not in data else f"must be a version number, got {describe(version)}"
        raise SceneFileError(file, join(path, "version"), found)
    if version > newest:
        raise SceneFileError(file, join(path, "version"), f"is {version}: this {kind} needs a newer solver "
                                                          f"(this one reads {kind} files up to version {newest})")
    return version


@contextlib.contextmanager
def at(file, path: str):
    """Turn the API's errors raised inside into SceneFileErrors at ``path`` of ``file`` (its field appended)."""
    try:
        yield
    except SceneFileError:
        raise
    except FieldError as error:
        raise SceneFileError(file, join(path, error.field), error.problem) from None
    except ValueError as error:
        raise SceneFileError(file, path, str(error)) from None


def read_json(path):
    """The parsed JSON of a file; SceneFileError if it is not UTF-8 JSON (OSError if it cannot be read)."""
    with open(path, "rb") as handle:
        raw = handle.read()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise SceneFileError(path, "", f"not a text (UTF-8) file: {error.reason} at byte {error.start}") from None
    except json.JSONDecodeError as error:
        raise SceneFileError(path, "", f"not valid JSON (truncated or damaged?): {error}") from None
    except (ValueError, RecursionError) as error:  # numbers too long to convert, nesting too deep
        raise SceneFileError(path, "", f"not usable JSON: {error}") from None


def write_atomically(path, write, encoding=None) -> None:
    """Write ``path`` by ``write(handle)`` under a temporary name in the same folder, then rename it over
    ``path``: an interrupted or failed save leaves the previous file whole (or no file), never half of one.

    ``encoding`` opens the handle in text mode, otherwise binary.
    """
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 gives the new file the umask's usual permissions, as open() would
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(descriptor, "w" if encoding else "wb", encoding=encoding) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
