"""Runs the Python snippets of Markdown files and checks the results their
comments show, so that the docs cannot drift from the code.

    python tests/docs_snippets.py [FILE.md ...]     (default: README.md docs/*.md)

tests/python/test_docs_snippets.py runs it on every file (so ./dev test
does); it prints one line per block and exits non-zero if one fails.

The ```python blocks of a file run in order in one namespace, in a fresh
process, so that a block may use what an earlier one defined. A statement
is checked where its comments say what it gives:

    s.strides            # (8, 560, 39200): I contiguous
        An expression whose trailing comment starts with a Python literal
        (the whole comment, or the part before the first ": " or "; ")
        must equal it (arrays and storages: their values as nested lists).
    type(s)              # -> <class 'gtstore.CPUStorage'>
        "# -> text": repr() of the value must read text, where "..." in
        text stands for anything.
    gts.as_storage(np.zeros(64)[1:], alignment_size=16)
    # ValueError: alignment_size: the element ... is
    #             not a multiple of 16 bytes
        Comment lines right below a statement that start with an exception
        name: the statement must raise it (or a subclass), with that message
        ("..." for anything; continuation lines are joined by a space).

Any other comment is prose and is not checked. A block that cannot run
everywhere says so in an HTML comment on the line above its opening fence,
which the rendered page does not show:

    <!-- snippet: needs cupy -->          run only where `import cupy` works
                                          (any module name: mpi4py, gt4py, ...)
    <!-- snippet: skip: the reason -->    never run; the reason is printed
    <!-- snippet: mpirun -->              needs several MPI ranks: not run here
                                          (tests/mpi runs the same code)
"""

import ast
import contextlib
import importlib.util
import io
import json
import pathlib
import re
import sys
import tokenize
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->")
EXCEPTION_LINE = re.compile(r"#\s*([A-Za-z_][\w.]*(?:Error|Exception)):\s?(.*)")


def default_files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path):
    """(line of the fence, marker text or None, source) of each python block."""
    lines = pathlib.Path(path).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            marker = MARKER.search(lines[i - 1]) if i > 0 else None
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            found.append((start, marker.group(1) if marker else None, "\n".join(lines[start:i])))
        i += 1
    return found


def reason_not_to_run(marker):
    """None where the block runs here, else why not."""
    if marker is None:
        return None
    if marker.startswith("skip:"):
        return marker[len("skip:"):].strip()
    if marker == "mpirun":
        return "needs several MPI ranks (tests/mpi runs the same code under mpirun)"
    if marker.startswith("needs "):
        for module in marker[len("needs "):].replace(",", " ").split():
            if importlib.util.find_spec(module) is None:
                return f"needs {module}, which is not installed"
        return None
    raise ValueError(f"unknown snippet marker {marker!r}")


def comments(source):
    """{line: comment text without '#'} of every comment (1-based lines)."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = (token.string[1:].strip(), token.line.lstrip().startswith("#"))
    return found


def wildcard(expected):
    """A regex of `expected`, where "..." stands for anything and any run of
    white space for any other."""
    parts = [r"\s+".join(map(re.escape, part.split())) for part in expected.split("...")]
    return re.compile(".*?".join(parts), re.DOTALL)


def leading_literal(text):
    """The Python literal a comment starts with (whole, or before ": " or "; "),
    or raises ValueError: the comment is prose."""
    candidates = [text] + [text[:m.start()] for m in re.finditer(r"[:;](\s|$)", text)]
    for candidate in candidates:
        try:
            return ast.literal_eval(candidate.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError(text)


def same(value, expected):
    if hasattr(value, "__array__") or hasattr(value, "__dlpack__"):
        import numpy as np

        value = np.asarray(value).tolist()
    result = value == expected
    return result if isinstance(result, bool) else False


def expected_exception(notes, line, last):
    """(name, message) that the comment lines below `line` announce, or None."""
    if line + 1 not in notes or not notes[line + 1][1]:
        return None
    match = EXCEPTION_LINE.match("# " + notes[line + 1][0])
    if not match:
        return None
    message, n = [match.group(2)], line + 2
    while n in notes and notes[n][1] and n <= last and not EXCEPTION_LINE.match("# " + notes[n][0]):
        message.append(notes[n][0])
        n += 1
    return match.group(1), " ".join(message)


def check_statement(node, source_lines, notes, namespace, where, last):
    """Runs one top-level statement and checks what its comments show."""
    text = "\n".join(source_lines[node.lineno - 1:node.end_lineno])
    code = ast.Module(body=[node], type_ignores=[])
    raises = expected_exception(notes, node.end_lineno, last)
    try:
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), where, "eval"), namespace)
        else:
            exec(compile(code, where, "exec"), namespace)
            value = None
    except Exception as error:  # noqa: BLE001 - any exception is checked or reported
        if raises is None:
            raise
        name, message = raises
        if name not in {cls.__name__ for cls in type(error).__mro__}:
            raise AssertionError(f"{text!r} raised {type(error).__name__}, the docs say {name}") from error
        if not wildcard(message).fullmatch(" ".join(str(error).split())):
            raise AssertionError(
                f"{text!r} raised {name}: {error}\n    the docs say: {message}") from None
        return
    if raises is not None:
        raise AssertionError(f"{text!r} raised nothing, the docs say {raises[0]}: {raises[1]}")
    note = notes.get(node.end_lineno)
    if not isinstance(node, ast.Expr) or note is None or note[1]:
        return
    comment = note[0]
    if comment.startswith("->"):
        expected = comment[2:].strip()
        if not wildcard(expected).fullmatch(" ".join(repr(value).split())):
            raise AssertionError(f"{text!r} gives {value!r}, the docs say {expected}")
        return
    try:
        expected = leading_literal(comment)
    except ValueError:
        return  # prose
    if not same(value, expected):
        raise AssertionError(f"{text!r} gives {value!r}, the docs say {expected!r}")


def run_block(source, namespace, where, first_line):
    """Runs one block whose first line is line `first_line` (1-based) of the
    file `where`: errors name the file's lines."""
    source = "\n" * (first_line - 1) + source
    tree = ast.parse(source, where)
    lines, notes = source.splitlines(), comments(source)
    for index, node in enumerate(tree.body):
        last = tree.body[index + 1].lineno - 1 if index + 1 < len(tree.body) else len(lines)
        check_statement(node, lines, notes, namespace, where, last)


def shown(path):
    """The path relative to the repository where it is in it."""
    path = pathlib.Path(path)
    try:
        return path.resolve().relative_to(ROOT)
    except ValueError:
        return path


def run_file(path):
    """[(line, status, detail)] of each block: status 'ok', 'skipped' or 'failed'."""
    namespace = {"__name__": "__snippet__"}
    results = []
    for line, marker, source in blocks(path):
        reason = reason_not_to_run(marker)
        if reason is not None:
            results.append((line, "skipped", reason))
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run_block(source, namespace, str(shown(path)), line + 1)
            results.append((line, "ok", ""))
        except Exception:  # noqa: BLE001 - reported with its traceback
            results.append((line, "failed", traceback.format_exc(limit=-3)))
    return results


def main(argv):
    as_json = "--json" in argv
    files = [a for a in argv if a != "--json"] or default_files()
    if as_json:  # one file: what tests/python/test_docs_snippets.py reads
        print(json.dumps(run_file(files[0])))
        return 0
    failed = 0
    for path in files:
        for line, status, detail in run_file(path):
            print(f"{shown(path)}:{line}: {status}{': ' + detail if status == 'skipped' else ''}")
            if status == "failed":
                failed += 1
                print("    " + detail.rstrip().replace("\n", "\n    "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
