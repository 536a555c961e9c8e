"""The Python snippets of README.md and docs/*.md run and show what the code
gives: tests/docs_snippets.py (its docstring says how comments are checked
and how a block is marked to skip). Each file runs in its own process, so
that its snippets (which set the GPU, cache limits, presets) leave this
one as it was; each block is one test."""

import functools
import json
import pathlib
import subprocess
import sys

import pytest
from conftest import subprocess_env

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "docs_snippets.py"
sys.path.insert(0, str(SCRIPT.parent))
import docs_snippets  # noqa: E402

FILES = docs_snippets.default_files()
BLOCKS = [(path, line) for path in FILES for line, _, _ in docs_snippets.blocks(path)]


@functools.lru_cache(maxsize=None)
def results(path):
    run = subprocess.run([sys.executable, str(SCRIPT), "--json", str(path)], capture_output=True,
                         text=True, timeout=600, cwd=ROOT, env=subprocess_env())
    assert run.returncode == 0, run.stderr
    return {line: (status, detail) for line, status, detail in json.loads(run.stdout)}


@pytest.mark.parametrize("path, line", BLOCKS,
                         ids=[f"{p.relative_to(ROOT)}:{line}" for p, line in BLOCKS])
def test_snippet(path, line):
    status, detail = results(path)[line]
    if status == "skipped":
        pytest.skip(f"{path.relative_to(ROOT)}:{line}: {detail}")
    assert status == "ok", f"{path.relative_to(ROOT)}:{line}\n{detail}"


def test_every_doc_has_its_snippets_found():
    assert {p.name for p, _ in BLOCKS} >= {"README.md", "storage.md", "arrays.md", "stencils.md"}


# The checker itself: a wrong result, a wrong or missing error and a wrong
# repr are failures; prose is not checked; markers skip with their reason.
CHECKS = '''
```python
import numpy as np
x = (1, 2)
x           # (1, 2): prose after the literal
x           # a tuple: prose only
np.arange(3)     # [0, 1, 2]
int("q")
# ValueError: invalid literal ... 'q'
x           # -> (1, ...)
```

```python
x           # {wrong}
```

```python
int("q")
# TypeError: invalid literal ... 'q'
```

```python
int("7")
# ValueError: anything
```

```python
x           # -> [1, ...]
```

```python
int("q")
# ValueError: another message
```

<!-- snippet: skip: shown, not run -->
```python
raise SystemExit(3)
```

<!-- snippet: needs no_such_module_here -->
```python
raise SystemExit(3)
```

```python
x[1]        # 2: uses the first block's x
```
'''


def test_the_checker(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(CHECKS.replace("{wrong}", "(1, 3)"))
    got = [(status, detail.splitlines()[-1] if status == "failed" else detail)
           for _, status, detail in docs_snippets.run_file(doc)]
    assert [status for status, _ in got] == [
        "ok", "failed", "failed", "failed", "failed", "failed", "skipped", "skipped", "ok"]
    assert "gives (1, 2), the docs say (1, 3)" in got[1][1]
    assert "raised ValueError, the docs say TypeError" in got[2][1]
    assert "raised nothing, the docs say ValueError" in got[3][1]
    assert "the docs say [1, ...]" in got[4][1]
    assert "the docs say: another message" in got[5][1]
    assert got[6][1] == "shown, not run"
    assert got[7][1] == "needs no_such_module_here, which is not installed"


def test_the_script_fails_on_a_wrong_snippet(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("```python\n1 + 1    # 3\n```\n")
    run = subprocess.run([sys.executable, str(SCRIPT), str(doc)], capture_output=True, text=True,
                         timeout=120, env=subprocess_env())
    assert run.returncode == 1
    assert "doc.md:1: failed" in run.stdout and "the docs say 3" in run.stdout
