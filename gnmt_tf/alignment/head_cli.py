"""`gnmt-tf add-alignment-head`: train a convolutional alignment head on a
trained model's attention (fast_align links as labels) and write the model
with its head to a new directory.

    gnmt-tf add-alignment-head --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k --output runs/transformer-head \\
        --directions en-de,de-en,en-fr,fr-en --lines 5000 --steps 600

The model's weights do not change. The pipeline (`gnmt-tf translate
--format html`, the gateway, `translate-documents`) and `gnmt-tf export
savedmodel` then align through the head instead of the raw attention. The
head's alignment error rate against fast_align on held-out pairs
(`--score-split`) is printed and stored in `alignment_head.json`.
"""

import argparse
import sys

from gnmt_tf.flags.arg_types import positive_int

NAME = "add-alignment-head"


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the `add-alignment-head` subcommand."""
    parser = subparsers.add_parser(
        NAME, help="train an alignment head on a trained model's attention "
        "(for placeholder and markup restoration)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True,
                        help="model directory or shipped model name")
    parser.add_argument("--data-dir", required=True,
                        help="parallel data: <split>.<lang> files")
    parser.add_argument("--output", required=True,
                        help="new model directory to write")
    parser.add_argument("--directions", default=None,
                        help="comma-separated src-tgt pairs (default: the "
                        "model's fixed direction, or every pair of its "
                        "languages with training data)")
    parser.add_argument("--split", default="train",
                        help="split to train on (train)")
    parser.add_argument("--lines", type=positive_int, default=5000,
                        help="sentence pairs per direction (5000)")
    parser.add_argument("--score-split", default="test_2016_flickr",
                        help="held-out split the AER is measured on "
                        "(test_2016_flickr; 'none' to skip)")
    parser.add_argument("--score-lines", type=positive_int, default=300,
                        help="held-out pairs per direction (300)")
    parser.add_argument("--steps", type=positive_int, default=600,
                        help="training steps (600)")
    parser.add_argument("--max-tokens", type=positive_int, default=2048,
                        help="tokens per batch (2048)")
    parser.add_argument("--tags", default="",
                        help="scene tags for models that take them "
                        "(comma-separated)")
    parser.add_argument("--seed", type=positive_int, default=1234)
    parser.set_defaults(func=run)
    return parser


def _directions(args, model, data_dir):
    from gnmt_tf.data.corpus import split_path

    if args.directions:
        pairs = []
        for item in args.directions.split(","):
            parts = item.strip().split("-")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"--directions: {item!r} is not src-tgt")
            pairs.append(tuple(parts))
        return pairs
    fixed = model.fixed_task or {}
    if {"src_lang", "tgt_lang"} <= set(fixed):
        return [(fixed["src_lang"], fixed["tgt_lang"])]
    inputs = {t.name: t.values for t in model.task_inputs()}
    languages = sorted(set(inputs.get("src_lang", ()))
                       & set(inputs.get("tgt_lang", ())))

    def present(lang):
        try:
            split_path(data_dir, args.split, lang)
            return True
        except FileNotFoundError:
            return False

    languages = [lang for lang in languages if present(lang)]
    return [(s, t) for s in languages for t in languages if s != t]


def _read(data_dir, split, lang, limit):
    from gnmt_tf.data.corpus import read_lines, split_path

    return read_lines(split_path(data_dir, split, lang))[:limit]


def run(args) -> int:
    """Runs `gnmt-tf add-alignment-head`; returns the exit status."""
    import pathlib
    import time

    from gnmt_tf.alignment import head_files, head_training
    from gnmt_tf.model_dir import load_model

    output = pathlib.Path(args.output)
    if output.exists():
        raise ValueError(f"--output {output} exists; give a new directory")
    model, subwords, _ = load_model(args.model)
    tags = [t for t in args.tags.split(",") if t]
    directions = _directions(args, model, args.data_dir)
    if not directions:
        raise ValueError("no direction to train on: give --directions")
    for src, tgt in directions:  # fails early on a direction it lacks
        head_training.model_task(model, src, tgt, tags)
    score = args.score_split.lower() != "none"
    examples, held_out = [], {}
    aligned_pairs = {}
    for src, tgt in directions:
        key = tuple(sorted((src, tgt)))
        if key not in aligned_pairs:
            a, b = key
            train = list(zip(_read(args.data_dir, args.split, a, args.lines),
                             _read(args.data_dir, args.split, b, args.lines)))
            test = (list(zip(
                _read(args.data_dir, args.score_split, a, args.score_lines),
                _read(args.data_dir, args.score_split, b, args.score_lines)))
                if score else [])
            train, test = _nonempty(train), _nonempty(test)
            # One fast_align run per language pair: the held-out pairs are
            # aligned with the training ones, as their links are the labels.
            every = head_training.make_examples(
                a, b, [s for s, _ in train + test], [t for _, t in train
                                                     + test])
            aligned_pairs[key] = (every[:len(every) - len(test)],
                                  every[len(every) - len(test):])
            print(f"fast_align {a}-{b}: {len(every)} pairs",
                  file=sys.stderr)
        train_part, test_part = aligned_pairs[key]
        if (src, tgt) != key:
            train_part = [e.reversed() for e in train_part]
            test_part = [e.reversed() for e in test_part]
        examples.extend(train_part)
        held_out[f"{src}-{tgt}"] = test_part
    config = head_training.HeadTrainingConfig(
        steps=args.steps, max_tokens=args.max_tokens, seed=args.seed)

    def progress(step, loss):
        print(f"step {step}/{config.steps}  alignment loss {loss:.4f}",
              file=sys.stderr)

    started = time.time()
    aligned = head_training.train_alignment_head(
        model, subwords, examples, config, tags, progress)
    train_seconds = time.time() - started
    scores = {}
    for direction, part in held_out.items():
        if part:
            scores[direction] = head_training.score_head(
                aligned, subwords, part, tags)
            print(f"{direction}: AER head {scores[direction]['aer_head']:.3f}"
                  f", attention argmax "
                  f"{scores[direction]['aer_attention_argmax']:.3f}",
                  file=sys.stderr)
    info = {"model": str(args.model),
            "trained_on": {"data_dir": str(args.data_dir),
                           "split": args.split, "lines": args.lines,
                           "directions": [f"{s}-{t}" for s, t in directions],
                           "pairs": len(examples), "steps": config.steps,
                           "max_tokens": config.max_tokens,
                           "seconds": round(train_seconds, 1)},
            "scores": {"split": args.score_split, "aer": scores}}
    head_files.save_model_with_head(aligned, args.model, output, info)
    print(f"wrote {output}", file=sys.stderr)
    return 0


def _nonempty(pairs):
    from gnmt_tf.alignment.head_training import words

    return [(s, t) for s, t in pairs if words(s) and words(t)]
