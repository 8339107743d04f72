# Sourced after ROOT is set (scripts/test, scripts/demo, scripts/test_blender_versions): the solver's kernels the
# tests run and the zip ships, compiled once for numba's generic CPU into KERNELS (build_extension.py
# --kernels-from takes them from there).
KERNELS="$ROOT/build/numba-generic"
export NUMBA_CPU_NAME=generic NUMBA_CACHE_DIR="$KERNELS"
unset NUMBA_CPU_FEATURES
