"""Soak of the file gateway against a free-running link swap: a thread keeps swapping a folder of a workspace
for a link to a folder outside it and back, while this thread reads a file in that folder through the
gateway (`read_bytes`) and the old way (checked, then opened by name), for `--seconds`.

    .venv/bin/python benchmarks/link_swap_bench.py [--seconds 5]

Prints how many reads each way gave the inside text, a refusal, or the outside text, and exits 1 if the
gateway ever gave the outside text. How often the old way meets the window depends on the scheduler (on a
loaded machine it may never), which is why this is a soak and not a test: the pass/fail test puts the swap
exactly between the check and the open (`tests/runtime/test_gateway.py`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from oscova_runtime.paths import FileRefused, check_inside, read_bytes

OUTCOMES = {b"inside": "inside", b"secret": "OUTSIDE"}


def soak(seconds: float) -> tuple[Counter[str], Counter[str], int]:
    """(gateway outcomes, old-way outcomes, swaps made) over `seconds` of racing."""
    with tempfile.TemporaryDirectory(prefix="link-swap-") as scratch:
        root, outside = Path(scratch) / "ws", Path(scratch) / "outside"
        folder, away = root / "inside", root / "away"
        folder.mkdir(parents=True)
        outside.mkdir()
        (folder / "file.txt").write_text("inside")
        (outside / "file.txt").write_text("secret")
        stop = threading.Event()
        swaps = 0

        def swap() -> None:
            nonlocal swaps
            while not stop.is_set():
                os.rename(folder, away)
                os.symlink(outside, folder)
                os.unlink(folder)
                os.rename(away, folder)
                swaps += 1

        racer = threading.Thread(target=swap, daemon=True)
        racer.start()
        gateway: Counter[str] = Counter()
        naive: Counter[str] = Counter()
        path = str(folder / "file.txt")
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                try:
                    gateway[OUTCOMES.get(read_bytes(path, root=str(root)), "other")] += 1
                except FileRefused:
                    gateway["refused"] += 1
                try:
                    check_inside(path, str(root))
                    with open(path, "rb") as handle:
                        naive[OUTCOMES.get(handle.read(), "other")] += 1
                except (FileRefused, OSError):
                    naive["refused"] += 1
        finally:
            stop.set()
            racer.join()
        return gateway, naive, swaps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    gateway, naive, swaps = soak(args.seconds)
    print(f"{swaps:,} swaps in {args.seconds:g} s")
    for name, outcomes in (("gateway", gateway), ("checked, then opened", naive)):
        print(f"{name:>22}: " + ", ".join(f"{outcomes[k]:,} {k}" for k in ("inside", "refused", "OUTSIDE", "other")))
    if gateway["OUTSIDE"]:
        print("the gateway gave the outside text", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
