#!/usr/bin/env python3
"""The nvcc flags FlashInfer's JIT compiles its allreduce fusion module (trtllm_comm) with,
read from a wheel's flashinfer/jit/core.py and comm.py without importing them (no torch, no
GPU needed). Prints them as one CMake list (';'-separated) on stdout; the architecture flags
(-gencode) and fatbin compression are left out: the caller builds for its own architectures.

  jit_flags.py JIT_DIR     JIT_DIR holds core.py and comm.py of one release

What is read, so that a release that changes it is refused rather than misread:
  * gen_jit_spec(..., use_fast_math=<default>): the default, and whether gen_trtllm_comm_module
    passes use_fast_math to it (False there: no -use_fast_math);
  * gen_jit_spec's first `cuda_cflags = [...]` list (its string flags), the "-use_fast_math"
    it inserts, and the flags of the non-debug branch (`cuda_cflags += [...]` in the else of
    `if debug:`);
  * the module-level common_nvcc_flags, which the compilation context adds for every
    architecture FlashInfer builds its comm module for (sm_90 and newer).
Exit 1 with one line on stderr when any of these is not found.
"""
import ast
import sys
from pathlib import Path

DROPPED_PREFIXES = ("-gencode", "-Xfatbin", "--compress-mode")


def fail(message):
    print(f"jit_flags.py: {message}", file=sys.stderr)
    sys.exit(1)


def strings(node):
    """The string constants of a list literal (starred calls and names are skipped)."""
    if not isinstance(node, ast.List):
        return []
    return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def function(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    fail(f"no function {name}")


def fast_math_default(spec):
    args = spec.args
    defaults = dict(zip([a.arg for a in args.args[len(args.args) - len(args.defaults):]], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    node = defaults.get("use_fast_math")
    if not isinstance(node, ast.Constant) or not isinstance(node.value, bool):
        fail("gen_jit_spec has no boolean use_fast_math default")
    return node.value


def base_and_release_flags(spec):
    base = None
    release = None
    fast_math_flag = False
    for node in ast.walk(spec):
        if (base is None and isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "cuda_cflags"):
            base = strings(node.value)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name):
            if node.test.id == "use_fast_math":
                fast_math_flag = any(isinstance(c, ast.Constant) and c.value == "-use_fast_math"
                                     for c in ast.walk(node))
            if node.test.id == "debug":
                for stmt in node.orelse:
                    if (isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name)
                            and stmt.target.id == "cuda_cflags"):
                        release = strings(stmt.value)
    if base is None:
        fail("gen_jit_spec has no `cuda_cflags = [...]`")
    if release is None:
        fail("gen_jit_spec has no non-debug `cuda_cflags += [...]`")
    if not fast_math_flag:
        fail("gen_jit_spec does not insert -use_fast_math under `if use_fast_math:`")
    return base, release


def common_flags(tree):
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "common_nvcc_flags"):
            return strings(node.value)
    fail("no module-level common_nvcc_flags")


def comm_module_fast_math(comm_tree, default):
    module = function(comm_tree, "gen_trtllm_comm_module")
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "gen_jit_spec":
            for kw in node.keywords:
                if kw.arg == "use_fast_math":
                    if not isinstance(kw.value, ast.Constant):
                        fail("gen_trtllm_comm_module passes a non-constant use_fast_math")
                    return kw.value.value
            return default
    fail("gen_trtllm_comm_module does not call gen_jit_spec")


def main():
    if len(sys.argv) != 2:
        fail("usage: jit_flags.py JIT_DIR")
    folder = Path(sys.argv[1])
    try:
        core = ast.parse((folder / "core.py").read_text())
        comm = ast.parse((folder / "comm.py").read_text())
    except (OSError, SyntaxError) as e:
        fail(f"cannot read {folder}: {e}")
    spec = function(core, "gen_jit_spec")
    base, release = base_and_release_flags(spec)
    flags = []
    if not any(f.startswith("-std=") for f in base):
        flags.append("-std=c++17")  # gen_jit_spec inserts it when the caller gives none
    if comm_module_fast_math(comm, fast_math_default(spec)):
        flags.append("-use_fast_math")
    flags += base + release + common_flags(core)
    kept = [f for f in flags if not f.startswith(DROPPED_PREFIXES)]
    print(";".join(dict.fromkeys(kept)))


if __name__ == "__main__":
    main()
