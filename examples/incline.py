"""A sphere on an incline rolls without slipping while tan(angle) < 3.5 mu, and slides beyond.

    .venv/bin/python -m examples.incline        # writes out/examples/incline.png

Rolling, it accelerates at 5/7 g sin(angle) and its contact point does not slip; sliding, at
g (sin(angle) - mu cos(angle)), and the contact point slips at g t (sin(angle) - 3.5 mu cos(angle)).
A sphere of radius 10 cm starts at rest on the plane; 0.5 s at 240 frames a second, 10 substeps each.
tests/solver/contact/test_contact_mechanics.py asserts on what run() returns.
"""
import math

import numpy as np

import quadric_solver as solver
from examples.plotting import pyplot, save

G = 9.81
FPS, SUBSTEPS = 240, 10
RADIUS = 0.1
FRICTION = 0.2  # the plot's: rolls below atan(3.5 * 0.2) = 35 degrees
ANGLES = (5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 33.0, 37.0, 40.0, 45.0, 50.0)


def incline_scene(angle, friction, radius=RADIUS, plane_friction=None):
    """A sphere resting on a plane tilted by ``angle`` about the y axis (downhill is +x').

    The plane has the sphere's friction unless ``plane_friction`` is given.
    """
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    material = solver.Material(friction=friction)
    plane_material = material if plane_friction is None else solver.Material(friction=plane_friction)
    normal = np.array([math.sin(angle), 0.0, math.cos(angle)])
    scene.add_plane(point=(0, 0, 0), normal=normal, material=plane_material)
    scene.add_ellipsoid((radius,) * 3, position=normal * radius, material=material)
    downhill = np.array([math.cos(angle), 0.0, -math.sin(angle)])
    return scene, downhill


def theory(angle, friction, duration):
    """Closed form: (rolls, acceleration down the slope, slip speed of the contact point after ``duration``)."""
    rolls = math.tan(angle) < 3.5 * friction
    if rolls:
        return rolls, 5.0 / 7.0 * G * math.sin(angle), 0.0
    return (rolls, G * (math.sin(angle) - friction * math.cos(angle)),
            G * duration * (math.sin(angle) - 3.5 * friction * math.cos(angle)))


def run(angle_deg, friction, plane_friction=None, duration=0.5):
    """Let the sphere go for ``duration`` seconds: its mean acceleration and final slip beside the closed form.

    Sphere and plane frictions combine by geometric mean (solver.Material); ``friction`` in the result is the
    combined one. ``heights`` are the centre's heights above the plane at every frame.
    """
    angle = math.radians(angle_deg)
    scene, downhill = incline_scene(angle, friction, plane_friction=plane_friction)
    if plane_friction is not None:
        friction = math.sqrt(friction * plane_friction)
    sim = solver.Simulation(scene)
    recording = sim.run(frames=int(duration * FPS) + 1, fps=FPS, substeps=SUBSTEPS)
    speed = float(sim.state.linear_velocity[0] @ downhill)
    rolls, expected, expected_slip = theory(angle, friction, duration)
    omega = sim.state.angular_velocity[0]
    normal = np.array([math.sin(angle), 0.0, math.cos(angle)])
    slip = float((sim.state.linear_velocity[0] + np.cross(omega, -RADIUS * normal)) @ downhill)
    return dict(angle_deg=angle_deg, friction=friction, duration=duration, rolls=rolls, speed=speed,
                acceleration=speed / duration, expected_acceleration=expected, slip=slip, expected_slip=expected_slip,
                heights=recording.body_poses[:, 0, :3] @ normal, radius=RADIUS)


def main():
    plt = pyplot()
    results = [run(angle, FRICTION) for angle in ANGLES]
    dense = np.linspace(0.5, 52.0, 400)
    closed = [theory(math.radians(angle), FRICTION, results[0]["duration"]) for angle in dense]
    threshold = math.degrees(math.atan(3.5 * FRICTION))
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    top.plot(dense, [c[1] for c in closed], color="black", linewidth=1, label="theory")
    top.plot(ANGLES, [r["acceleration"] for r in results], "o", label="simulated")
    top.set_ylabel("acceleration down the slope [m/s²]")
    bottom.plot(dense, [c[2] for c in closed], color="black", linewidth=1, label="theory")
    bottom.plot(ANGLES, [r["slip"] for r in results], "o", label="simulated")
    bottom.set_ylabel(f"slip speed after {results[0]['duration']} s [m/s]")
    bottom.set_xlabel("incline angle [degrees]")
    for axes in (top, bottom):
        axes.axvline(threshold, color="grey", linestyle=":", label=f"tan(angle) = 3.5 mu ({threshold:.1f}°)")
        axes.legend(fontsize="small", loc="upper left")
    top.set_title(f"Sphere on an incline, friction {FRICTION}: rolls, then slides")
    path = save(figure, "incline")
    worst = max(abs(r["acceleration"] / r["expected_acceleration"] - 1.0) for r in results)
    print(f"incline: acceleration within {100 * worst:.2f}% of theory at {len(ANGLES)} angles, friction "
          f"{FRICTION}, rolls below {threshold:.1f} degrees (the test allows 0.5%); plot {path}")


if __name__ == "__main__":
    main()
