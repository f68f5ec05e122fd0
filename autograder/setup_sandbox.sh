#!/bin/sh
# Installs bubblewrap (the grading sandbox) where this machine allows it; otherwise says why grading will refuse
# to run students' code. Safe to run repeatedly.
if command -v bwrap >/dev/null 2>&1; then
    echo "bubblewrap: $(bwrap --version)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y bubblewrap >/dev/null && echo "bubblewrap: installed $(bwrap --version)"
else
    echo "bubblewrap is missing and cannot be installed here (need root and apt-get):" >&2
    echo "autograde will run no student code here (only with --trusted-class, for a class whose code you trust)" >&2
fi
