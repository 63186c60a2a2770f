"""Benchmark: SavedModel exports against each other, in process, by turns.

Loads two or more exports of the same model (`--export NAME=DIR`, e.g. the
same model exported by two versions of the code) and translates the first
sentences of a test split with each, at each batch size, the exports taking
turns (every other round in reverse order), so that a drift in the
machine's speed hits them alike. Reports sentences/s per round and the
median, each export's median over the first's, and whether every export
gives the first's translations (exactly) and scores (within float32
rounding).

    git worktree add /tmp/before HEAD~1
    (cd /tmp/before && gnmt-tf export savedmodel --model multi30k-transformer \\
        --out /tmp/exports/before/1 --beam-size 4)
    gnmt-tf export savedmodel --model multi30k-transformer \\
        --out /tmp/exports/after/1 --beam-size 4
    python benchmarks/savedmodel_speed.py --export before=/tmp/exports/before/1 \\
        --export after=/tmp/exports/after/1 --task en,de,caption

Writes `benchmarks/results/savedmodel_speed.json`.
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from results_file import command_line, write_text_atomic  # noqa: E402
from cpu_flags import simd_flags  # noqa: E402

RESULTS = HERE / "results" / "savedmodel_speed.json"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", action="append", required=True,
                        metavar="NAME=DIR", help="a SavedModel (repeatable; "
                        "the first is the reference)")
    parser.add_argument("--task", default="en,de,caption",
                        help="SRC,TGT,TAGS of a task-space export")
    parser.add_argument("--data-dir", default=os.environ.get(
        "GNMT_TF_DATA", str(HERE.parent.parent / "shared/data/multi30k")))
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--batch-sizes", default="16,32,1")
    parser.add_argument("--sentences", type=int, default=96,
                        help="sentences per round at batch > 1 (a tenth "
                             "of them at batch 1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    exports = {}
    for item in args.export:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            parser.error(f"--export {item!r}: expected NAME=DIR")
        exports[name] = path
    if len(exports) < 2:
        parser.error("give at least two --export")
    args.export = exports
    try:
        args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    except ValueError:
        parser.error("--batch-sizes: comma-separated integers")
    if min(args.batch_sizes) < 1 or args.sentences < 1 or args.rounds < 1:
        parser.error("--batch-sizes, --sentences and --rounds must be >= 1")
    src, _, rest = args.task.partition(",")
    tgt, _, tags = rest.partition(",")
    args.task = {"src_lang": src, "tgt_lang": tgt, "tags": tags}
    return args


def read_sentences(data_dir, split, lang, count):
    """The first `count` sentences of `<split>.<lang>[.gz]`."""
    from gnmt_tf.data.corpus import read_lines, split_path

    return read_lines(split_path(data_dir, split, lang))[:count]


def translate_fn(signature, task):
    """`sentences -> (translations, scores)` through a serving signature."""
    import tensorflow as tf

    names = signature.structured_input_signature[1]

    def call(sentences):
        inputs = {"text": tf.constant(sentences)}
        inputs.update({name: tf.constant([task[name]] * len(sentences))
                       for name in task if name in names})
        out = signature(**inputs)
        return out["translations"].numpy(), out["scores"].numpy()
    return call


# A score sums a float32 log-probability per output token (up to ~100):
# rounding differences from other batch shapes stay below 100 float32 ulps.
SCORE_TOLERANCE = 100 * float(np.finfo(np.float32).eps)


def same_outputs(reference, other):
    """`(identical translations, scores within float32 rounding)`."""
    texts = all((a[0] == b[0]).all() for a, b in zip(reference, other))
    scores = all(np.allclose(a[1], b[1], rtol=SCORE_TOLERANCE,
                             atol=SCORE_TOLERANCE)
                 for a, b in zip(reference, other))
    return texts, scores


def main(argv=None):
    args = parse_args(argv)
    import gnmt_tf  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exports' tokenizer ops)

    names = list(args.export)
    calls = {name: translate_fn(tf.saved_model.load(path).signatures[
        "serving_default"], args.task) for name, path in args.export.items()}
    sentences = read_sentences(args.data_dir, args.split,
                               args.task["src_lang"], args.sentences)
    results = {"batch_sizes": {}}
    for batch in args.batch_sizes:
        count = args.sentences if batch > 1 else max(args.sentences // 10, 1)
        batches = [sentences[i:i + batch] for i in range(0, count, batch)]
        rounds = {name: [] for name in names}
        outputs = {}
        for name in names:  # warm-up: tracing, allocation
            calls[name](batches[0])
        for r in range(args.rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                start = time.perf_counter()
                outputs[name] = [calls[name](b) for b in batches]
                rounds[name].append(round(
                    sum(map(len, batches)) / (time.perf_counter() - start),
                    2))
        medians = {name: statistics.median(v) for name, v in rounds.items()}
        entry = {"sentences": sum(map(len, batches)),
                 "sentences_per_s_rounds": rounds,
                 "sentences_per_s": medians,
                 "over_first": {name: round(medians[name]
                                            / medians[names[0]], 3)
                                for name in names[1:]}}
        for name in names[1:]:
            texts, scores = same_outputs(outputs[names[0]], outputs[name])
            entry.setdefault("same_translations", {})[name] = texts
            entry.setdefault("same_scores", {})[name] = scores
        results["batch_sizes"][str(batch)] = entry
        print(f"batch {batch}: {medians} over first {entry['over_first']}",
              flush=True)
    results.update({
        "exports": args.export,
        "settings": {"task": args.task, "split": args.split,
                     "rounds": args.rounds, "cpu_count": os.cpu_count(),
                     "simd_flags": simd_flags(),
                     "machine": platform.machine(),
                     "tensorflow": tf.__version__},
        "command": command_line("savedmodel_speed.py", argv),
    })
    write_text_atomic(args.out, json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
