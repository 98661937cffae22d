#!/usr/bin/env bash
# The panel on a lent GPU, as one command of at most 10 minutes: the next cells in registered order (measure.sh),
# each cell's 54 runs one pack on the GPU, until LIMIT seconds (default 540) would be passed; each cell finished is
# copied to $OUT and comes back: commit it under measured/. The runs train from the checkout device_source.sh made
# (carried along), so they record its commit; before training anything the script checks that the checkout is
# clean and holds this registration, unchanged (`critwin bridge score` checks each run's commit again). One
# environment over the machine's own python (its torch), made without pip (ensurepip may be missing there) and
# filled by that python's pip, holds the checkout's critwin: it trains, and it runs missing.py and measured.py.
# Here:    bash paper_checks/reports/theory3/device_source.sh
# On a GPU: bash paper_checks/reports/theory3/measure_device.sh [LIMIT [CELL_ID ...]]   (carry .measure-src)
#   ($REGISTRATION=v6/registration.json: that registration's cells, its extension's included)
#   (DEVICE=cpu and LIMIT 0 check it on a CPU: the environment is built and checked, and no cell starts)
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
python3 -m venv --without-pip "$VENVS/trainer"        # sees this python's packages (torch) through a .pth file
echo "$site" > "$("$VENVS/trainer/bin/python3" -c 'import site; print(site.getsitepackages()[0])')/parent.pth"
python3 -m pip --python "$VENVS/trainer/bin/python3" install -q --no-deps --no-index --no-build-isolation -e "$SRC"
TRAINER="$VENVS/trainer/bin"
got="$(cd /tmp && "$TRAINER/python3" -c 'from critwin.empirical.environment import git_commit; g = git_commit(); print(g["git_commit"], g["git_dirty"])')"
REG="${REGISTRATION:-registration.json}"     # measure.sh's cells: another registration's, e.g. v6/registration.json
for f in registration.json registration_runs.csv "$REG" "$(dirname "$REG")/registration_runs.csv"; do
  if [ "${got#* }" != "False" ] || ! cmp -s "$HERE/$f" "$SRC/paper_checks/reports/theory3/$f"; then
    echo "source: the trainer records '$got' (commit, dirty) and must be clean and hold this tree's $f;" \
         "commit, run device_source.sh here and carry .measure-src" >&2
    exit 2
  fi
done
"$TRAINER/python3" -c 'import torch; print("torch", torch.__version__, "cuda:", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
# a pack of 2 for 40 steps first: a pack that fails on the device would make the sweep train every run alone,
# 54 times the time, so stop here instead, with the error
smoke="$("$TRAINER/critwin" sweep run --set gamma=0.65 --set steps=40 --set eval_every=20 --set wd=0.002 \
  --set wd_width=10 --set wd_window_start=0,10 --set device="$DEVICE" --store "$VENVS/smoke" --workers 1 --pack 2 \
  --no-progress --json)"
"$TRAINER/python3" -c 'import json, sys; r = json.loads(sys.argv[1]); bad = r["failures"] + r["pack_fallback_runs"]
sys.exit(f"smoke pack on the device: {bad[0]}" if bad or r["done"] + r["skipped"] != 2 else 0)' "$smoke"
echo "$(date -u +%FT%TZ) trainer at ${got% *}, a pack trains on $DEVICE; cells until $LIMIT s from the start"
left=$((T0 + LIMIT + 30 - $(date +%s))); if [ "$left" -lt 1 ]; then left=1; fi
STORE="${STORE:-/tmp/theory3-store}" WORKERS=1 DEVICE="$DEVICE" DEADLINE=$((T0 + LIMIT)) COPY_TO="$OUT" \
  PYTHON="$TRAINER/python3" CRITWIN="$TRAINER/critwin" \
  timeout -s TERM "$left" bash "$HERE/measure.sh" "$@"          # stopped 30 s past LIMIT
