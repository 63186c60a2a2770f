"""Benchmark: where a host search's TFLite `step` spends its time.

`TFLiteRuntime.step` copies the state into the interpreter, resizes and
reallocates its tensors when a shape changes (the growing cache: every
step), calls `Invoke` and reads the outputs. At batch 1 the parts around
`Invoke` are a fixed cost per step, the same for every file, and they
dilute what a faster file (int8) gains. This runs `--steps` steps from a
fresh cache (one encoded sentence of `--source-length` random ids over
`--rows` rows, as a beam of that size), the files taking turns
(`--repeats` turns), and splits each step's time into `Invoke`,
`AllocateTensors` (with the resizes) and the rest, median over turns:

    python benchmarks/tflite_step_split.py \\
        --tflite DIR/model_float32.tflite,DIR/model_int8.tflite \\
        [--rows 4] [--steps 16] [--threads 1] [--repeats 5]

Writes `benchmarks/results/tflite_step_split.json`.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from tflite_step_invoke import (  # noqa: E402  (this script's folder)
    encoded_state, int_list, machine_entries, random_inputs, tflite_files)

RESULT = REPO_ROOT / "benchmarks" / "results" / "tflite_step_split.json"


class _TimedWrapper:
    """The interpreter wrapper of a `_StepInputs`, timing its `Invoke`
    calls (everything else goes to the real wrapper)."""

    def __init__(self, wrapper):
        self._wrapper = wrapper
        self.invoke_seconds = 0.0

    def __getattr__(self, name):
        return getattr(self._wrapper, name)

    def Invoke(self, subgraph):  # noqa: N802  (the wrapper's name)
        start = time.perf_counter()
        self._wrapper.Invoke(subgraph)
        self.invoke_seconds += time.perf_counter() - start

    def tensor(self, _, *args):  # called as wrapper.tensor(wrapper, ...)
        return self._wrapper.tensor(self._wrapper, *args)


class _SplitStep:
    """One file's runtime with its `step` parts timed."""

    def __init__(self, path, threads, rows, source_length):
        from gnmt_tf.tflite_runtime import TFLiteRuntime

        self.runtime = TFLiteRuntime(path, num_threads=threads)
        self.source, self.ids = random_inputs(source_length, rows)
        self.rows = rows
        inputs = self.runtime._step_inputs
        self.wrapper = _TimedWrapper(inputs._wrapper)
        inputs._wrapper = self.wrapper
        allocate = inputs._allocate
        self.allocate_seconds = 0.0

        def timed_allocate(shapes):
            start = time.perf_counter()
            allocate(shapes)
            self.allocate_seconds += time.perf_counter() - start

        inputs._allocate = timed_allocate

    def run(self, steps):
        """`{part: seconds}` over `steps` steps from an empty cache."""
        state = encoded_state(self.runtime, self.source, self.rows)
        self.wrapper.invoke_seconds = self.allocate_seconds = 0.0
        start = time.perf_counter()
        for _ in range(steps):
            _, _, changed = self.runtime.step(self.ids, state)
            state = dict(state, **changed)
        total = time.perf_counter() - start
        invoke, allocate = self.wrapper.invoke_seconds, self.allocate_seconds
        return {"step": total, "invoke": invoke, "allocate": allocate,
                "rest": total - invoke - allocate}


def main(argv=None):

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tflite", required=True,
                        help="comma-separated .tflite exports")
    parser.add_argument("--rows", type=positive_int, default=4,
                        help="hypotheses a step (batch 1 x beam)")
    parser.add_argument("--steps", type=positive_int, default=16)
    parser.add_argument("--threads", type=int_list, default=[1])
    parser.add_argument("--source-length", type=positive_int, default=14)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)
    paths, names = tflite_files(parser, args.tflite)

    result = {"milliseconds_per_step": {}}
    for threads in args.threads:
        splits = [_SplitStep(p, threads, args.rows, args.source_length)
                  for p in paths]
        for split in splits:
            split.run(args.steps)  # warm-up
        turns = [[] for _ in paths]
        for _ in range(args.repeats):
            for split, spent in zip(splits, turns):
                spent.append(split.run(args.steps))
        entry = {name: {part: round(1000 * statistics.median(
            turn[part] for turn in spent) / args.steps, 3)
            for part in ("step", "invoke", "allocate", "rest")}
            for name, spent in zip(names, turns)}
        result["milliseconds_per_step"][f"threads{threads}"] = entry
        print(f"threads {threads}", json.dumps(entry), flush=True)
    result.update(
        tflite=paths, rows=args.rows, steps=args.steps,
        source_length=args.source_length, repeats=args.repeats,
        **machine_entries("tflite_step_split.py", argv))
    write_text_atomic(pathlib.Path(args.output),
                      json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
