"""How baked particles are drawn: one mesh object of points, with a sphere instanced on each by Geometry Nodes.

A point per particle (no edges or faces) keeps 100,000 particles one object whose points a Mesh Cache modifier
moves; the node group "Quadric Particles" then instances a low-poly sphere on every point, scaled by the point's
"radius" attribute. Instances cost no memory per particle, and the group is shared by every particle object.
"""
import bpy
import numpy as np

NODE_GROUP = "Quadric Particles"
DISPLAY_MODIFIER = "Quadric Particles"
RADIUS_ATTRIBUTE = "radius"
POINT_RADIUS = 0.005  # m: how large particles of radius 0 (points) are drawn


def node_group():
    """The shared node group (made again if it was deleted): instance an ico sphere of radius 1 on every point,
    scaled by the point's radius."""
    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None and group.bl_idname == 'GeometryNodeTree':
        return group
    group = bpy.data.node_groups.new(NODE_GROUP, 'GeometryNodeTree')
    group.interface.new_socket(name="Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    group.interface.new_socket(name="Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    nodes, links = group.nodes, group.links
    source, sink = nodes.new('NodeGroupInput'), nodes.new('NodeGroupOutput')
    sphere = nodes.new('GeometryNodeMeshIcoSphere')
    sphere.inputs["Radius"].default_value = 1.0
    sphere.inputs["Subdivisions"].default_value = 1
    radius = nodes.new('GeometryNodeInputNamedAttribute')
    radius.data_type = 'FLOAT'
    radius.inputs["Name"].default_value = RADIUS_ATTRIBUTE
    instance = nodes.new('GeometryNodeInstanceOnPoints')
    links.new(source.outputs["Geometry"], instance.inputs["Points"])
    links.new(sphere.outputs["Mesh"], instance.inputs["Instance"])
    links.new(radius.outputs["Attribute"], instance.inputs["Scale"])
    links.new(instance.outputs["Instances"], sink.inputs["Geometry"])
    for k, node in enumerate((source, sphere, radius, instance, sink)):
        node.location = (200.0 * k, 0.0)
    return group


def _points_mesh(name, positions, radii):
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", np.asarray(positions, dtype=np.float32).ravel())
    attribute = mesh.attributes.new(RADIUS_ATTRIBUTE, 'FLOAT', 'POINT')
    drawn = np.where(np.asarray(radii) > 0.0, radii, POINT_RADIUS).astype(np.float32)
    attribute.data.foreach_set("value", drawn)
    mesh.update()
    return mesh


def particles_object(source, existing, positions, radii):
    """The object that plays a particle group: ``existing`` with its points replaced, or a new object named
    after ``source`` in the source's first collection. Points are in world space (the object stays at the
    origin, unrotated and unscaled), so a point cache of world positions plays as it is."""
    mesh = _points_mesh(f"{source.name} Particles", positions, radii)
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
