# Quadric material preset: rice grains about 6 mm long. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.4, 0.5, 0.0001, 5e-05
s.mass_mode, s.density = 'DENSITY', 1450.0
