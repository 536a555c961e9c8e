"""The set-up around the package: a bad GTSTORE_CACHE_LIMIT is refused at
import with a message, tests/mpi/mpirun.sh finds the mpirun beside the
Python it runs, and the files a release needs are there."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def python_with(env_updates, code):
    env = dict(os.environ, **env_updates)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("value", ["12X", "1GB", "-1", "1.5G", "lots"])
def test_bad_cache_limit_is_refused_at_import(value):
    run = python_with({"GTSTORE_CACHE_LIMIT": value}, "import gtstore")
    assert run.returncode == 1
    assert f"ValueError: GTSTORE_CACHE_LIMIT: '{value}' is not a size; expected bytes" in run.stderr


@pytest.mark.parametrize("value, limit", [("512M", 512 << 20), ("3k", 3 << 10), ("0", 0),
                                          ("", 1 << 30)])
def test_cache_limit_from_environment(value, limit):
    run = python_with({"GTSTORE_CACHE_LIMIT": value}, "import gtstore; print(gtstore.cache_limit())")
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) == limit


def test_mpirun_sh_without_venv_on_path():
    # The documented form, tests/mpi/mpirun.sh N T .venv/bin/python ..., with
    # only the system's directories on PATH: the mpirun beside the Python runs it.
    beside = pathlib.Path(sys.executable).parent / "mpirun"
    if not beside.exists():
        pytest.skip(f"no mpirun beside {sys.executable} (the test group's Open MPI wheel)")
    env = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop("MPIRUN", None)
    run = subprocess.run([str(ROOT / "tests/mpi/mpirun.sh"), "2", "120", sys.executable, "-c",
                          "from mpi4py import MPI; print(MPI.COMM_WORLD.size)"],
                         capture_output=True, text=True, timeout=180, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2", "2"]


def test_mpirun_sh_says_what_is_missing(tmp_path):
    if shutil.which("mpirun", path="/usr/local/bin:/usr/bin:/bin"):
        pytest.skip("a system mpirun is installed")
    env = dict(os.environ, PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop("MPIRUN", None)
    run = subprocess.run([str(ROOT / "tests/mpi/mpirun.sh"), "2", "60", "true"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 127 and "no mpirun on PATH or beside true" in run.stderr


def test_release_files():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    assert "the gtstore developers" in license_text
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = { text = "BSD-3-Clause" }' in pyproject
    assert 'mpi = ["mpi4py>=4.0"]' in pyproject
    assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")
