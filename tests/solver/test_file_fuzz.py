"""Fuzzing the scene and recording loaders: every mutated file loads or fails with a clear ValueError.

The mutations (file_mutations.py) delete keys and members, swap types, put indices out of range, insert
NaN and huge values and truncate the files. A bounded number of examples runs here (about 10 s once the
kernels are compiled); scripts/bench/fuzz_files.py runs many more and counts the outcomes.
"""
import pytest
from file_mutations import (load_recording, load_scene_and_build, mutated_recording_file, mutated_scene_file,
                            outcome, recording_members, scene_document, small_scene)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def scene():
    return small_scene()


@pytest.fixture(scope="module")
def recording(scene):
    return recording_members(scene)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def chooser(data):
    return lambda n: data.draw(st.integers(0, n - 1))


def check(path, data, mutations, load):
    path.write_bytes(data)
    name, escaped, clear, message = outcome(lambda: load(path), path)
    assert not escaped, f"{mutations}: {name} escaped: {message}"
    assert clear, f"{mutations}: {name} names neither the file nor an object: {message}"
    return name


@FUZZ
@given(data=st.data())
def test_mutated_scene_files_load_and_build_or_raise_a_clear_value_error(scene, folder, data):
    """Loading plus building a Simulation succeeds, or raises SceneFileError (file and JSON path) or a
    ValueError of the Simulation naming the body; never TypeError, KeyError, IndexError and the like."""
    contents, mutations = mutated_scene_file(scene_document(scene), chooser(data))
    check(folder / "scene.json", contents, mutations, load_scene_and_build)


@FUZZ
@given(data=st.data())
def test_mutated_recording_files_load_or_raise_a_scene_file_error(recording, folder, data):
    """Loading succeeds or raises SceneFileError naming the file; never BadZipFile, KeyError and the like."""
    contents, mutations = mutated_recording_file(recording, chooser(data))
    name = check(folder / "recording.npz", contents, mutations, load_recording)
    assert name in ("ok", "SceneFileError"), mutations
