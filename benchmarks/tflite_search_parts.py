"""Benchmark: where a TFLite translation spends its time, part by part.

Translates test sentences with each `--tflite` file (a TFLite export's
`HostTranslator`: the NumPy search over LiteRT), the files taking turns in
each repeat, and times every part through wrappers around the runtime
(the median of the repeats, in microseconds per `decode_step` call):

- ``invoke``: the interpreter's `Invoke` of `decode_step`;
- ``allocate``: resizing its inputs and reallocating its tensors (every
  step while the KV cache grows; XNNPACK re-plans then);
- ``outputs``: copying the outputs out (`GetTensor`);
- ``inputs``: the rest of a step, mostly copying (gathering) the state into
  the interpreter's inputs;
- ``search``: the NumPy beam search between steps, and stacking the
  encoded sentences;
- ``encode``: the `encode` calls;
- ``text``: tokenising, checking and detokenising.

The host's share is everything but ``invoke`` and ``encode``: what a search
inside the interpreter would save.

Each file's outputs are compared with the first file's
(``identical_to_first``). `--baseline-search REV` also runs every file
with `gnmt_tf/decoding/host_beam_search.py` as it is at git revision `REV` (the two
searches taking turns with the same interpreters' files), to measure a
change to the search side by side; the outputs of the two are compared.

    python benchmarks/tflite_search_parts.py \\
        --tflite EXPORT/model_float32.tflite,EXPORT/model_int8.tflite \\
        [--sentences 1000] [--batch-sizes 32,1] [--repeats 3] \\
        [--baseline-search REV]

Without `--tflite` the `--model`'s TFLite exports in `--quantizations`
(default float32; e.g. ``float32,dynamic_range``) are written to a
temporary folder first; the shipped int8 export is `--tflite
multi30k-transformer`'s `tflite_int8/model_int8.tflite`. Writes
`benchmarks/results/tflite_search_parts.json` (`--output` elsewhere).
"""

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import types

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from growing_cache import (measure, parse_args,  # noqa: E402
                           positive_int, sentences_for, write_result)

RESULT = REPO_ROOT / "benchmarks" / "results" / "tflite_search_parts.json"
PARTS = ("invoke", "allocate", "outputs", "inputs", "search", "encode",
         "text")
# What `--quantizations` exports (int8 needs a QAT model: pass its file).
FORMATS = ("float32", "dynamic_range", "float16")
HOST_PARTS = ("allocate", "outputs", "inputs", "search", "text")


class _TimedWrapper:
    """The interpreter wrapper a `_StepInputs` calls, timing its calls."""

    TIMED = {"Invoke": "invoke", "AllocateTensors": "allocate",
             "ResizeInputTensor": "allocate", "GetTensor": "outputs"}

    def __init__(self, wrapper, seconds):
        self._wrapper = wrapper
        self._seconds = seconds
        self.tensor = wrapper.tensor  # a view: not timed

    def __getattr__(self, name):
        method = getattr(self._wrapper, name)
        part = self.TIMED.get(name)
        if part is None:
            return method

        def timed(*args):
            start = time.perf_counter()
            try:
                return method(*args)
            finally:
                self._seconds[part] += time.perf_counter() - start
        return timed


def search_at(revision):
    """`gnmt_tf/decoding/host_beam_search.py` as it is at git `revision`, as a module."""
    try:
        source = subprocess.run(
            ["git", "show", f"{revision}:gnmt_tf/decoding/host_beam_search.py"],
            cwd=REPO_ROOT, capture_output=True, text=True,
            check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"--baseline-search: no gnmt_tf/decoding/host_beam_search.py at "
                 f"{revision!r} ({getattr(e, 'stderr', '') or e})".strip())
    module = types.ModuleType(f"host_search_{revision}")
    exec(compile(source, f"{revision}:gnmt_tf/decoding/host_beam_search.py", "exec"),
         module.__dict__)
    return module


class PartTimer:
    """A `TFLiteTranslator` whose parts are timed (see the module
    docstring), called as `growing_cache.measure` calls a `Translator`:
    `translate(sentences, options, batch_size, **task)`; each call appends
    its `{part: seconds}` (with ``wall`` and ``steps``) to `runs`. `search`:
    a module with the `beam_search_batch` to use (default: this
    checkout's); `num_threads`: the interpreter's (None: LiteRT's
    default)."""

    def __init__(self, path, search=None, num_threads=None):
        from gnmt_tf import host_translator
        from gnmt_tf.tflite_translator import TFLiteTranslator

        self._module = host_translator
        self._search = (search or host_translator).beam_search_batch
        self.translator = TFLiteTranslator(path, num_threads=num_threads)
        self.runs = []
        runtime = self.translator.runtime
        self.seconds = dict.fromkeys(PARTS + ("step", "search_batch",
                                              "steps"), 0)
        inputs = runtime._step_inputs
        if inputs._wrapper is None:
            raise SystemExit(f"{path}: this LiteRT version has no "
                             "interpreter wrapper to time")
        inputs._wrapper = _TimedWrapper(inputs._wrapper, self.seconds)
        runtime.encode = self._timed(runtime.encode, "encode")
        runtime.step = self._timed(runtime.step, "step", count=True)
        self.translator.search_batch = self._timed(
            self.translator.search_batch, "search_batch")

    def _timed(self, function, part, count=False):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start
                self.seconds["steps"] += count
        return timed

    def translate(self, sentences, options, batch_size, **task):
        for key in self.seconds:
            self.seconds[key] = 0
        current = self._module.beam_search_batch
        self._module.beam_search_batch = self._search
        try:
            start = time.perf_counter()
            outputs = self.translator.translate(
                sentences, beam_size=options.beam_size,
                length_penalty=options.length_penalty,
                batch_size=batch_size, **task)
            wall = time.perf_counter() - start
        finally:
            self._module.beam_search_batch = current
        s = self.seconds
        parts = {
            "invoke": s["invoke"], "allocate": s["allocate"],
            "outputs": s["outputs"],
            "inputs": s["step"] - s["invoke"] - s["allocate"] - s["outputs"],
            "search": s["search_batch"] - s["step"] - s["encode"],
            "encode": s["encode"], "text": wall - s["search_batch"],
            "wall": wall, "steps": s["steps"]}
        self.runs.append(parts)
        return outputs


def label(path, count, counts):
    """A file's name in the results, with its thread count when several
    are compared."""
    name = pathlib.Path(path).name
    return name if len(counts) == 1 else f"{name} ({count} threads)"


def summary(runs):
    """The JSON entry of one file's repeats: microseconds per step (median
    of the repeats) per part, the host's share, and the wall time."""
    steps = runs[0]["steps"]
    per_step = {part: round(statistics.median(
        run[part] for run in runs) / steps * 1e6) for part in PARTS}
    wall = statistics.median(run["wall"] for run in runs)
    host = sum(per_step[part] for part in HOST_PARTS)
    return {"steps": steps, "seconds_median": round(wall, 3),
            "seconds_all": [round(run["wall"], 3) for run in runs],
            "us_per_step": per_step, "host_us_per_step": host,
            "host_share": round(host / (wall / steps * 1e6), 3)}


def main(argv=None):
    args, batch_sizes = parse_args(
        __doc__.split("\n")[0], argv, RESULT, repeats=3,
        extra=[("--tflite", dict(help="comma-separated .tflite exports "
                                      "(default: --model's float32, "
                                      "exported here)")),
               ("--baseline-search", dict(
                   metavar="REV", help="also run the host search of this "
                                       "git revision, side by side")),
               ("--quantizations", dict(
                   default="float32",
                   help="without --tflite: comma-separated formats of "
                        "--model to export and time (float32, "
                        "dynamic_range, float16)")),
               ("--threads", dict(
                   help="comma-separated interpreter thread counts, each "
                        "file run with each (default: LiteRT's own "
                        "choice)"))])
    if args.clock != "wall":
        sys.exit("--clock: this benchmark times the wall clock only")
    paths = args.tflite.split(",") if args.tflite else []
    try:
        threads = ([positive_int(t) for t in args.threads.split(",")]
                   if args.threads else [None])
    except argparse.ArgumentTypeError as e:
        sys.exit(f"--threads: {e}")
    for path in paths:
        if not pathlib.Path(path).is_file():
            sys.exit(f"--tflite: no such file: {path}")
    unknown = set(args.quantizations.split(",")) - set(FORMATS)
    if unknown:
        sys.exit(f"--quantizations: unknown {sorted(unknown)}; known: "
                 f"{', '.join(FORMATS)}")

    from gnmt_tf.data import corpus
    from gnmt_tf.translator import SearchOptions

    with tempfile.TemporaryDirectory() as work:
        if not paths:
            from gnmt_tf.export.tflite import export_tflite

            paths = [str(export_tflite(args.model, work, quantization)[
                "model"]) for quantization in args.quantizations.split(",")]
        timers = {label(path, count, threads): PartTimer(path, None, count)
                  for path in paths for count in threads}
        if args.baseline_search:
            baseline = search_at(args.baseline_search)
            timers.update({
                f"{label(path, count, threads)} @ {args.baseline_search}":
                    PartTimer(path, baseline, count)
                for path in paths for count in threads})
        sources = corpus.read_lines(corpus.split_path(
            args.data_dir, "test_2016_flickr", "en"))[:args.sentences]
        options = SearchOptions(beam_size=args.beam_size, length_penalty=0.6)
        result = {}
        for batch_size in batch_sizes:
            subset = sentences_for(sources, batch_size)
            for timer in timers.values():
                timer.runs = []
            runs = measure(timers, subset, options, batch_size,
                           args.repeats, time.perf_counter)
            outputs = {name: out for name, (out, _) in runs.items()}
            entry = {"sentences": len(subset)}
            for name in timers:
                entry[name] = summary(timers[name].runs[1:])  # 0: warm-up
                print(f"batch {batch_size} {name}: {entry[name]}",
                      flush=True)
            first = next(iter(timers))
            entry["identical_to_first"] = {
                name: sum(a == b for a, b in zip(outputs[name],
                                                 outputs[first]))
                for name in timers if name != first}
            if args.baseline_search:
                entry["speedup_over_baseline_search"] = {}
                entry["identical_to_baseline_search"] = {}
                for name in [label(p, c, threads) for p in paths
                             for c in threads]:
                    old = f"{name} @ {args.baseline_search}"
                    entry["speedup_over_baseline_search"][name] = round(
                        entry[old]["seconds_median"]
                        / entry[name]["seconds_median"], 3)
                    entry["identical_to_baseline_search"][name] = sum(
                        a == b for a, b in zip(outputs[name], outputs[old]))
                print(f"batch {batch_size}: "
                      f"{entry['speedup_over_baseline_search']}, identical "
                      f"{entry['identical_to_baseline_search']}", flush=True)
            result[f"batch{batch_size}"] = entry
    write_result(result, args, "tflite_search_parts.py", argv,
                 tflite=paths, baseline_search=args.baseline_search,
                 interpreter_threads=(
                     threads if args.threads else "LiteRT's default"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
