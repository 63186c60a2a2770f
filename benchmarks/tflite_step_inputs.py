"""Benchmark: how the TFLite search feeds `decode_step`, old way against new.

Timed on one float32 TFLite export of a trained model, the two settings
alternating in one process (one interpreter each):

- ``plain``: the search gathers the state's live rows after each step
  (a NumPy copy), and the runtime copies them into the interpreter (a
  second copy);
- ``gather_into_inputs`` (the default now): the search hands the step row
  indices, and the runtime gathers the rows straight into the
  interpreter's inputs (`beam_search_batch(..., step_gathers=True)`): one
  copy.

    python benchmarks/tflite_step_inputs.py --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k [--tflite FILE] [--sentences 1000] \\
        [--batch-sizes 32,1] [--repeats 4] [--clock cpu]

Without `--tflite` the model's float32 TFLite export is written to a
temporary folder first. Reports per batch size the median seconds, the
speed-up over ``plain`` and the number of outputs identical to
``plain``'s. Writes `benchmarks/results/tflite_step_inputs.json`.
"""

import pathlib
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from growing_cache import (measure, parse_args,  # noqa: E402
                           sentences_for, timings, write_result)

RESULT = REPO_ROOT / "benchmarks" / "results" / "tflite_step_inputs.json"
# setting -> whether the step gathers the rows
SETTINGS = {"plain": False, "gather_into_inputs": True}


class HostSetting:
    """A `TFLiteTranslator` with one setting, called as `measure` calls a
    `Translator`: `translate(sentences, options, batch_size, **task)`."""

    def __init__(self, path, step_gathers):
        from gnmt_tf.tflite_translator import TFLiteTranslator

        self.translator = TFLiteTranslator(path)
        self.translator.runtime.step_gathers = step_gathers

    def translate(self, sentences, options, batch_size, **task):
        return self.translator.translate(
            sentences, beam_size=options.beam_size,
            length_penalty=options.length_penalty, batch_size=batch_size,
            **task)


def main(argv=None):
    args, batch_sizes = parse_args(
        __doc__.split("\n")[0], argv, RESULT, repeats=4,
        extra=[("--tflite", dict(help="a float32 .tflite export of --model "
                                      "(default: exported here)"))])

    if args.tflite and not pathlib.Path(args.tflite).is_file():
        sys.exit(f"--tflite: no such file: {args.tflite}")

    from gnmt_tf.data import corpus
    from gnmt_tf.translator import SearchOptions

    with tempfile.TemporaryDirectory() as work:
        path = args.tflite
        if path is None:
            from gnmt_tf.export.tflite import export_tflite

            path = export_tflite(args.model, work, "float32")["model"]
        translators = {name: HostSetting(path, setting)
                       for name, setting in SETTINGS.items()}
        sources = corpus.read_lines(corpus.split_path(
            args.data_dir, "test_2016_flickr", "en"))[:args.sentences]
        options = SearchOptions(beam_size=args.beam_size, length_penalty=0.6)
        clock = (time.process_time if args.clock == "cpu"
                 else time.perf_counter)
        result = {}
        for batch_size in batch_sizes:
            subset = sentences_for(sources, batch_size)
            runs = measure(translators, subset, options, batch_size,
                           args.repeats, clock)
            median, timing = timings(runs)
            plain = runs["plain"][0]
            result[f"batch{batch_size}"] = {
                "sentences": len(subset), **timing,
                "speedup_over_plain": {
                    n: round(median["plain"] / t, 3)
                    for n, t in median.items() if n != "plain"},
                "identical_to_plain": {
                    n: sum(a == b for a, b in zip(plain, out))
                    for n, (out, _) in runs.items() if n != "plain"},
            }
            print(f"batch {batch_size}: {result[f'batch{batch_size}']}",
                  flush=True)
    write_result(result, args, "tflite_step_inputs.py", argv,
                 tflite=str(args.tflite) if args.tflite
                 else "float32, exported",
                 interpreter_threads="LiteRT's default")
    return 0


if __name__ == "__main__":
    sys.exit(main())
