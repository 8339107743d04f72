# Quadric material preset: glass marbles about 16 mm across. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.1, 0.9, 1e-05, 1e-05
s.mass_mode, s.density = 'DENSITY', 2500.0
