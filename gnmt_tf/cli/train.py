"""`gnmt-tf train`: train or resume a model directory with `model.fit`.

The preset names the model type (`gnmt_tf.model_types`), whose declared
`train` function runs; model types may declare flags of their own
(`train_arguments`).
"""

import os

from gnmt_tf import model_types
from gnmt_tf.flags.arg_types import number, positive_float, positive_int
from gnmt_tf.flags.arg_types import probability


def register(subparsers):
    parser = subparsers.add_parser(
        "train", help="train (or resume) a model with model.fit")
    presets = [p for t in model_types.model_types().values()
               for p in t.presets]
    parser.add_argument("--preset", default="gnmt_small",
                        help=f"one of {', '.join(presets)}")
    parser.add_argument("--model-dir", required=True,
                        help="config, vocabulary and checkpoints go here; "
                             "an existing one is resumed")
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"),
                        help="directory with train.<lang>[.gz] (default "
                             "$GNMT_TF_DATA, else the Multi30k download cache)")
    parser.add_argument(
        "--data-config", metavar="FILE",
        help="train on the shards `gnmt-tf data prepare` made: a data "
             "configuration with a 'prepared' directory, or that directory "
             "(instead of --data-dir; a GNMT's corpora are all --src-lang to "
             "--tgt-lang)")
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument("--config", metavar="FILE",
                        help="YAML or JSON file of settings (the keys --set "
                             "takes); --set overrides it")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="override a model or training setting (repeatable)")
    parser.add_argument("--vocab", help="use this SentencePiece .model "
                                        "instead of training one")
    parser.add_argument("--strategy", default="default",
                        choices=["default", "mirrored", "multi_worker_mirrored"])
    parser.add_argument("--minutes", type=positive_float,
                        help="wall-time budget (same as --set max_minutes=M)")
    parser.add_argument("--log-every", type=positive_int, default=100)
    parser.add_argument(
        "--init-from", metavar="MODEL",
        help="start a new run from this model's weights, "
             "architecture and vocabulary (a model directory or a shipped "
             "name); the optimizer starts afresh. A run that resumes "
             "ignores it")
    rl = parser.add_argument_group(
        "RL refinement (GNMT §5)",
        "--refine-rl fine-tunes the trained --model-dir on the expected "
        "sentence GLEU (mixed with the ML objective) and writes the result "
        "to --output-dir, keeping the ML model; --set changes its training "
        "settings, --minutes bounds it, a rerun resumes it")
    rl.add_argument("--refine-rl", action="store_true",
                    help="RL-refine the model in --model-dir")
    rl.add_argument("--output-dir",
                    help="the refined model directory (default "
                         "<model-dir>-rl)")
    rl.add_argument("--alpha", type=probability, default=None,
                    help="weight of the ML objective in [0, 1] (default "
                         "0.017, the paper's)")
    rl.add_argument("--rl-samples", type=number(integer=True, minimum=2),
                    default=None,
                    help="hypotheses per sentence; their mean reward is "
                         "the baseline (default 4)")
    rl.add_argument("--rl-sampler", choices=["sample", "beam"], default=None,
                    help="sample from the model (default) or take beam "
                         "search's n-best list")
    adders = {t.train_arguments for t in model_types.model_types().values()
              if t.train_arguments}
    for adder in sorted(adders):
        model_types.load_object(adder)(parser)
    parser.set_defaults(func=run)


_RL_FLAGS = ("output_dir", "alpha", "rl_samples", "rl_sampler")


def run(args):
    if args.refine_rl:
        if args.init_from is not None:
            raise ValueError("--init-from does not go with --refine-rl, "
                             "which starts from --model-dir")
        return refine_rl_from_args(args)
    given = [f"--{flag.replace('_', '-')}" for flag in _RL_FLAGS
             if getattr(args, flag) is not None]
    if given:
        raise ValueError(f"{', '.join(given)} only go with --refine-rl")
    type_name, model_type = model_types.model_type_of_preset(args.preset)
    if args.init_from is not None and args.vocab is not None:
        raise ValueError("--init-from takes the model's vocabulary; "
                         "leave out --vocab")
    return model_types.load_object(model_type.train)(args)


def train_gnmt_from_args(args):
    """`gnmt-tf train` for the GNMT presets."""
    from gnmt_tf.config import split_overrides
    from gnmt_tf.config_file import layered
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.models.gnmt.training import train_gnmt

    overrides = list(args.overrides)
    if args.minutes is not None:
        overrides.append(f"max_minutes={args.minutes}")
    model_config, train_config = layered(
        split_overrides, get_preset(args.preset), args.config, overrides)
    result = train_gnmt(args.model_dir, args.data_dir, args.src_lang, args.tgt_lang,
                        model_config, train_config, vocab=args.vocab,
                        strategy=args.strategy, log_every=args.log_every,
                        init_from=args.init_from,
                        data_config=getattr(args, "data_config", None))
    print(f"trained to step {result.steps} in {result.seconds / 60:.1f} min "
          f"({result.target_tokens_per_s:.0f} target tokens/s); "
          f"model in {args.model_dir}")
    return 0


def refine_rl_from_args(args):
    """`gnmt-tf train --refine-rl`: RL refinement of a trained model
    directory (`gnmt_tf.training.rl_refinement`)."""
    from gnmt_tf.model_dir import CONFIG_FILE
    from gnmt_tf.pretrained import locate

    if not (locate(args.model_dir) / CONFIG_FILE).exists():
        raise ValueError(f"--refine-rl needs a trained --model-dir; "
                         f"{args.model_dir} has no {CONFIG_FILE}")
    from gnmt_tf.training.rl_refinement import (RLOptions, default_output_dir,
                                                refine_rl)

    options = RLOptions(**{
        field: value for field, value in (
            ("alpha", args.alpha), ("num_samples", args.rl_samples),
            ("sampler", args.rl_sampler)) if value is not None})
    out = args.output_dir or default_output_dir(args.model_dir)
    result = refine_rl(args.model_dir, out, args.data_dir, options,
                       minutes=args.minutes, overrides=args.overrides,
                       log_every=args.log_every)
    print(f"refined to step {result.steps} in {result.seconds / 60:.1f} min; "
          f"model in {out}")
    return 0
