# Quadric material preset: dry soybeans or kidney beans about 1 cm long. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.45, 0.6, 0.00025, 0.0001
s.mass_mode, s.density = 'DENSITY', 1250.0
