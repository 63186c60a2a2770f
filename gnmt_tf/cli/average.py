"""`gnmt-tf average-checkpoints`: the mean of a run's last checkpoints."""

from gnmt_tf.flags.arg_types import positive_int


def register(subparsers):
    parser = subparsers.add_parser(
        "average-checkpoints",
        help="average the last checkpoints of a run into a new model dir")
    parser.add_argument("--model-dir", required=True,
                        help="the training run (only read)")
    parser.add_argument("--output", required=True,
                        help="the new model directory (must not exist)")
    parser.add_argument("--last", type=positive_int, default=5,
                        help="how many of the newest checkpoints (default 5)")
    parser.add_argument("--weights-only", action="store_true",
                        help="write a float16 weights.npz (a shippable "
                             "model) instead of a checkpoint")
    parser.set_defaults(func=run)


def run(args):
    from gnmt_tf.training.averaging import average_checkpoints

    paths = average_checkpoints(args.model_dir, args.output, args.last,
                                args.weights_only)
    names = ", ".join(path.rsplit("/", 1)[-1] for path in paths)
    print(f"averaged {len(paths)} checkpoints ({names}) into {args.output}")
    return 0
