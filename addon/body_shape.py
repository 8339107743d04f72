"""A body's shape on its object: fitted to the mesh, read for the solver and Check Scene, shown as a wire mesh.

The body's settings (addon/properties.py) are the one source of truth: the family (``fitted_shape``), its
parameters in metres (``semi_axes``, ``exponents``, ``half_extents``, ``radius``, ``half_height``, a hull's
``hull_mesh``) and the shape's frame relative to the object (``offset_location``, ``offset_rotation``, in the
object's unscaled axes). The panel edits exactly these; the object's scale does not enter, so scaling the
object or editing its mesh leaves the shape as it is until Fit Shape runs again (the conversion warns).

The display is a wire mesh object drawn from the settings whenever they change, held at the body by a Child
Of constraint that ignores the body's scale, so it shows exactly what the solver gets. It cannot be
selected, and editing it changes nothing. Bodies of one shape made together share their display's mesh until
one is edited.
"""
import contextlib
import dataclasses
from itertools import chain

import bpy
import numpy as np
from mathutils import Matrix, Quaternion, Vector

from quadric_solver import rotations
from . import datablocks, fitting, shapes

DISPLAY_CONSTRAINT = "Quadric Shape"
_quiet = [0]  # above 0 while the add-on writes the settings itself: their update callbacks wait


@contextlib.contextmanager
def quiet():
    _quiet[0] += 1
    try:
        yield
    finally:
        _quiet[0] -= 1


def rigid_parts(matrix):
    """(location, unit quaternion, scale) of a 4x4 world matrix."""
    loc, rot, scale = matrix.decompose()
    return np.array(loc), np.array(rot.normalized()), np.array(scale)


def rigid_track(matrices):
    """(locations (F, 3), unit quaternions (F, 4), scales (F, 3)) of world matrices sampled at each frame, the
    quaternions made continuous (no sign flips from frame to frame) for the solver's interpolation."""
    parts = [rigid_parts(m) for m in matrices]
    locations = np.array([loc for loc, _, _ in parts])
    turns = rotations.make_continuous(np.array([rot for _, rot, _ in parts]))
    return locations, turns, np.array([scale for _, _, scale in parts])


def mesh_triangles_world(context, obj):
    """The evaluated mesh's vertices in world space (V, 3) and its triangles (T, 3)."""
    depsgraph = context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        mesh.calc_loop_triangles()
        co = np.empty(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", co)
        tri = np.empty(3 * len(mesh.loop_triangles), dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", tri)
    finally:
        ev.to_mesh_clear()
    mw = np.array(obj.matrix_world)
    co = co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]
    return co, tri.reshape(-1, 3)


def fit(context, obj, family=None):
    """Fit the object's mesh with a family ('AUTO', 'BOX', ...; default: its Shape setting). Raises FitError."""
    if obj.type != 'MESH':
        raise fitting.FitError(f"'{obj.name}' is not a mesh (it is {obj.type.lower()}); only meshes can become "
                               "bodies")
    co, tri = mesh_triangles_world(context, obj)
    axes = rotations.to_matrix(rigid_parts(obj.matrix_world)[1])
    return fitting.fit_shape(co, tri, family or obj.quadric.shape, obj.name, frames=[axes])


SAME_SCALE = 1e-6  # relative: scale and shear that differ less are one (a float32 matrix's own rounding is 6e-8)


class FitMemo:
    """``fit``, once per mesh up to a rigid motion: linked duplicates (one mesh datablock shown as it is, without
    modifiers or shape keys) under the same scale and shear are fitted once, and the others get that fit moved
    to them. The fit commutes with rigid motions (its candidate frames are the mesh's principal axes and the
    object's own), so the moved fit is the one fitting them would find, up to the frame a symmetric mesh leaves
    open: grids of duplicates are most of Add Body's time otherwise (4 ms a mesh). Fits with a warning, which
    names its object, are not shared."""

    def __init__(self):
        self._fits = {}  # key -> (ShapeFit, location, rotation matrix of the object it was fitted on)

    def fit(self, context, obj, family=None):
        family = family or obj.quadric.shape
        key = self._key(obj, family)
        if key is None:
            return fit(context, obj, family)
        location, turn, _ = rigid_parts(obj.matrix_world)
        axes = rotations.to_matrix(turn)
        held = self._fits.get(key)
        if held is not None:
            found, at, held_axes = held
            move = axes @ held_axes.T
            return dataclasses.replace(found, center=move @ (found.center - at) + location,
                                       rotation=move @ found.rotation)
        found = fit(context, obj, family)
        if not found.warning:
            self._fits[key] = found, location, axes
        return found

    @staticmethod
    def _key(obj, family):
        """(mesh, family, scale and shear in the object's own axes), or None where the mesh is evaluated into
        something else."""
        if obj.type != 'MESH' or len(obj.modifiers) or obj.data.shape_keys is not None:
            return None
        matrix = np.array(obj.matrix_world)
        shape = rotations.to_matrix(rigid_parts(obj.matrix_world)[1]).T @ matrix[:3, :3]
        size = float(np.abs(shape).max())
        if not size > 0.0:
            return None
        digits = -int(np.floor(np.log10(SAME_SCALE)))
        return obj.data.as_pointer(), family, f"{size:.{digits}e}", tuple(np.round(shape / size, digits).flat)


def fit_offsets(objs, found):
    """(locations (N, 3), rotations (N, 4)): each ShapeFit's frame in its object's unscaled axes (the offset
    settings), for many at once: quaternion products on one row at a time took half of Add Body's making step."""
    parts = [rigid_parts(obj.matrix_world) for obj in objs]
    back = rotations.conj([turn for _, turn, _ in parts])
    centers = np.array([f.center for f in found]) - np.array([location for location, _, _ in parts])
    return (rotations.rotate(back, centers),
            rotations.mul(back, np.array([rotations.from_matrix(f.rotation) for f in found])))


def apply_fit(obj, found, batch=None, offset=None):
    """Store a ShapeFit (world space, taken at the object's current matrix) on the object and show it (``batch``:
    see update_display; ``offset``: its row of fit_offsets, if computed)."""
    s = obj.quadric
    location, rotation = offset if offset is not None else (row[0] for row in fit_offsets([obj], [found]))
    with quiet():
        s.fitted_shape = found.family
        for name, value in shapes.named(found.kind, found.params).items():
            setattr(s, name, value)
        _set_hull(obj, found.hull_vertices, found.hull_faces, None if batch is None else batch.doomed)
        s.fitted_volume = found.volume
        s.fitted_shape_volume = found.shape_volume
        s.fit_method = found.method
        s.fit_closed = found.closed
        s.fit_note = ", ".join(f"{name} {100.0 * score:.2g}%" for name, score in
                               sorted(found.scores.items(), key=lambda item: item[1]))
        s.offset_location = location
        s.offset_rotation = rotation
        s.fit_dimensions = obj.dimensions
    update_display(obj, create=True, batch=batch)


def _set_hull(obj, vertices, faces, doomed=None):
    """Give the body a hull mesh of these vertices and faces, or none; the one it replaces is deleted where nothing
    else uses it, or left in the list ``doomed`` for delete_displays."""
    s = obj.quadric
    old = s.hull_mesh
    if vertices is None:
        s.hull_mesh = None
    else:
        mesh = bpy.data.meshes.new(obj.name + " Hull")
        fill_mesh(mesh, vertices, faces)
        s.hull_mesh = mesh
    if old is not None and old != s.hull_mesh:
        if doomed is None:
            datablocks.remove_unused([old])
        else:
            doomed.append(old)


def fill_mesh(mesh, vertices, faces):
    """Replace the mesh's geometry with these vertices (V, 3) and faces (sequences of vertex indices).

    Mesh.from_pydata, with numpy arrays where it walks every coordinate in Python, and without its flat shading
    (these meshes are drawn as wires or not at all): most of Add Body's own time making 2,000 displays."""
    mesh.clear_geometry()
    mesh.vertices.add(len(vertices))
    mesh.vertices.foreach_set("co", np.asarray(vertices, dtype=np.float32).ravel())
    if len(faces):
        sizes = np.fromiter(map(len, faces), dtype=np.int32, count=len(faces))
        mesh.loops.add(int(sizes.sum()))
        mesh.polygons.add(len(faces))
        mesh.polygons.foreach_set("loop_start", np.cumsum(sizes, dtype=np.int32) - sizes)
        corners = np.ravel(faces) if isinstance(faces, np.ndarray) else np.fromiter(chain.from_iterable(faces),
                                                                                     np.int32)
        mesh.polygons.foreach_set("vertices", corners.astype(np.int32, copy=False))
    mesh.update(calc_edges=len(faces) > 0)


def hull_arrays(mesh):
    """(vertices (V, 3), triangles (F, 3)) of a hull mesh (all its faces are triangles)."""
    co = np.empty(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    loops = np.empty(len(mesh.loops), dtype=np.int64)
    mesh.loops.foreach_get("vertex_index", loops)
    return co.reshape(-1, 3), loops.reshape(-1, 3)


def shape_of(obj):
    """(kind, parameter row, hull vertices or None, hull faces or None) of a body, as its settings say."""
    s = obj.quadric
    kind = shapes.kind_of(s.fitted_shape)
    params = shapes.row(kind, semi_axes=s.semi_axes, exponents=s.exponents, half_extents=s.half_extents,
                        radius=s.radius, half_height=s.half_height)
    if kind == shapes.HULL:
        if s.hull_mesh is None or len(s.hull_mesh.vertices) < 4:
            return kind, params, None, None
        return (kind, params, *hull_arrays(s.hull_mesh))
    return kind, params, None, None


def shape_pose(obj, matrix):
    """(centre, quaternion) of the body's shape frame in world space for a given object matrix."""
    s = obj.quadric
    t, r, _ = rigid_parts(matrix)
    offset = np.array(s.offset_rotation, dtype=np.float64)
    return t + rotations.rotate(r, np.array(s.offset_location)), rotations.mul(r, offset / np.linalg.norm(offset))


def changed_since_fit(obj):
    """True when the object's dimensions (its mesh's bounding box times its scale) changed since the fit."""
    fitted = np.array(obj.quadric.fit_dimensions)
    if not fitted.any():
        return False
    return bool(np.abs(np.array(obj.dimensions) - fitted).max() > 1e-4 * max(fitted.max(), 1e-9))


# ------------------------------------------------------------------------------------------ display
def display_owner(obj):
    """The body whose shape display ``obj`` is, else None."""
    constraint = obj.constraints.get(DISPLAY_CONSTRAINT) if obj.type == 'MESH' else None
    body = constraint.target if constraint is not None else None
    return body if body is not None and body.quadric.shape_display == obj else None


class DisplayBatch:
    """What update_display of many bodies does once for all of them: finding the collections linking each object
    (Object.users_collection searches every collection for each object); a display constraint to copy (naming a
    new constraint searches all the file's animation for paths to rename: with 2,000 bodies, most of Add Body's
    time making the displays); one display mesh for all new displays of the same shape (linked duplicates of
    one mesh: filling a mesh is most of our own time making a display); the displays' hide flags, set in
    finish() (datablocks.set_object_flags); and the hull meshes that new fits replace, deleted in finish() (one
    at a time, each deletion searches the file)."""

    def __init__(self):
        self.homes = {}  # object's as_pointer(): the collections that link it
        for collection in [*bpy.data.collections, *(scene.collection for scene in bpy.data.scenes)]:
            for obj in collection.objects:
                self.homes.setdefault(obj.as_pointer(), []).append(collection)
        self.constraint = None  # the first display constraint made in this batch
        self.displays = []  # whose hide flags finish() sets
        self.doomed = []  # hull meshes replaced, for delete_displays
        self.meshes = {}  # (kind, parameter row): the display mesh of new displays of that shape

    def collections_of(self, obj):
        return self.homes.get(obj.as_pointer(), ())

    def finish(self):
        """Hide the batch's displays from renders and selection, and delete the hull meshes replaced."""
        datablocks.set_object_flags({name: dict.fromkeys(self.displays, True)
                                     for name in ("hide_render", "hide_select")})
        delete_displays(self.doomed)
        self.displays, self.doomed = [], []


def update_display(obj, create=False, batch=None):
    """Redraw the body's wire display from its settings (make one if ``create`` or if it was deleted); ``batch``
    (a DisplayBatch made before the displays) saves work done for each of many bodies."""
    s = obj.quadric
    display = s.shape_display
    if display is None and not create:
        return None
    held = display.constraints.get(DISPLAY_CONSTRAINT) if display is not None else None
    if held is not None and held.target not in (None, obj):
        display = None  # a copy of another body (Shift+D) points at that body's display: make its own
    made = display is None or display.type != 'MESH'
    kind, params, hull, faces = shape_of(obj)
    key = (kind, tuple(params)) if made and batch is not None and kind != shapes.HULL else None
    shared = batch.meshes.get(key) if key is not None else None
    if made:
        name = obj.name + " Shape"
        display = bpy.data.objects.new(name, shared or bpy.data.meshes.new(name))
        s.shape_display = display
    elif display.data.users > 1:  # shared by the bodies of one shape a batch made: this one's is its own now
        display.data = bpy.data.meshes.new(display.name)
    collections_of = (lambda o: o.users_collection) if batch is None else batch.collections_of
    if made or not collections_of(display):  # new, or deleted by hand (the pointer keeps it alive)
        for collection in collections_of(obj):
            collection.objects.link(display)
    display.display_type = 'WIRE'
    if batch is None:
        display.hide_render = True
        display.hide_select = True
    else:
        batch.displays.append(display)
    constraint = display.constraints.get(DISPLAY_CONSTRAINT)
    if constraint is None and batch is not None and batch.constraint is not None:
        constraint = display.constraints.copy(batch.constraint)  # named as it is, its settings below copied
    else:
        if constraint is None:
            constraint = display.constraints.new('CHILD_OF')
            constraint.name = DISPLAY_CONSTRAINT
            if batch is not None:
                batch.constraint = constraint
        constraint.use_scale_x = constraint.use_scale_y = constraint.use_scale_z = False
        constraint.inverse_matrix = Matrix.Identity(4)
    constraint.target = obj
    if shared is None:
        if kind == shapes.HULL and hull is None:
            vertices, polygons = np.zeros((0, 3)), []
        else:
            vertices, polygons = shapes.display_mesh(kind, params, hull, faces)
        fill_mesh(display.data, vertices, polygons)
        if key is not None:
            batch.meshes[key] = display.data
    turn = Quaternion(s.offset_rotation)
    display.matrix_basis = Matrix.LocRotScale(Vector(s.offset_location), turn.normalized() if turn.magnitude else turn,
                                              None)
    return display


def remove_display(obj, doomed=None):
    """Delete the body's display and its hull mesh; returns whether there was a display. With ``doomed`` (a list),
    they are only taken off the body and left there for delete_displays."""
    s = obj.quadric
    display = s.shape_display
    own = doomed is None
    doomed = [] if own else doomed
    with quiet():
        _set_hull(obj, None, None, doomed)
    if display is not None:
        s.shape_display = None
        doomed.append(display)
    if own:
        delete_displays(doomed)
    return display is not None


def delete_displays(doomed, also=()):
    """Delete what remove_display left in ``doomed`` (displays and hull meshes), and the displays' meshes where
    nothing else uses them, with those of the datablocks ``also`` that nothing uses (a Remove's bake actions), all
    in one call (addon/datablocks.py)."""
    displays = [block for block in doomed if isinstance(block, bpy.types.Object)]
    meshes = [block for block in doomed if not isinstance(block, bpy.types.Object)]
    meshes += [display.data for display in displays if display.data is not None]
    datablocks.remove_unused(meshes + list(also), displays)


# --------------------------------------------------------------------------------- update callbacks
def shape_setting_changed(settings, context):
    """The Shape setting changed: fit the mesh again with it, unless the body already has that family."""
    obj = settings.id_data
    if _quiet[0] or settings.role != 'BODY' or settings.shape == settings.fitted_shape:
        return
    try:
        apply_fit(obj, fit(context, obj))
    except fitting.FitError as exc:
        settings.fit_note = f"not fitted: {exc}"


def parameters_changed(settings):
    """A parameter or the offset changed: redraw the display (if the body has one)."""
    if not _quiet[0] and settings.role == 'BODY':
        update_display(settings.id_data)
