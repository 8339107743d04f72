# Shared by scripts/demo and scripts/test: create .venv with Python 3.11 if missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY_BOOT="${PYTHON:-python3.11}"
command -v "$PY_BOOT" >/dev/null 2>&1 || PY_BOOT=python3
if [ ! -x "$VENV/bin/python" ]; then
  echo "[env] creating $VENV with $PY_BOOT"
  "$PY_BOOT" -m venv "$VENV"
fi
STAMP="$VENV/.requirements-dev.stamp"
if [ ! -f "$STAMP" ] || ! cmp -s "$ROOT/requirements-dev.txt" "$STAMP"; then
  echo "[env] installing requirements-dev.txt (first run downloads the bpy wheel, ~400 MB)"
  "$VENV/bin/python" -m pip install --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -r "$ROOT/requirements-dev.txt"
  cp "$ROOT/requirements-dev.txt" "$STAMP"
fi
PY="$VENV/bin/python"
cd "$ROOT"
