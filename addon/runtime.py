"""Loads the solver lazily, after numba has been told where to cache.

The solver's kernel modules import numba, and the solver keys its cache folder
on NUMBA_CACHE_DIR when the first of them loads, so it is set here first
(quadric_solver.rotations, plain numpy, may be imported before). The cache lives in the extension's
user directory (never beside the installed code, which may be read-only and is
replaced on update); the solver keys a folder inside it on a hash of its own
sources and chooses numba's threading layer itself (quadric_solver/runtime.py: OpenMP
where its runtime loads, else workqueue, never TBB, which Blender also ships).
GNU OpenMP does not survive fork(): a forked child that runs the solver is
stopped with a message (numba's check); children that do not, and
subprocesses, are unaffected.

The Linux x64 zip ships a prebuilt cache (``prebuilt_cache/``, made by
scripts/build_extension.py with quadric_solver/precompile.py). On first use it is
copied into the user folder if its manifest fits this Blender and this copy of
the solver; the kernels then load in seconds instead of compiling for minutes.
It is compiled for numba's generic CPU, so the solver then uses that target for
whatever it still compiles. Where it does not fit, the solver compiles on
first use as on other platforms, and ``prebuilt_note`` says why.
"""
import os
import shutil
import threading

from . import solver_package

PREBUILT_FOLDER = "prebuilt_cache"

_solver = None
_pending_copy = None  # (shipped folder, target) that get_solver(copy=False) left to copy_prebuilt
_copy_lock = threading.Lock()
prebuilt_note = ""  # what became of the prebuilt cache, for the console and the panel


def extension_package():
    """The extension's root package, e.g. 'bl_ext.user_default.quadric_dynamics'."""
    return __package__.rpartition(".")[0]


def numba_cache_dir():
    """The root of the extension's numba caches (the solver adds a folder per version of its sources)."""
    import bpy

    try:
        base = bpy.utils.extension_path_user(extension_package(), create=True)
    except ValueError:
        # Loaded from a source checkout rather than installed (scripts/bake.py): Blender's config dir.
        base = bpy.utils.user_resource('CONFIG', path="quadric_dynamics", create=True)
    path = os.path.join(base, "numba_cache")
    os.makedirs(path, exist_ok=True)
    return path


def extension_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def install_prebuilt_cache(cache_root, package=None, source=None, copy=True):
    """Copy the extension's prebuilt cache for this solver into ``cache_root`` (once) and choose its CPU target.

    Returns (used, note): used is True when the prebuilt kernels serve this process; the note says why not.
    Call before numba is imported. With copy False the copy (90 MB, about a second) is left to copy_prebuilt,
    which the simulation's worker thread calls before it loads a kernel, so Blender's main thread does not wait.
    """
    global _pending_copy
    from quadric_solver import precompile
    from quadric_solver import runtime as solver_runtime

    source = source or os.path.join(extension_root(), PREBUILT_FOLDER)
    if not os.path.isdir(source):
        return False, "this build ships no prebuilt solver cache: the solver compiles on first use"
    package = package or solver_package.NAME
    manifest = precompile.read_manifest(source)
    here = precompile.this_process(package, solver_runtime.source_hash())
    problem = precompile.prebuilt_problem(manifest, here)
    if problem:
        return False, f"the prebuilt solver cache does not fit ({problem}): the solver compiles on first use"
    folder = os.path.join(here["source_hash"], solver_runtime.package_folder(package))
    target = os.path.join(cache_root, folder)
    if not os.path.isdir(target):  # first use of this version
        _pending_copy = (os.path.join(source, folder), target)
        if copy:
            copy_prebuilt()
    if "NUMBA_CPU_NAME" not in os.environ:
        os.environ["NUMBA_CPU_NAME"] = precompile.PREBUILT_CPU
        os.environ.pop("NUMBA_CPU_FEATURES", None)
    return True, "using the prebuilt solver cache"


def copy_prebuilt():
    """Make the copy install_prebuilt_cache left pending, if any: whole into a side folder, then renamed into
    place, so a kernel never loads from half a cache. Safe from any thread; the first caller copies."""
    global _pending_copy
    with _copy_lock:
        if _pending_copy is None:
            return
        shipped, target = _pending_copy
        if not os.path.isdir(target):
            partial = f"{target}.part{os.getpid()}"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(shipped, partial)
            try:
                os.replace(partial, target)
            except OSError:  # another Blender copied it first
                shutil.rmtree(partial, ignore_errors=True)
        _pending_copy = None


def get_solver(copy=True):
    """The solver package, after numba's cache and the prebuilt kernels are set up. copy=False leaves the
    prebuilt cache's first copy to copy_prebuilt (the simulation job calls it in its worker)."""
    global _solver, prebuilt_note
    if _solver is None:
        root = os.environ["NUMBA_CACHE_DIR"] = numba_cache_dir()
        try:
            _used, prebuilt_note = install_prebuilt_cache(root, copy=copy)
        except OSError as exc:  # a full disk or unreadable install: compiling still works
            prebuilt_note = (f"the prebuilt solver cache could not be installed ({exc}): the solver compiles on "
                             "first use")
        print(f"[quadric] {prebuilt_note}", flush=True)
        _solver = solver_package.load()
    if copy:
        copy_prebuilt()  # a copy an earlier get_solver(copy=False) left pending
    return _solver
