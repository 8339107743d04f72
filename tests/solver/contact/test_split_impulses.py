"""Split impulses and the position correction: three spheres in a line, two boxes."""
import numpy as np
import pytest

import quadric_solver as solver


def test_split_impulses_do_not_push_a_body_into_a_neighbour_across_a_gap():
    """Three equal spheres on a line, no gravity, at rest: A and B overlap by 1 cm, B and C are 1 mm apart.

    The split impulse removes a fraction (baumgarte) of A and B's overlap
    beyond the slop in one substep, moving each of them half of it: B moves
    0.3 (1 cm - slop) / 2 = 1.5 mm towards C, more than the gap. The B-C
    contact has a negative target (its gap is open) but has to resist the
    pseudo-velocity anyway, so after the substep B and C overlap by at most
    the slop. Run to convergence (50 sweeps, no early stop), PGS on three
    bodies in a line gets there up to the rows' single precision: targets
    and normals rounded to 6e-8 relative over the 1.5 mm pushed, 1e-10 m,
    well inside 1e-6 of the slop (2e-10 m).
    """
    radius = 0.1
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    xs = (0.0, 2.0 * radius - 0.01, 4.0 * radius - 0.01 + 0.001)
    for x in xs:
        scene.add_ellipsoid((radius, radius, radius), position=(x, 0.0, 0.0))
    sim = solver.Simulation(scene, dt=1.0 / 240.0, overlap_tolerance=None, split_impulse_sweeps=50,
                            sweep_tolerance=0.0)
    slop = sim.settings.slop
    sim.step()
    p = sim.state.position
    moved_b = p[1, 0] - xs[1]
    assert moved_b > 0.001  # the gap would have closed without the B-C contact
    overlap_bc = 2.0 * radius - (p[2, 0] - p[1, 0])
    assert overlap_bc <= slop * (1.0 + 1e-6)
    # momentum: split impulses move bodies apart symmetrically, no real velocity appears
    assert np.allclose(sim.state.linear_velocity, 0.0, atol=1e-12)


@pytest.mark.parametrize("correction", [True, False])
def test_position_correction_removes_the_overlap_unconverged_split_impulses_leave(correction):
    """Three equal spheres on a line, no gravity, at rest, each overlapping the next by 1 cm.

    The split impulses aim at an overlap of slop + (1 - baumgarte)(1 cm - slop)
    for both contacts. With one sweep (split_impulse_sweeps=1) Gauss-Seidel
    satisfies the first contact it visits and pushes the middle sphere into
    the other, which is then left far deeper than that aim. The position
    correction measures both overlaps again after integration and pushes,
    in position only, until none is more than the slop beyond the aim; run
    to convergence (50 sweeps, no early stop) that holds up to the rows'
    single precision (1e-10 m over the 3 mm pushed, well inside 1e-6 of the
    slop). Without the correction the same substep leaves one contact more
    than the slop beyond it, so the check can fail. Positions only: the
    velocities stay exactly zero, so no kinetic energy appears.
    """
    radius, overlap = 0.1, 0.01
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    for k in range(3):
        scene.add_ellipsoid((radius, radius, radius), position=(k * (2.0 * radius - overlap), 0.0, 0.0))
    sim = solver.Simulation(scene, dt=1.0 / 240.0, overlap_tolerance=None, split_impulse_sweeps=1,
                            correction_sweeps=50, sweep_tolerance=0.0, position_correction=correction)
    settings = sim.settings
    sim.step()
    overlaps = 2.0 * radius - np.diff(sim.state.position[:, 0])
    aim = settings.slop + (1.0 - settings.baumgarte) * (overlap - settings.slop)
    deepest_allowed = aim + settings.slop * (1.0 + 1e-6)
    assert (overlaps.max() <= deepest_allowed) == correction
    assert sim.stats["correction_sweeps"] == (50 if correction else 0)
    assert np.all(sim.state.linear_velocity == 0.0) and np.all(sim.state.angular_velocity == 0.0)


def test_the_position_correction_does_not_push_a_turned_box_whose_shadow_alone_overlaps():
    """Two 20 cm cubes, the contact found 1 mm apart along x. In the substep the second one turned 45 degrees
    about z and slid 25 cm along y: their shadows on x now overlap by 40 mm, but the cubes are 77 mm apart
    (the first one's corner and the second one's side, across the diagonal). The shadows' overlap (all a pair
    of ellipsoids is measured by) would push them 4 cm apart in one substep; for other shapes the correction
    measures the pair again as the narrow phase does, and pushes nothing."""
    from quadric_solver.contact.position_correction import _correction_targets, _shape_width_gap
    from quadric_solver.contact.rows import N_, ROW_DTYPE, ROW_WIDTH

    half = 0.1
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    for x in (0.0, 2.0 * half + 0.001):
        scene.add_body(solver.Box((half, half, half)), position=(x, 0.0, 0.0))
    sim = solver.Simulation(scene)
    start_position = np.array([[0.0, 0.0, 0.0], [2.0 * half + 0.001, 0.0, 0.0]])
    start_orientation = np.array([[1.0, 0.0, 0.0, 0.0]] * 2)
    position = start_position + [[0.0, 0.0, 0.0], [0.0, 0.25, 0.0]]
    orientation = np.array([[1.0, 0.0, 0.0, 0.0], [np.cos(np.pi / 8.0), 0.0, 0.0, np.sin(np.pi / 8.0)]])
    rows = np.zeros((1, ROW_WIDTH), dtype=ROW_DTYPE)
    rows[0, N_] = 1.0
    pair = np.array([0], dtype=np.int64), np.array([1], dtype=np.int64), np.arange(2, dtype=np.int64)
    slot_depth, slot_push = np.array([-0.001]), np.zeros(1)
    h, slop, shapes, axes = 1.0 / 240.0, sim.settings.slop, sim._shapes, sim.model.semi_axes
    shadow_overlap = (-0.001 + _shape_width_gap(1.0, 0.0, 0.0, 0, 1, start_position, start_orientation, axes, shapes)
                      - _shape_width_gap(1.0, 0.0, 0.0, 0, 1, position, orientation, axes, shapes))
    assert shadow_overlap == pytest.approx(half * np.sqrt(2.0) - half - 0.001, abs=1e-9)  # 40.4 mm
    apart = solver.distance(solver.Box((half,) * 3), (position[0], orientation[0]),
                            solver.Box((half,) * 3), (position[1], orientation[1])).distance
    # the corner (h, h) from the side x + y = x_B + y_B - h sqrt 2
    assert apart == pytest.approx((2.0 * half + 0.001 + 0.25 - half * np.sqrt(2.0) - 2.0 * half) / np.sqrt(2.0),
                                  abs=1e-9)
    _correction_targets(0, 1, np.zeros(1, dtype=np.int64), *pair, rows, slot_depth, slot_push, start_position, start_orientation,
                        np.full(2, 0.3), position, orientation, axes, h, 0.3, slop, shapes)
    assert slot_push[0] <= -apart / h * (1.0 - 1e-6)  # a gap of at least their distance: nothing pushed


def _deepest_overlap(sim, shapes, radius):
    """The deepest overlap of any two bodies now, measured by solver.distance (0 if none overlaps)."""
    p, q = sim.state.position, sim.state.orientation
    apart = ((p[:, None, :] - p[None, :, :]) ** 2).sum(-1) >= (radius[:, None] + radius[None, :]) ** 2
    deepest = 0.0
    for a, b in np.argwhere(np.triu(~apart, 1)):
        r = solver.distance(shapes[a], (p[a].copy(), q[a].copy()), shapes[b], (p[b].copy(), q[b].copy()))
        deepest = max(deepest, -r.distance)
    return deepest


def test_the_position_correction_also_runs_where_the_split_impulses_stopped_early():
    """32 boxes in random orientations dropped in four columns into a box: where the split impulses stop
    before their last sweep, they converged on their first-order prediction, which a spinning box's corner
    outruns (in the 1,000-box drop overlaps grew from 0.2% to 1.8% of the smallest half extent over three
    such substeps).
    The position correction measures the poses it ends with in those substeps too, and pushes only where
    an overlap ended beyond the split impulses' aim: each such substep, run again from the same state
    without it, ends with an overlap at least as deep as with it, and some end deeper.
    """
    rng = np.random.default_rng(2)
    scene = solver.Scene()
    scene.add_box_container(center=(0.0, 0.0, 0.7), half_extents=(0.15, 0.15, 0.7))
    material = solver.Material(friction=0.5)
    shapes, radius = [], []
    for i, j, k in np.ndindex(2, 2, 8):
        half = rng.uniform(0.02, 0.04, 3)
        q = rng.normal(size=4)
        shapes.append(solver.Box(tuple(half)))
        radius.append(np.linalg.norm(half))
        scene.add_body(shapes[-1], position=(0.145 * (i - 0.5), 0.145 * (j - 0.5), 0.075 + 0.145 * k),
                       orientation=tuple(q / np.linalg.norm(q)), material=material)
    radius = np.array(radius)
    sim = solver.Simulation(scene)
    without = solver.Simulation(scene, position_correction=False)
    most = sim.settings.split_impulse_sweeps
    compared = deeper_without = 0
    for _ in range(200):
        before = sim.snapshot()
        sim.step()
        if sim.stats["split_impulse_sweeps"] < most and sim.stats["correction_sweeps"] > 0:
            without.restore(before)
            without.step()
            assert without.stats["split_impulse_sweeps"] == sim.stats["split_impulse_sweeps"]
            with_it, without_it = _deepest_overlap(sim, shapes, radius), _deepest_overlap(without, shapes, radius)
            assert with_it <= without_it
            compared += 1
            deeper_without += without_it > with_it
    assert compared > 0 and deeper_without > 0
