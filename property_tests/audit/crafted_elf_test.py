#!/usr/bin/env python3
"""Crafted ELF section counts: a copy of a real CUDA binary whose section count says 2^40
through ELF's extended numbering (e_shnum 0, the count in section 0's sh_size) is audited as a
shared library, a standalone cubin, a wheel member and a --baseline. Each must end as bad
input or an audit (exit 0, 1 or 2) with one line of error, never an internal error (3) or a
crash. The negative control: the unmodified copy audits clean (exit 0).
Usage: crafted_elf_test.py FUSIONCHECK CUDA_SHARED_LIBRARY"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile


def audit(fc, *args):
    run = subprocess.run([fc, "audit", *args], capture_output=True, text=True, timeout=300)
    return run.returncode, run.stdout, run.stderr


def craft(src, dst):
    data = bytearray(open(src, "rb").read())
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not an ELF64 file"
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    struct.pack_into("<H", data, 0x3C, 0)  # e_shnum 0: the count is in section 0
    struct.pack_into("<Q", data, shoff + 32, 1 << 40)
    open(dst, "wb").write(bytes(data))


def main():
    fc, lib = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.so")
        shutil.copy(lib, good)
        rc, _, err = audit(fc, good)
        if rc != 0:
            failures.append(f"control: the unmodified copy exits {rc}: {err.strip()}")
        bad = os.path.join(tmp, "crafted.so")
        craft(lib, bad)
        cubin = os.path.join(tmp, "crafted.cubin")
        shutil.copy(bad, cubin)
        wheel = os.path.join(tmp, "crafted-1.0-py3-none-any.whl")
        with zipfile.ZipFile(wheel, "w") as z:
            z.write(bad, "pkg/crafted.so")
        for label, args in [("shared library", [bad]), ("cubin", [cubin]),
                            ("wheel member", [wheel]), ("--baseline", ["--baseline", bad, good])]:
            rc, _, err = audit(fc, *args)
            lines = [l for l in err.splitlines() if l.strip()]
            if rc not in (0, 1, 2) or "internal error" in err or len(lines) > 3:
                failures.append(f"{label}: exit {rc}: {err.strip()[:300]}")
            else:
                print(f"{label}: exit {rc}: {lines[0] if lines else '(no error)'}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
