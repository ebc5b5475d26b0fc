"""Start-up cost: `import toolwire` and `toolwire --help` against a bare interpreter.

Each command runs in a fresh interpreter, interleaved, and the best of ``RUNS`` counts (the
machine is noisy). Reported as time over the bare ``python -c pass`` and as the self-measured
import time (``python -X importtime``) of the ``toolwire`` package.
"""

from __future__ import annotations

import subprocess
import sys
import time

RUNS = 15
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import toolwire": [sys.executable, "-c", "import toolwire"],
    "toolwire --help": [sys.executable, "-m", "toolwire", "--help"],
}


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, check=True)
    return time.perf_counter() - started


def import_time_ms(module: str) -> float:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise RuntimeError(f"{module} not in the import-time report")


def main() -> None:
    best = {name: float("inf") for name in COMMANDS}
    for _ in range(RUNS):
        for name, command in COMMANDS.items():
            best[name] = min(best[name], wall(command))
    bare = best["python -c pass"]
    for name, seconds in best.items():
        print(f"{name:>16}: {seconds * 1000:6.1f} ms ({seconds / bare:.2f}x the bare interpreter, "
              f"+{(seconds - bare) * 1000:.1f} ms)")  # fmt: skip
    own = min(import_time_ms("toolwire") for _ in range(5))
    print(f"import toolwire, by -X importtime: {own:.1f} ms")


if __name__ == "__main__":
    main()
