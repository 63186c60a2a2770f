"""Benchmark: the growing KV cache against the fixed one, on a trained model.

`Translator` now gives the task-space Transformer a self-attention cache
that gains one position per step (`initial_state(..., growing_cache=True)`)
instead of one allocated for the longest allowed output (`max_length_ratio`
times the longest source of the batch). This translates the same sentences
both ways, checks that the outputs are the same, and times them:

    python benchmarks/growing_cache.py --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k [--sentences 1000] \\
        [--batch-sizes 32,1] [--repeats 3] [--clock cpu]

Per batch size: the two settings alternate (each traced once on the first
batch before timing), the median of the repeats is reported, as seconds
and as the speed-up of the growing cache. `--clock cpu` times this
process's CPU time instead of the wall clock (steadier on a shared
machine). Writes `benchmarks/results/growing_cache.json`.
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

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from cpu_flags import simd_flags  # noqa: E402  (this script's folder)
from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402
from results_file import command_line  # noqa: E402  (this script's folder)

RESULT = REPO_ROOT / "benchmarks" / "results" / "growing_cache.json"
TASK = {"src_lang": "en", "tgt_lang": "de", "tags": ["caption"]}


def measure(translators, sources, options, batch_size, repeats, clock,
            warm_up=True):
    """`{name: (outputs, [seconds...])}`, the settings alternating (in
    reverse order every other repeat, so that none always runs first);
    with `warm_up`, each setting first translates one batch untimed."""
    for translator in translators.values() if warm_up else ():
        translator.translate(sources[:batch_size], options, batch_size,
                             **TASK)
    results = {name: (None, []) for name in translators}
    for repeat in range(repeats):
        order = list(translators.items())
        for name, translator in order[::-1] if repeat % 2 else order:
            start = clock()
            outputs = translator.translate(sources, options, batch_size,
                                           **TASK)
            results[name][1].append(clock() - start)
            results[name] = (outputs, results[name][1])
    return results


def sentences_for(sources, batch_size):
    """The sentences timed at `batch_size`: all of them, or the first
    N // 8 at batch size 1 (one at a time is slow)."""
    return sources if batch_size > 1 else sources[:max(1, len(sources) // 8)]


def timings(runs):
    """`(median seconds per setting, the JSON entry's timing fields)` of
    `measure`'s `runs`."""
    median = {name: statistics.median(times)
              for name, (_, times) in runs.items()}
    return median, {
        "seconds_median": {n: round(t, 2) for n, t in median.items()},
        "seconds_all": {n: [round(t, 2) for t in times]
                        for n, (_, times) in runs.items()}}


def paired_entry(runs, sentences, before, after, speedup_key,
                 references=None):
    """The JSON entry of `measure`'s `runs` of two settings, `before` and
    `after`: timings, `speedup_key` (before / after, medians), how many
    outputs are identical, and each setting's sacreBLEU when `references`
    (one per output) are given."""
    median, timing = timings(runs)
    outputs = {name: out for name, (out, _) in runs.items()}
    entry = {
        "sentences": sentences, **timing,
        speedup_key: round(median[before] / median[after], 3),
        "identical_outputs": sum(a == b for a, b in zip(outputs[before],
                                                        outputs[after])),
    }
    if references is not None:
        from gnmt_tf.evaluation import score_corpus

        entry["bleu"] = {name: round(score_corpus(out, references).bleu, 2)
                         for name, out in outputs.items()}
    return entry


def write_result(result, args, script, argv, **settings):
    """Adds the machine, the shared settings, `settings` and the command
    line to `result`, and writes it to `args.output` (atomically)."""
    result.update(
        cpu_count=os.cpu_count(), simd_flags=simd_flags(),
        load_average_at_end=os.getloadavg(), model=args.model,
        split="test_2016_flickr", direction="en-de",
        beam_size=args.beam_size, length_penalty=0.6, clock=args.clock,
        **settings, command=command_line(script, argv))
    write_text_atomic(pathlib.Path(args.output),
                      json.dumps(result, indent=2) + "\n")


def parse_args(description, argv, output, repeats, extra=()):
    """`(args, batch_sizes)` of the flags this benchmark shares with others
    that time `Translator` settings side by side on a trained model
    (`extra`: their own flags, as `(flag, add_argument keywords)`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default="multi30k-transformer",
                        help="model directory or shipped name")
    parser.add_argument("--data-dir", default=str(
        REPO_ROOT.parent / "shared" / "data" / "multi30k"))
    parser.add_argument("--sentences", type=positive_int, default=1000,
                        help="first N test_2016_flickr sentences (batch "
                             "size 1 takes the first N // 8)")
    parser.add_argument("--batch-sizes", default="32,1")
    parser.add_argument("--beam-size", type=positive_int, default=4)
    parser.add_argument("--repeats", type=positive_int, default=repeats)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--output", default=str(output))
    for flag, keywords in extra:
        parser.add_argument(flag, **keywords)
    args = parser.parse_args(argv)
    try:
        batch_sizes = [positive_int(b) for b in args.batch_sizes.split(",")]
    except argparse.ArgumentTypeError as e:
        parser.error(f"--batch-sizes: {e}")
    return args, batch_sizes


def test_sentences(args):
    """`(sources, references)`: the first `--sentences` lines of
    test_2016_flickr, both sides of `TASK`'s direction."""
    from gnmt_tf.data import corpus

    def read(lang):
        return corpus.read_lines(corpus.split_path(
            args.data_dir, "test_2016_flickr", lang))[:args.sentences]

    return read(TASK["src_lang"]), read(TASK["tgt_lang"])


def compare_settings(translators, args, batch_sizes, before, after,
                     speedup_key, bleu=True, first_pass=False, label=""):
    """`{"batch{B}": entry}`: the two settings' `translators` timed side by
    side (`measure`) on the test sentences at each batch size, as
    `paired_entry` reports them (sacreBLEU where all the sentences are
    translated, with `bleu`). With `first_pass`, an untimed pass over the
    timed sentences comes first and its seconds are reported as
    `first_pass_seconds` (tracing; under XLA, compiling each shape)."""
    from gnmt_tf.translator import SearchOptions

    sources, references = test_sentences(args)
    options = SearchOptions(beam_size=args.beam_size, length_penalty=0.6)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    result = {}
    for batch_size in batch_sizes:
        subset = sentences_for(sources, batch_size)
        passes = {}
        for name, translator in translators.items() if first_pass else ():
            start = clock()
            translator.translate(subset, options, batch_size, **TASK)
            passes[name] = round(clock() - start, 2)
        runs = measure(translators, subset, options, batch_size,
                       args.repeats, clock, warm_up=not first_pass)
        entry = paired_entry(
            runs, len(subset), before, after, speedup_key,
            references if bleu and len(subset) == len(sources) else None)
        if passes:
            entry["first_pass_seconds"] = passes
        result[f"batch{batch_size}"] = entry
        print(f"{label}batch {batch_size}: {entry}", flush=True)
    return result


def main(argv=None):
    args, batch_sizes = parse_args(__doc__.split("\n")[0], argv, RESULT,
                                   repeats=3)

    from gnmt_tf.model_dir import load_model
    from gnmt_tf.translator import Translator

    model, subwords, _ = load_model(args.model)
    translators = {"fixed": Translator(model, subwords, growing_cache=False),
                   "growing": Translator(model, subwords, growing_cache=True)}
    result = compare_settings(translators, args, batch_sizes, "fixed",
                              "growing", "speedup", bleu=False)
    write_result(result, args, "growing_cache.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
