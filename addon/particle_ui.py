"""Panel rows for particle groups and soft bodies (ui.py draws them for objects of those roles)."""


def draw_add_buttons(col):
    col.operator("quadric.add_particles", icon='PARTICLES')
    col.operator("quadric.make_soft_body", icon='MOD_CLOTH')


def draw_settings(col, obj):
    """The settings of a PARTICLES or SOFT_BODY object: what the simulation takes from it, and its bake."""
    s = obj.quadric.particles
    if obj.quadric.role == 'PARTICLES':
        col.prop(s, "source")
        if s.source == 'PARTICLE_SYSTEM':
            col.prop_search(s, "particle_system", obj, "particle_systems")
            col.label(text="Count, velocity, size, mass, births and lifetimes from the particle system", icon='INFO')
        else:
            col.prop(s, "mass")
            col.prop(s, "radius")
            col.prop(s, "initial_velocity")
        if s.source == 'VERTICES':
            col.prop_search(s, "pin_group", obj, "vertex_groups")
        col.prop(s, "particle_collisions")
    else:
        col.prop(s, "total_mass")
        col.prop(s, "stiffness")
        col.prop(s, "damping")
        col.prop(s, "bending")
        col.prop(s, "radius")
        col.prop_search(s, "pin_group", obj, "vertex_groups")
    if s.cache_path:
        col.label(text=f"Baked: {s.cache_path}", icon='FILE_CACHE')
