# Quadric material preset: hardwood toy blocks about 3 cm across. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.4, 0.5, 0.005, 0.002
s.mass_mode, s.density = 'DENSITY', 700.0
