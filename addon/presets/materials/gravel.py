# Quadric material preset: angular crushed rock about 2 cm across. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.7, 0.4, 0.003, 0.001
s.mass_mode, s.density = 'DENSITY', 2650.0
