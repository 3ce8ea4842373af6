"""Ends a local Ray instance's processes when the sweep driver that started it dies.

`ray.init()` without an address starts Ray's own processes (GCS server, raylet, agents,
workers) as descendants of the driver. If the driver is killed (`kill -9`, OOM killer),
Ray's task workers follow within seconds, but its dashboard and runtime-env agents wait on
a dead GCS for a minute or more. The reaper is a small process started beside the local
instance: while the driver lives it notes the driver's descendants that are Ray's (started
after the reaper, command line of Ray's) every half second; when the driver is gone (its
stdin pipe closes) it terminates the ones it noted, then kills what is left. Other children
of the driver (a notebook's own subprocesses) are left alone. Linux only (it reads /proc);
elsewhere it is not started.

Run as `python reaper.py DRIVER_PID` with a pipe from the driver on stdin (see `start`).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Seconds between two looks at the driver's descendants.
POLL_S = 0.5
#: Seconds the noted processes get to end after SIGTERM before SIGKILL.
GRACE_S = 3.0


def _parents() -> dict[int, list[tuple[int, int]]]:
    """Children of every process: ppid -> [(pid, start time)] (zombies left out)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            out.setdefault(int(fields[1]), []).append((int(d.name), int(fields[19])))
    return out


def descendants(pid: int) -> set[tuple[int, int]]:
    """(pid, start time) of every live descendant of `pid`; the start time tells a process
    from a later one that reuses its id."""
    kids, found, stack = _parents(), set(), [pid]
    while stack:
        for child in kids.get(stack.pop(), []):
            found.add(child)
            stack.append(child[0])
    return found


def is_ray(pid: int) -> bool:
    """A process of Ray's: its binaries, a Python under Ray's package, or a `ray::` worker."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return cmd[0].startswith(b"ray::") or any(b"/ray/" in part for part in cmd[:3])


def _start_time(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def _signal_all(procs: set[tuple[int, int]], sig: int) -> set[tuple[int, int]]:
    """Sends `sig` to the noted processes that still run; returns those."""
    live = set()
    for pid, start in procs:
        if _start_time(pid) == start:
            try:
                os.kill(pid, sig)
                live.add((pid, start))
            except OSError:
                pass
    return live


def watch(driver: int) -> None:
    """Notes the driver's descendants until stdin closes, then ends them."""
    before = descendants(driver)  # the driver's own children, older than its Ray instance
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    noted: set[tuple[int, int]] = set()
    while True:
        noted |= {p for p in descendants(driver) - before if p not in noted and is_ray(p[0])}
        ready, _, _ = select.select([sys.stdin], [], [], POLL_S)
        if ready and not sys.stdin.buffer.read1(1):
            break  # EOF: the driver closed the pipe or died
    live = _signal_all(noted, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while live and time.monotonic() < deadline:
        time.sleep(0.1)
        live = {p for p in live if _start_time(p[0]) == p[1]}
    _signal_all(live, signal.SIGKILL)


def start() -> subprocess.Popen | None:
    """Starts a reaper for this process (Linux); None elsewhere. Start it before Ray. It
    acts when its stdin closes (the driver died, or `stop(reaper, reap=True)`)."""
    if not Path("/proc/self/stat").exists():
        return None
    # Run as a plain script: importing the rdmalab package would cost it a second of start-up.
    proc = subprocess.Popen([sys.executable, __file__, str(os.getpid())], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, start_new_session=True)
    proc.stdout.readline()  # its baseline is taken: what starts from now on is noted
    return proc


def stop(reaper: subprocess.Popen | None, reap: bool = False) -> None:
    """Ends the reaper: after a clean `ray.shutdown()` by killing it (nothing to reap), or
    with `reap` by closing its pipe, so that it ends what it noted first."""
    if reaper is None:
        return
    if reap:
        reaper.stdin.close()
        reaper.wait(timeout=GRACE_S + 5)
    else:
        reaper.kill()
        reaper.wait()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal is the driver's to handle
    watch(int(sys.argv[1]))
