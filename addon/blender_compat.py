"""The one place that knows what differs between the supported Blender versions (4.2 LTS to 5.x).

- Fcurves. Blender 4.2/4.3: legacy actions, fcurves live on `action.fcurves`. Blender 4.4+: slotted (layered)
  actions; fcurves live in a channelbag of a keyframe strip for the slot assigned to the ID. 4.4 still has the
  legacy `action.fcurves` proxy, 5.0 removed it. Everything else in the add-on goes through `new_unassigned_action`,
  `assign_bake_action`, `fcurves_of` and `KeyframeWriter`.
- Modifiers: `move_modifier_first` (ObjectModifiers.move is not in every supported version; the operator is).
- IDs: `SESSION_UID`, whether an ID has `session_uid` (the live preview finds objects by name without it).
- USD: `usd_export_options`, and `USD_POINT_INSTANCER`, whether the exporter writes Geometry Nodes instances as
  one point instancer (5.0.1 and 4.5.15 do; 4.4.0 wrote each instance as an Xform with a copy of its mesh).
Outside the add-on, the headless `scripts/bake.py` ends bpy 4.2's module through `exit_process` (its exit handler
crashes). `scripts/test_blender_versions` runs the add-on tests under older releases.
"""
import bpy
import numpy as np

SLOTTED = "slots" in bpy.types.Action.bl_rna.properties
SESSION_UID = "session_uid" in bpy.types.ID.bl_rna.properties
USD_POINT_INSTANCER = bpy.app.version >= (4, 5, 0)
_LINEAR = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["LINEAR"].value


def new_unassigned_action(id_data, name):
    """An action for id_data, not yet assigned to it: (action, its slot or None, fcurves collection to add to).
    Made unassigned because none of this changes Blender's dependency graph (its F-curves, once added, do;
    assigning it does again: bake.build_keyframes)."""
    action = bpy.data.actions.new(name)
    if not SLOTTED:
        return action, None, action.fcurves
    slot = action.slots.new(id_type=id_data.id_type, name=id_data.name)
    strip = action.layers.new("Bake").strips.new(type='KEYFRAME')
    return action, slot, strip.channelbag(slot, ensure=True).fcurves


def assign_bake_action(id_data, action, slot):
    """Assign an action new_unassigned_action made (and its slot) to id_data."""
    anim = id_data.animation_data_create()
    anim.action = action
    if SLOTTED:
        anim.action_slot = slot


def fcurves_of(id_data):
    """The fcurves animating id_data (an empty list when it has none)."""
    anim = id_data.animation_data
    action = anim.action if anim else None
    if action is None:
        return []
    if not SLOTTED:
        return list(action.fcurves)
    slot = anim.action_slot
    if slot is None:
        return []
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                return list(bag.fcurves)
    return []


def find_fcurve(id_data, data_path, index=0):
    for fc in fcurves_of(id_data):
        if fc.data_path == data_path and fc.array_index == index:
            return fc
    return None


def assign_action(id_data, action):
    """Assign an existing action (or None), picking its first slot on slotted versions."""
    if action is None:
        if id_data.animation_data:
            id_data.animation_data.action = None
        return
    anim = id_data.animation_data_create()
    anim.action = action
    if SLOTTED and anim.action_slot is None and len(action.slots):
        anim.action_slot = action.slots[0]


def detach_action(id_data):
    """Take id_data's action off it (so its fcurves stop driving it) and return what reattach_action puts back:
    the action and, on slotted versions, its slot."""
    anim = id_data.animation_data
    if anim is None or anim.action is None:
        return None
    held = (anim.action, anim.action_slot if SLOTTED else None)
    anim.action = None
    return held


def reattach_action(id_data, held):
    """Undo detach_action."""
    if held is None:
        return
    action, slot = held
    anim = id_data.animation_data_create()
    anim.action = action
    if SLOTTED and slot is not None:
        anim.action_slot = slot


class KeyframeWriter:
    """Writes fcurves that share one set of frames, with LINEAR keys, in bulk (no per-key Python)."""

    def __init__(self, frames):
        n = len(frames)
        self.n = n
        self.co = np.empty(2 * n, dtype=np.float32)
        self.co[0::2] = frames
        self.interpolation = np.full(n, _LINEAR, dtype=np.int32)

    @staticmethod
    def new(fcurves, data_path, index, group=""):
        """An empty fcurve (each one added changes Blender's dependency graph: make them together)."""
        if SLOTTED or not group:
            return fcurves.new(data_path, index=index)
        return fcurves.new(data_path, index=index, action_group=group)

    def fill(self, fc, values):
        """Give an empty fcurve a LINEAR keyframe at each frame, valued ``values``."""
        co = self.co
        co[1::2] = values
        points = fc.keyframe_points
        points.add(self.n)
        points.foreach_set("co", co)
        points.foreach_set("interpolation", self.interpolation)
        fc.update()  # sorted already; this sets the handles the Graph Editor draws


def read_keyframes(fc):
    """(frames, values) of an fcurve's keyframes as float arrays."""
    n = len(fc.keyframe_points)
    co = np.empty(2 * n, dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    return co[0::2].astype(np.float64), co[1::2].astype(np.float64)


def move_modifier_first(obj, modifier):
    """Put ``modifier`` first in the object's stack (a point cache must deform the mesh before anything else)."""
    index = list(obj.modifiers).index(modifier)
    if index == 0:
        return
    if hasattr(obj.modifiers, "move"):
        obj.modifiers.move(index, 0)
        return
    with bpy.context.temp_override(object=obj, active_object=obj):
        bpy.ops.object.modifier_move_to_index(modifier=modifier.name, index=0)


def usd_export_options():
    """Options for bpy.ops.wm.usd_export that this version has beyond the defaults: instances as references to
    their sources, not copies."""
    if "use_instancing" in bpy.ops.wm.usd_export.get_rna_type().properties:
        return dict(use_instancing=True)
    return {}
