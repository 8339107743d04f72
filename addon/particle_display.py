"""How baked particles are drawn: one mesh object of points, with a sphere instanced on each by Geometry Nodes.

A point per particle (no edges or faces) keeps 100,000 particles one object whose points a Mesh Cache modifier
moves; the node group "Quadric Particles" then instances a low-poly sphere on every point, scaled by the point's
"radius" attribute. Instances cost no memory per particle, and the group is shared by every particle object.

Particles born over time carry two more point attributes, "quadric_birth" and "quadric_death": the scene frames
between which each is drawn (from its birth, until its death). The group instances a sphere only on the points
whose frames hold the scene's current frame (Scene Time); points without the attributes are always drawn. The
point cache keeps an unborn particle where it will be born and a dead one where it died, hidden.
"""
import bpy
import numpy as np

NODE_GROUP = "Quadric Particles"
DISPLAY_MODIFIER = "Quadric Particles"
RADIUS_ATTRIBUTE = "radius"
BIRTH_ATTRIBUTE, DEATH_ATTRIBUTE = "quadric_birth", "quadric_death"
POINT_RADIUS = 0.005  # m: how large particles of radius 0 (points) are drawn
VERSION = 2  # of the node group: 1 drew every point; a file's older group is built again


def node_group():
    """The shared node group (made again if it was deleted, or built again if an older version of the add-on made
    it): instance an ico sphere of radius 1 on every point that is there at the current frame, scaled by the
    point's radius."""
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None and group.bl_idname == 'GeometryNodeTree':
        if group.get("quadric_version") == VERSION:
            return group
        group.nodes.clear()
        group.interface.clear()
    else:
        group = bpy.data.node_groups.new(NODE_GROUP, 'GeometryNodeTree')
    group["quadric_version"] = VERSION
    group.interface.new_socket(name="Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    group.interface.new_socket(name="Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    nodes, links = group.nodes, group.links
    source, sink = nodes.new('NodeGroupInput'), nodes.new('NodeGroupOutput')
    sphere = nodes.new('GeometryNodeMeshIcoSphere')
    sphere.inputs["Radius"].default_value = 1.0
    sphere.inputs["Subdivisions"].default_value = 1
    radius = _attribute(nodes, RADIUS_ATTRIBUTE)
    time = nodes.new('GeometryNodeInputSceneTime')
    # there: (no birth frame or frame >= birth) and (no death frame or frame < death)
    born = _frame_test(nodes, links, time, _attribute(nodes, BIRTH_ATTRIBUTE), 'GREATER_EQUAL')
    alive = _frame_test(nodes, links, time, _attribute(nodes, DEATH_ATTRIBUTE), 'LESS_THAN')
    there = nodes.new('FunctionNodeBooleanMath')
    there.operation = 'AND'
    links.new(born.outputs[0], there.inputs[0])
    links.new(alive.outputs[0], there.inputs[1])
    instance = nodes.new('GeometryNodeInstanceOnPoints')
    links.new(source.outputs["Geometry"], instance.inputs["Points"])
    links.new(there.outputs[0], instance.inputs["Selection"])
    links.new(sphere.outputs["Mesh"], instance.inputs["Instance"])
    links.new(radius.outputs["Attribute"], instance.inputs["Scale"])
    links.new(instance.outputs["Instances"], sink.inputs["Geometry"])
    for k, node in enumerate((source, sphere, radius, time, there, instance, sink)):
        node.location = (200.0 * k, 0.0)
    return group


def _attribute(nodes, name):
    """A Named Attribute node reading the float point attribute ``name``."""
    node = nodes.new('GeometryNodeInputNamedAttribute')
    node.data_type = 'FLOAT'
    node.inputs["Name"].default_value = name
    return node


def _frame_test(nodes, links, time, attribute, operation):
    """A node whose boolean is: the attribute is missing, or the current frame compares to it by ``operation``."""
    compare = nodes.new('FunctionNodeCompare')
    compare.data_type, compare.operation = 'FLOAT', operation
    links.new(time.outputs["Frame"], compare.inputs["A"])
    links.new(attribute.outputs["Attribute"], compare.inputs["B"])
    test = nodes.new('FunctionNodeBooleanMath')
    test.operation = 'IMPLY'  # exists -> compared
    links.new(attribute.outputs["Exists"], test.inputs[0])
    links.new(compare.outputs["Result"], test.inputs[1])
    return test


def _points_mesh(name, positions, radii, shown):
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", np.asarray(positions, dtype=np.float32).ravel())
    drawn = np.where(np.asarray(radii) > 0.0, radii, POINT_RADIUS)
    largest = float(np.finfo(np.float32).max)  # drawn from ever before, or for ever after
    values = [(RADIUS_ATTRIBUTE, drawn)] + ([] if shown is None else
                                           [(BIRTH_ATTRIBUTE, np.clip(shown[0], -largest, largest)),
                                            (DEATH_ATTRIBUTE, np.clip(shown[1], -largest, largest))])
    for attribute, value in values:
        mesh.attributes.new(attribute, 'FLOAT', 'POINT').data.foreach_set("value", np.asarray(value, np.float32))
    mesh.update()
    return mesh


def particles_object(source, existing, positions, radii, shown=None):
    """The object that plays a particle group: ``existing`` with its points replaced, or a new object named
    after ``source`` in the source's first collection. Points are in world space (the object stays at the
    origin, unrotated and unscaled), so a point cache of world positions plays as it is. ``shown``: the (birth,
    death) frames each point is drawn between, for particles born over time (None: always)."""
    mesh = _points_mesh(f"{source.name} Particles", positions, radii, shown)
    if existing is not None and existing.type == 'MESH':
        old = existing.data
        existing.data = mesh
        if old.users == 0:
            bpy.data.meshes.remove(old)
        obj = existing
    else:
        obj = bpy.data.objects.new(f"{source.name} Particles", mesh)
        collections = source.users_collection
        (collections[0] if collections else bpy.context.scene.collection).objects.link(obj)
    obj.matrix_world = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    if obj.modifiers.get(DISPLAY_MODIFIER) is None:
        obj.modifiers.new(DISPLAY_MODIFIER, 'NODES')
    obj.modifiers[DISPLAY_MODIFIER].node_group = node_group()
    return obj


def remove_object(obj):
    """Delete a particles object and its mesh (when nothing else uses it)."""
    mesh = obj.data
    bpy.data.objects.remove(obj)
    if mesh is not None and mesh.users == 0:
        bpy.data.meshes.remove(mesh)
