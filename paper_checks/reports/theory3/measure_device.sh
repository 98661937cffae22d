#!/usr/bin/env bash
# The panel on a lent GPU, as one command of at most 10 minutes: the next cells in registered order (measure.sh),
# each cell's 54 runs one pack on the GPU, trained by the measuring commit's code (the checkout device_source.sh
# made, carried along), until LIMIT seconds (default 540) would be passed; each cell finished is copied to $OUT and
# comes back: commit it under measured/. Two environments, both over the machine's own torch: the measuring
# commit's critwin trains, this checkout's exports (missing.py, measured.py). It stops before training anything if
# the trainer would not record the measuring commit, clean.
# Here:    bash paper_checks/reports/theory3/device_source.sh
# On a GPU: bash paper_checks/reports/theory3/measure_device.sh [LIMIT [CELL_ID ...]]   (carry .measure-src)
#   (DEVICE=cpu LIMIT=0 checks it on a CPU: the environments are built and checked, and no cell starts)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
LIMIT="${1:-540}"; shift || true
T0=$(date +%s)
SRC="${SRC:-$ROOT/.measure-src}"
VENVS="${VENVS:-/tmp/critwin-device}"
OUT="${OUT:-$ROOT/critwin-out/theory3-device}"
DEVICE="${DEVICE:-cuda}"
mkdir -p "$OUT"
site="$(python3 -c 'import site; print(site.getsitepackages()[0])')"
for name in main measure; do      # a venv that sees this python's packages (torch) through a .pth file
  python3 -m venv "$VENVS/$name"
  echo "$site" > "$("$VENVS/$name/bin/python3" -c 'import site; print(site.getsitepackages()[0])')/parent.pth"
done
"$VENVS/main/bin/python3" -m pip install -q --no-deps --no-index --no-build-isolation -e "$ROOT"
"$VENVS/measure/bin/python3" -m pip install -q --no-deps --no-index --no-build-isolation -e "$SRC"
want="$("$VENVS/main/bin/python3" "$HERE/measured.py" --commit)"
got="$(cd /tmp && "$VENVS/measure/bin/python3" -c 'from critwin.empirical.environment import git_commit; g = git_commit(); print(g["git_commit"], g["git_dirty"])')"
if [ "$got" != "$want False" ]; then
  echo "source: the trainer would record '$got', not '$want False' (run device_source.sh here and carry .measure-src)" >&2
  exit 2
fi
"$VENVS/measure/bin/python3" -c 'import torch; print("torch", torch.__version__, "cuda:", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
echo "$(date -u +%FT%TZ) trainer at $want; cells until $LIMIT s from the start"
STORE="${STORE:-/tmp/theory3-store}" WORKERS=1 DEVICE="$DEVICE" DEADLINE=$((T0 + LIMIT)) COPY_TO="$OUT" \
  PYTHON="$VENVS/main/bin/python3" CRITWIN="$VENVS/measure/bin/critwin" \
  timeout -s TERM $((LIMIT + 30)) bash "$HERE/measure.sh" "$@"
