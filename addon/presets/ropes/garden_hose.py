# Quadric rope preset: PVC garden hose, 1/2 inch bore, 19 mm outside. Values and sources: docs/presets.md
import bpy
s = bpy.context.object.quadric
s.rope_radius, s.rope_density, s.rope_damping = 0.0095, 700.0, 0.07
s.rope_young_modulus, s.rope_shear_modulus = 16000000.0, 6000000.0
