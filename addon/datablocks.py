"""Changing many datablocks at once, where Blender's one-at-a-time calls cost the file's size each.

- Blender searches the whole file for the users of each datablock it deletes, so deleting them one at a time
  costs the count times the file's size: Clear Bake of 2,000 keyframed bodies took 7.4 s, Remove from Simulation
  of 1,000 bodies 7.8 s. ``bpy.data.batch_remove`` searches once for all of them.
- Setting an object's hide_viewport, hide_render or hide_select re-syncs every collection of the file: one object
  at a time, 20,000 objects took 14 s. ``foreach_set`` over all objects writes a flag without the re-sync.
"""
import bpy
import numpy as np


def remove(blocks):
    """Delete the datablocks (objects, meshes, actions, ...) in one call."""
    blocks = list({block.as_pointer(): block for block in blocks}.values())  # each once
    if blocks:
        bpy.data.batch_remove(blocks)


def remove_unused(blocks, objects=()):
    """Delete the objects, and those of the datablocks that nothing uses once they are gone (the objects' own data
    among them), all in one call: each call searches the whole file."""
    objects = list(objects)
    held = {}  # a datablock -> how many of the objects use it as their data
    for obj in objects:
        if obj.data is not None:
            held[obj.data.as_pointer()] = held.get(obj.data.as_pointer(), 0) + 1
    remove(objects + [block for block in blocks if block.users == held.get(block.as_pointer(), 0)])


def set_object_flags(flags):
    """Set boolean properties of many objects, each property in one write: {property name: {object: value}}."""
    flags = {name: values for name, values in flags.items() if values}
    if not flags:
        return
    index = {obj.as_pointer(): k for k, obj in enumerate(bpy.data.objects)}  # names can repeat (linked files)
    for name, values in flags.items():
        column = np.empty(len(index), dtype=bool)
        bpy.data.objects.foreach_get(name, column)
        for obj, value in values.items():
            column[index[obj.as_pointer()]] = value
        bpy.data.objects.foreach_set(name, column)
    name, values = next(iter(flags.items()))
    obj, value = next(iter(values.items()))
    setattr(obj, name, value)  # an ordinary write: the one re-sync of the view layers and the depsgraph
