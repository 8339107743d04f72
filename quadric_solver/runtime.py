"""Numba's settings for the solver, made once, before any kernel is compiled or launched.

Run by ``math3d.py``, which every kernel module imports first, so the standalone solver (Python API,
``python -m quadric_solver``, tests, benchmarks) and the Blender add-on get the same two
settings:

Threading layer. Unless the user chose one (``NUMBA_THREADING_LAYER``,
``NUMBA_THREADING_LAYER_PRIORITY`` or numba's config file), the solver asks for
OpenMP where its runtime loads and numba's own ``workqueue`` otherwise, never
TBB. Numba's default prefers TBB wherever a TBB runtime is installed (Debian's
libtbb12 comes with many packages; conda and oneAPI ship one), and with some
TBB versions a step grows slower the longer a run goes (docs/numba.md). Inside
Blender, which bundles its own TBB, the same rule holds.

Cache folder. numba keys a cached function on its own file's time stamp only,
so a cached caller keeps running a changed callee from another file. The cache
therefore lives in a folder named by a hash of every solver source file: any
edit to the solver compiles everything afresh, and an unchanged solver (an
extension update that changed only the add-on, a second checkout of the same
code) reuses it. The root is ``NUMBA_CACHE_DIR`` if set (the add-on sets its
user folder), else the user's cache folder. Folders of other source versions
left unused for two weeks are removed.

Cache layout. Inside that folder numba would name each file's cache by the
absolute path of its source folder, so a cache could only serve the copy of the
solver it was made from. ``SourceTreeLocator`` names it by the path inside the
solver and by the package the solver is imported as instead: a cache made from
one copy serves every copy of the same sources imported under the same name
(the prebuilt cache shipped in the extension, an installation moved elsewhere).
The package name stays in the path because numba pickles the solver's classes
in its index by module name; a copy imported under another name must not read
that index.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
import warnings

THREADING_LAYER_PRIORITY = ("omp", "workqueue", "tbb")  # numba wants all three named, in order of preference
SOURCE_ROOT = os.path.dirname(os.path.abspath(__file__))
_USER_LAYER_VARIABLES = ("NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY")
STALE_CACHE_SECONDS = 14 * 24 * 3600  # caches of other source versions unused this long are removed
_KEY = re.compile(r"[0-9a-f]{16}")
_CONFIGURED = False  # configure() runs once per process


# Tools that no kernel reaches (tests/solver/test_runtime.py checks that no solver module imports them): editing
# them must not throw away the compiled kernels, which take minutes to rebuild.
NOT_IN_KERNELS = ("__main__.py", "precompile.py")


def source_hash(root: str = SOURCE_ROOT) -> str:
    """First 16 hex digits of a SHA-256 over every ``*.py`` under root (relative path and content) but the
    top-level NOT_IN_KERNELS."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py") and not (folder == root and name in NOT_IN_KERNELS):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode())
                digest.update(b"\0")
                with open(path, "rb") as handle:
                    digest.update(handle.read())
                digest.update(b"\0")
    return digest.hexdigest()[:16]


def default_cache_root() -> str:
    """Where the solver's numba caches go when NUMBA_CACHE_DIR is not set: the user's cache folder."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or base
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    return os.path.join(base, "quadric_dynamics", "numba")


def cache_dir(key: str, root: str | None = None) -> str:
    """The cache folder for solver sources with hash ``key``: ``<root>/<key>`` (a root already so keyed stays);
    the root is NUMBA_CACHE_DIR's or the default where not given."""
    root = os.path.normpath(root or os.environ.get("NUMBA_CACHE_DIR") or default_cache_root())
    return root if os.path.basename(root) == key else os.path.join(root, key)


def prune_stale_caches(path: str, now: float | None = None) -> None:
    """Mark ``path`` (a keyed cache folder) as used now; remove its siblings for other sources unused for long.

    Every edit of the solver makes a new folder of about 20 MB; without this a
    developer's cache would only grow.
    """
    now = time.time() if now is None else now
    os.makedirs(path, exist_ok=True)
    os.utime(path, (now, now))
    root = os.path.dirname(path)
    for name in os.listdir(root):
        other = os.path.join(root, name)
        if other != path and _KEY.fullmatch(name) and os.path.getmtime(other) < now - STALE_CACHE_SECONDS:
            shutil.rmtree(other, ignore_errors=True)


def package_folder(package: str) -> str:
    """The cache sub-folder of the solver imported as ``package`` ('quadric_solver', in Blender too)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", package)


PACKAGE = __name__.rpartition(".")[0]  # 'quadric_solver', also in Blender (addon/solver_package.py)


def _source_tree_locator():
    """numba's cache locator for the solver's own files (see the module docstring), or None where numba's
    internals differ from the version this was written for (numba then names caches by absolute path)."""
    try:
        from numba.core import caching
        base, mixin = caching._CacheLocator, caching._SourceFileBackedLocatorMixin
    except (ImportError, AttributeError):
        return None

    class SourceTreeLocator(mixin, base):
        """Caches a solver function in ``<cache dir>/<package>/<its folder inside the solver>``."""

        def __init__(self, py_func, py_file):
            from numba.core import config

            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            inner = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), SOURCE_ROOT)
            self._cache_path = os.path.join(config.CACHE_DIR, package_folder(PACKAGE),
                                            *([] if inner == os.curdir else inner.split(os.sep)))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            from numba.core import config

            inside = os.path.abspath(py_file).startswith(SOURCE_ROOT + os.sep)
            if not config.CACHE_DIR or not inside:
                return None  # not the solver's: numba's own locators decide
            return super().from_function(py_func, py_file)

    return SourceTreeLocator


def install_cache_locator() -> bool:
    """Put SourceTreeLocator first in numba's list (once per process); False where numba has no such list."""
    locator = _source_tree_locator()
    try:
        from numba.core.caching import CacheImpl
        classes = CacheImpl._locator_classes
    except (ImportError, AttributeError):
        return False
    if locator is None:
        return False
    if not any(getattr(c, "__name__", "") == locator.__name__ and getattr(c, "_solver_root", None) == SOURCE_ROOT
               for c in classes):
        locator._solver_root = SOURCE_ROOT
        classes.insert(0, locator)
    return True


def layer_chosen_by_user(config) -> bool:
    """True if the environment or numba's config file names a threading layer or an order of them."""
    if any(name in os.environ for name in _USER_LAYER_VARIABLES):
        return True
    return (str(config.THREADING_LAYER).lower() != "default"
            or tuple(config.THREADING_LAYER_PRIORITY) != ("tbb", "omp", "workqueue"))


def configure() -> None:
    """Point numba's cache at the hashed folder and choose the threading layer (see the module docstring).

    Written to both the environment and numba's live config: numba re-reads its
    config from the environment whenever a NUMBA_ variable changes, and child
    processes inherit the same choice.
    """
    global _CONFIGURED
    if _CONFIGURED:
        return
    _CONFIGURED = True
    path = cache_dir(source_hash())
    try:
        prune_stale_caches(path)
    except OSError:  # a read-only or shared cache root: numba reports what it cannot write
        pass
    os.environ["NUMBA_CACHE_DIR"] = path
    from numba.core import config

    config.CACHE_DIR = path
    install_cache_locator()
    if layer_chosen_by_user(config):
        return
    if threading_layer() != "not started":  # another library already started numba's threads: too late
        if threading_layer() == "tbb":
            warnings.warn("numba's TBB threading layer was started before the solver was imported; the "
                          "solver may run slowly. Import solver first or set NUMBA_THREADING_LAYER=omp.")
        return
    os.environ["NUMBA_THREADING_LAYER_PRIORITY"] = " ".join(THREADING_LAYER_PRIORITY)
    config.THREADING_LAYER = "default"
    config.THREADING_LAYER_PRIORITY = list(THREADING_LAYER_PRIORITY)


def threading_layer() -> str:
    """The threading layer numba runs the parallel kernels on, or 'not started' before the first one."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:  # numba starts its threads at the first parallel launch
        return "not started"
