#!/usr/bin/env python3
"""Checks what the shared objects export (nm -D --defined-only).

    check_exports.py --headers DIR [--library LIB ...] [--extension EXT]

Every name a LIB exports must be declared in a public header (DIR/*.h):
the internals its files share (gts__*) stay hidden. EXT, the Python
extension, exports its module init (PyInit_*) only: the libgtstore linked
into it stays inside. Names the toolchain adds (sanitizers' globals, the
linker's section markers) are ignored.
"""
import argparse
import pathlib
import re
import subprocess
import sys

TOOLCHAIN = re.compile(r"^(__(asan|odr_asan|ubsan|sancov|lsan|tsan|msan)|_init$|_fini$|_edata$|"
                       r"_end$|__bss_start$)")


def exported(path):
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True,
                         capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    return sorted({n.split("@")[0] for n in names if not TOOLCHAIN.match(n)})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--headers", required=True)
    parser.add_argument("--library", action="append", default=[])
    parser.add_argument("--extension")
    args = parser.parse_args()
    headers = pathlib.Path(args.headers)
    text = "\n".join(p.read_text() for p in [*headers.glob("*.h"), *headers.glob("*.h.in")])
    declared = set(re.findall(r"\b(gts_[a-z]\w*)\b", text))
    bad = []
    for lib in args.library:
        names = exported(lib)
        wrong = [f"{lib}: exports {n}, which no public header declares" for n in names
                 if n not in declared]
        if not names:
            wrong.append(f"{lib}: exports nothing")
        print(f"{lib}: {len(names)} names" + ("" if wrong else ", all public"))
        bad += wrong
    if args.extension:
        names = exported(args.extension)
        print(f"{args.extension}: {', '.join(names)}")
        bad += [f"{args.extension}: exports {n}; only the module init may be" for n in names
                if not n.startswith("PyInit_")]
        if not any(n.startswith("PyInit_") for n in names):
            bad.append(f"{args.extension}: exports no PyInit_ function")
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
