"""The idle footprint of one folder's evalduck processes: CPU seconds over a window and resident memory.

    .venv/bin/python bench/bench_idle.py FOLDER [--seconds 60]

Reads FOLDER/.evalduck/serve.json for the server, warm starter, idle watcher and worker pids; the chart
renderer is the one warm.json names, else the starter's child (older starters write no warm.json). For each process (with its own children) it reads utime+stime from /proc/PID/stat at the
start and end of the window, and VmRSS at the end, and prints a markdown table. Run it once the folder is
quiet (the starter's log says "listening on"), so that the window holds no preload or run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float]:
    """(parent pid, CPU seconds) of one process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if _stat(int(entry.name))[0] == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError):
                continue
    return found


def processes(folder: Path) -> dict[str, int]:
    record = json.loads((folder / ".evalduck" / "serve.json").read_text())
    named = {"server": record.get("server_pid"), "starter": record.get("starter_pid"),
             "watcher": record.get("watcher_pid"), "worker": record.get("worker_pid")}
    try:
        named["renderer"] = json.loads((folder / ".evalduck" / "warm.json").read_text()).get("renderer_pid")
    except (OSError, ValueError):
        pass
    found = {name: pid for name, pid in named.items() if isinstance(pid, int) and Path(f"/proc/{pid}").exists()}
    if "starter" in found and "renderer" not in found:
        for child in _children(found["starter"]):
            found.setdefault("renderer", child)  # the only long-lived child of an idle starter
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    found = processes(args.folder.resolve())
    before = {name: _stat(pid)[1] for name, pid in found.items()}
    time.sleep(args.seconds)
    print(f"| process | pid | CPU s in {args.seconds:.0f} s | % of a core | RSS (MB) |")
    print("|---|---|---|---|---|")
    total_cpu = total_rss = 0.0
    for name, pid in found.items():
        try:
            cpu = _stat(pid)[1] - before[name]
            rss = _rss_mb(pid)
        except OSError:
            print(f"| {name} | {pid} | gone | | |")
            continue
        total_cpu += cpu
        total_rss += rss
        print(f"| {name} | {pid} | {cpu:.2f} | {100 * cpu / args.seconds:.2f} | {rss:.0f} |")
    print(f"| all | | {total_cpu:.2f} | {100 * total_cpu / args.seconds:.2f} | {total_rss:.0f} |")


if __name__ == "__main__":
    main()
