"""Ropes through the public API: Scene.add_rope, Simulation, Recording, files, CLI, and rope contacts."""
import math
import subprocess
import sys

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.ropes.contacts import CONTACT_SLOP
from tests.helpers import ROOT, double_pendulum_effective_length, line, quat_to_matrix

LENGTH_TOLERANCE = 1e-4

def frame_length_error(nodes, rest):
    """Largest relative segment length error over recorded frames: nodes (F, n, 3), rest (n-1,)."""
    lengths = np.linalg.norm(np.diff(nodes, axis=1), axis=2)
    return float(np.max(np.abs(lengths / rest - 1.0)))


def rest_lengths(points):
    return np.linalg.norm(np.diff(np.asarray(points, float), axis=0), axis=1)


def min_nonadjacent_distance(nodes, radius, lengths):
    """Smallest distance between the axes of segments that are further apart along the rope than pi r
    (closer ones are excluded from contact, as in the solver), by dense sampling of each segment."""
    samples = np.linspace(0.0, 1.0, 9)
    points = nodes[:-1, None, :] + samples[None, :, None] * np.diff(nodes, axis=0)[:, None, :]
    arc = np.concatenate([[0.0], np.cumsum(lengths)])
    best = np.inf
    n = len(lengths)
    for i in range(n):
        far = [j for j in range(i + 1, n) if arc[j] - arc[i + 1] >= math.pi * radius]
        if not far:
            continue
        d = np.linalg.norm(points[i][:, None, None, :] - points[far][None, :, :, :], axis=3)
        best = min(best, float(d.min()))
    return best


def closed_curve(nodes):
    """Close an open curve through a far arc outside a ball around it (the knot type is then well defined)."""
    centre = nodes.mean(axis=0)
    radius = 4.0 * np.max(np.linalg.norm(nodes - centre, axis=1))
    a, b = nodes[0] - centre, nodes[-1] - centre
    far_a = centre + radius * a / np.linalg.norm(a)
    far_b = centre + radius * b / np.linalg.norm(b)
    normal = np.cross(a, b)
    normal = normal / np.linalg.norm(normal) if np.linalg.norm(normal) > 1e-9 else np.array([0.0, 0.0, 1.0])
    arc = [far_b, centre + radius * normal * 1.5, far_a]
    return np.concatenate([nodes, np.array(arc)])

def knot_determinant(polygon, seed=0):
    """|Alexander polynomial at -1| of a closed polygon, from a generic projection (3 for a trefoil, 1 for
    an unknot): Fox colouring matrix of the diagram, with one row and one column removed."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    p = polygon @ q
    n = len(p)
    crossings = []  # (position of the under-crossing along the curve, position of the over-crossing)
    for i in range(n):
        a0, a1 = p[i], p[(i + 1) % n]
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:
                continue
            b0, b1 = p[j], p[(j + 1) % n]
            d1, d2 = a1[:2] - a0[:2], b1[:2] - b0[:2]
            den = d1[0] * d2[1] - d1[1] * d2[0]
            if abs(den) < 1e-14:
                continue
            w = b0[:2] - a0[:2]
            s = (w[0] * d2[1] - w[1] * d2[0]) / den
            t = (w[0] * d1[1] - w[1] * d1[0]) / den
            if 0 <= s < 1 and 0 <= t < 1:
                za = a0[2] + s * (a1[2] - a0[2])
                zb = b0[2] + t * (b1[2] - b0[2])
                if za < zb:
                    crossings.append((i + s, j + t))
                else:
                    crossings.append((j + t, i + s))
    if not crossings:
        return 1
    unders = sorted(c[0] for c in crossings)
    m = len(unders)

    def arc_of(position):  # arc k starts after under-crossing k-1 (cyclically)
        k = np.searchsorted(unders, position, side="right")
        return k % m

    matrix = np.zeros((m, m))
    for row, (under, over) in enumerate(crossings):
        k = unders.index(under)
        incoming, outgoing = k % m, (k + 1) % m
        matrix[row, arc_of(over)] += 2.0
        matrix[row, incoming] -= 1.0
        matrix[row, outgoing] -= 1.0
    return int(round(abs(np.linalg.det(matrix[1:, 1:]))))


# ------------------------------------------------------------------------------------------------
# API, files, CLI

def small_scene():
    scene = solver.Scene()
    steel = solver.Material(friction=0.4)
    scene.add_plane(material=steel)
    bob = scene.add_ellipsoid((0.05, 0.05, 0.08), position=(0.0, 0.0, 0.62), density=1000.0, name="Bob")
    scene.add_rope(line(20, (0, 0, 1.5), (0, 0, 0.7)), radius=0.004, pinned=(0,), name="Hanger",
                   attachments=[(20, bob, (0.0, 0.0, 0.08))])
    scene.add_rope(line(30, (-0.5, 0.3, 0.3), (0.5, 0.3, 0.3)), radius=0.01, young_modulus=1e6, material=steel,
                   damping=0.5, name="Floor rope")
    return scene


def test_scene_recording_and_cli_round_trip(tmp_path):
    scene = small_scene()
    scene_file = tmp_path / "scene.json"
    scene.save(scene_file)
    loaded = solver.Scene.load(scene_file)
    # material indices follow the order materials are met in; compare the materials themselves
    for mine, theirs in zip(scene.ropes, loaded.ropes):
        assert {**mine, "material": None} == {**theirs, "material": None}
        assert scene.materials[mine["material"]] == loaded.materials[theirs["material"]]
    assert len(loaded.ropes) == 2
    assert loaded.ropes[0]["attachments"] == [[20, 0, [0.0, 0.0, 0.08]]]

    sim = solver.Simulation(loaded)
    recording = sim.run(frames=12, fps=24, substeps=10)
    assert recording.rope_nodes(0).shape == (12, 21, 3)
    assert recording.rope_segments(1).shape == (12, 30, 4)
    np.testing.assert_array_equal(recording.rope_nodes(1)[-1], sim.state.rope_nodes(1))
    np.testing.assert_array_equal(recording.rope_nodes(0)[0], np.asarray(scene.ropes[0]["points"]))
    # segment frames: unit quaternions whose third axis follows the segment
    q = recording.rope_segments(1)[-1]
    d3 = quat_to_matrix(q)[:, :, 2]
    tangent = np.diff(recording.rope_nodes(1)[-1], axis=0)
    tangent /= np.linalg.norm(tangent, axis=1)[:, None]
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-12)
    assert np.min(np.sum(d3 * tangent, axis=1)) > math.cos(0.02)

    rec_file = tmp_path / "rec.npz"
    recording.save(rec_file)
    again = solver.Recording.load(rec_file)
    np.testing.assert_array_equal(again.rope_nodes(0), recording.rope_nodes(0))
    np.testing.assert_array_equal(again.rope_segments(1), recording.rope_segments(1))
    assert [r["name"] for r in again.ropes] == ["Hanger", "Floor rope"]
    assert again.truncated(5).rope_nodes(1).shape == (5, 31, 3)

    cli_file = tmp_path / "cli.npz"
    done = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(scene_file), "-o", str(cli_file),
                           "--frames", "12", "--fps", "24", "--substeps", "10", "--quiet"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    from_cli = solver.Recording.load(cli_file)
    np.testing.assert_allclose(from_cli.rope_nodes(1), recording.rope_nodes(1), atol=1e-12)


# ------------------------------------------------------------------------------------------------
# two-way coupling

def test_pendulum_period_through_simulation():
    """The rope test of test_rope_physics again, now with the core integrating the body."""
    a, c = 0.1, 0.15
    scene = solver.Scene()
    theta0 = 0.03
    string, n = 1.0, 20
    direction = np.array([math.sin(theta0), 0.0, -math.cos(theta0)])
    points = line(n, (0, 0, 2.0), np.array([0, 0, 2.0]) + string * direction)
    mass = 1000.0 * 4.0 / 3.0 * math.pi * a * a * c
    gyration_sq = (a * a + c * c) / 5.0
    l_eff = double_pendulum_effective_length(string, c, gyration_sq)
    omega = math.sqrt(9.81 / l_eff)
    phi0 = theta0 * 9.81 * c / (9.81 * c - omega ** 2 * gyration_sq)
    centre = points[-1] + c * np.array([math.sin(phi0), 0.0, -math.cos(phi0)])
    body = scene.add_ellipsoid((a, a, c), position=centre, orientation=(math.cos(phi0 / 2), 0, -math.sin(phi0 / 2), 0),
                               density=1000.0)
    rope_radius, rope_density = 0.002, 1000.0
    scene.add_rope(points, radius=rope_radius, density=rope_density, young_modulus=1e5, shear_modulus=1e5,
                   pinned=(0,), attachments=[(n, body, (0.0, 0.0, c))])
    period_theory = 2 * math.pi / omega
    fps, substeps = 60, 4
    frames = int(3.2 * period_theory * fps)
    recording = solver.Simulation(scene).run(frames=frames, fps=fps, substeps=substeps)
    assert frame_length_error(recording.rope_nodes(0), rest_lengths(points)) < LENGTH_TOLERANCE
    x = recording.body_poses[:, 0, 0]
    idx = np.nonzero(np.signbit(x[:-1]) != np.signbit(x[1:]))[0]
    crossings = (idx + x[idx] / (x[idx] - x[idx + 1])) / fps
    period = 2 * np.mean(np.diff(crossings))
    rope_mass = rope_density * math.pi * rope_radius ** 2 * string
    h = 1.0 / (fps * substeps)
    # rope mass, amplitude, time stepping (see test_rope_physics), plus frame sampling of the crossings
    tolerance = rope_mass / mass + theta0 ** 2 / 16 + (omega * h) ** 2 + 0.25 / (fps * period_theory)
    assert period == pytest.approx(period_theory, rel=tolerance)


def test_rope_between_two_bodies_transmits_tension():
    """Zero gravity: a taut rope ties two balls; one is kicked away. The inextensible rope jerks the other
    along, and momentum is conserved: both end with the common velocity m_a v0 / (m_a + m_b + m_rope)."""
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    radius_a, radius_b, v0 = 0.1, 0.15, 2.0
    a = scene.add_ellipsoid((radius_a,) * 3, position=(-0.6 - radius_a, 0, 0), velocity=(-v0, 0, 0), density=800.0)
    b = scene.add_ellipsoid((radius_b,) * 3, position=(0.6 + radius_b, 0, 0), density=300.0)
    points = line(24, (-0.6, 0, 0), (0.6, 0, 0))
    rope_radius, rope_density = 0.005, 1100.0
    scene.add_rope(points, radius=rope_radius, density=rope_density, young_modulus=1e6,
                   attachments=[(0, a, (radius_a, 0, 0)), (24, b, (-radius_b, 0, 0))])
    recording = solver.Simulation(scene).run(frames=24, fps=24, substeps=10)
    mass_a = 800.0 * 4 / 3 * math.pi * radius_a ** 3
    mass_b = 300.0 * 4 / 3 * math.pi * radius_b ** 3
    mass_rope = rope_density * math.pi * rope_radius ** 2 * 1.2
    common = -mass_a * v0 / (mass_a + mass_b + mass_rope)
    poses = recording.body_poses
    velocity = (poses[-1, :, 0] - poses[-2, :, 0]) * 24.0
    # the rope keeps the bodies at a fixed distance: up to the attachment drift (attachment_erp feedback)
    np.testing.assert_allclose(velocity, [common, common], rtol=2e-3)
    assert frame_length_error(recording.rope_nodes(0), rest_lengths(points)) < LENGTH_TOLERANCE


def test_rope_pushes_a_body_and_conserves_momentum():
    """Zero gravity, no friction: a straight rope flying broadside into a free ellipsoid pushes it;
    rope and body impulses are equal and opposite, so the total momentum stays m_rope v0."""
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    slick = solver.Material(friction=0.0)
    body = scene.add_ellipsoid((0.1, 0.15, 0.2), position=(0.0, 0.0, 0.0), density=200.0, material=slick)
    points = line(30, (-0.3, 0.0, 0.3), (0.3, 0.0, 0.3))
    rope_radius, rope_density, v0 = 0.01, 1200.0, -3.0
    scene.add_rope(points, radius=rope_radius, density=rope_density, young_modulus=1e5, material=slick)
    sim = solver.Simulation(scene)
    sim.state.rope_state.node_velocity[:, 2] = v0
    recording = sim.run(frames=12, fps=24, substeps=10)
    mass_body = 200.0 * 4 / 3 * math.pi * 0.1 * 0.15 * 0.2
    node_mass = sim.state.rope_model.node_mass
    rope_momentum = node_mass @ sim.state.rope_state.node_velocity
    body_momentum = mass_body * sim.state.linear_velocity[body]
    assert body_momentum[2] < -0.5 * abs(v0) * float(node_mass.sum()) * 0.1  # it was pushed
    np.testing.assert_allclose(rope_momentum + body_momentum, [0.0, 0.0, node_mass.sum() * v0],
                               atol=1e-9 * abs(v0) * node_mass.sum() + 1e-12)
    assert frame_length_error(recording.rope_nodes(0), rest_lengths(points)) < LENGTH_TOLERANCE


# ------------------------------------------------------------------------------------------------
# contacts

def test_rope_rests_on_plane_and_on_another_rope():
    scene = solver.Scene()
    scene.add_plane()
    r = 0.01
    below = line(30, (-0.4, 0.0, r), (0.4, 0.0, r))
    above = line(30, (0.0, -0.4, 0.15), (0.0, 0.4, 0.15))
    scene.add_rope(below, radius=r, young_modulus=1e6, damping=1.0)
    scene.add_rope(above, radius=r, young_modulus=1e6, damping=1.0)
    recording = solver.Simulation(scene).run(frames=48, fps=24, substeps=10)
    for k, points in enumerate((below, above)):
        assert frame_length_error(recording.rope_nodes(k), rest_lengths(points)) < LENGTH_TOLERANCE
    lower, upper = recording.rope_nodes(0)[-1], recording.rope_nodes(1)[-1]
    # the slop the solver leaves alone per contact, plus what a finite number of sequential-impulse sweeps
    # leaves in a stack of two contacts (rope on rope on floor): a spec of 5% of the radius
    overlap_allowed = CONTACT_SLOP * r + 0.05 * r
    # the lower rope lies on the plane
    assert np.all(np.abs(lower[:, 2] - r) < overlap_allowed)
    # the upper rope crosses on top of it: its axis is 2r above the lower one's at the crossing
    crossing = np.argmin(np.abs(upper[:, 1]))
    assert upper[crossing, 2] == pytest.approx(3 * r, abs=2 * overlap_allowed)
    assert np.all(upper[:, 2] > r - overlap_allowed)


def test_rope_dropped_on_itself_coils_without_passing_through():
    scene = solver.Scene()
    scene.add_plane(material=solver.Material(friction=0.6))
    r, length, n = 0.01, 1.5, 60
    points = line(n, (0.0, 0.0, 0.03), (0.003, 0.0, 0.03 + length))  # nearly vertical: it folds as it falls
    scene.add_rope(points, radius=r, density=1200.0, young_modulus=3e5, shear_modulus=3e5, damping=0.5,
                   material=solver.Material(friction=0.6))
    recording = solver.Simulation(scene).run(frames=60, fps=24, substeps=10)
    nodes = recording.rope_nodes(0)
    assert frame_length_error(nodes, rest_lengths(points)) < LENGTH_TOLERANCE
    final = nodes[-1]
    footprint = np.max(np.linalg.norm(final[:, :2] - final[:, :2].mean(axis=0), axis=1))
    assert footprint < 0.5 * length  # it piled up instead of lying out straight
    assert final[:, 2].max() > 2.5 * r  # parts of it lie on other parts
    assert final[:, 2].min() > r * (1 - CONTACT_SLOP) - 1e-4  # nothing sank into the floor
    # no segment passed through another: in every frame the axes of touching segments stay more than one
    # radius apart (passing through needs zero); at rest, overlaps are the solver's few percent of 2r
    lengths = rest_lengths(points)
    for frame in nodes[::3]:
        assert min_nonadjacent_distance(frame, r, lengths) > r
    assert min_nonadjacent_distance(final, r, lengths) > 2 * r * (1 - 0.1)


def test_rope_stays_inside_box_container_and_tube():
    scene = solver.Scene()
    r = 0.01
    scene.add_box_container((0.0, 0.0, 0.15), (0.15, 0.15, 0.15))
    scene.add_tube((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.12, 0.6)
    scene.add_plane(point=(0.0, 0.0, -0.3))
    into_box = line(30, (-0.1, -0.05, 0.25), (0.1, 0.05, 0.15))
    into_tube = line(20, (1.0, -0.05, -0.1), (1.0, 0.05, -0.25))
    scene.add_rope(into_box, radius=r, young_modulus=1e6, damping=0.5)
    scene.add_rope(into_tube, radius=r, young_modulus=1e6, damping=0.5)
    recording = solver.Simulation(scene).run(frames=36, fps=24, substeps=10)
    # never through a wall: the rope's axis stays inside the walls in every frame, even on impact; at rest it
    # leans on them within a tenth of its radius (contacts and the exact inextensibility are solved one after
    # the other, inextensibility last, so a leaning rope presses in slightly)
    resting = 0.1 * r
    box_nodes = recording.rope_nodes(0)
    assert np.all(np.abs(box_nodes[..., :2]) < 0.15)
    assert np.all(box_nodes[..., 2] > 0.0)
    assert np.all(np.abs(box_nodes[-1, :, :2]) <= 0.15 - r + resting)
    assert np.all(box_nodes[-1, :, 2] >= r - resting)
    tube_nodes = recording.rope_nodes(1)
    radial = np.linalg.norm(tube_nodes[..., :2] - [1.0, 0.0], axis=-1)
    assert np.all(radial < 0.12)
    assert np.all(radial[-1] <= 0.12 - r + resting)
    for k, points in enumerate((into_box, into_tube)):
        assert frame_length_error(recording.rope_nodes(k), rest_lengths(points)) < LENGTH_TOLERANCE


def test_drawn_knot_pulled_tight_stays_a_knot():
    """An overhand knot (a trefoil opened at the apex of a lobe, with straight tails) is pulled from both ends
    by animated anchors until it is tight. Its knot type, read from the knot determinant of the curve closed
    far away (3 for a trefoil, 1 for no knot), never changes, and no segment passes through another."""
    r = 0.005
    scale, tc = 0.04, math.pi / 3  # the tangent line at this apex stays outside the knot's projection
    t = np.linspace(tc + 0.2, tc + 2 * math.pi - 0.2, 100)
    knot = scale * np.column_stack([np.sin(t) + 2 * np.sin(2 * t), np.cos(t) - 2 * np.cos(2 * t), -np.sin(3 * t)])
    step = np.linalg.norm(np.diff(knot, axis=0), axis=1).mean()
    along = np.array([math.cos(tc) + 4 * math.cos(2 * tc), -math.sin(tc) + 4 * math.sin(2 * tc), 0.0])
    along /= np.linalg.norm(along)
    tails = step * np.arange(1, 26)[:, None] * along
    points = np.concatenate([(knot[0] - tails)[::-1], knot, knot[-1] + tails])
    lengths = rest_lengths(points)
    assert knot_determinant(closed_curve(points)) == 3
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    pull = 0.45  # each end; leaves the knot about 46 r of rope, more than an ideal trefoil's 33 r
    anchors = []
    for end, direction in ((points[0], -along), (points[-1], along)):
        anchor = scene.add_ellipsoid((0.004,) * 3, position=end, kinematic=True)
        moved = end + pull * direction
        scene.set_kinematic_track(anchor, [0.0, 2.0, 10.0], [[*end, 1, 0, 0, 0], [*moved, 1, 0, 0, 0],
                                                             [*moved, 1, 0, 0, 0]])
        anchors.append(anchor)
    scene.add_rope(points, radius=r, density=1100.0, young_modulus=2e5, shear_modulus=2e5, damping=2.0,
                   material=solver.Material(friction=0.3),
                   attachments=[(0, anchors[0], (0, 0, 0)), (len(points) - 1, anchors[1], (0, 0, 0))])
    nodes = solver.Simulation(scene).run(frames=72, fps=24, substeps=10).rope_nodes(0)
    assert frame_length_error(nodes, lengths) < LENGTH_TOLERANCE
    for frame in nodes[::6]:
        assert min_nonadjacent_distance(frame, r, lengths) > r
        assert knot_determinant(closed_curve(frame)) == 3
    # it was pulled tight: the ends are 2 x pull further apart, so the knot holds that much less rope
    spread = np.linalg.norm(nodes[-1, -1] - nodes[-1, 0]) - np.linalg.norm(points[-1] - points[0])
    assert spread == pytest.approx(2 * pull, rel=0.02)
