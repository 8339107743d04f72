"""Recording -> point caches: particle groups and soft bodies bake to PC2 files that Blender plays natively.

A soft body's own mesh gets a Mesh Cache modifier, first in its stack, playing its vertices in the object's axes
at each frame (those of the first frame if the object does not move: it stays where it was), so that the object's
own motion puts them back where they were simulated; a particle group gets an object of points (particle_display)
whose Mesh Cache plays them in world space, and whose points carry the frames they are drawn between when they are
born over time. The files sit beside the .blend (addon/point_cache.py), one per
group, named after its object, and are rewritten in place by a new bake.

A bake is three calls so that nothing in Blender or on disk changes unless every part of it worked:
`write_caches` (files only, each staged beside its final name; raises OSError or ValueError naming the file),
then, once the rest of the bake (bodies, ropes) is done, `commit_caches` (each staged file replaces the
earlier bake's at once) or `discard_caches` after a failure, which leaves the earlier bake's files as they
were; then `attach_caches` (the modifiers and objects, on the main thread, in the operator's undo step). Files
on disk are outside undo, as Blender's own disk caches are.
"""
import os

import bpy
import numpy as np

from . import blender_compat, particle_display, point_cache

CACHE_MODIFIER = "Quadric Cache"


def write_caches(scene, conv, rec, folders=None):
    """Write each group's PC2 file, staged beside its final name; returns [(binding, path as Blender stores it,
    staged file, final file)] for commit_caches or discard_caches. Nothing in Blender, and no earlier cache,
    changes; a failure removes what it staged before raising.

    folders: point_cache.cache_folder(scene), read beforehand on the main thread; given, this touches no
    Blender data and may run in the simulation's worker thread (scene is then unused)."""
    stored_folder, folder = folders if folders is not None else point_cache.cache_folder(scene)
    written, used = [], set()
    try:
        for binding in conv.groups:
            name = base = point_cache.safe_name(binding.object_name)
            k = 1
            while name in used:  # two names the same once made safe for a file name
                name, k = f"{base}_{k}", k + 1
            used.add(name)
            positions = np.asarray(rec.particles(binding.index), dtype=np.float64)
            final = os.path.join(folder, name + ".pc2")
            staged = final + point_cache.STAGED
            written.append((binding, stored_folder + name + ".pc2", staged, final))
            point_cache.write_pc2(staged, point_cache.local_positions(binding, positions),
                                  start_frame=conv.frame_start)
    except BaseException:
        discard_caches(written)
        raise
    return written


def commit_caches(written):
    """Put each staged cache of write_caches in place of the earlier bake's (an atomic rename per file)."""
    for _, _, staged, final in written:
        os.replace(staged, final)


def discard_caches(written):
    """Remove the staged caches of write_caches: the earlier bake's files stay as they were."""
    for _, _, staged, _ in written:
        try:
            os.remove(staged)
        except FileNotFoundError:
            pass


def _play(target, path, frame_start):
    """Point the object's Mesh Cache modifier (made first in its stack if missing) at a PC2 file whose first
    sample is ``frame_start``: Blender reads sample (frame - frame_start), held before and after the range."""
    modifier = target.modifiers.get(CACHE_MODIFIER)
    if modifier is None or modifier.type != 'MESH_CACHE':
        modifier = target.modifiers.new(CACHE_MODIFIER, 'MESH_CACHE')
    blender_compat.move_modifier_first(target, modifier)
    modifier.cache_format = 'PC2'
    modifier.filepath = path
    modifier.deform_mode = 'OVERWRITE'
    modifier.interpolation = 'LINEAR'
    modifier.time_mode = 'FRAME'
    modifier.play_mode = 'SCENE'
    modifier.frame_start = float(frame_start)
    modifier.frame_scale = 1.0
    modifier.forward_axis, modifier.up_axis = 'POS_Y', 'POS_Z'  # Blender's own axes: no conversion
    modifier.factor = 1.0
    return modifier


def attach_caches(conv, rec, written):
    """Make Blender play the written caches: Mesh Cache modifiers, and an object of points per particle group.
    Returns how many groups were baked (a group whose object was deleted meanwhile is skipped)."""
    done = 0
    for binding, path, _, _ in written:
        obj = bpy.data.objects.get(binding.object_name)
        if obj is None:
            continue
        settings = obj.quadric.particles
        if binding.kind == 'SOFT_BODY':
            target = obj
        else:
            first = np.asarray(rec.particles(binding.index)[0], dtype=np.float64)
            target = particle_display.particles_object(obj, settings.output_object, first, binding.radii,
                                                       binding.shown)
            settings.output_object = target
        _play(target, path, conv.frame_start)
        settings.cache_path = path
        done += 1
    return done


def clear(obj):
    """Remove a group's bake: its Mesh Cache modifier or particles object, and its cache file. Returns whether
    there was one."""
    settings = obj.quadric.particles
    # a particles object carries the same modifier but no bake of its own: its group's clear removes it
    ours = settings.cache_path or obj.quadric.role == 'SOFT_BODY'
    modifier = obj.modifiers.get(CACHE_MODIFIER) if ours else None
    output = settings.output_object
    if not settings.cache_path and output is None and modifier is None:
        return False
    if modifier is not None:
        obj.modifiers.remove(modifier)
    if output is not None:
        settings.output_object = None
        particle_display.remove_object(output)
    if settings.cache_path:
        point_cache.remove_file(settings.cache_path)
        settings.cache_path = ""
    return True

