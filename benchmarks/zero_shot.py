"""The task-space zero-shot claim, settled: fr<->cs never seen in training.

Two 10-direction models (all Multi30k directions except fr-cs and cs-fr),
trained with the same settings and the same number of optimizer steps, one
with the task-space encodings and one with a `<2xx>` target-language token
instead (Johnson et al. 2017). Train each in the background (resumable):

    gnmt-tf train --preset transformer_small --model-dir runs/zs/task_space \\
        --data-dir ../shared/data/multi30k --directions all-except:fr-cs,cs-fr \\
        --tags caption --set train_steps=5000 --set max_tokens=4096 \\
        --set learning_rate=0.002 --set warmup_steps=1000 \\
        --set checkpoint_every=500
    # the same with --model-dir runs/zs/target_token \\
    #     --set use_task_space=false --set target_language_token=true

then score each and write the `zero_shot` section of
`benchmarks/results/model_zoo.json`:

    python benchmarks/zero_shot.py evaluate runs/zs/task_space
    python benchmarks/zero_shot.py evaluate runs/zs/target_token
    python benchmarks/zero_shot.py report --task-space runs/zs/task_space \\
        --target-token runs/zs/target_token

Per model, on test_2016_flickr (the only test set with Czech), beam 4,
α 0.6, cased detokenised sacreBLEU: the 10 supervised directions; zero-shot
fr->cs and cs->fr; pivoting through English with the same model (fr->en->cs,
cs->en->fr); and the off-target rate: the share of outputs that lingua
(restricted to en, de, fr, cs; `gnmt_tf.pipeline.language_id`) does not identify as
the target language (empty outputs count as off target). The references'
own rate is reported as the identifier's floor. Scores are cached in
`<run>/zero_shot.json`, the outputs kept in `<run>/zero_shot/`.
"""

import argparse
import json
import pathlib
import sys
import time

# The repository root first: benchmarks/pipeline.py would otherwise shadow
# the `pipeline` package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import gnmt_tf  # noqa: E402,F401
from gnmt_tf.flags.arg_types import non_negative_float  # noqa: E402
from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
from results_file import with_earlier  # noqa: E402  (this script's folder)

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results" / "model_zoo.json"
DATA = HERE.parent.parent / "shared" / "data" / "multi30k"
SPLIT = "test_2016_flickr"
LANGUAGES = ("en", "de", "fr", "cs")
ZERO_SHOT = (("fr", "cs"), ("cs", "fr"))
PIVOT = "en"
CACHE = "zero_shot.json"


def supervised_directions():
    return [(s, t) for s in LANGUAGES for t in LANGUAGES
            if s != t and (s, t) not in ZERO_SHOT]


def detected_languages(texts):
    """The language lingua identifies for each of `texts` (restricted to
    `LANGUAGES`)."""
    from gnmt_tf.pipeline.language_id import LanguageDetector

    detector = LanguageDetector.for_languages(LANGUAGES)
    return [d.language for d in detector.detect_each(texts)]


def off_target_rate(texts, language):
    """The share of `texts` lingua does not identify as `language`."""
    found = detected_languages(texts)
    return round(sum(code != language for code in found) / len(texts), 4)


def language_counts(run):
    """`{direction: {language: count}}` of a run's zero-shot outputs (the
    files `evaluate` kept), most frequent first."""
    import collections

    counts = {}
    for src, tgt in ZERO_SHOT:
        path = pathlib.Path(run) / "zero_shot" / f"{src}-{tgt}.{tgt}"
        texts = path.read_text(encoding="utf-8").splitlines()
        counts[f"{src}-{tgt}"] = dict(collections.Counter(
            detected_languages(texts)).most_common())
    return counts


class Scorer:
    """Translates Multi30k test sentences with one model and scores them."""

    def __init__(self, run_dir, data_dir, beam_size, alpha, batch_size,
                 limit):
        from gnmt_tf.data import corpus
        from gnmt_tf.translator import SearchOptions, Translator

        self.translator = Translator.from_model_dir(run_dir)
        self.options = SearchOptions(beam_size=beam_size,
                                     length_penalty=alpha)
        self.batch_size = batch_size
        self.out_dir = pathlib.Path(run_dir) / "zero_shot"
        self.out_dir.mkdir(exist_ok=True)
        self.text = {lang: corpus.read_lines(corpus.split_path(
            data_dir, SPLIT, lang))[:limit] for lang in LANGUAGES}

    def translate(self, sources, src, tgt, name):
        start = time.time()
        hypotheses = self.translator.translate(
            sources, self.options, self.batch_size, src_lang=src,
            tgt_lang=tgt, tags=("caption",))
        (self.out_dir / f"{name}.{tgt}").write_text(
            "\n".join(hypotheses) + "\n", encoding="utf-8")
        print(f"{name}: {len(sources)} sentences, {time.time() - start:.0f} s",
              file=sys.stderr, flush=True)
        return hypotheses

    def bleu(self, hypotheses, tgt):
        from gnmt_tf.evaluation import score_corpus

        result = score_corpus(hypotheses, self.text[tgt])
        return round(result.bleu, 2), round(result.chrf, 2), \
            result.bleu_signature


def evaluate(args):
    run = pathlib.Path(args.run_dir)
    scorer = Scorer(run, args.data_dir, args.beam_size, args.alpha,
                    args.batch_size, args.limit)
    result = {"supervised": {}, "zero_shot": {}, "pivot": {},
              "off_target_rate": {"zero_shot": {}, "pivot": {},
                                  "references": {}},
              "chrf": {}}
    for src, tgt in supervised_directions():
        out = scorer.translate(scorer.text[src], src, tgt, f"{src}-{tgt}")
        result["supervised"][f"{src}-{tgt}"], result["chrf"][
            f"{src}-{tgt}"], signature = scorer.bleu(out, tgt)
    for src, tgt in ZERO_SHOT:
        direction = f"{src}-{tgt}"
        direct = scorer.translate(scorer.text[src], src, tgt, direction)
        result["zero_shot"][direction], result["chrf"][direction], _ = \
            scorer.bleu(direct, tgt)
        middle = scorer.translate(scorer.text[src], src, PIVOT,
                                  f"{direction}.pivot-{PIVOT}")
        pivoted = scorer.translate(middle, PIVOT, tgt, f"{direction}.pivot")
        result["pivot"][direction], _, _ = scorer.bleu(pivoted, tgt)
        result["off_target_rate"]["zero_shot"][direction] = off_target_rate(
            direct, tgt)
        result["off_target_rate"]["pivot"][direction] = off_target_rate(
            pivoted, tgt)
        result["off_target_rate"]["references"][tgt] = off_target_rate(
            scorer.text[tgt], tgt)
    progress = json.loads((run / "progress.json").read_text())
    config = json.loads((run / "config.json").read_text())
    result.update(
        signature=signature, split=SPLIT, sentences=len(scorer.text["en"]),
        beam_size=args.beam_size, alpha=args.alpha,
        train={"steps": progress.get("step"),
               "hours": round(progress["train_seconds"] / 3600, 2),
               "target_tokens": progress.get("target_tokens")},
        use_task_space=config["model"].get("use_task_space"),
        target_language_token=config.get("task_space", {}).get(
            "target_language_token"))
    print(json.dumps(result, indent=1))
    if args.limit is None:
        (run / CACHE).write_text(json.dumps(result, indent=2) + "\n")
    return result


def report(args):
    """Writes `zero_shot` of model_zoo.json from the two runs' caches."""
    from gnmt_tf.io_utils import write_text_atomic

    runs = {"task_space": pathlib.Path(args.task_space),
            "target_token": pathlib.Path(args.target_token)}
    scores = {name: json.loads((run / CACHE).read_text())
              for name, run in runs.items()}
    section = {
        name: dict(score["zero_shot"]) for name, score in scores.items()}
    section["pivot"] = {name: score["pivot"]
                        for name, score in scores.items()}
    section["zero_shot_over_pivot"] = {
        name: {d: round(score["zero_shot"][d] / score["pivot"][d], 3)
               if score["pivot"][d] else None for d in score["zero_shot"]}
        for name, score in scores.items()}
    section["off_target_rate"] = {
        name: score["off_target_rate"]["zero_shot"]
        for name, score in scores.items()}
    section["off_target_rate_pivot"] = {
        name: score["off_target_rate"]["pivot"]
        for name, score in scores.items()}
    section["off_target_rate_references"] = scores["task_space"][
        "off_target_rate"]["references"]
    section["supervised"] = {name: score["supervised"]
                             for name, score in scores.items()}
    section["train"] = {name: score["train"] for name, score in scores.items()}
    section["train_hours_each"] = {name: score["train"]["hours"]
                                   for name, score in scores.items()}
    section["off_target_languages"] = {
        name: language_counts(run) for name, run in runs.items()}
    section["signature"] = scores["task_space"]["signature"]
    section["split"] = SPLIT
    section["runs"] = {name: str(run) for name, run in runs.items()}
    if args.status:
        section["status"] = args.status
    if args.train_command:
        section["train_command"] = args.train_command
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data["zero_shot"] = with_earlier(section, data.get("zero_shot", {}),
                                     args.keep_previous_as)
    data.setdefault("commands", {})["zero_shot"] = (
        "python benchmarks/zero_shot.py evaluate RUN (each); python "
        f"benchmarks/zero_shot.py report --task-space {args.task_space} "
        f"--target-token {args.target_token}")
    write_text_atomic(RESULTS, json.dumps(data, indent=2) + "\n")
    print(json.dumps(section, indent=1))
    return section


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="stage", required=True)
    one = sub.add_parser("evaluate", help="score one run")
    one.add_argument("run_dir")
    one.add_argument("--data-dir", default=str(DATA))
    one.add_argument("--beam-size", type=positive_int, default=4)
    one.add_argument("--alpha", type=non_negative_float, default=0.6)
    one.add_argument("--batch-size", type=positive_int, default=64)
    one.add_argument("--limit", type=positive_int,
                     help="first N sentences (a smoke run; not cached)")
    both = sub.add_parser("report", help="write model_zoo.json's zero_shot")
    both.add_argument("--task-space", required=True)
    both.add_argument("--target-token", required=True)
    both.add_argument("--status", help="a note on the runs' state")
    both.add_argument("--train-command",
                      help="the command that trained the runs")
    both.add_argument("--keep-previous-as", metavar="KEY",
                      help="file the previous zero_shot report under KEY "
                           "(earlier* reports are always kept)")
    args = parser.parse_args(argv)
    (evaluate if args.stage == "evaluate" else report)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
