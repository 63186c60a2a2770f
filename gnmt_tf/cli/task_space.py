"""Command line for the task-space Transformer.

Discovered by `gnmt_tf.cli.main` (which imports this module and calls
`register`), so it stays light: TensorFlow is imported inside the `*_from_args`
functions only. What is task-space specific lives here: training on Multi30k
directions (`train_from_args`, also what `gnmt-tf train --preset
transformer_*` runs through the model-type registry, with the flags of
`add_train_arguments`) and scoring per direction (`evaluate_from_args`).
The ordinary commands run them (`gnmt-tf train --preset transformer_*`,
`gnmt-tf translate`, `gnmt-tf evaluate --model`); the `gnmt-tf task-space
ACTION` spelling still works for one release, with a deprecation line.

Examples:

    gnmt-tf train --preset transformer_small --directions all \\
        --model-dir runs/ts --data-dir /path/to/multi30k --minutes 60
    gnmt-tf translate --model runs/ts --src-lang en \\
        --tgt-lang fr --tags caption < src.txt
    gnmt-tf evaluate --model runs/ts --data-dir /path/to/multi30k \
        --split test_2016_flickr            # BLEU per direction
    gnmt-tf evaluate --model runs/ts --wmt22-dir /path/to/wmt22
"""

import functools
import os
import sys

from gnmt_tf.cli import sentence_lines, task_flags
from gnmt_tf.flags.arg_types import positive_float, positive_int

LIST_FIELDS = ("languages", "scene_tags")


def add_train_arguments(parser):
    """The task-space options that `gnmt-tf train` lacks."""
    parser.add_argument(
        "--directions", default=None,
        help="task-space models: 'all' (default), 'en-de,en-fr', or "
             "'all-except:fr-cs,cs-fr' (hold directions out for zero-shot)")
    parser.add_argument(
        "--tags", default=None,
        help="task-space models: comma-separated scene tags of the training "
             "examples (default: caption)")


def register(subparsers):
    from gnmt_tf.cli import translate as translate_cli

    parser = subparsers.add_parser(
        "task-space",
        help="deprecated spelling of train / translate / evaluate for the "
             "task-space Transformer")
    sub = parser.add_subparsers(dest="task_space_command", metavar="ACTION")
    sub.required = True

    train = sub.add_parser(
        "train", help="train (or resume) a task-space Transformer on "
                      "Multi30k directions")
    train.add_argument("--preset", default="transformer_small",
                       help="transformer_tiny, transformer_small, "
                            "transformer_base")
    train.add_argument("--model-dir", required=True)
    train.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"),
                       help="Multi30k directory (default $GNMT_TF_DATA, else "
                            "the download cache)")
    train.add_argument(
        "--data-config", metavar="FILE",
        help="train on the shards `gnmt-tf data prepare` made (a data "
             "configuration with a 'prepared' directory, or that "
             "directory) instead of Multi30k")
    add_train_arguments(train)
    train.add_argument("--config", metavar="FILE",
                       help="YAML or JSON file of settings (the keys --set "
                            "takes); --set overrides it")
    train.add_argument("--set", dest="overrides", action="append",
                       default=[], metavar="KEY=VALUE",
                       help="override a model, training or task option, "
                            "e.g. use_task_space=false, "
                            "target_language_token=true (repeatable)")
    train.add_argument("--vocab", help="use this SentencePiece .model")
    train.add_argument("--strategy", default="default",
                       choices=["default", "mirrored",
                                "multi_worker_mirrored"])
    train.add_argument("--minutes", type=positive_float,
                       help="wall-time budget (same as --set max_minutes=M)")
    train.add_argument("--log-every", type=positive_int, default=100)
    train.set_defaults(func=_deprecated(train_from_args, "train"))

    translate = sub.add_parser(
        "translate", help="translate raw text, one sentence a line")
    translate.add_argument("--model", required=True,
                           help="task-space model directory")
    translate.add_argument("--input", "-i", help="default: stdin")
    translate.add_argument("--output", "-o", help="default: stdout")
    translate.add_argument("--batch-size", type=positive_int, default=32)
    task_flags.add_task_arguments(translate)
    translate_cli.add_search_arguments(translate)
    translate_cli.add_vocabulary_arguments(translate)
    sentence_lines.add_argument(translate)
    translate.set_defaults(func=_deprecated(translate_cli.run, "translate"),
                           server=None, tflite=None)

    evaluate = sub.add_parser(
        "evaluate", help="translate test sets and print sacreBLEU per "
                         "direction (and WMT22 domain)")
    from gnmt_tf.flags.evaluation import add_model_arguments

    add_model_arguments(evaluate, json_flag="--json")
    translate_cli.add_search_arguments(evaluate)
    evaluate.set_defaults(func=_deprecated(evaluate_from_args, "evaluate"))


def _deprecated(run, action):
    """`run`, after one line saying `gnmt-tf task-space ACTION` is now
    `gnmt-tf ACTION` (kept working for one release)."""
    @functools.wraps(run)
    def run_deprecated(args):
        print(f"gnmt-tf: 'task-space {action}' is deprecated and will be "
              f"removed in the next release; use 'gnmt-tf {action}' (same "
              "flags" + (", --scores-json for --json" if action == "evaluate"
                         else "") + ")", file=sys.stderr)
        return run(args)

    return run_deprecated


def _split_list_overrides(overrides):
    """`languages=en,de` -> (plain overrides, {"languages": ("en", "de")})."""
    plain, lists = [], {}
    for item in overrides:
        key, _, value = item.partition("=")
        if key.strip() in LIST_FIELDS:
            lists[key.strip()] = tuple(v.strip() for v in value.split(",")
                                       if v.strip())
        else:
            plain.append(item)
    return plain, lists


def _apply_overrides(overrides, model_config, train_config, options):
    """`--set` items routed to the model, training and task options (list
    fields such as `languages=en,de` included)."""
    from gnmt_tf.config import split_overrides

    overrides, lists = _split_list_overrides(overrides)
    model_config, train_config, options = split_overrides(
        overrides, model_config, train_config, options)
    if lists:
        model_config = model_config.replace(**lists)
    return model_config, train_config, options


def train_from_args(args):
    """Runs `gnmt_tf.models.task_space.training.train_task_space` from parsed arguments.

    Reads `preset`, `model_dir`, `data_dir`, `overrides`, and, where the
    parser has them, `config`, `data_config`, `directions`, `tags`,
    `vocab`, `strategy`, `minutes`, `log_every`. Settings (the `--config`
    file's, then `--set`) go to `TransformerConfig`, `TrainConfig` or
    `TaskSpaceOptions`, whichever has them.
    """
    import dataclasses

    from gnmt_tf.config_file import layered
    from gnmt_tf.models.task_space.training import (TaskSpaceOptions, get_preset,
                                                    train_task_space)

    overrides = list(getattr(args, "overrides", []) or [])
    if getattr(args, "minutes", None) is not None:
        overrides.append(f"max_minutes={args.minutes}")
    model_config, train_config, options = layered(
        _apply_overrides, (*get_preset(args.preset), TaskSpaceOptions()),
        getattr(args, "config", None), overrides)
    if getattr(args, "tags", None) is not None:
        options = dataclasses.replace(options, tags=args.tags)
    result = train_task_space(
        args.model_dir, args.data_dir, getattr(args, "directions", None),
        model_config, train_config, options, vocab=getattr(args, "vocab", None),
        strategy=getattr(args, "strategy", "default"),
        log_every=getattr(args, "log_every", 100),
        init_from=getattr(args, "init_from", None),
        data_config=getattr(args, "data_config", None))
    print(f"trained to step {result.steps} in {result.seconds / 60:.1f} min "
          f"({result.target_tokens_per_s:.0f} target tokens/s); "
          f"model in {args.model_dir}")
    return 0


def evaluate_from_args(args):
    """Scores a task-space model per direction (and per WMT22 domain)."""
    import json

    if not args.model:
        raise ValueError("--model is required")
    from gnmt_tf.flags.search import search_options
    from gnmt_tf.data import corpus
    from gnmt_tf.data import multiway as data_lib
    from gnmt_tf.evaluation.by_task import (evaluate_tasks, format_rows,
                                                      group_by_task)
    from gnmt_tf.io_utils import check_output_file
    from gnmt_tf.models.task_space.training import read_task_space_config

    check_output_file(args.scores_json)
    options = search_options(args)
    config, _ = read_task_space_config(args.model)
    tags = None if args.tags is None else data_lib.parse_tags(args.tags)
    if tags is not None:
        config.tag_vector(tags)
    if args.wmt22_dir:
        available = data_lib.wmt22_directions(args.wmt22_dir)
        pairs = (available if args.directions is None else
                 data_lib.parse_directions(args.directions, config.languages))
        examples = data_lib.TaskExamples()
        for pair in pairs:
            part = data_lib.load_wmt22(args.wmt22_dir, pair)
            for indices in group_by_task(part).values():  # per domain
                examples.extend(part.select(indices[:args.max_lines]))
    else:
        languages = data_lib.split_languages(
            corpus.resolve_data_dir(args.data_dir), args.split,
            config.languages)
        pairs = (data_lib.parse_directions("all", languages)
                 if args.directions is None else args.directions)
        examples = data_lib.load_multi30k(
            args.data_dir, args.split, pairs, max_lines=args.max_lines,
            languages=config.languages)

    from gnmt_tf.translator import Translator

    translator = Translator.from_model_dir(args.model)
    rows = evaluate_tasks(translator, examples, options, args.batch_size,
                          tags)
    print(format_rows(rows))
    if args.scores_json:
        from gnmt_tf.io_utils import write_text_atomic

        write_text_atomic(args.scores_json, json.dumps(
            [{k: v for k, v in row.items() if k != "hypotheses"}
             for row in rows], indent=2))
    return 0
