"""Point caches on disk that Blender plays natively: PC2 files (read by the Mesh Cache modifier) beside the .blend.

PC2 is the format of Blender's own Mesh Cache modifier: a 32-byte header
("POINTCACHE2\\0", version 1, points, start frame, sample rate, samples), then
float32 x, y, z per point per sample, little endian. Playing it back needs no
add-on code, so a bake made here plays in any Blender, and on a render farm
without the extension.

Files live in ``//quadric_cache/<blend>/<scene>/`` beside the saved .blend
(paths are stored relative, so the .blend and its folder move together; the
.blend's name keeps two files saved in one folder from sharing caches). An unsaved file
writes to Blender's temporary folder instead, with an absolute path.
"""
import os
import re
import struct

import numpy as np

SIGNATURE = b"POINTCACHE2\0"
_HEADER = struct.Struct("<12siiffi")  # signature, version, points, start frame, sample rate, samples
CACHE_FOLDER = "quadric_cache"
STAGED = ".new"  # a cache written beside its final name until the whole bake is done (particle_bake.py)


def write_pc2(path, positions, start_frame=1.0, sample_rate=1.0):
    """Write positions (samples, points, 3) to a PC2 file at ``path`` (written whole, then renamed into place)."""
    pos = np.asarray(positions, dtype="<f4")
    if pos.ndim != 3 or pos.shape[2] != 3:
        raise ValueError(f"point cache '{path}': positions must be (samples, points, 3), not {pos.shape}")
    if not np.all(np.isfinite(pos)):
        raise ValueError(f"point cache '{path}': positions contain NaN or infinity")
    writer = PC2Writer(path, pos.shape[1], pos.shape[0], start_frame, sample_rate)
    try:
        writer.write(pos)
        writer.close()
    except BaseException:
        writer.abort()
        raise


class PC2Writer:
    """A PC2 file written some samples at a time (a bake cut into timer ticks) into ``path`` + '.part', renamed
    into place by ``close`` once every sample is there; ``abort`` removes the part written."""

    def __init__(self, path, points, samples, start_frame=1.0, sample_rate=1.0):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path, self.part = path, f"{path}.part"
        self.points, self.samples, self.written = points, samples, 0
        self._handle = open(self.part, "wb")
        try:
            self._handle.write(_HEADER.pack(SIGNATURE, 1, points, float(start_frame), float(sample_rate), samples))
        except BaseException:
            self.abort()
            raise

    def write(self, positions):
        """Append samples (k, points, 3)."""
        pos = np.asarray(positions, dtype="<f4")
        if pos.ndim != 3 or pos.shape[1:] != (self.points, 3) or self.written + len(pos) > self.samples:
            raise ValueError(f"point cache '{self.path}': samples of shape {pos.shape} do not fit "
                             f"({self.written} of {self.samples} samples of {self.points} points written)")
        np.ascontiguousarray(pos).tofile(self._handle)  # no bytes copy: 2,000 bodies x 250 frames are 18 MB
        self.written += len(pos)

    def close(self):
        self._handle.close()
        if self.written != self.samples:
            self.abort()
            raise ValueError(f"point cache '{self.path}': {self.written} of {self.samples} samples written")
        os.replace(self.part, self.path)

    def abort(self):
        self._handle.close()
        try:
            os.remove(self.part)
        except FileNotFoundError:
            pass


def read_pc2(path):
    """(positions (samples, points, 3) float32, start frame, sample rate) of a PC2 file."""
    with open(path, "rb") as handle:
        raw = handle.read()
    if len(raw) < _HEADER.size:
        raise ValueError(f"point cache '{path}': shorter than a PC2 header")
    signature, version, points, start, rate, samples = _HEADER.unpack_from(raw)
    if signature != SIGNATURE or version != 1:
        raise ValueError(f"point cache '{path}': not a PC2 file (signature {signature!r}, version {version})")
    expected = _HEADER.size + samples * points * 12
    if len(raw) != expected:
        raise ValueError(f"point cache '{path}': {len(raw)} bytes, the header promises {expected}")
    data = np.frombuffer(raw, dtype="<f4", offset=_HEADER.size).reshape(samples, points, 3)
    return data, start, rate


def safe_name(name):
    """A file-name-safe form of an object or scene name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "unnamed"


def cache_folder(scene):
    """(folder as Blender stores it, the same folder as an absolute path) for the scene's point caches."""
    import bpy

    if bpy.data.filepath:
        blend = safe_name(os.path.splitext(os.path.basename(bpy.data.filepath))[0])
        stored = f"//{CACHE_FOLDER}/{blend}/{safe_name(scene.name)}/"
        return stored, bpy.path.abspath(stored)
    folder = os.path.join(bpy.app.tempdir or os.path.abspath("."), CACHE_FOLDER, "unsaved", safe_name(scene.name))
    return folder + os.sep, folder + os.sep


def remove_file(stored_path):
    """Delete a cache file given as Blender stores it (relative or absolute); missing files are fine.

    Removes the scene's cache folders too once they are empty, so Clear Bake leaves nothing behind.
    """
    import bpy

    path = bpy.path.abspath(stored_path)
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    folder = os.path.dirname(path)
    for _ in range(3):  # <scene>/, <blend>/, then quadric_cache/
        try:
            os.rmdir(folder)
        except OSError:
            break
        folder = os.path.dirname(folder)


def local_positions(binding, positions, first=0):
    """Recorded world positions (F, n, 3) of frames first, first + 1, ... (or (n, 3) of frame ``first``) in the
    axes the cache plays them in: the soft body's object axes (at each frame where the binding has a matrix per
    frame, else at the first), world axes for particles (their object is at the origin)."""
    if binding.matrix is None:
        return positions
    matrix = np.asarray(binding.matrix, dtype=np.float64)
    if matrix.ndim == 3:
        single = positions.ndim == 2
        frames = positions[None] if single else positions
        # a recording cut short has fewer frames than the range
        inverse = np.linalg.inv(matrix[first:first + len(frames)])
        local = np.einsum("fij,fnj->fni", inverse[:, :3, :3], frames) + inverse[:, None, :3, 3]
        return local[0] if single else local
    inverse = np.linalg.inv(matrix)
    return positions @ inverse[:3, :3].T + inverse[:3, 3]
