"""Reads the point instancers of a USD file with pxr, as another application would; prints JSON.

    PYTHONPATH=<bpy's bundled site-packages> python -m tests.addon.usd_instancer FILE.usd OUT.json

The bpy wheel ships pxr in its own site-packages, which the bpy module does not put on sys.path; the test runs
this in a separate process with that folder on PYTHONPATH. For each PointInstancer: the time samples of its
positions and orientations, and at every sampled time each instance's world matrix (Blender's column-vector
layout) with the name of the Blender object its prototype references.
"""
import json
import sys

from pxr import Usd, UsdGeom


def prototype_names(stage, instancer):
    """Blender object name of each prototype (the exporter writes it on the referenced prim)."""
    names = []
    for path in instancer.GetPrototypesRel().GetTargets():
        attr = stage.GetPrimAtPath(path).GetAttribute("userProperties:blender:object_name")
        names.append(attr.Get() if attr else str(path))
    return names


def read(path):
    stage = Usd.Stage.Open(path)
    found = {}
    for prim in stage.Traverse():
        if not prim.IsA(UsdGeom.PointInstancer):
            continue
        instancer = UsdGeom.PointInstancer(prim)
        names = prototype_names(stage, instancer)
        protos = [stage.GetPrimAtPath(p) for p in instancer.GetPrototypesRel().GetTargets()]
        times = instancer.GetPositionsAttr().GetTimeSamples()
        frames = {}
        for t in times:
            world = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(t)
            indices = instancer.GetProtoIndicesAttr().Get(t)
            matrices = instancer.ComputeInstanceTransformsAtTime(t, t)
            placed = {}
            for k, m in zip(indices, matrices):
                local = UsdGeom.Xformable(protos[k]).GetLocalTransformation(t)
                row_major = local * m * world  # USD multiplies row vectors: prototype, then instance, then prim
                placed[names[k]] = [[row_major[c][r] for c in range(4)] for r in range(4)]
            frames[str(t)] = placed
        found[str(prim.GetPath())] = dict(
            position_times=list(times), orientation_times=list(instancer.GetOrientationsAttr().GetTimeSamples()),
            orientation_type=str(instancer.GetOrientationsAttr().GetTypeName()), frames=frames)
    return found


if __name__ == "__main__":
    with open(sys.argv[2], "w") as handle:
        json.dump(read(sys.argv[1]), handle)
