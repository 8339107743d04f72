# Quadric rope preset: steel link chain of 6 mm wire, links 21 mm wide. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.rope_radius, s.rope_density, s.rope_damping = 0.0105, 2300.0, 0.02
s.rope_young_modulus, s.rope_shear_modulus = 1000.0, 1000.0
