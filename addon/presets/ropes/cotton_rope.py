# Quadric rope preset: braided cotton rope 10 mm thick. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.rope_radius, s.rope_density, s.rope_damping = 0.005, 760.0, 0.1
s.rope_young_modulus, s.rope_shear_modulus = 150000.0, 60000.0
