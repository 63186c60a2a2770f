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
"""

import argparse
import pathlib
import sys
import tempfile
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from results_file import command_line

import model_zoo


def parse_floats(text):
    return [float(x) for x in text.split(",") if x]


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
                        help="the shipped model's name (results key)")
    parser.add_argument("--directions", default="en-de,en-fr,de-en")
    parser.add_argument("--last", type=int, default=5)
    parser.add_argument("--alphas", type=parse_floats, default=[0.2, 0.6,
                                                                1.0])
    parser.add_argument("--default-alpha", type=float, default=0.6)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--data-dir", default=str(model_zoo.SHARED
                                                  / "multi30k"))
    args = parser.parse_args(argv)
    if args.last < 2:
        parser.error("--last must be at least 2 (1 is the baseline)")
    from gnmt_tf.training.averaging import average_checkpoints

    directions = args.directions.split(",")
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
    print(result)
    if args.limit is None:
        result["command"] = command_line("zoo_tuning.py", argv)
        update_results_key(args.name, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
