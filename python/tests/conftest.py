"""Shared fixtures of the numfid Python tests: the example data, the CLI binary of the same
build (the independent path the module's results are compared with), and a runner for it."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

SOURCE = pathlib.Path(os.environ.get("NUMFID_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
DATA = SOURCE / "examples" / "data"


def _cli_path():
    p = os.environ.get("NUMFID_CLI")
    if p:
        return pathlib.Path(p)
    return SOURCE / "build" / "bin" / "numfid"


@pytest.fixture(scope="session")
def cli():
    """Runs the numfid CLI: cli(*args, stdin=None) -> CompletedProcess (text)."""
    exe = _cli_path()
    if not exe.exists():
        pytest.fail(f"the numfid CLI is not at {exe} (set NUMFID_CLI)")

    def run(*args, stdin=None):
        return subprocess.run([str(exe), *map(str, args)], input=stdin, capture_output=True, text=True, check=False)

    return run


@pytest.fixture(scope="session")
def data():
    """The example operands and outputs (examples/README.md): name -> numpy array."""
    return {p.stem: np.load(p) for p in DATA.glob("*.npy")}


@pytest.fixture(scope="session")
def data_dir():
    return DATA


def cli_json(cli, tmp_path, *args):
    """`numfid ARGS --json FILE`: (exit code, parsed JSON text, stdout)."""
    out = tmp_path / "verdict.json"
    r = cli(*args, "--json", out)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, out.read_text(), r.stdout


def error_text(cli_result):
    """The message the CLI printed on stderr, without its "numfid: " prefix."""
    assert cli_result.returncode == 2, cli_result
    line = cli_result.stderr.strip().splitlines()[0]
    assert line.startswith("numfid: ")
    return line[len("numfid: "):]


__all__ = ["cli_json", "error_text", "json"]
