"""Benchmark: how the TFLite search feeds `decode_step`, old way against new.

Two changes to the host side of the TFLite path (`gnmt_tf.tflite_runtime`),
timed on one float32 TFLite export of a trained model, with the settings
alternating in one process (one interpreter each, since an interpreter's
arena never shrinks):

- ``plain``: the search gathers the state's live rows after each step
  (a NumPy copy), the runtime copies them into the interpreter (a second
  copy), and the interpreter is reallocated at each step's shapes;
- ``gather_into_inputs``: the search hands the step row indices, and the
  runtime gathers the rows straight into the interpreter's inputs
  (`beam_search_batch(..., step_gathers=True)`): one copy;
- ``gather_into_inputs_reserved_arena`` (the default now): as above, and
  when a step's shapes outgrow the largest so far (the KV cache grows a
  position a step) the tensors are first allocated for the outgrown
  dimensions doubled, so that the arena is not grown (and copied whole)
  at every step.

    python benchmarks/tflite_step_inputs.py --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k [--tflite FILE] [--sentences 1000] \\
        [--batch-sizes 32,1] [--repeats 3] [--clock cpu]

Without `--tflite` the model's float32 TFLite export is written to a
temporary folder first. Reports per batch size the median seconds, the
speed-ups over ``plain`` and the number of outputs identical to
``plain``'s; then (`--cold-sentences`) the first call of a new interpreter
per setting, whose arena still grows (the repeats above reuse one
interpreter, whose arena has grown in the first of them). Writes `benchmarks/results/tflite_step_inputs.json`.
"""

import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from cpu_flags import simd_flags  # noqa: E402  (this script's folder)
from gnmt_tf.cli.arg_types import non_negative_int  # noqa: E402
from growing_cache import TASK, measure, parse_args  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "tflite_step_inputs.json"
# setting -> (the step gathers the rows, the arena is reserved)
SETTINGS = {"plain": (False, False),
            "gather_into_inputs": (True, False),
            "gather_into_inputs_reserved_arena": (True, True)}


class HostSetting:
    """A `TFLiteTranslator` with one setting, called as `measure` calls a
    `Translator`: `translate(sentences, options, batch_size, **task)`."""

    def __init__(self, path, step_gathers, reserve):
        from gnmt_tf.tflite_translator import TFLiteTranslator

        self.translator = TFLiteTranslator(path)
        self.translator.runtime.step_gathers = step_gathers
        self.translator.runtime._step_inputs.reserve = reserve

    def translate(self, sentences, options, batch_size, **task):
        return self.translator.translate(
            sentences, beam_size=options.beam_size,
            length_penalty=options.length_penalty, batch_size=batch_size,
            **task)


def measure_cold(path, sources, options, repeats, clock):
    """Seconds of a new interpreter's first `translate` call (batch 32):
    its arena grows with the longest sentences it meets, which the repeats
    of one interpreter in `measure` do not see again."""
    seconds = {name: [] for name in SETTINGS}
    for repeat in range(repeats):
        order = list(SETTINGS.items())
        for name, setting in order[::-1] if repeat % 2 else order:
            translator = HostSetting(path, *setting)
            start = clock()
            translator.translate(sources, options, 32, **TASK)
            seconds[name].append(round(clock() - start, 2))
    median = {name: statistics.median(times)
              for name, times in seconds.items()}
    return {"sentences": len(sources), "seconds_all": seconds,
            "speedup_over_plain": {
                name: round(median["plain"] / time, 3)
                for name, time in median.items() if name != "plain"}}


def main(argv=None):
    args, batch_sizes = parse_args(
        __doc__.split("\n")[0], argv, RESULT, repeats=3,
        extra=[("--tflite", dict(help="a float32 .tflite export of --model "
                                      "(default: exported here)")),
               ("--cold-sentences", dict(
                   type=non_negative_int, default=128,
                   help="also time a new interpreter's first call on the "
                        "first N sentences (0: skip)"))])

    from gnmt_tf.data import corpus
    from gnmt_tf.io_utils import write_text_atomic
    from gnmt_tf.translator import SearchOptions

    with tempfile.TemporaryDirectory() as work:
        path = args.tflite
        if path is None:
            from export.tflite import export_tflite

            path = export_tflite(args.model, work, "float32")["model"]
        translators = {name: HostSetting(path, *setting)
                       for name, setting in SETTINGS.items()}
        sources = corpus.read_lines(corpus.split_path(
            args.data_dir, "test_2016_flickr", "en"))[:args.sentences]
        options = SearchOptions(beam_size=args.beam_size, length_penalty=0.6)
        clock = (time.process_time if args.clock == "cpu"
                 else time.perf_counter)
        result = {}
        for batch_size in batch_sizes:
            subset = sources if batch_size > 1 else sources[:max(
                1, len(sources) // 8)]
            runs = measure(translators, subset, options, batch_size,
                           args.repeats, clock)
            median = {name: statistics.median(times)
                      for name, (_, times) in runs.items()}
            plain = runs["plain"][0]
            result[f"batch{batch_size}"] = {
                "sentences": len(subset),
                "seconds_median": {n: round(t, 2) for n, t in median.items()},
                "seconds_all": {n: [round(t, 2) for t in times]
                                for n, (_, times) in runs.items()},
                "speedup_over_plain": {
                    n: round(median["plain"] / t, 3)
                    for n, t in median.items() if n != "plain"},
                "identical_to_plain": {
                    n: sum(a == b for a, b in zip(plain, out))
                    for n, (out, _) in runs.items() if n != "plain"},
            }
            print(f"batch {batch_size}: {result[f'batch{batch_size}']}",
                  flush=True)
        if args.cold_sentences:
            result["cold"] = measure_cold(path, sources[:args.cold_sentences],
                                          options, args.repeats, clock)
            print(f"cold: {result['cold']}", flush=True)
    result.update(
        cpu_count=os.cpu_count(), simd_flags=simd_flags(),
        load_average_at_end=os.getloadavg(), model=args.model,
        tflite=str(args.tflite) if args.tflite else "float32, exported",
        interpreter_threads="LiteRT's default",
        split="test_2016_flickr", direction="en-de",
        beam_size=args.beam_size, length_penalty=0.6, clock=args.clock,
        command="python benchmarks/tflite_step_inputs.py " + " ".join(
            argv if argv is not None else sys.argv[1:]))
    write_text_atomic(pathlib.Path(args.output),
                      json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
