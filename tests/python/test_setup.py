"""The set-up around the package: a bad GTSTORE_CACHE_LIMIT is refused at
import with a message, tests/mpi/mpirun.sh finds the mpirun beside the
Python it runs, and the files a release needs are there."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import subprocess_env

ROOT = pathlib.Path(__file__).resolve().parents[2]


def python_with(env_updates, code):
    env = subprocess_env(**env_updates)
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
    env = subprocess_env(PATH="/usr/local/bin:/usr/bin:/bin")
    env.pop("MPIRUN", None)
    env.pop("LD_PRELOAD", None)  # the sanitizer run's: not for mpirun (no gtstore is imported)
    run = subprocess.run([str(ROOT / "tests/mpi/mpirun.sh"), "2", "120", sys.executable, "-c",
                          "from mpi4py import MPI; print(MPI.COMM_WORLD.size)"],
                         capture_output=True, text=True, timeout=180, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2", "2"]


def test_mpirun_sh_says_what_is_missing(tmp_path):
    if shutil.which("mpirun", path="/usr/local/bin:/usr/bin:/bin"):
        pytest.skip("a system mpirun is installed")
    env = subprocess_env(PATH="/usr/local/bin:/usr/bin:/bin")
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


def dev_function(name):
    """The bash function `name` of ./dev, to run on its own."""
    lines = (ROOT / "dev").read_text().splitlines()
    start = lines.index(f"{name}() {{")
    return "\n".join(lines[start:lines.index("}", start) + 1])


def run_bash(script, tmp_path, path_dirs):
    env = dict(os.environ, PATH=":".join([*map(str, path_dirs), "/usr/bin:/bin"]))
    env.pop("CC", None)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path, env=env)


def executable(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)


def test_dev_configures_again_when_dependencies_change(tmp_path):
    # ./dev demo configured build/release without MPI; once the test group's
    # Open MPI (mpicc) is on PATH, ./dev test must set the directory up anew
    # (else libgtstore_mpi and the C MPI tests silently never build).
    tools, mpi = tmp_path / "tools", tmp_path / "mpi"
    tools.mkdir()
    mpi.mkdir()
    # a meson that logs its arguments and makes build.ninja as setup does
    executable(tools / "meson", 'echo "meson $*" >>calls; shift; [ "$1" = --wipe ] && shift; '
                                'mkdir -p "$1"; touch "$1/build.ninja"\n')
    executable(mpi / "mpicc", "exit 0\n")
    script = dev_function("configure") + "\nconfigure build/release -Dwerror=true\n"

    def calls():
        text = (tmp_path / "calls").read_text() if (tmp_path / "calls").exists() else ""
        (tmp_path / "calls").write_text("")
        return text.splitlines()

    assert run_bash(script, tmp_path, [tools]).returncode == 0
    assert calls() == ["meson setup build/release -Dwerror=true"]
    assert run_bash(script, tmp_path, [tools]).returncode == 0
    assert calls() == []  # nothing changed: incremental builds
    run = run_bash(script, tmp_path, [tools, mpi])
    assert run.returncode == 0
    assert calls() == ["meson setup --wipe build/release -Dwerror=true"]
    assert "configured with other dependencies" in run.stdout and f"mpicc: {mpi}/mpicc" in run.stdout
    assert run_bash(script, tmp_path, [tools, mpi]).returncode == 0
    assert calls() == []
    other = dev_function("configure") + "\nconfigure build/release -Dwerror=false\n"
    assert run_bash(other, tmp_path, [tools, mpi]).returncode == 0
    assert calls() == ["meson setup --wipe build/release -Dwerror=false"]


def test_dev_package_step_shows_progress(tmp_path):
    # pip's build of the package: meson's [n/N] lines come through as they
    # come; a failure prints the end of the log.
    fake_pip = tmp_path / "python"
    executable(fake_pip, 'echo "Looking in links"; echo "  [1/2] Compiling C object x.o"; '
                         'echo "  [2/2] Linking target x.so"; echo "Successfully installed gtstore"; '
                         'exit ${FAIL:-0}\n')
    script = f"PY={fake_pip}\n" + dev_function("pip_install_package") + \
        "\npip_install_package build/log.txt .\n"
    run = run_bash(script, tmp_path, [])
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["  [1/2] Compiling C object x.o", "  [2/2] Linking target x.so",
                                       "Successfully installed gtstore"]
    assert "Looking in links" in (tmp_path / "build/log.txt").read_text()
    run = run_bash("FAIL=3\nexport FAIL\n" + script, tmp_path, [])
    assert run.returncode != 0 and "pip install failed; the whole output: build/log.txt" in run.stdout
