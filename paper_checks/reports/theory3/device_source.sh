#!/usr/bin/env bash
# A commit's source as a small git checkout, for a lent GPU: the device tool sends the working tree without its
# history, so a run trained from it would record no commit, and `critwin bridge score` could not check that it
# trained after the registration. A shallow fetch of the one commit, its blobs fetched only for the files checked
# out (the Alchemy reference checkpoints some commits hold are left out), makes about 40 MB, where the whole history
# (over 1 GB) could not travel. COMMIT: default this checkout's HEAD (commit what the GPU should run first).
# Writes $1 (default .measure-src in the repository root, which git ignores).
# Run: bash paper_checks/reports/theory3/device_source.sh [DEST]; then measure_device.sh on the GPU carries it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel)"
DEST="${1:-$ROOT/.measure-src}"
COMMIT="$(git -C "$ROOT" rev-parse "${COMMIT:-HEAD}")"
if [ -d "$DEST/.git" ] && [ "$(git -C "$DEST" rev-parse HEAD)" = "$COMMIT" ]; then
  echo "$DEST: at $COMMIT already"; exit 0
fi
rm -rf "$DEST" && mkdir -p "$DEST"
UP="git -c uploadpack.allowAnySHA1InWant=true -c uploadpack.allowFilter=true upload-pack"
git -C "$DEST" init -q
git -C "$DEST" config remote.origin.url "file://$ROOT"
git -C "$DEST" config remote.origin.uploadpack "$UP"
git -C "$DEST" config extensions.partialClone origin
git -C "$DEST" sparse-checkout set --no-cone '/*' '!/paper_checks/reports/alchemy_authors/'
git -C "$DEST" fetch -q --depth 1 --filter=blob:none origin "$COMMIT"
git -C "$DEST" checkout -q FETCH_HEAD
echo "$DEST: $COMMIT ($(du -sh "$DEST" | cut -f1))"
