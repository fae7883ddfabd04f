#!/usr/bin/env python3
"""adapters/flashinfer/jit_flags.py on small stand-ins for a wheel's flashinfer/jit/core.py and
comm.py (the shapes it reads), with negative controls: a release that compiles its comm module
without fast math gets no -use_fast_math, and one whose structure changed is refused (exit 1,
one line). With a wheel's folder as argv[1], also reads that one (the pinned release: fast math).
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "adapters" / "flashinfer" / "jit_flags.py"
WHEEL_JIT = sys.argv.pop(1) if len(sys.argv) > 1 else None

CORE = '''
common_nvcc_flags = ["-DFLASHINFER_ENABLE_FP8_E8M0", "-DFLASHINFER_ENABLE_FP4_E2M1"]

def gen_jit_spec(name, sources, extra_cuda_cflags=None, use_fast_math: bool = True):
    debug = False
    cuda_cflags = [*get_nvcc_parallelism_flags(), "-Xfatbin=-compress-all", "-DFLASHINFER_ENABLE_BF16"]
    if use_fast_math:
        cuda_cflags.insert(0, "-use_fast_math")
    if debug:
        cuda_cflags += ["-g", "-O0"]
    else:
        cuda_cflags += ["-DNDEBUG", "-O3"]
    return cuda_cflags
'''
COMM = '''
def gen_trtllm_comm_module():
    return gen_jit_spec("trtllm_comm", [], extra_cuda_cflags=[]{extra})
'''


def run(core, comm):
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "core.py").write_text(core)
        (Path(d) / "comm.py").write_text(comm)
        return subprocess.run([sys.executable, str(SCRIPT), d], capture_output=True, text=True)


class JitFlags(unittest.TestCase):
    def test_reads_the_flags_of_the_comm_module(self):
        r = run(CORE, COMM.replace("{extra}", ""))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip().split(";"), [
            "-std=c++17", "-use_fast_math", "-DFLASHINFER_ENABLE_BF16", "-DNDEBUG", "-O3",
            "-DFLASHINFER_ENABLE_FP8_E8M0", "-DFLASHINFER_ENABLE_FP4_E2M1"])

    def test_a_comm_module_without_fast_math_gets_none(self):
        r = run(CORE, COMM.replace("{extra}", ", use_fast_math=False"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("-use_fast_math", r.stdout)

    def test_a_changed_structure_is_refused_with_one_line(self):
        for broken in (CORE.replace("else:", "elif True:"), CORE.replace("use_fast_math: bool = True", "x=1"),
                       CORE.replace("common_nvcc_flags", "other_flags")):
            r = run(broken, COMM.replace("{extra}", ""))
            self.assertEqual(r.returncode, 1)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_a_missing_folder_is_refused(self):
        r = subprocess.run([sys.executable, str(SCRIPT), "/nonexistent/jit"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot read", r.stderr)

    @unittest.skipIf(WHEEL_JIT is None, "no wheel folder given")
    def test_the_pinned_wheel_builds_its_comm_module_with_fast_math(self):
        r = subprocess.run([sys.executable, str(SCRIPT), WHEEL_JIT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        for flag in ("-use_fast_math", "-O3", "-DNDEBUG"):
            self.assertIn(flag, r.stdout.split(";"))


if __name__ == "__main__":
    unittest.main()
