"""Collision: broad phase (candidate pairs), narrow phase per shape family, and the collide driver."""
