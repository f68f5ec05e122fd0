#!/usr/bin/env bash
# Fetch into .whl/ (git-ignored) the wheels that executing the notebooks needs on the GPU machine and its image
# lacks, for that image's CPython 3.12 on x86-64 Linux; see README.md, "The GPU run". Run it here, where PyPI
# is reachable (nothing can be downloaded there):
#     make gpu-wheels            (or: PYTHON=path/to/python bash tools/gpu-wheels.sh)
#
# pip's resolver takes tools/gpu-wheels.in with every dependency, preferring the versions of the Python it
# runs in (the development environment: the versions the course's tests pass with). Wheels of packages the
# image already has (tools/gpu-image-packages.txt) go to .whl/fallback/: tools/gpu-check.sh installs one of
# those only when the image's own version does not meet a requirement. Then it checks: one version per
# package, every requirement met inside the set (tools/wheelcheck.py), pip resolves the packages from these
# files alone, pip accepts every wheel for the target, and the size fits what a device call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DEST=.whl
MAX_MIB=40 # a device call carries 64 MiB in all, the repository included

platforms=()
# glibc 2.28 at most: the image's torch wheel itself needs 2.28, so wheels built for it install there for sure
# (newer builds, e.g. debugpy's for 2.34, give way to portable ones). pip matches each manylinux_2_N exactly.
for p in manylinux1 manylinux2010 manylinux2014 manylinux_2_{5,12,17,24,26,27,28}; do
  platforms+=(--platform "${p}_x86_64")
done
target=(--python-version 3.12 --implementation cp --only-binary=:all: "${platforms[@]}")

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Prefer the development environment's versions: its exact pins become constraints (lines like name==1.2.3).
"$PY" -m pip freeze --all 2>/dev/null | grep -E '^[A-Za-z0-9._-]+==[^ ;@]+$' >"$stage/constraints.txt" || true
echo "resolving tools/gpu-wheels.in for CPython 3.12, x86-64 Linux ($(wc -l <"$stage/constraints.txt") pins from $PY)"
"$PY" -m pip download -q --disable-pip-version-check -d "$stage/all" "${target[@]}" \
  -c "$stage/constraints.txt" -r tools/gpu-wheels.in

rm -rf "$DEST"
mkdir -p "$DEST/fallback"
for wheel in "$stage"/all/*.whl; do
  name=$(basename "$wheel" | cut -d- -f1 | tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/-/g')
  if grep -qx "$name" tools/gpu-image-packages.txt; then cp "$wheel" "$DEST/fallback/"; else cp "$wheel" "$DEST/"; fi
done

echo "checking the set"
"$PY" tools/wheelcheck.py "$DEST"
# pip resolves every package of gpu-wheels.in from these files alone (the fallbacks standing in for the image)
"$PY" -m pip install -q --disable-pip-version-check --dry-run --no-index --find-links "$DEST" \
  --find-links "$DEST/fallback" "${target[@]}" --target "$stage/resolve" --report "$stage/report.json" \
  -r tools/gpu-wheels.in
# and takes each carried wheel for the target, as the device command installs them
"$PY" -m pip install -q --disable-pip-version-check --dry-run --no-index --no-deps "${target[@]}" \
  --target "$stage/carry" "$DEST"/*.whl "$DEST"/fallback/*.whl

carried=$(ls "$DEST"/*.whl | wc -l)
spare=$(ls "$DEST"/fallback/*.whl | wc -l)
kib=$(du -sk "$DEST" | cut -f1)
echo "$DEST: $carried wheels the image lacks, $spare fallbacks in $DEST/fallback, $((kib / 1024)) MiB in all:"
ls "$DEST" | grep '\.whl$' | sed 's/^/  /'
if ((kib > MAX_MIB * 1024)); then
  echo "error: $DEST is $((kib / 1024)) MiB, over the $MAX_MIB MiB kept for it (a device call carries 64 MiB)" >&2
  exit 1
fi
