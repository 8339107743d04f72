"""PC2 files: the header layout Blender's Mesh Cache modifier reads, and a lossless round trip."""
import struct

import numpy as np
import pytest

from tests.addon.numpy_modules import load

pc = load("point_cache")


def test_header_matches_the_pc2_layout(tmp_path):
    pos = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    path = tmp_path / "a.pc2"
    pc.write_pc2(str(path), pos, start_frame=5.0, sample_rate=1.0)
    raw = path.read_bytes()
    # The layout written out by hand: signature, int version, int points, float start, float rate, int samples.
    assert raw[:12] == b"POINTCACHE2\0"
    assert struct.unpack("<iiffi", raw[12:32]) == (1, 3, 5.0, 1.0, 2)
    assert len(raw) == 32 + 2 * 3 * 12
    assert struct.unpack("<3f", raw[32 + 12:32 + 24]) == (3.0, 4.0, 5.0)  # sample 0, point 1


def test_round_trip_is_exact_in_float32(tmp_path):
    rng = np.random.default_rng(3)
    pos = rng.normal(size=(7, 11, 3))
    path = str(tmp_path / "sub" / "b.pc2")
    pc.write_pc2(path, pos, start_frame=1.0)
    data, start, rate = pc.read_pc2(path)
    assert (start, rate) == (1.0, 1.0)
    np.testing.assert_array_equal(data, pos.astype(np.float32))


@pytest.mark.parametrize("bad, field", [(np.zeros((2, 3)), "positions must be"),
                                        (np.full((1, 2, 3), np.nan), "NaN")])
def test_bad_positions_are_refused(tmp_path, bad, field):
    with pytest.raises(ValueError, match=field):
        pc.write_pc2(str(tmp_path / "c.pc2"), bad)


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / "d.pc2"
    pc.write_pc2(str(path), np.zeros((3, 2, 3)))
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ValueError, match="header promises"):
        pc.read_pc2(str(path))
