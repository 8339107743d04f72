# Quadric material preset: rounded river stones about 4 cm across. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.6, 0.5, 0.001, 0.0005
s.mass_mode, s.density = 'DENSITY', 2650.0
