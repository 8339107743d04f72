"""Bad particle input names the group or force and the field; scenes and recordings keep their particles through
their files; particle scenes compile only the kernels they use."""
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import quadric_solver as solver

ROOT = Path(__file__).resolve().parents[3]
LINE = [[0.0, 0.0, 1.0], [0.1, 0.0, 1.0], [0.2, 0.0, 1.0]]


@pytest.mark.parametrize("change, message", [
    (dict(mass=-1.0), "particles 'Sparks' (group 0): mass must be positive and finite, got -1.0"),
    (dict(mass=[1.0, 0.0, 1.0]), "particles 'Sparks' (group 0): mass must be positive, got mass[1] = 0"),
    (dict(mass=[1.0, 2.0]), "particles 'Sparks' (group 0): mass must be one number or 3 numbers"),
    (dict(positions=[[0, 0, 0], [math.nan, 0, 0]]), "particles 'Sparks' (group 0): positions contains NaN"),
    (dict(positions=[[0, 0], [1, 0]]), "particles 'Sparks' (group 0): positions must be an (n, 3) array"),
    (dict(positions=np.zeros((0, 3))), "particles 'Sparks' (group 0): positions must hold at least one point"),
    (dict(velocities=[[0, 0, 0]]), "particles 'Sparks' (group 0): velocities must be an (3, 3) array"),
    (dict(radius=-0.1), "particles 'Sparks' (group 0): radius must be >= 0, got -0.1"),
    (dict(pinned=[5]),
     "particles 'Sparks' (group 0): pinned 5 is out of range: expected a particle index from -3 to 2"),
    (dict(material="rubber"), "particles 'Sparks' (group 0): material must be a quadric_solver.Material, got str"),
    (dict(particle_collisions=True), "particles 'Sparks' (group 0): particle_collisions needs a radius > 0"),
    (dict(particle_collisions="yes"), "particles 'Sparks' (group 0): particle_collisions must be true or false"),
])
def test_bad_particles_name_the_group_and_the_field(change, message):
    scene = solver.Scene()
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        scene.add_particles(**{"positions": LINE, "name": "Sparks", **change})
    assert scene.particles == []


MESH = dict(vertices=LINE, edges=[(0, 1), (1, 2)], mass=1.0, stiffness=100.0, damping=0.5)


@pytest.mark.parametrize("change, message", [
    (dict(edges=[(0, 1), (1, 9)]), "edges[1] refers to vertex 9, which does not exist (there are 3, numbered 0 to 2)"),
    (dict(edges=[(0, 1), (-1, 2)]), "edges[1] refers to vertex -1, which does not exist"),
    (dict(edges=[(0, 1), (2, 2)]), "edges[1] joins vertex 2 to itself"),
    (dict(edges=[(0, 1), (1, 0)]), "edges join vertices 0 and 1 more than once"),
    (dict(edges=[(0, 1.5)]), "edges must hold whole vertex indices"),
    (dict(edges=[]), "edges must hold at least one edge, got none"),
    (dict(edges=[(0, 1)]), "mass is a total spread over the vertices by their edges, but vertex 2 has no edge"),
    (dict(vertices=[[0, 0, 0], [0, 0, 0], [1, 0, 0]]), "edges[0] joins vertices 0 and 1, which coincide"),
    (dict(mass=-2.0), "mass must be positive and finite, got -2.0"),
    (dict(stiffness=0.0), "stiffness must be positive and finite, got 0.0"),
    (dict(damping=-1.0), "damping must be >= 0, got -1.0"),
    (dict(bending=math.inf), "bending must be finite, got inf"),
])
def test_bad_mass_spring_bodies_name_the_body_and_the_field(change, message):
    scene = solver.Scene()
    scene.add_particles(LINE)
    with pytest.raises(ValueError, match="^" + re.escape(f"mass-spring 'Net' (group 1): {message}")):
        scene.add_mass_spring(**{**MESH, "name": "Net", **change})


@pytest.mark.parametrize("force, message", [
    (lambda: solver.Springs(0, [(0, 5)], 10.0),
     "Springs (force 0): pairs[0] refers to particle 5, which does not exist (group 0 has 3, numbered 0 to 2)"),
    (lambda: solver.Springs(3, [(0, 1)], 10.0), "Springs (force 0): group names group 3, which does not exist"),
    (lambda: solver.Springs(0, [(0, 1)], -10.0), "Springs: stiffness must be positive and finite, got -10.0"),
    (lambda: solver.Springs(0, [(0, 1)], 1.0, rest_lengths=[1.0, 2.0]), "Springs: rest_lengths must be 1 lengths"),
    (lambda: solver.Drag(-0.1), "Drag: coefficient must be >= 0, got -0.1"),
    (lambda: solver.Drag(0.1, groups=[2]), "Drag (force 0): groups names group 2, which does not exist (1 groups"),
    (lambda: solver.Wind((0.0, 0.0, 0.0), 1.0), "Wind: direction must be a non-zero direction"),
    (lambda: solver.Attractor((0.0, 0.0, math.nan), 1.0), "Attractor: point contains NaN or infinity"),
    (lambda: solver.Turbulence(1.0, size=0.0), "Turbulence: size must be positive and finite, got 0.0"),
    (lambda: solver.Vortex(min_distance=-1.0), "Vortex: min_distance must be positive and finite"),
    (lambda: "wind", "force 0: force must be one of quadric_solver.Drag, quadric_solver.Springs, quadric_solver.Wind"),
])
def test_bad_forces_name_the_force_and_the_field(force, message):
    scene = solver.Scene()
    scene.add_particles(LINE)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        scene.add_force(force())
    assert scene.forces == []


def test_an_unknown_integrator_is_named():
    scene = solver.Scene()
    scene.add_particles(LINE)
    with pytest.raises(ValueError, match=re.escape("Simulation: integrator must be one of 'symplectic_euler', "
                                                   "'euler', 'midpoint', 'rk4', 'implicit_euler', got 'verlet'")):
        solver.Simulation(scene, integrator="verlet")


def test_pinned_particles_keep_their_positions():
    scene = solver.Scene()
    scene.add_plane()
    group = scene.add_particles(LINE, velocities=[[1.0, 0.0, 0.0]] * 3, pinned=[-1])
    scene.add_force(solver.Wind(direction=(0.0, 1.0, 0.0), strength=5.0))
    for integrator in ("symplectic_euler", "euler", "midpoint", "rk4", "implicit_euler"):
        sim = solver.Simulation(scene, integrator=integrator)
        recording = sim.run(frames=5)
        assert np.all(recording.particles(group)[:, 2] == LINE[2])
        assert np.all(recording.particles(group)[-1, :2, 2] < 1.0)  # the others fell


# ------------------------------------------------------------------------------------------------- files

def particle_scene():
    scene = solver.Scene()
    scene.add_plane(material=solver.Material(friction=0.3, restitution=0.4), name="Ground")
    scene.add_box_container((0.0, 0.0, 0.5), (1.0, 1.0, 0.5), name="Box")
    sparks = scene.add_particles(np.array(LINE) + (0.0, 0.0, 0.3), velocities=[[0.5, 0.0, 1.0]] * 3,
                                 mass=[0.1, 0.2, 0.3], radius=0.01, pinned=[1], name="Sparks", particle_collisions=True,
                                 material=solver.Material(restitution=0.7))
    net = scene.add_mass_spring([[0.0, 0.0, 0.8], [0.1, 0.0, 0.8], [0.1, 0.1, 0.8], [0.0, 0.1, 0.8]],
                                [(0, 1), (1, 2), (2, 3), (3, 0)], mass=0.4, stiffness=300.0, damping=0.2,
                                bending=20.0, pinned=[0], name="Net")
    scene.add_force(solver.Drag(0.01))
    scene.add_force(solver.Springs(sparks, [(0, 2)], 50.0, 0.1, rest_lengths=[0.15]))
    scene.add_force(solver.Wind((1.0, 0.0, 0.0), 0.2, turbulence=0.3, seed=4, groups=[net]))
    scene.add_force(solver.Vortex(strength=0.1))
    scene.add_force(solver.Turbulence(0.05, size=0.3, flow=(0.0, 0.0, 0.1)))
    scene.add_force(solver.Attractor((0.0, 0.0, 1.0), 0.01, groups=[sparks]))
    return scene


def test_scene_files_keep_particles_and_forces(tmp_path):
    scene = particle_scene()
    path = tmp_path / "particles.json"
    scene.save(path)
    loaded = solver.Scene.load(path)
    assert loaded.to_dict() == scene.to_dict()
    assert loaded.content_hash() == scene.content_hash()
    first = solver.Simulation(scene).run(frames=6)
    again = solver.Simulation(loaded).run(frames=6)
    for group in range(2):
        np.testing.assert_array_equal(first.particles(group), again.particles(group))


def test_scenes_without_particles_write_no_particle_keys():
    scene = solver.Scene()
    scene.add_plane()
    assert "particles" not in scene.to_dict() and "forces" not in scene.to_dict()


@pytest.mark.parametrize("change, message", [
    (lambda d: d["particles"][0].update(kind="dust"), "particles[0].kind must be 'particles' or 'mass_spring'"),
    (lambda d: d["particles"][0].pop("positions"), "particles[0].positions is missing"),
    (lambda d: d["particles"][0].update(mass=-1), "particles[0].mass must be positive and finite, got -1"),
    (lambda d: d["particles"][1].update(edges=[[0, 7]]), "particles[1].edges[0] refers to vertex 7"),
    (lambda d: d["particles"][1].update(material=9), "particles[1].material 9 is out of range"),
    (lambda d: d["forces"][0].update(type="gravity"), "forces[0].type must be one of 'drag', 'springs'"),
    (lambda d: d["forces"][1].update(pairs=[[0, 3]]),
     "forces[1].pairs[0] refers to particle 3, which does not exist (group 0 has 3"),
    (lambda d: d["forces"][2].pop("strength"), "forces[2].strength is missing"),
    (lambda d: d["forces"][5].update(groups=[4]), "forces[5].groups names group 4, which does not exist"),
    (lambda d: d.update(particles={}), "particles must be a list"),
])
def test_particle_file_errors_name_the_json_path(tmp_path, change, message):
    document = particle_scene().to_dict()
    change(document)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(solver.SceneFileError, match="^" + re.escape(f"{path}: {message}")):
        solver.Scene.load(path)


def test_recordings_keep_the_particle_frames(tmp_path):
    scene = particle_scene()
    recording = solver.Simulation(scene).run(frames=8)
    assert recording.particles(0).shape == (8, 3, 3) and recording.particles(1).shape == (8, 4, 3)
    path = tmp_path / "particles.npz"
    recording.save(path)
    loaded = solver.Recording.load(path)
    for group in range(2):
        np.testing.assert_array_equal(loaded.particles(group), recording.particles(group))
    assert [g["name"] for g in loaded.particle_groups] == ["Sparks", "Net"]
    assert loaded.mismatches(scene) == []
    other = particle_scene()
    other.particles[1]["name"] = "Cloth"
    assert loaded.mismatches(other) == ["particle groups of the scene missing from the recording: 'Cloth'",
                                        "particle groups in the recording that the scene does not have: 'Net'"]
    assert loaded.truncated(3).particles(1).shape == (3, 4, 3)


def test_the_command_line_runs_a_particle_scene(tmp_path):
    scene_path, output = tmp_path / "scene.json", tmp_path / "out.npz"
    particle_scene().save(scene_path)
    done = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(scene_path), "-o", str(output),
                           "--frames", "5", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert solver.Recording.load(output).particles(1).shape == (5, 4, 3)


def test_a_particle_scene_runs_only_the_particle_loop():
    """In a fresh interpreter, a scene of particles alone calls only step.run_particle_substeps, which calls no
    body or rope kernel: its compilation is the particles' alone (a loop's callees show no signatures when the
    loop comes from numba's cache, so the loops called from Python are what can be checked)."""
    script = """
import quadric_solver as solver, quadric_solver.step as step, quadric_solver.collision.driver as driver
scene = solver.Scene(); scene.add_plane()
scene.add_particles([[0.0, 0.0, 1.0]])
solver.Simulation(scene).run(frames=3)
print([name for name in ("run_substeps", "run_particle_substeps") if getattr(step, name).signatures],
      bool(driver.collide.signatures))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "['run_particle_substeps'] False"
