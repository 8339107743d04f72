# Quadric rope preset: 6x19 steel wire rope 10 mm thick. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.rope_radius, s.rope_density, s.rope_damping = 0.005, 5100.0, 0.02
s.rope_young_modulus, s.rope_shear_modulus = 2000000000.0, 800000000.0
