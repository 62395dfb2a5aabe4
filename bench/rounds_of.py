"""The per-round figure alone, for any checkout: ``python bench/rounds_of.py CHECKOUT`` runs that checkout's
``bench.rounds_figure`` (a 41-round flow through its warm worker against the SDK's loop) with that checkout's mcpcli.

Run it with the checkout's own Python (its venv), once for each side, one after the other: an older checkout whose
``bench.py`` has no ``--only`` can still be compared with this one in the same sitting.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    sys.path.insert(0, str(root / "bench"))
    import bench  # that checkout's

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "mcpcli")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="mcpcli-bench-") as name:
        tmp = Path(name)
        for variable in ("MCPCLI_SERVER", "MCPCLI_STORE", "MCPCLI_ASSUME_TTY", "MCPCLI_WORKER_DIR"):
            os.environ.pop(variable, None)
        os.environ["MCPCLI_HOME"] = str(tmp / "home")
        os.environ["MCPCLI_WORKER"] = "0"  # rounds_figure turns the worker on for its own runs
        print(root)
        bench.rounds_figure(tmp, dict(os.environ), 5)


if __name__ == "__main__":
    main()
