#!/usr/bin/env bash
# The GPU run (issue 7), as one command on the lent GPU machine, from the repository root:
#     bash tools/gpu-check.sh                   (with .whl/ carried: make gpu-wheels first; see README.md)
# Dry run on a machine without a GPU (same steps, small shapes, the notebooks on the CPU):
#     POSREF_GPU_CHECK_DEVICE=cpu PYTHON=.venv/bin/python bash tools/gpu-check.sh
#
# Steps, each bounded in time, and all within $POSREF_GPU_CHECK_BUDGET seconds (default 560: a device command
# may run 600; five times as long for the dry run) even if one hangs:
#   1. versions: nvidia-smi, Python, torch, triton, the GPU torch sees
#   2. Jupyter: where nbclient/ipykernel/ipywidgets are not importable, install .whl/*.whl into $POSREF_SITE
#      (fallback wheels only where the image's version misses a requirement); a kernelspec "python3" that runs
#      this Python with the repository and $POSREF_SITE on its path; one notebook cell through nbclient
#   3. python -m posref.bench (every figure, the solution notebooks with POSREF_FAST=1) -> $OUT/gpu.json
#   4. pytest on the test files that can reach CUDA -> $OUT/pytest.xml
# Everything is written under $OUT (the device tool's folder that comes back; here out/gpu-check by default):
# gpu-check.log (the whole output), gpu.json, pytest.xml. Exit status: the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
DEVICE=${POSREF_GPU_CHECK_DEVICE:-cuda}
PY=${PYTHON:-python3}
SITE=${POSREF_SITE:-/tmp/site}
OUT=${OUT:-$REPO/out/gpu-check}
if [ "$DEVICE" = cpu ]; then slow=5; else slow=1; fi # the dry run executes the notebooks on a small CPU
BENCH_TIMEOUT=${BENCH_TIMEOUT:-$((330 * slow))}
PYTEST_TIMEOUT=${PYTEST_TIMEOUT:-$((180 * slow))}
DEADLINE=$((SECONDS + ${POSREF_GPU_CHECK_BUDGET:-$((560 * slow))}))
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$REPO:$SITE${PYTHONPATH:+:$PYTHONPATH}" # the kernel inherits it (it runs in solutions/NN)
JUPYTER_PREFIX=$(mktemp -d /tmp/posref-jupyter.XXXXXX)
export JUPYTER_PATH="$JUPYTER_PREFIX/share/jupyter" JUPYTER_RUNTIME_DIR="$JUPYTER_PREFIX/runtime"
export IPYTHONDIR="$JUPYTER_PREFIX/ipython"
failed=()

step() { printf '\n===== %s  (%s)\n' "$1" "$(date +%T)"; }
# seconds a step may take: its own limit, cut to what is left before the deadline (at least 1)
limit() { local left=$((DEADLINE - SECONDS - 5)); ((left < $1)) && echo $((left > 1 ? left : 1)) || echo "$1"; }

versions() {
  step "versions"
  command -v nvidia-smi >/dev/null && timeout 30 nvidia-smi || echo "no nvidia-smi here"
  timeout "$(limit 90)" "$PY" - "$DEVICE" <<'EOF'
import platform, sys
import torch
print(f"python {platform.python_version()} at {sys.executable}; torch {torch.__version__}")
try:
    import triton
    print(f"triton {triton.__version__}")
except ImportError:
    print("triton: not installed")
print(f"CUDA available: {torch.cuda.is_available()}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"GPU: {p.name}, capability {p.major}.{p.minor}, {p.multi_processor_count} SMs, "
          f"{p.total_memory / 2**30:.0f} GiB; CUDA {torch.version.cuda}")
elif sys.argv[1] == "cuda":
    sys.exit("error: this run is for a CUDA device but torch sees none")
EOF
}

jupyter_ready() { "$PY" -c "import nbclient, nbformat, ipykernel, ipywidgets" 2>/dev/null; }

install_wheels() {
  step "Jupyter packages"
  if jupyter_ready; then
    echo "nbclient, nbformat, ipykernel, ipywidgets import already: nothing to install"
  else
    if ! ls .whl/*.whl >/dev/null 2>&1; then
      echo "error: they do not import and there is no .whl/: run 'make gpu-wheels' here and carry .whl"
      return 1
    fi
    pip_install=("$PY" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile
      --no-cache-dir --upgrade --target "$SITE")
    "${pip_install[@]}" .whl/*.whl || return 1
    for _ in 1 2 3; do # a fallback may need another; three rounds are plenty
      spare=$("$PY" tools/wheelcheck.py .whl --installed) || return 1
      [ -z "$spare" ] && break
      echo "the image's version misses a requirement; installing $(echo "$spare" | xargs -n1 basename | xargs)"
      # shellcheck disable=SC2086  # one path a line, no spaces in wheel names
      "${pip_install[@]}" $spare || return 1
    done
    "$PY" tools/wheelcheck.py .whl --installed >/dev/null || return 1
    jupyter_ready || { echo "error: still not importable after installing .whl"; return 1; }
    echo "installed $(ls .whl/*.whl | wc -l) wheels into $SITE; every requirement met"
  fi
  "$PY" -m ipykernel install --prefix "$JUPYTER_PREFIX" --name python3 --display-name "Python 3 (posref)" \
    --env PYTHONPATH "$PYTHONPATH" >/dev/null || return 1
  timeout "$(limit 90)" "$PY" - <<'EOF'
import sys
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

spec = KernelSpecManager().get_kernel_spec("python3")  # the name every course notebook asks for
print(f"kernelspec python3: {spec.argv[:3]} from {spec.resource_dir}")
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    "import sys, torch, posref.explorers; print(sys.executable, torch.__version__, torch.cuda.is_available())")])
NotebookClient(nb, timeout=90).execute()
said = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stdout").split()
print(f"a kernel ran a cell: python {said[0]}, torch {said[1]}, CUDA {said[2]}")
if said[0] != sys.executable:
    sys.exit(f"error: the kernel runs {said[0]}, not this Python ({sys.executable})")
EOF
}

bench() {
  local seconds
  seconds=$(limit "$BENCH_TIMEOUT")
  step "posref.bench on $DEVICE (at most ${seconds}s)"
  local args=(--device "$DEVICE" --json "$OUT/gpu.json")
  # the dry run: every part of the CUDA suite, small shapes, eager RoPE for the CPU shapes (compiling is slow)
  [ "$DEVICE" = cpu ] && args+=(--suite all --small --no-fused --notebooks --rounds 3)
  timeout -k 5 "$seconds" "$PY" -m posref.bench "${args[@]}"
}

cuda_tests() {
  # files that can reach CUDA: torch.cuda, the `device` fixture, or the graders (they test on CUDA when present);
  # not the notebook, browser and autograder tests (nbgrader, chromium and bubblewrap are not on the GPU image)
  local files seconds
  seconds=$(limit "$PYTEST_TIMEOUT")
  # (tests/ mirrors the package by folder: every test file under it, the notebook and autograder folders left out)
  files=$(find tests -name 'test_*.py' | sort | xargs grep -lE \
    '\bcuda\b|def test_[A-Za-z0-9_]*\([^)]*\bdevice\b|posref\.grading|from posref import .*\bgrading\b' |
    grep -vE '^tests/(notebooks|autograder)/' | xargs)
  # pytest-xdist is on the GPU image (16 cores): six workers share the GPU, so the 16 files fit the time left
  local workers=""
  "$PY" -c "import xdist" 2>/dev/null && workers="-n 6"
  step "pytest (at most ${seconds}s${workers:+, $workers}): $files"
  # shellcheck disable=SC2086
  timeout -k 5 "$seconds" "$PY" -m pytest -q -rfEs -m "not browser" -p no:cacheprovider --timeout 120 \
    $workers --junitxml "$OUT/pytest.xml" $files
}

main() {
  echo "tools/gpu-check.sh on $(hostname) for device '$DEVICE', output in $OUT, $(date -u +%FT%TZ)"
  versions || failed+=(versions)
  if [ "${#failed[@]}" -gt 0 ] && [ "$DEVICE" = cuda ]; then
    echo "no usable CUDA device: stopping here"
  else
    install_wheels || failed+=(jupyter) # the bench still runs: its notebook figures then read nan
    bench || failed+=("bench (exit $?)")
    cuda_tests || failed+=("pytest (exit $?)")
  fi
  step "summary"
  if [ "${#failed[@]}" -eq 0 ]; then echo "every step passed"; else printf 'FAILED: %s\n' "${failed[@]}"; fi
  ls -l "$OUT"
  rm -rf "$JUPYTER_PREFIX"
  return "${#failed[@]}"
}

main 2>&1 | tee "$OUT/gpu-check.log"
