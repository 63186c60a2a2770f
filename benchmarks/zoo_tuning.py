"""What the zoo's packaging choices are worth, measured on val.

For a finished run: the last checkpoint against the mean of the last N
(`gnmt-tf average-checkpoints`), both stored in float16 as shipped, at the
default length penalty; then the length penalty α swept on the averaged
model. Scores are cased, detokenised sacreBLEU on Multi30k val for a few
directions (val is what the choices are made on; the test sets stay for
the model card). Writes `tuning.<name>` of
`benchmarks/results/model_zoo.json` (keys: `averaging`, `alpha`).

    python benchmarks/zoo_tuning.py /work/zoo/multi30k-transformer \\
        --name multi30k-transformer \\
        --directions en-de,en-fr,de-en --last 5 --alphas 0.2,0.6,1.0

With `--against NAME` the run is a candidate to replace the shipped model
NAME: its val scores are set beside the shipped ones (from NAME's
`scores.json`), with the differences and the decision the zoo's rule gives
(a new version replaces the shipped one only where it is better on val in
every direction), so that no figure in the results is written by hand.
"""

import argparse
import pathlib
import sys
import tempfile
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from gnmt_tf.flags.arg_types import (beam_size, non_negative_float,
                                     positive_int)
from results_file import command_line

import model_zoo


def parse_floats(text):
    """Comma-separated α values, each >= 0 (an argparse type)."""
    return [non_negative_float(x) for x in text.split(",") if x]


def val_bleu(model_dir, directions, data_dir, alpha, beam_size, batch_size,
             limit):
    """`{direction: BLEU}` on val for one model directory and α."""
    from gnmt_tf.data import corpus
    from gnmt_tf.translator import SearchOptions, Translator

    translator = Translator.from_model_dir(model_dir)
    options = SearchOptions(beam_size=beam_size, length_penalty=alpha)
    scores = {}
    for direction in directions:
        src, tgt = direction.split("-")
        sources = corpus.read_lines(corpus.split_path(data_dir, "val", src))
        references = corpus.read_lines(corpus.split_path(data_dir, "val",
                                                         tgt))
        task = model_zoo.task_arguments(translator.model, src, tgt)
        start = time.time()
        row = model_zoo.score(translator, sources[:limit], references[:limit],
                              options, task, batch_size)
        scores[direction] = row["bleu"]
        print(f"{model_dir.name} α {alpha} {direction}: {row['bleu']} "
              f"({time.time() - start:.0f} s)", file=sys.stderr, flush=True)
    return scores


def compare_with_shipped(averaging, shipped_val):
    """`averaging` (`{key: {direction: BLEU}}`) against the shipped model's
    val BLEU (`{direction: BLEU}`): `{f"{key}_minus_shipped": {direction:
    difference}}` and a `decision`: the first key better in every
    direction is the one to ship, else none is."""
    result, worse = {}, {}
    for key, scores in averaging.items():
        result[f"{key}_minus_shipped"] = {
            d: round(bleu - shipped_val[d], 2) for d, bleu in scores.items()}
        worse[key] = [d for d, bleu in scores.items()
                      if not bleu > shipped_val[d]]
    better = [key for key, directions in worse.items() if not directions]
    if better:
        result["decision"] = (f"ship {better[0]}: better on val in every "
                              f"direction")
    else:
        result["decision"] = (
            "not shipped: a new version replaces the shipped one only "
            "where it is better on val in every direction; not higher in "
            + "; ".join(f"{key}: {', '.join(directions)}"
                        for key, directions in worse.items()))
    return result


def shipped_val(name, directions):
    """The shipped model `name`'s val BLEU per direction (its
    `scores.json`).

    Raises:
      ValueError: it has no val score for one of `directions`.
    """
    from gnmt_tf import pretrained

    scores = pretrained.describe(name)["scores"]["sacrebleu"]
    missing = [d for d in directions if "val" not in scores.get(d, {})]
    if missing:
        raise ValueError(f"{name} has no val score for {', '.join(missing)}")
    return {d: scores[d]["val"] for d in directions}


def update_results_key(name, result, path=model_zoo.RESULTS):
    """Sets `tuning.<name>` of `model_zoo.json`, keeping everything else."""
    import json

    from gnmt_tf.io_utils import write_text_atomic

    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("tuning", {})[name] = result
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=pathlib.Path)
    parser.add_argument("--name", required=True,
                        help="the results key (tuning.NAME)")
    parser.add_argument("--against",
                        help="a shipped model's name: compare with its val "
                             "scores and record the decision")
    parser.add_argument("--train-command",
                        help="the command that trained the run (recorded)")
    parser.add_argument("--directions", default="en-de,en-fr,de-en")
    parser.add_argument("--last", type=positive_int, default=5)
    parser.add_argument("--alphas", type=parse_floats, default=[0.2, 0.6,
                                                                1.0])
    parser.add_argument("--default-alpha", type=non_negative_float,
                        default=0.6)
    parser.add_argument("--beam-size", type=beam_size, default=4)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--limit", type=positive_int)
    parser.add_argument("--data-dir", default=str(model_zoo.SHARED
                                                  / "multi30k"))
    args = parser.parse_args(argv)
    if args.last < 2:
        parser.error("--last must be at least 2 (1 is the baseline)")
    from gnmt_tf.training.averaging import average_checkpoints

    directions = args.directions.split(",")
    against = None
    if args.against and args.limit is not None:
        parser.error("--against compares with the shipped model's scores "
                     "on all of val: drop --limit")
    if args.against:
        try:
            against = shipped_val(args.against, directions)
        except (FileNotFoundError, ValueError) as e:
            parser.error(str(e))
    bleu = lambda model, alpha: val_bleu(  # noqa: E731
        model, directions, args.data_dir, alpha, args.beam_size,
        args.batch_size, args.limit)
    with tempfile.TemporaryDirectory() as tmp:
        models = {}
        for last in (1, args.last):
            models[last] = pathlib.Path(tmp) / f"last{last}"
            averaged = average_checkpoints(args.run_dir, models[last], last,
                                           weights_only=True)
            print(f"last {last}: {[pathlib.Path(p).name for p in averaged]}",
                  file=sys.stderr)
        averaging = {f"last_{last}": bleu(path, args.default_alpha)
                     for last, path in models.items()}
        alpha = {str(args.default_alpha): averaging[f"last_{args.last}"]}
        for value in args.alphas:
            if str(value) not in alpha:
                alpha[str(value)] = bleu(models[args.last], value)
    result = {"run": str(args.run_dir), "split": "val",
              "limit": args.limit, "beam_size": args.beam_size,
              "averaging": averaging,
              "alpha": dict(sorted(alpha.items(), key=lambda kv:
                                   float(kv[0])))}
    if against is not None:
        result["against"] = args.against
        result["shipped_val"] = against
        result.update(compare_with_shipped(averaging, against))
    if args.train_command:
        result["train_command"] = args.train_command
    print(result)
    if args.limit is None:
        result["command"] = command_line("zoo_tuning.py", argv)
        update_results_key(args.name, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
