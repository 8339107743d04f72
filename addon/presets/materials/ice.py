# Quadric material preset: ice cubes about 3 cm across, below freezing. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.05, 0.6, 1e-05, 1e-05
s.mass_mode, s.density = 'DENSITY', 917.0
