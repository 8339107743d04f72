"""Contact solve (phase 4) and position correction (phase 7).

Phases, after Box2D v3's contact_solver.c, one file each:

* solve_order.py: slabs and colours, so sweeps run in parallel without sharing a body;
* prepare.py: lever arms, tangent frame, Jacobians, effective masses, approach velocity;
* warm_start.py: last substep's impulses applied; this substep's stored for the next;
* velocity.py: sequential impulses on the normal, Coulomb disc, rolling disc and spinning rows;
* restitution.py: bounces from the approach velocity, and the rest of a bounce that began from a gap;
* split_impulses.py: overlap removed through pseudo-velocities, so removing it adds no kinetic energy;
* position_correction.py: after integration, what the split impulses left, pushed apart in position only;
* push_sweeps.py: the Gauss-Seidel on pseudo-velocities that those two share;
* rows.py: the per-contact rows all of them read.
"""
