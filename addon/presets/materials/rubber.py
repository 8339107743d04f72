# Quadric material preset: solid rubber balls or blocks about 3 cm across. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.9, 0.8, 0.0003, 0.0003
s.mass_mode, s.density = 'DENSITY', 1100.0
