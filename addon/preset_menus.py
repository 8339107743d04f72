"""Material and rope presets through Blender's own preset machinery.

Each kind has a Menu (listing the presets; picking one runs it with
script.execute_preset) and an AddPresetBase operator (+ saves the active
object's values as a user preset, - removes one). User presets live in the
user scripts folder under presets/quadric_dynamics/materials or .../ropes, where
bpy.utils.preset_paths finds them; the built-in ones ship with the extension in
addon/presets/ (values and sources: docs/presets.md) and are listed first.
"""
import os

import bpy
from bl_operators.presets import AddPresetBase

from .properties import MATERIAL_FIELDS, ROPE_STIFFNESS_FIELDS

BUILT_IN = os.path.join(os.path.dirname(__file__), "presets")


def preset_folders(subdir):
    """The built-in folder of a preset kind, then the user's and any other script paths' (preset_paths)."""
    return [os.path.join(BUILT_IN, subdir.rpartition("/")[2])] + bpy.utils.preset_paths(subdir)


class PresetMenu:
    """Lists the presets of ``preset_subdir`` from preset_folders()."""
    preset_operator = "script.execute_preset"

    def draw(self, _context):
        self.path_menu(preset_folders(self.preset_subdir), self.preset_operator,
                       filter_ext=lambda ext: ext.lower() == ".py", display_name=bpy.path.display_name)


def preset_classes(kind, label, fields, what):
    """The preset Menu and AddPresetBase operator of one kind ('material' or 'rope') of preset."""
    subdir = f"quadric_dynamics/{kind}s"
    menu = type(f"QUADRIC_MT_{kind}_presets", (PresetMenu, bpy.types.Menu), dict(
        __doc__=f"{label} presets: {what}", bl_label=f"{label} Presets", preset_subdir=subdir))
    add = type(f"QUADRIC_OT_{kind}_preset_add", (AddPresetBase, bpy.types.Operator), dict(
        __doc__=f"Save the active object's {what} as a preset, or remove a preset",
        bl_idname=f"quadric.{kind}_preset_add", bl_label=f"Add {label} Preset", preset_menu=menu.__name__,
        preset_subdir=subdir, preset_defines=["s = bpy.context.object.quadric"],
        preset_values=[f"s.{name}" for name in fields]))
    return menu, add


QUADRIC_MT_material_presets, QUADRIC_OT_material_preset_add = preset_classes(
    "material", "Material", MATERIAL_FIELDS + ("mass_mode", "density"), "contact material and density")
QUADRIC_MT_rope_presets, QUADRIC_OT_rope_preset_add = preset_classes(
    "rope", "Rope", ROPE_STIFFNESS_FIELDS, "rope radius, density, stiffness and damping")
MATERIAL_SUBDIR, ROPE_SUBDIR = QUADRIC_MT_material_presets.preset_subdir, QUADRIC_MT_rope_presets.preset_subdir


def draw_preset_row(layout, kind):
    """The preset menu with its + and - buttons, for 'material' or 'rope'."""
    menu = QUADRIC_MT_material_presets if kind == "material" else QUADRIC_MT_rope_presets
    row = layout.row(align=True)
    row.menu(menu.__name__, text=menu.bl_label)
    add = f"quadric.{kind}_preset_add"
    row.operator(add, text="", icon='ADD')
    row.operator(add, text="", icon='REMOVE').remove_active = True


CLASSES = (QUADRIC_MT_material_presets, QUADRIC_MT_rope_presets, QUADRIC_OT_material_preset_add,
           QUADRIC_OT_rope_preset_add)
register, unregister = bpy.utils.register_classes_factory(CLASSES)
