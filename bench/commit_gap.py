"""What one durable SQLite commit costs on this machine's disk, by the time that passes between commits.

A flow commits one round (WAL, ``synchronous=FULL``, the store's settings) and then waits a round for the server;
the ``fdatasync`` that ends each commit costs more when commits are apart than back to back, whether the process
sleeps or works in between. This shows the floor under a round's durable write:

    python bench/commit_gap.py [--gaps 0,0.001,0.003] [--busy]

Each gap: 10 batches of 40 commits of a round-sized transaction (a round row, a session update touching its
indexes, two trace lines) into a fresh file in a temporary directory, a second connection holding the WAL open (as
the worker's lock keeper does between commands), a passive checkpoint between batches (as at the end of a command).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

BODY = "x" * 900
"""About what a round's row and a trace line hold."""


def _setup(path: Path) -> tuple[sqlite3.Connection, sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, round INT, status TEXT, updated TEXT)")
    conn.execute("CREATE INDEX sessions_updated ON sessions (updated, id)")
    conn.execute("CREATE INDEX sessions_status_updated ON sessions (status, updated, id)")
    conn.execute(
        "CREATE TABLE rounds (session_id TEXT, round_index INT, body TEXT, PRIMARY KEY (session_id, round_index))"
    )
    conn.execute("CREATE TABLE trace (session_id TEXT, seq INT, line TEXT, PRIMARY KEY (session_id, seq))")
    for n in range(50):
        conn.execute("INSERT INTO sessions VALUES (?, 0, 'waiting', ?)", (f"s{n}", f"2026-12-03T00:00:{n:02d}"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("SELECT COUNT(*) FROM sessions").fetchall()  # opens the WAL; holds no lock afterwards
    return conn, holder


def _commit(conn: sqlite3.Connection, index: int) -> float:
    """One round's transaction; the seconds its COMMIT took."""
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO rounds VALUES ('s7', ?, ?)", (index, BODY))
    conn.execute(
        "UPDATE sessions SET round = ?, status = 'running', updated = ? WHERE id = 's7'", (index, f"{index:09d}")
    )
    conn.executemany("INSERT INTO trace VALUES ('s7', ?, ?)", [(2 * index, BODY), (2 * index + 1, BODY)])
    started = time.perf_counter()
    conn.execute("COMMIT")
    return time.perf_counter() - started


def _pause(seconds: float, busy: bool) -> None:
    if not busy:
        time.sleep(seconds)
        return
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaps", default="0,0.001,0.003", help="seconds between commits, comma-separated")
    parser.add_argument("--busy", action="store_true", help="spin between commits instead of sleeping")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpcli-commit-") as tmp:
        conn, holder = _setup(Path(tmp) / "sessions.db")
        index = 0
        print(f"{'gap':>8}  {'COMMIT median':>14}  {'mean':>8}")
        for gap in (float(g) for g in args.gaps.split(",")):
            times: list[float] = []
            for _batch in range(10):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                for _ in range(40):
                    index += 1
                    times.append(_commit(conn, index))
                    if gap:
                        _pause(gap, args.busy)
            median, mean = statistics.median(times) * 1e3, statistics.mean(times) * 1e3
            print(f"{gap * 1e3:>6.1f}ms  {median:>11.3f} ms  {mean:>5.3f} ms")
        holder.close()
        conn.close()


if __name__ == "__main__":
    main()
