"""Runs one of adapters/flashinfer's header rewrites in CMake's script mode on a text."""
import pathlib
import subprocess
import tempfile


def run_rewrite(cmake, script, header_text):
    """(what the script printed, the rewritten text)."""
    with tempfile.TemporaryDirectory() as d:
        src = pathlib.Path(d) / "in.cuh"
        out = pathlib.Path(d) / "out.cuh"
        src.write_text(header_text)
        run = subprocess.run([cmake, f"-DHEADER={src}", f"-DOUT={out}", "-P", script],
                             capture_output=True, text=True, check=True)
        return run.stdout + run.stderr, out.read_text()
