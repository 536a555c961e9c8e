"""The test suite itself: it collects the same tests in every process (as
pytest-xdist requires of its workers), and one test's failure does not
fail the next through the storages its traceback holds."""

import os
import subprocess
import sys
import textwrap

from conftest import subprocess_env

HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_in_a_child(*args, cwd, hash_seed="0"):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=cwd,
        env=subprocess_env(PYTHONHASHSEED=hash_seed),
        capture_output=True,
        text=True,
        timeout=600,
    )


def collected(hash_seed):
    result = pytest_in_a_child("--collect-only", "-q", HERE, cwd=HERE, hash_seed=hash_seed)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_every_process_collects_the_same_ids():
    """No id holds an address (a lambda's, an object's) or depends on the
    order of a set of strings, which changes with the hash seed."""
    first, second = collected("1"), collected("2")
    assert len(first) > 1000
    with_addresses = [test for test in first if " at 0x" in test]
    assert not with_addresses, with_addresses[:5]
    assert first == second, sorted(set(first) ^ set(second))[:5]


def test_a_failure_does_not_fail_the_next_baseline(tmp_path):
    """pytest keeps a failed test's traceback, and with it the storages of
    its frames, until the next test's call; the baseline fixture must not
    count them."""
    (tmp_path / "test_pair.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        import gtstore
        from conftest import baseline, live  # noqa: F401 - the fixture under test

        def test_fails_holding_storages():
            held = [gtstore.zeros(10) for _ in range(5)]
            assert not held

        def test_comes_back_to_its_baseline(baseline):
            assert live() == baseline
    """))
    result = pytest_in_a_child("-q", str(tmp_path / "test_pair.py"), cwd=tmp_path)
    tail = result.stdout.splitlines()[-1] if result.stdout else result.stderr
    assert "1 failed, 1 passed" in tail, result.stdout[-3000:]
    assert "FAILED test_pair.py::test_fails_holding_storages" in result.stdout
