"""Benchmark: one 12-direction model against bilingual models, full budget.

`benchmarks/task_space_bleu.py` compares them at about a thousand steps;
this compares them at the shipped model's budget. The multi-direction model
is the first shipped `multi30k-transformer` (8000 steps of at most 4096
target tokens, kept in git history); each bilingual model is a
`transformer_small` run of one direction trained with the same settings and
the same number of steps, so both spend the same optimizer steps on the same
number of target tokens (the bilingual model all on its direction, the
multi-direction model on twelve). Both sides are the mean of their last
`--last` checkpoints in float16, as shipped, scored with sacreBLEU (beam 4,
length penalty 0.6) on Multi30k val, test_2016_flickr and test_2017_flickr.

    # the first shipped version of the multi-direction model, from git
    P=gnmt_tf/pretrained/multi30k-transformer; mkdir MULTI
    for f in config.json averaged.json spm.model spm.vocab weights.npz; do
        git show 4cd1e49:$P/$f > MULTI/$f; done
    gnmt-tf train --preset transformer_small --model-dir runs/bi/en-de \\
        --data-dir ../shared/data/multi30k --directions en-de --tags caption \\
        --set train_steps=8000 --set max_tokens=4096 \\
        --set learning_rate=0.002 --set warmup_steps=1000 \\
        --set checkpoint_every=500 --set keep_checkpoints=10
    python benchmarks/multi_vs_bilingual.py --multi MULTI \\
        --bilingual en-de=runs/bi/en-de [--bilingual en-fr=runs/bi/en-fr]

Both sides' training settings (read from their `config.json`, precision
included) are recorded with the scores. A bilingual run is averaged into
`<run>-avg<last>-ckpt-<step>` the first time (kept for reruns). A run that
has not reached the multi-direction model's steps is reported with its
steps and marked `partial_budget`. `--keep-other-directions` adds this
run's directions to those already in `--out` (runs that could not be
trained and scored in one sitting), with each direction's command.
"""

import argparse
import json
import os
import pathlib
import platform

# benchmarks/ is sys.path[0]; results_file puts the repository after it.
from results_file import command_line, write_text_atomic  # noqa: E402
from model_zoo import SPLITS, cpu_name, evaluate  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results" / "multi_vs_bilingual.json"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multi", required=True, type=pathlib.Path,
                        help="the multi-direction model dir (averaged)")
    parser.add_argument("--bilingual", action="append", required=True,
                        metavar="SRC-TGT=RUN_DIR",
                        help="a bilingual training run (repeatable)")
    parser.add_argument("--last", type=int, default=5,
                        help="checkpoints to average per bilingual run")
    parser.add_argument("--data-dir", default=os.environ.get(
        "GNMT_TF_DATA", str(HERE.parent.parent / "shared/data/multi30k")))
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--limit", type=int, default=None,
                        help="score the first N sentences only (smoke)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--keep-other-directions", action="store_true",
                        help="keep the rows of --out's directions that "
                             "this run does not score (a direction trained "
                             "and scored at another time)")
    args = parser.parse_args(argv)
    runs = {}
    for item in args.bilingual:
        direction, sep, run_dir = item.partition("=")
        if not sep or direction.count("-") != 1 or not run_dir:
            parser.error(f"--bilingual {item!r}: expected SRC-TGT=RUN_DIR")
        runs[direction] = pathlib.Path(run_dir)
    args.bilingual = runs
    if args.last < 1 or args.beam_size < 1:
        parser.error("--last and --beam-size must be >= 1")
    if args.alpha < 0:
        parser.error("--alpha must be >= 0")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be >= 1")
    return args


# The training settings recorded next to the scores (the budget and what
# else could differ between the two sides).
TRAIN_FIELDS = ("max_tokens", "learning_rate", "warmup_steps", "label_smoothing",
                "precision")


def training_record(model_dir):
    """Steps, averaged checkpoints and training settings of an averaged
    model dir (`averaged.json`, `config.json`)."""
    averaged = json.loads((model_dir / "averaged.json").read_text())
    config = json.loads((model_dir / "config.json").read_text())
    train = config.get("train", {})
    return {"directions": config.get("task_space", {}).get("directions"),
            "steps": int(averaged["checkpoints"][-1].rsplit("-", 1)[-1]),
            "checkpoints": averaged["checkpoints"],
            **{k: train.get(k, "float32" if k == "precision" else None)
               for k in TRAIN_FIELDS}}


def averaged_model(run_dir, last):
    """The model dir of the mean of a run's last checkpoints, in float16
    like the shipped models (made on the first call for these checkpoints:
    named by the newest, so a run trained further is averaged again)."""
    from gnmt_tf.training.averaging import average_checkpoints
    from gnmt_tf.training.averaging import checkpoint_paths

    newest = pathlib.Path(checkpoint_paths(run_dir, last)[-1]).name
    target = run_dir.parent / f"{run_dir.name}-avg{last}-{newest}"
    if not target.exists():
        average_checkpoints(run_dir, target, last=last, weights_only=True)
    return target


def compare(multi_scores, bilingual_scores, directions):
    """`(rows, winners)`: a row per direction and split with both BLEU
    scores and bilingual minus multi; per direction, the side that wins
    every split (`"tie"` when neither does)."""
    rows, winners = [], {}
    for direction in directions:
        differences = []
        for split, bleu in bilingual_scores[direction].items():
            multi = multi_scores[direction][split]
            differences.append(round(bleu - multi, 2))
            rows.append({"direction": direction, "split": split,
                         "multi": multi, "bilingual": bleu,
                         "bilingual_minus_multi": differences[-1]})
        winners[direction] = (
            "bilingual" if all(d > 0 for d in differences) else
            "multi" if all(d < 0 for d in differences) else "tie")
    return rows, winners


def keep_other_directions(results, previous):
    """`results` with `previous`' rows, winners and training records of the
    directions `results` does not score (kept first, in their order), and
    the commands of both runs."""
    scored = set(results["winner"])
    kept = {d for d in previous.get("winner", {}) if d not in scored}
    if not kept:
        return results
    if previous.get("training", {}).get("multi") != results["training"]["multi"]:
        raise SystemExit("--keep-other-directions: the multi-direction model "
                         "differs from the one the kept rows were scored with")
    merged = dict(results)
    merged["bleu"] = ([r for r in previous["bleu"] if r["direction"] in kept]
                      + results["bleu"])
    merged["winner"] = {d: w for d, w in {**previous["winner"],
                                          **results["winner"]}.items()
                        if d in kept or d in scored}
    merged["training"] = {**{k: v for k, v in previous["training"].items()
                             if k.removeprefix("bilingual_") in kept},
                          **results["training"]}
    commands = previous.get("commands") or {
        d: previous.get("command") for d in sorted(kept)}
    merged["commands"] = {**{d: c for d, c in commands.items() if d in kept},
                          **{d: results["command"] for d in sorted(scored)}}
    return merged


def main(argv=None):
    args = parse_args(argv)
    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(beam_size=args.beam_size,
                            length_penalty=args.alpha)
    directions = sorted(args.bilingual)
    multi = evaluate(args.multi, args.data_dir, None, options,
                     limit=args.limit, directions=directions)
    training = {"multi": training_record(args.multi)}
    bilingual = {}
    for direction in directions:
        model_dir = averaged_model(args.bilingual[direction], args.last)
        bilingual[direction] = evaluate(
            model_dir, args.data_dir, None, options, limit=args.limit,
            directions=[direction])["sacrebleu"][direction]
        record = training_record(model_dir)
        record["partial_budget"] = record["steps"] < training["multi"]["steps"]
        training[f"bilingual_{direction}"] = record
    rows, winners = compare(multi["sacrebleu"], bilingual, directions)
    results = {
        "bleu": rows,
        "winner": winners,
        "training": training,
        "settings": {"beam_size": args.beam_size, "alpha": args.alpha,
                     "splits": list(SPLITS), "last_checkpoints": args.last,
                     "limit": args.limit,
                     "bleu_signature": multi["signatures"].get("bleu"),
                     "cpu": cpu_name(), "machine": platform.machine()},
        "command": command_line("multi_vs_bilingual.py", argv),
    }
    out = pathlib.Path(args.out)
    if args.keep_other_directions and out.exists():
        results = keep_other_directions(results, json.loads(out.read_text()))
    write_text_atomic(args.out, json.dumps(results, indent=2) + "\n")
    for row in results["bleu"]:
        print(row)
    print("winner:", results["winner"])


if __name__ == "__main__":
    main()
