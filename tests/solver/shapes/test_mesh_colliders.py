"""Static triangle meshes: topology, the hierarchy's queries, and bodies on floors, bowls, edges and walls.

Physics compares with closed forms or with the same scene on a true plane. All scenes share the
compiled specialisation of the substep loop of test_shape_bodies.py (a scene with a mesh collider
compiles the shapes' paths even where its bodies are ellipsoids).
"""
import math

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.collision.bvh import build_hierarchy, query
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.mesh import mesh_topology
from quadric_solver.validate import FieldError
from tests.helpers import axis_angle

G = 9.81


def grid(nx, ny, x0, x1, y0, y1, z=0.0):
    """A flat rectangle of nx by ny squares, each cut into two triangles, facing +z."""
    xs, ys = np.linspace(x0, x1, nx + 1), np.linspace(y0, y1, ny + 1)
    vertices = np.array([(x, y, z) for y in ys for x in xs])
    triangles = []
    for j in range(ny):
        for i in range(nx):
            a = j * (nx + 1) + i
            b, c, d = a + 1, a + nx + 2, a + nx + 1
            triangles += [(a, b, c), (a, c, d)]
    return vertices, np.array(triangles)


def bowl(radius, rings=12, segments=24, centre=(0.0, 0.0, 0.0)):
    """The lower half of a sphere, its fronts facing the centre (the inside of the bowl)."""
    centre = np.array(centre)
    vertices = [centre + (0.0, 0.0, -radius)]
    for r in range(1, rings + 1):
        polar = math.pi / 2 * (1.0 - r / rings)  # from the bottom up to the rim
        for s in range(segments):
            azimuth = 2.0 * math.pi * s / segments
            vertices.append(centre + radius * np.array([math.cos(polar) * math.cos(azimuth),
                                                        math.cos(polar) * math.sin(azimuth), -math.sin(polar)]))
    vertices = np.array(vertices)
    triangles = [(0, 1 + s, 1 + (s + 1) % segments) for s in range(segments)]
    for r in range(1, rings):
        for s in range(segments):
            a, b = 1 + (r - 1) * segments + s, 1 + (r - 1) * segments + (s + 1) % segments
            c, d = a + segments, b + segments
            triangles += [(a, c, d), (a, d, b)]
    triangles = np.array(triangles)
    # wind every triangle counter-clockwise seen from the centre
    corners = vertices[triangles]
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    outward = np.einsum("ij,ij->i", normal, corners.mean(axis=1) - centre) > 0.0
    triangles[outward] = triangles[outward][:, ::-1]
    return vertices, triangles


def _points_within(points, radius):
    """The points scaled about their mean so that the farthest is ``radius`` from it."""
    points = points - points.mean(axis=0)
    return points * radius / np.linalg.norm(points, axis=1).max()


# ----------------------------------------------------------------------------------------- topology, hierarchy
def test_topology_marks_boundary_and_convex_folds_active_and_flat_or_concave_seams_not():
    # a roof: two squares meeting at a ridge along y (convex seen from above), and a valley (concave)
    def folded(height):
        vertices = np.array([(-1, 0, 0), (0, 0, height), (1, 0, 0), (-1, 1, 0), (0, 1, height), (1, 1, 0)], float)
        triangles = np.array([(0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4)])
        return mesh_topology(vertices, triangles)

    ridge, valley, flat = folded(0.5), folded(-0.5), folded(0.0)
    # the ridge edge (1, 4) is triangle 0's edge 1 (corners 1 and 2) and triangle 3's edge 2
    assert ridge.edge_active[0, 1] and ridge.edge_active[3, 2]
    assert not valley.edge_active[0, 1] and not flat.edge_active[0, 1]
    # the diagonals inside each square are flat: inactive everywhere
    assert not ridge.edge_active[0, 2] and not ridge.edge_active[1, 0]
    # the outline is the boundary: active, 6 of the 12 directed edges; the ridge adds its two
    assert flat.edge_active.sum() == 6 and ridge.edge_active.sum() == 8
    assert ridge.neighbour[0, 1] == 3 and ridge.neighbour[3, 2] == 0
    assert ridge.flipped_edges == 0
    # every corner ends a boundary edge; the lowest triangle at a vertex owns it
    assert ridge.corner_active.all()
    assert ridge.corner_owner[3].tolist() == [0, 2, 0]  # vertices 1, 5 (only in triangles 2 and 3), 4


def test_a_fold_below_the_active_angle_stays_inactive():
    # two triangles folded convexly by 3 degrees: smooth enough to roll over without edge contacts
    angle = math.radians(3.0)
    vertices = np.array([(0, 0, 0), (0, 1, 0), (-1, 0, 0), (math.cos(angle), 0, -math.sin(angle))])
    topology = mesh_topology(vertices, np.array([(0, 1, 2), (1, 0, 3)]))
    assert not topology.edge_active[0, 0]
    steep = vertices.copy()
    steep[3] = (math.cos(5 * angle), 0, -math.sin(5 * angle))
    assert mesh_topology(steep, np.array([(0, 1, 2), (1, 0, 3)])).edge_active[0, 0]


def test_the_hierarchy_finds_every_box_that_meets_the_query_and_lists_them_in_order():
    rng = np.random.default_rng(11)
    centres = rng.uniform(-5.0, 5.0, size=(3000, 3))
    sizes = rng.uniform(0.01, 0.5, size=(3000, 3))
    low, high = centres - sizes, centres + sizes
    hierarchy = build_hierarchy(low, high)
    found = np.empty(4, dtype=np.int64)  # too small on purpose: the query grows it
    for _ in range(200):
        q_low = rng.uniform(-5.5, 5.0, size=3)
        q_high = q_low + rng.uniform(0.0, 2.0, size=3)
        count, found = query(*hierarchy, *q_low, *q_high, found)
        listed = found[:count]
        meets = np.flatnonzero(np.all((low <= q_high) & (high >= q_low), axis=1))
        # every box that meets it is listed, once, in increasing order (others may share its leaf)
        assert set(meets) <= set(listed.tolist())
        assert np.all(np.diff(listed) > 0)


def test_bad_meshes_are_refused_by_name_and_field():
    scene = solver.Scene()
    vertices, triangles = grid(1, 1, 0, 1, 0, 1)
    with pytest.raises(FieldError, match=r"mesh collider 'Ground': triangles\[1\] refers to vertex 7"):
        scene.add_mesh_collider(vertices, [(0, 1, 2), (0, 2, 7)], name="Ground")
    with pytest.raises(FieldError, match=r"mesh collider 'Ground': vertices contains NaN"):
        scene.add_mesh_collider(np.where(vertices == 1.0, np.nan, vertices), triangles, name="Ground")
    with pytest.raises(FieldError, match=r"mesh collider 0: triangles\[0\] uses a vertex twice"):
        scene.add_mesh_collider(vertices, [(0, 0, 1)])
    with pytest.raises(FieldError, match=r"triangles must be an \(m, 3\) array of vertex indices"):
        scene.add_mesh_collider(vertices, [(0, 1)])
    flipped = triangles.copy()
    flipped[0] = flipped[0, ::-1]
    with pytest.warns(UserWarning, match=r"mesh collider 'Roof': 1 edges join triangles that face opposite ways"):
        scene.add_mesh_collider(vertices, flipped, name="Roof")


def test_mesh_colliders_round_trip_through_a_scene_file_and_keep_other_hashes(tmp_path):
    plain = solver.Scene()
    plain.add_plane()
    before = plain.content_hash()
    scene = solver.Scene()
    scene.add_plane()
    assert scene.content_hash() == before
    vertices, triangles = bowl(0.5, rings=3, segments=6)
    scene.add_mesh_collider(vertices, triangles, material=solver.Material(friction=0.3), name="Bowl")
    path = tmp_path / "scene.json"
    scene.save(path)
    loaded = solver.Scene.load(path)
    assert loaded.content_hash() == scene.content_hash() != before
    np.testing.assert_array_equal(loaded.meshes[0]["triangles"], triangles)
    assert loaded.materials[loaded.meshes[0]["material"]].friction == 0.3


def test_ropes_beside_mesh_colliders_are_refused_by_name():
    """Particles collide with mesh colliders (tests/solver/particles/test_particle_meshes.py); ropes do not yet."""
    vertices, triangles = grid(1, 1, 0, 1, 0, 1)
    scene = solver.Scene()
    scene.add_mesh_collider(vertices, triangles, name="Ground")
    scene.add_rope([(0, 0, 1), (0, 0, 2)])
    with pytest.raises(FieldError, match=r"mesh collider 'Ground': triangles cannot share a scene with ropes"):
        solver.Simulation(scene)


# ------------------------------------------------------------------------------------------------ simulation
def _slide(floor, mu=0.4, speed=2.0):
    """A box given ``speed`` along x on a floor (a callable adding it to a scene): its x and vz, wz histories."""
    material = solver.Material(friction=mu)
    scene = solver.Scene()
    floor(scene, material)
    half = (0.1, 0.08, 0.05)
    scene.add_body(solver.Box(half), position=(0.0, 0.013, half[2]), velocity=(speed, 0.0, 0.0), material=material)
    sim = solver.Simulation(scene)
    x, vertical, spin = [], [], []
    for _ in range(40):
        sim.run(frames=2, fps=60)
        x.append(sim.state.position[0, 0])
        vertical.append(abs(sim.state.linear_velocity[0, 2]))
        spin.append(np.abs(sim.state.angular_velocity[0]).max())
    return np.array(x), max(vertical), max(spin)


def test_a_box_slides_across_a_finely_triangulated_floor_as_on_a_plane():
    mu, speed = 0.4, 2.0
    on_plane, vertical_plane, spin_plane = _slide(lambda scene, m: scene.add_plane(material=m), mu, speed)
    # triangles of 5 cm under a 20 x 16 cm box: its corners cross a seam every few substeps
    vertices, triangles = grid(50, 12, -0.5, 2.0, -0.3, 0.3)
    on_mesh, vertical_mesh, spin_mesh = _slide(
        lambda scene, m: scene.add_mesh_collider(vertices, triangles, material=m), mu, speed)
    stopping = speed * speed / (2.0 * mu * G)
    assert on_plane[-1] == pytest.approx(stopping, rel=0.01)
    # the same stopping distance to a millimetre (0.2%), and no bumps: a seam that caught a corner at 2 m/s
    # would kick the box upwards or set it turning by far more than these
    assert on_mesh[-1] == pytest.approx(on_plane[-1], abs=1e-3)
    np.testing.assert_allclose(on_mesh, on_plane, atol=1e-3)
    assert vertical_mesh < vertical_plane + 1e-3
    assert spin_mesh < spin_plane + 1e-2


@pytest.mark.parametrize("shape", [solver.Box((0.1, 0.1, 0.1)), solver.Ellipsoid((0.1, 0.1, 0.1)),
                                   solver.Cylinder(0.1, 0.05)])
def test_a_body_falling_five_metres_onto_a_mesh_stops_on_it(shape):
    # two big triangles: nothing near the landing point but the face
    vertices, triangles = grid(1, 1, -2.0, 2.0, -2.0, 2.0)
    scene = solver.Scene()
    scene.add_mesh_collider(vertices, triangles, name="Ground")
    height = {solver.Box: 0.1, solver.Ellipsoid: 0.1, solver.Cylinder: 0.05}[type(shape)]
    scene.add_body(shape, position=(0.3, -0.2, 5.0 + height))
    sim = solver.Simulation(scene)
    recording = sim.run(frames=40, fps=24, substeps=10)  # dt = 1/240 s; it lands at 9.9 m/s after 1.01 s
    lowest = recording.body_poses[:, 0, 2].min()
    assert lowest > height - 0.05 * height  # it never sank more than 5% of its half height into the mesh
    assert sim.state.position[0, 2] == pytest.approx(height, abs=0.002 * height + 1e-9)
    assert sim.stats["kinetic_energy"] < 1e-6


def test_a_box_overhanging_a_table_edge_stays_while_its_centre_is_over_the_table():
    # an open mesh: the table top ends at x = 0 (a boundary edge, active)
    vertices, triangles = grid(4, 4, -1.0, 0.0, -0.5, 0.5)
    half = 0.1
    results = {}
    for overhang in (0.07, 0.13):  # how far the box reaches beyond the edge
        scene = solver.Scene()
        scene.add_mesh_collider(vertices, triangles, material=solver.Material(friction=0.8))
        centre_x = -half + overhang  # the box reaches overhang beyond x = 0
        scene.add_body(solver.Box((half, half, half)), position=(centre_x, 0.0, half),
                       material=solver.Material(friction=0.8))
        sim = solver.Simulation(scene)
        sim.run(frames=97, fps=48)
        results[overhang] = sim.state.position[0].copy(), quat_to_matrix_np(sim.state.orientation[0])[2, 2]
    # 7 cm over the edge: the centre is 3 cm inside, the box is supported along the edge and stays level
    position, up = results[0.07]
    assert position[2] == pytest.approx(half, abs=0.002 * half)
    assert up > math.cos(math.radians(0.5))
    # 13 cm over: the centre is 3 cm beyond the edge and it tips off: after 2 s it is below the table top
    position, _ = results[0.13]
    assert position[2] < 0.0


def test_a_body_thrown_at_a_thin_wall_stays_in_front_and_one_from_behind_passes():
    # a wall of two triangles in the plane x = 0, its front facing -x; no gravity
    vertices = np.array([(0, -1, -1), (0, 1, -1), (0, 1, 1), (0, -1, 1)], float)
    triangles = np.array([(0, 3, 2), (0, 2, 1)])  # counter-clockwise seen from -x
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    scene.add_mesh_collider(vertices, triangles, material=solver.Material(restitution=0.5))
    front = scene.add_body(solver.Box((0.05, 0.05, 0.05)), position=(-0.5, 0.0, 0.3), velocity=(20.0, 0, 0),
                           orientation=axis_angle((1, 1, 0), 0.4), material=solver.Material(restitution=0.5))
    back = scene.add_body(solver.Ellipsoid((0.05, 0.05, 0.05)), position=(0.5, 0.0, -0.3), velocity=(-20.0, 0, 0))
    sim = solver.Simulation(scene)
    recording = sim.run(frames=12, fps=60)
    # at 20 m/s it travels 8 cm per substep of 1/240 s, more than its own size: it still never gets
    # through (its centre stays its half width, at least 5 cm, in front, less the slop)
    assert recording.body_poses[:, front, 0].max() < -0.05 + 0.002 * 0.05
    assert sim.state.linear_velocity[front, 0] < -5.0  # and bounces back (restitution 0.5)
    # from behind the wall is not there: the ellipsoid flies through unchanged
    assert sim.state.position[back, 0] < -1.0
    assert sim.state.linear_velocity[back, 0] == -20.0


def test_a_bowl_mesh_holds_a_heap_of_mixed_shapes():
    radius = 0.5
    vertices, triangles = bowl(radius)
    scene = solver.Scene()
    stone = solver.Material(friction=0.6, rolling_friction=0.002)
    scene.add_mesh_collider(vertices, triangles, material=stone, name="Bowl")
    shapes = [solver.Box((0.05, 0.04, 0.03)), solver.Ellipsoid((0.05, 0.04, 0.035)), solver.Cylinder(0.04, 0.03),
              solver.Capsule(0.03, 0.03), solver.Superellipsoid((0.05, 0.04, 0.04), (0.4, 0.6)),
              solver.ConvexHull(_points_within(np.random.default_rng(5).normal(size=(12, 3)), 0.05))]
    rng = np.random.default_rng(2)
    for k in range(24):
        q = rng.normal(size=4)
        scene.add_body(shapes[k % len(shapes)], position=(0.12 * (k % 3 - 1), 0.12 * (k // 3 % 3 - 1),
                                                           -0.3 + 0.12 * (k // 9)),
                       orientation=q / np.linalg.norm(q), material=stone)
    sim = solver.Simulation(scene)
    recording = sim.run(frames=97, fps=48)
    # every body stays in the bowl all along: its centre inside the sphere and below the rim, so none
    # went through the mesh (one that did would fall away below it)
    distance = np.linalg.norm(recording.body_poses[:, :, :3], axis=2)
    assert distance.max() < radius
    assert recording.body_poses[:, :, 2].max() < 0.0
    # the heap settles: one 0.2 kg body still sliding at 3 cm/s would carry 1e-4 J
    assert sim.stats["kinetic_energy"] < 1e-4
    # and the mesh holds it without sinking in: overlaps within 2% of the smallest half size (3 cm)
    assert recording.stats["max_penetration"][48:].max() < 0.02 * 0.03


def test_a_start_inside_a_mesh_is_refused_naming_the_triangle():
    vertices, triangles = grid(1, 1, -1.0, 1.0, -1.0, 1.0)
    scene = solver.Scene()
    scene.add_mesh_collider(vertices, triangles, name="Ground")
    scene.add_body(solver.Box((0.1, 0.1, 0.1)), position=(-0.2, 0.3, 0.05), name="Crate")
    with pytest.raises(ValueError, match=r"body 0 \('Crate'\): position overlaps triangle 1 of mesh collider "
                                         r"'Ground' by 0.05 m"):
        solver.Simulation(scene)


def test_an_ellipsoid_rolls_over_a_ridge_without_leaving_the_surface():
    # a roof of two slopes of 10 degrees, ridge along y at x = 0; a ball set rolling over the ridge
    slope = math.radians(10.0)
    run = 2.0
    drop = run * math.tan(slope)
    vertices = np.array([(-run, -1, -drop), (0, -1, 0), (run, -1, -drop), (-run, 1, -drop), (0, 1, 0),
                         (run, 1, -drop)])
    triangles = np.array([(0, 1, 4), (0, 4, 3), (1, 2, 5), (1, 5, 4)])
    radius = 0.1
    scene = solver.Scene()
    grip = solver.Material(friction=0.8)
    scene.add_mesh_collider(vertices, triangles, material=grip)
    # on the left slope, touching it, rolling up towards the ridge
    foot = np.array([-0.6, 0.0, -0.6 * math.tan(slope)])
    up = np.array([-math.sin(slope), 0.0, math.cos(slope)])
    # rolling up at 1.3 m/s: over the ridge at about 0.46 m/s, slow enough that gravity keeps it on the
    # surface as it turns about the ridge (v^2 / r = 2.1 m/s^2 < g cos 10 degrees)
    velocity = 1.3 * np.array([math.cos(slope), 0.0, math.sin(slope)])
    scene.add_ellipsoid((radius,) * 3, position=foot + radius * up, velocity=velocity,
                        angular_velocity=np.cross(up, velocity) / radius, material=grip)
    sim = solver.Simulation(scene)
    recording = sim.run(frames=91, fps=60)
    centres = recording.body_poses[:, 0, :3]
    # the surface under the ball's centre: the roof's height, and the distance from the centre to the roof
    x = centres[:, 0]
    distance_to_roof = np.where(
        np.abs(x) <= radius * math.sin(slope),
        np.hypot(x, centres[:, 2]),  # over the ridge the nearest point is the ridge itself
        (centres[:, 2] + np.abs(x) * math.tan(slope)) * math.cos(slope))
    # it went over the ridge and it kept touching the roof: never lifted off by more than 1 mm, never sank in
    assert x[-1] > 0.3
    assert distance_to_roof.max() < radius + 1e-3
    assert distance_to_roof.min() > radius - 0.002 * radius - 1e-6
