#!/usr/bin/env bash
# What `pip install` of a checkout brings: seconds, packages and MB of a fresh venv, per extra.
# Usage: bash bench/bench_install.sh REPO REV [EXTRA...]   (the commit REV of REPO, as `git archive` gives it;
# EXTRA "" is the plain install, e.g. HEAD "" dev)
# pip's wheel cache is warm after the first round (the registry's download time is left out on purpose:
# it is the network's, not ours); run every variant in the same session and compare them there.
set -euo pipefail
src=$(cd "$1" && pwd); rev=$2; shift 2
[ $# -gt 0 ] || set -- ""
for extra in "$@"; do
    dir=$(mktemp -d /tmp/bench-install.XXXXXX)
    python3 -m venv "$dir/venv"
    "$dir/venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    # the committed tree, outside the checkout: a user's `pip install` of a release, not of a working copy
    mkdir "$dir/src"; git -C "$src" archive --format=tar "$rev" | tar -x -C "$dir/src"
    spec="$dir/src"; [ -n "$extra" ] && spec="$dir/src[$extra]"
    start=$(date +%s.%N)
    "$dir/venv/bin/python" -m pip install -q "$spec" >/dev/null 2>&1
    end=$(date +%s.%N)
    packages=$("$dir/venv/bin/python" -m pip list --format freeze 2>/dev/null | grep -vE '^(pip|setuptools)==' | wc -l)
    mb=$(du -sm "$dir/venv" | cut -f1)
    has=$("$dir/venv/bin/python" -m pip list --format freeze 2>/dev/null | grep -ioE '^(dask|distributed|playwright|ipykernel|hypothesis)==' | tr -d '=' | tr '\n' ' ' || true)
    printf '%s [%s]: %.0f s, %s packages, %s MB; of the heavy ones: %s\n' "$rev" "${extra:-none}" \
        "$(echo "$end - $start" | bc)" "$packages" "$mb" "${has:-none}"
    [ -n "${TOP:-}" ] && du -sm "$dir"/venv/lib/python3*/site-packages/* | sort -rn | head -"$TOP"
    rm -rf "$dir"
done
