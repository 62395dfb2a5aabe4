"""Keys made on first use — the demo server's sealing key, the store key: one whole key for every process, even
processes that start together."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from mcpcli.demo import DamagedKey, load_or_create_key
from mcpcli.errors import ConfigError
from mcpcli.settings.config import Paths
from mcpcli.state.vault import load_store_key
from mcpcli.userdirs import private_dirs

ROUNDS = 25
PROCESSES = 8


def _first_use(which: str, path: str, barrier: Any, keys: Any) -> None:
    barrier.wait()
    try:
        if which == "demo":
            keys.put(load_or_create_key(Path(path)).hex())
        else:
            keys.put((load_store_key(Path(path), environ={}) or b"").hex())
    except (DamagedKey, ConfigError):
        keys.put("damaged")


@pytest.mark.parametrize("which", ["demo", "store"])
def test_processes_starting_together_all_read_one_whole_key(tmp_path: Path, which: str) -> None:
    """Forty commands started at once on a fresh machine each make the key on first use: none may read a key
    still being written (the demo's failed as "damaged"; the store's became a key derived from nothing) or keep
    one of its own (what it sealed would not open elsewhere). Counted over rounds of eight processes let go at the
    same instant."""
    context = multiprocessing.get_context("fork")
    damaged = split = 0
    for n in range(ROUNDS):
        path = tmp_path / f"round{n}" / "demo.key"
        barrier, keys = context.Barrier(PROCESSES), context.Queue()
        procs = [context.Process(target=_first_use, args=(which, str(path), barrier, keys)) for _ in range(PROCESSES)]
        for proc in procs:
            proc.start()
        got = [keys.get(timeout=30) for _ in procs]
        for proc in procs:
            proc.join(timeout=30)
        damaged += got.count("damaged")
        split += len(set(got)) > 1
        assert sorted(p.name for p in path.parent.iterdir()) == ["demo.key"]  # no draft left behind
        assert path.stat().st_mode & 0o777 == 0o600
    assert (damaged, split) == (0, 0)


def test_a_damaged_key_is_one_line_and_exit_4(home: Path, cli: Any) -> None:
    key = Paths.from_env().demo_key_file
    private_dirs(key.parent)
    key.write_bytes(b"short")
    r = cli("call", "echo", "-a", "text=hi")
    assert r.code == 4
    assert f"the key file {key} is damaged" in r.err and f"Delete {key} to make a new key." in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("content", [b"", b"\n"])
def test_an_empty_key_file_is_damaged_not_replaced(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "demo.key"
    path.write_bytes(content)
    with pytest.raises(DamagedKey):
        load_or_create_key(path)
    assert path.read_bytes() == content


def test_a_damaged_store_key_is_refused_not_used(tmp_path: Path) -> None:
    """An empty store key file would make a key of nothing: sealed answers anyone could open."""
    path = tmp_path / "store.key"
    path.write_bytes(b"\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="is damaged"):
        load_store_key(path, environ={})
