"""Fixtures for the add-on tests: build the Linux zip, install it into a scratch Blender user folder,
and run Blender-side scenarios (tests/addon/blender_scenarios.py) in subprocesses.

Each scenario runs in its own `python` process because HOME and BLENDER_USER_RESOURCES must be
set before bpy is imported. The user folder lives in build/test-blender-user-<bpy version> (git-ignored) and is
wiped and re-installed whenever the built zip's contents change.

The zip ships the installed solver's kernels precompiled (scripts/build_extension.py; kept in
build/prebuilt-cache per solver version, several minutes on one core when the solver changed), so the
scenarios compile nothing. This checkout's kernels (`python -m quadric_solver run` here, and the tests in
tests/solver after these) compile on the other core while the zip is built (checkout_kernels.py). Under
scripts/test (generic CPU, NUMBA_CACHE_DIR set) both are one cache: the build compiles in the same folder from
the last scene kind and checkout_kernels from the first. scripts/test runs these tests beside all the others,
and that process compiles the checkout's kernels (QUADRIC_KERNELS_MARKS: KernelsElsewhere).
"""
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PYTHON = sys.executable
SCENARIOS = HERE / "blender_scenarios.py"


def _package_digest(zip_path):
    """Digest of the zip's members (names and CRCs), cheap even with 100 MB of wheels."""
    h = hashlib.sha256()
    with zipfile.ZipFile(zip_path) as zf:
        for info in sorted(zf.infolist(), key=lambda i: i.filename):
            h.update(f"{info.filename}:{info.CRC}:{info.file_size}\n".encode())
    return h.hexdigest()


@pytest.fixture(scope="session")
def extension_zip(checkout_kernels):  # started first, so the two one-core compiles run side by side
    out = ROOT / "build" / "test-dist"
    shared = []  # this process's kernels are the prebuilt cache's (scripts/test): compile them once, for both
    if os.environ.get("NUMBA_CPU_NAME") == "generic" and os.environ.get("NUMBA_CACHE_DIR"):
        shared = ["--kernels-from", os.environ["NUMBA_CACHE_DIR"]]
    subprocess.run([PYTHON, str(ROOT / "scripts" / "build_extension.py"), "--platforms", "linux-x64",
                    "--output", str(out), *shared], check=True, cwd=ROOT)
    zips = sorted(out.glob("quadric_dynamics-*-linux_x64.zip"))
    assert len(zips) == 1, zips
    return zips[0]


NUMBA_TARGET = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")


@pytest.fixture(autouse=True)
def numba_target_left_as_it_was():
    """No test may leave numba's CPU target set in this process (addon/runtime.py sets it when it takes the
    prebuilt cache): every later subprocess would inherit it, miss the cache made for this CPU and compile the
    solver again, minutes each."""
    before = {name: os.environ.get(name) for name in NUMBA_TARGET}
    yield
    after = {name: os.environ.get(name) for name in NUMBA_TARGET}
    assert after == before, f"a test changed numba's CPU target from {before} to {after}"


def blender_env(user_dir):
    env = dict(os.environ)
    env["HOME"] = str(user_dir / "home")
    env["BLENDER_USER_RESOURCES"] = str(user_dir / "resources")
    for name in ("NUMBA_CACHE_DIR", *NUMBA_TARGET):  # the add-on chooses its own cache folder and CPU target
        env.pop(name, None)
    env.pop("NUMBA_THREADING_LAYER_PRIORITY", None)  # set by the solver imported here; the add-on chooses again
    return env


def run_scenario(env, tmp_path, name, *args, timeout=900):
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([PYTHON, str(SCENARIOS), name, str(out), *map(str, args)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not out.exists():
        pytest.fail(f"scenario {name} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return json.loads(out.read_text())


@pytest.fixture(scope="session")
def installed(extension_zip, tmp_path_factory):
    """Environment of a Blender user folder with the extension installed; returns (env, install report)."""
    # one folder per Blender version (scripts/test_blender_versions runs these tests under 4.2 and 4.4 too)
    user_dir = ROOT / "build" / f"test-blender-user-{importlib.metadata.version('bpy')}"
    digest = _package_digest(extension_zip)
    stamp = user_dir / "installed.sha256"
    env = blender_env(user_dir)
    report_file = user_dir / "install.json"
    if not stamp.exists() or stamp.read_text() != digest or not report_file.exists():
        # A fresh user folder, but for numba's cache (the extension's user data) from the previous install: numba
        # stamps a cached function by its source file's content, so what the new zip did not change loads from it.
        user_data = user_dir / "resources" / "extensions" / ".user"
        kept = user_dir.parent / f"{user_dir.name}-data"
        shutil.rmtree(kept, ignore_errors=True)
        if user_data.is_dir():
            shutil.move(str(user_data), str(kept))
        shutil.rmtree(user_dir, ignore_errors=True)
        (user_dir / "home").mkdir(parents=True)
        (user_dir / "resources" / "extensions").mkdir(parents=True)
        if kept.is_dir():
            shutil.move(str(kept), str(user_data))
        report = run_scenario(env, tmp_path_factory.mktemp("install"), "install", extension_zip)
        report_file.write_text(json.dumps(report))
        stamp.write_text(digest)
    report = json.loads(report_file.read_text())
    return env, report


@pytest.fixture(scope="session")
def scenario(installed, tmp_path_factory):
    """Run a Blender scenario by name (results cached per session)."""
    env, _ = installed
    cache = {}

    def run(name, *args):
        key = (name, args)
        if key not in cache:
            cache[key] = run_scenario(env, tmp_path_factory.mktemp(name), name, *args)
        return cache[key]

    return run


class CheckoutKernels:
    """This checkout's solver kernels compiling into numba's cache in a background process (checkout_kernels.py).

    Its cache folder is the one `python -m quadric_solver` and the solver tests use (the environment is this process's);
    one thread, so that it takes one core and no more from a Blender scenario that simulates meanwhile.
    """

    def __init__(self, kinds, log):
        self._log = open(log, "w")
        self._proc = subprocess.Popen([PYTHON, "-m", "tests.addon.checkout_kernels", *kinds], cwd=ROOT,
                                      env=dict(os.environ, NUMBA_NUM_THREADS="1"), stdout=subprocess.PIPE,
                                      stderr=self._log, text=True)
        self.compiled = set()
        self._ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self._proc.stdout:
            with self._changed:
                self.compiled.add(line.strip())
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, kind, timeout=900):
        """Until the kernels of ``kind`` are in the cache, or the process ended (or hangs) without them: then
        whoever needs them compiles them, as without this."""
        with self._changed:
            self._changed.wait_for(lambda: kind in self.compiled or self._ended, timeout)

    def finish(self, timeout=900):
        """Let it compile the rest; killed after ``timeout`` s."""
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()

    def stop(self):
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._reader.join()
        self._log.close()


class KernelsElsewhere:
    """This checkout's kernels compiled by another process that makes an empty file named after each kind in
    ``marks`` once it is done (scripts/test runs the add-on's tests beside the others, which compile first)."""

    def __init__(self, marks):
        self._marks = Path(marks)

    def wait_for(self, kind, timeout=900):
        """Until that kind's file is there; after ``timeout`` s, whoever needs the kernels compiles them."""
        deadline = time.monotonic() + timeout
        while not (self._marks / kind).exists() and time.monotonic() < deadline:
            time.sleep(0.5)

    def finish(self, timeout=900):
        from tests.addon.checkout_kernels import ORDER

        deadline = time.monotonic() + timeout
        for kind in ORDER:
            self.wait_for(kind, max(0.0, deadline - time.monotonic()))

    def stop(self):
        pass


_CHECKOUT_KERNELS = pytest.StashKey[CheckoutKernels]()


@pytest.fixture(scope="session")
def checkout_kernels(request, tmp_path_factory):
    """Compiles this checkout's kernels beside the zip build, which compiles the installed copy's (see the top).

    The kernels for bodies come first: `python -m quadric_solver run` in test_operators.py needs them. The others
    (ropes, particles and their mixes) only where tests outside tests/addon follow in this session.
    """
    from tests.addon.checkout_kernels import ORDER

    if os.environ.get("QUADRIC_KERNELS_MARKS"):
        request.config.stash[_CHECKOUT_KERNELS] = elsewhere = KernelsElsewhere(os.environ["QUADRIC_KERNELS_MARKS"])
        yield elsewhere
        return
    later = any(HERE not in item.path.parents for item in request.session.items)
    warm = CheckoutKernels(ORDER if later else ORDER[:1], tmp_path_factory.mktemp("kernels") / "stderr.txt")
    request.config.stash[_CHECKOUT_KERNELS] = warm
    yield warm
    warm.stop()


def pytest_runtest_teardown(item, nextitem):
    """Before the first test outside tests/addon, let the checkout's kernels finish compiling: they are that
    test's and the next ones' (which would otherwise compile them again, or run beside the compile)."""
    warm = item.config.stash.get(_CHECKOUT_KERNELS, None)
    if warm is not None and nextitem is not None and HERE not in nextitem.path.parents:
        warm.finish()
