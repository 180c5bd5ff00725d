"""Shared fixtures: the Rust interop binary (python/interop), built on first use."""

import os
import pathlib
import subprocess

import pytest

PYTHON_DIR = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def interop() -> pathlib.Path:
    """The `siftdb-py-interop` binary: $SIFTDB_PY_INTEROP, or built with cargo into
    python/target (the wheel's build already compiled the engine there)."""
    env = os.environ.get("SIFTDB_PY_INTEROP")
    if env:
        path = pathlib.Path(env)
        assert path.is_file(), f"SIFTDB_PY_INTEROP={env} does not exist"
        return path
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", PYTHON_DIR / "target"))
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "siftdb-py-interop"],
        cwd=PYTHON_DIR,
        check=True,
    )
    return target / "release" / "siftdb-py-interop"
