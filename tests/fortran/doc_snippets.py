"""Compiles and runs every ```fortran block of docs/fortran.md that is a
complete program: doc_snippets.py DOC FC MODDIR LIB... (the shared
libraries to link, in order, found at run time where they are). FFLAGS: more
flags (sanitizers)."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

doc, fc, moddir, *libs = sys.argv[1:]
blocks = [b for b in re.findall(r"```fortran\n(.*?)```", pathlib.Path(doc).read_text(), re.S)
          if b.lstrip().startswith("program")]
if not blocks:
    sys.exit(f"{doc}: no program blocks")
with tempfile.TemporaryDirectory() as tmp:
    for n, block in enumerate(blocks):
        src, exe = pathlib.Path(tmp, f"snippet{n}.f90"), pathlib.Path(tmp, f"snippet{n}")
        src.write_text(block)
        subprocess.run([fc, *os.environ.get("FFLAGS", "").split(), "-I" + moddir, str(src), *libs,
                        *(f"-Wl,-rpath,{pathlib.Path(lib).resolve().parent}" for lib in libs),
                        "-o", str(exe)], check=True)
        subprocess.run([str(exe)], check=True)
        print(f"snippet {n}: ok")
