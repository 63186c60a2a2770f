"""Benchmark: `decode_step`'s `Invoke` alone, TFLite files side by side.

Sets up each file's interpreter on the same fixed state (one encoded
sentence of `--source-length` random ids repeated over `--rows` rows, and
`--cache-length` steps already taken), then calls only `Invoke`, the
files taking turns (`--repeats` turns of 3 calls each), and reports the
median per call. No search, no copies: what a change to the exported
graph does to the interpreter's own time, steadier than a whole
translation on a noisy machine:

    python benchmarks/tflite_step_invoke.py \\
        --tflite A/model_float32.tflite,B/model_float32.tflite \\
        [--rows 128,64,16,4] [--threads 1,2] [--repeats 40]

Writes `benchmarks/results/tflite_step_invoke.json`.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from cpu_flags import simd_flags  # noqa: E402  (this script's folder)
from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from results_file import command_line  # noqa: E402  (this script's folder)

RESULT = REPO_ROOT / "benchmarks" / "results" / "tflite_step_invoke.json"
CALLS_PER_TURN = 3


def int_list(text):
    """`"1,2"` -> `[1, 2]`, each a positive int."""
    return [positive_int(part) for part in text.split(",")]


def tflite_files(parser, text):
    """`--tflite A,B` -> `(paths, names)`; the files must exist and have
    different names (the results are keyed by name)."""
    paths = text.split(",")
    names = [pathlib.Path(p).name for p in paths]
    if len(set(names)) != len(names):
        parser.error("--tflite: give the files different names")
    for path in paths:
        if not pathlib.Path(path).is_file():
            parser.error(f"--tflite: no such file: {path}")
    return paths, names


def random_inputs(source_length, rows):
    """`(source [1, source_length], ids [rows])`: in-vocabulary random ids,
    the same in every run."""
    import numpy as np

    rng = np.random.default_rng(0)
    source = rng.integers(5, 1000, [1, source_length]).astype(np.int32)
    return source, rng.integers(5, 1000, [rows]).astype(np.int32)


def encoded_state(runtime, source, rows):
    """`runtime`'s decoding state for `source`, repeated over `rows`."""
    import numpy as np

    return {name: np.repeat(value, rows, 0) for name, value in
            runtime.encode(source, runtime.placeholder_task()).items()}


def machine_entries(script, argv):
    """The entries every result of these scripts ends with: the machine,
    its load, and the command."""
    return {"cpu_count": os.cpu_count(), "simd_flags": simd_flags(),
            "load_average_at_end": os.getloadavg(),
            "command": command_line(script, argv)}


def prepared_step(path, rows, threads, source_length, cache_length):
    """`(invoke, wrapper, subgraph)`: `path`'s `decode_step` ready to run
    on the fixed state (see the module docstring)."""
    from gnmt_tf.tflite_runtime import TFLiteRuntime

    runtime = TFLiteRuntime(path, num_threads=threads)
    source, ids = random_inputs(source_length, rows)
    state = encoded_state(runtime, source, rows)
    for _ in range(cache_length):
        _, _, changed = runtime.step(ids, state)
        state.update({name: value.copy() for name, value in changed.items()})
    runtime.step(ids, state)  # the inputs are in place from here on
    inputs = runtime._step_inputs
    return inputs._wrapper, inputs._subgraph


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tflite", required=True,
                        help="comma-separated .tflite exports")
    parser.add_argument("--rows", type=int_list, default=[128, 64, 16, 4],
                        help="hypotheses a step (batch x beam)")
    parser.add_argument("--threads", type=int_list, default=[1, 2])
    parser.add_argument("--source-length", type=positive_int, default=20)
    parser.add_argument("--cache-length", type=positive_int, default=10)
    parser.add_argument("--repeats", type=positive_int, default=40)
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)
    paths, names = tflite_files(parser, args.tflite)

    result = {"microseconds_per_invoke": {}}
    for threads in args.threads:
        for rows in args.rows:
            steps = [prepared_step(p, rows, threads, args.source_length,
                                   args.cache_length) for p in paths]
            times = [[] for _ in paths]
            for _ in range(args.repeats):
                for (wrapper, subgraph), spent in zip(steps, times):
                    start = time.perf_counter()
                    for _ in range(CALLS_PER_TURN):
                        wrapper.Invoke(subgraph)
                    spent.append((time.perf_counter() - start)
                                 / CALLS_PER_TURN)
            entry = {name: round(statistics.median(spent) * 1e6)
                     for name, spent in zip(names, times)}
            key = f"rows{rows}_threads{threads}"
            result["microseconds_per_invoke"][key] = entry
            print(key, entry, flush=True)
    result.update(
        tflite=paths, source_length=args.source_length,
        cache_length=args.cache_length, repeats=args.repeats,
        calls_per_turn=CALLS_PER_TURN,
        **machine_entries("tflite_step_invoke.py", argv))
    write_text_atomic(pathlib.Path(args.output),
                      json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
