# Quadric material preset: quartz sand grains about 1 mm across. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.friction, s.restitution, s.rolling_friction, s.spinning_friction = 0.5, 0.5, 0.0001, 5e-05
s.mass_mode, s.density = 'DENSITY', 2650.0
