"""Benchmark: the in-process front ends' engines on the shipped model.

`Translator.from_model_dir` and the gateway's `ModelBackend` (which
`Pipeline.from_model_dir` and `gnmt-tf gateway --model` use) pick their
engine by default (`gnmt_tf.search_engine`): the shipped
`multi30k-transformer` carries its float32 TFLite export, so ``auto``
searches there (the gateway then aligns in process), where ``xla`` would
search in process compiled by XLA. Both are timed side by side, in one
process, on test_2016_flickr en->de at beam 4:

- ``*_one_sentence_ms``: one sentence a call (median over `--sentences`
  sentences, each translated once after one warm-up pass over all);
- ``*_batch_sentences_per_s``: all `--sentences` sentences in one call
  (the front end's batches of 32), median of `--repeats` calls.

Rounds take turns (`--rounds`, every other one in reverse order) and each
figure is the median round; ``*_over_xla`` is auto's speed over xla's.

    python benchmarks/backend_engines.py [--sentences 64] [--rounds 3]

Writes `benchmarks/results/backend_engines.json`.
"""

import argparse
import json
import pathlib
import statistics
import sys
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from results_file import REPO_ROOT, command_line, with_earlier  # noqa: E402
from cpu_flags import cpu_model, simd_flags  # noqa: E402
from cpu_load import OtherLoad  # noqa: E402

from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from gnmt_tf.io_utils import write_text_atomic  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "backend_engines.json"
MODEL = "multi30k-transformer"
ENGINES = ("auto", "xla")


def front_ends(engine, beam_size):
    """`{name: translate(sentences)}` of the two front ends under
    `engine`."""
    from gnmt_tf.gateway.backends import ModelBackend
    from gnmt_tf.translation import SearchOptions
    from gnmt_tf.translator import Translator

    options = SearchOptions(beam_size=beam_size)
    translator = Translator.from_model_dir(MODEL, engine=engine)
    backend = ModelBackend.from_model_dir(MODEL, options, engine=engine)
    task = dict(src_lang="en", tgt_lang="de", tags=["caption"])
    return {
        "translator": lambda sentences: translator.translate(
            sentences, options, **task),
        "gateway_backend": lambda sentences: backend(
            sentences, "en", "de", ["caption"]),
    }


def time_front_end(translate, sentences, repeats):
    """`(one sentence ms, batch sentences/s)`."""
    for sentence in sentences:  # warm-up: every shape traced / compiled
        translate([sentence])
    translate(sentences)
    one = []
    for sentence in sentences:
        start = time.perf_counter()
        translate([sentence])
        one.append(time.perf_counter() - start)
    batch = []
    for _ in range(repeats):
        start = time.perf_counter()
        translate(sentences)
        batch.append(time.perf_counter() - start)
    return (1000 * statistics.median(one),
            len(sentences) / statistics.median(batch))


def speed_ratios(rounds, names):
    """`{"<name>_<figure>_auto_over_xla": [per round]}`: auto's speed over
    xla's, each round against the same round (milliseconds: xla's over
    auto's; sentences/s: auto's over xla's)."""
    ratios = {}
    for name in names:
        for figure, faster in (("one_sentence_ms", lambda a, x: x / a),
                               ("batch_sentences_per_s",
                                lambda a, x: a / x)):
            ratios[f"{name}_{figure}_auto_over_xla"] = [
                round(faster(a, x), 3) for a, x in zip(
                    rounds[f"{name}_auto_{figure}"],
                    rounds[f"{name}_xla_{figure}"])]
    return ratios


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(
        REPO_ROOT.parent / "shared" / "data" / "multi30k"))
    parser.add_argument("--sentences", type=positive_int, default=64)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--beam-size", type=positive_int, default=4)
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)
    from gnmt_tf.data import corpus

    sentences = corpus.read_lines(corpus.split_path(
        args.data_dir, "test_2016_flickr", "en"))[:args.sentences]
    ends = {engine: front_ends(engine, args.beam_size) for engine in ENGINES}
    rounds, loads = {}, []
    for turn in range(args.rounds):
        order = [(engine, name) for engine in ENGINES
                 for name in ends[engine]]
        with OtherLoad() as load:
            for engine, name in order[::-1] if turn % 2 else order:
                one_ms, per_s = time_front_end(ends[engine][name], sentences,
                                               args.repeats)
                rounds.setdefault(f"{name}_{engine}_one_sentence_ms",
                                  []).append(round(one_ms, 2))
                rounds.setdefault(f"{name}_{engine}_batch_sentences_per_s",
                                  []).append(round(per_s, 2))
                print(f"{name} {engine}: {one_ms:.1f} ms a sentence, "
                      f"{per_s:.1f} sentences/s in one call", flush=True)
        loads.append(None if load.other_share is None
                     else round(load.other_share, 3))
    results = {key: statistics.median(values)
               for key, values in rounds.items()}
    ratio_rounds = speed_ratios(rounds, list(ends["auto"]))
    results.update({key: statistics.median(values)
                    for key, values in ratio_rounds.items()})
    results["ratio_rounds"] = ratio_rounds
    results["rounds"] = rounds
    results["command"] = command_line("backend_engines.py", argv)
    results["settings"] = {
        "model": MODEL, "direction": "en-de", "split": "test_2016_flickr",
        "sentences": len(sentences), "beam_size": args.beam_size,
        "repeats": args.repeats, "rounds": args.rounds,
        "speed_ratio": "auto's speed over xla's (for ms: xla ms / auto "
                       "ms), per round, median",
        "other_cpu_share_per_round": loads, "simd_flags": simd_flags(),
        "cpu_model": cpu_model()}
    path = pathlib.Path(args.output)
    previous = json.loads(path.read_text()) if path.exists() else {}
    write_text_atomic(path, json.dumps(with_earlier(results, previous),
                                       indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items()
                      if k not in ("rounds", "ratio_rounds")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
