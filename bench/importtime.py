"""What the warm front end imports, and what each costs (issue 36, point 3): ``python -X importtime``.

    python bench/importtime.py [--runs N]

Starts a worker and the HTTP demo, runs the console script ``mcpcli call echo`` N times (after 2 warm-up runs)
under ``-X importtime`` and prints, per module, the median of its own and its cumulative microseconds, in the
order imported; then the same for ``python -c pass`` (the interpreter's own floor: ``site`` and its ``.pth``
files) and the total of the top-level rows of each. The console script pip writes imports ``re`` itself (and so
``enum``): that row is the script's, not mcpcli's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from kit import PY, ROOT, free_port, mcpcli_argv, wait_for_port


def imports(argv: list[str], env: dict[str, str], runs: int) -> list[tuple[str, int, int, int]]:
    """(module, depth, median self µs, median cumulative µs), in the order of the first run."""
    samples: dict[str, tuple[int, list[int], list[int]]] = {}
    order: list[str] = []
    for i in range(runs + 2):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
        if proc.returncode != 0:
            raise SystemExit(f"bench: {argv} failed:\n{proc.stderr[-2000:]}")
        if i < 2:
            continue
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "imported package" in line:
                continue
            own, total, name = line.removeprefix("import time:").split("|")
            depth = (len(name) - len(name.lstrip())) // 2
            key = name.strip()
            if key not in samples:
                order.append(key)
                samples[key] = (depth, [], [])
            samples[key][1].append(int(own))
            samples[key][2].append(int(total))
    return [
        (k, samples[k][0], int(statistics.median(samples[k][1])), int(statistics.median(samples[k][2]))) for k in order
    ]


def report(title: str, rows: list[tuple[str, int, int, int]]) -> None:
    print(f"{title}\n{'module':<48} {'self µs':>8} {'cumul µs':>9}")
    for name, depth, own, total in rows:
        print(f"{'  ' * depth + name:<48} {own:>8} {total:>9}")
    top = sum(total for _name, depth, _own, total in rows if depth == 0)
    print(f"{'total of the top-level rows':<48} {'':>8} {top:>9}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "mcpcli")], check=True, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="mcpcli-imports-") as tmp_name:
        tmp = Path(tmp_name)
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "MCPCLI_SERVER", "MCPCLI_STORE")}
        env |= {"MCPCLI_HOME": str(tmp / "home"), "MCPCLI_WORKER_DIR": str(tmp / "workers")}
        env |= {"MCPCLI_WORKER": "1", "MCPCLI_WORKER_REQUIRED": "1"}
        port = free_port()
        with (tmp / "demo.log").open("wb") as log:
            server = subprocess.Popen(
                [PY, "-m", "mcpcli.demo", "--key-file", str(tmp / "k"), "--http", f"127.0.0.1:{port}"],
                stdout=log,
                stderr=log,
                env=env,
            )
        try:
            wait_for_port(port, server, tmp / "demo.log")
            subprocess.run([*mcpcli_argv(), "worker", "start"], env=env, check=True, capture_output=True)
            script = mcpcli_argv()
            call = ["call", "echo", "-a", "text=hi", "-s", f"http://127.0.0.1:{port}/mcp"]
            argv = (
                [PY, "-X", "importtime", *script, *call]
                if script[0] != PY
                else [PY, "-X", "importtime", *script[1:], *call]
            )
            print(f"median of {runs} runs\n")
            report("python -c pass", imports([PY, "-X", "importtime", "-c", "pass"], env, runs))
            report("warm mcpcli call echo (the console script)", imports(argv, env, runs))
        finally:
            subprocess.run([*mcpcli_argv(), "worker", "stop"], env=env, capture_output=True)
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
