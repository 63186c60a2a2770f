"""Imports a `benchmarks/*.py` script as a module, for tests of its
helpers and flags."""

import importlib.util
import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name):
    """`benchmarks/<name>.py` as a module, imported with `benchmarks/` on
    `sys.path` (as when run as a script: it imports its neighbours)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(
            name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module
