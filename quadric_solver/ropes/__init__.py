"""Cosserat ropes: the model built from a scene, the substep kernels, rope contacts and the impulses they share."""
