#!/bin/sh
# Installs bubblewrap (the grading sandbox) where this machine allows it; otherwise says why grading will run
# with resource limits only. Safe to run repeatedly.
if command -v bwrap >/dev/null 2>&1; then
    echo "bubblewrap: $(bwrap --version)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y bubblewrap >/dev/null && echo "bubblewrap: installed $(bwrap --version)"
else
    echo "bubblewrap is missing and cannot be installed here (need root and apt-get):" >&2
    echo "grading will run with resource limits only, without filesystem or network isolation" >&2
fi
