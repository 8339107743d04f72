# Quadric rope preset: sewing thread 0.3 mm thick. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.rope_radius, s.rope_density, s.rope_damping = 0.00015, 570.0, 5.0
s.rope_young_modulus, s.rope_shear_modulus = 10000000.0, 4000000.0
