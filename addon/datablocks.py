"""Deleting many datablocks at once.

Blender searches the whole file for the users of each datablock it deletes, so deleting them one at a time costs
the count times the file's size: Clear Bake of 2,000 keyframed bodies took 7.4 s, Remove from Simulation of 1,000
bodies 7.8 s. ``bpy.data.batch_remove`` searches once for all of them.
"""
import bpy


def remove(blocks):
    """Delete the datablocks (objects, meshes, actions, ...) in one call."""
    blocks = list({block.as_pointer(): block for block in blocks}.values())  # each once
    if blocks:
        bpy.data.batch_remove(blocks)


def remove_unused(blocks):
    """Delete those of the datablocks that nothing uses any more, in one call."""
    remove([block for block in blocks if block.users == 0])
