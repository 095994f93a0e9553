"""`python -m engine_model ARGS` for the tests: in this interpreter (an interpreter's start and imports are
most of a small command's second), or as its own process where exit codes and output are the contract."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from types import SimpleNamespace

from engine_model.cli import main


def cli(*args: str, check: bool = False, process: bool = False):
    """(returncode, stdout, stderr) of the command; `check`: assert it succeeded."""
    if process:
        proc = subprocess.run([sys.executable, "-m", "engine_model", *args], capture_output=True, text=True)
    else:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as done:  # argparse: --help, or a usage error
                code = done.code if isinstance(done.code, int) else 1
        proc = SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc
