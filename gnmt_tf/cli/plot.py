"""`gnmt-tf plot`: training curves of a model directory as a picture.

Draws `MODEL_DIR/metrics.csv` (written while training: loss, validation
loss and BLEU, learning rate, tokens/s) with `gnmt_tf.plots`; needs
matplotlib (`pip install 'gnmt-tf[plot]'`).
"""

import sys


def register(subparsers):
    parser = subparsers.add_parser(
        "plot", help="draw the training curves of a model directory (PNG)")
    parser.add_argument("--model-dir", required=True,
                        help="a model directory that gnmt-tf train writes to")
    parser.add_argument("--out", required=True,
                        help="picture to write (.png; .pdf and .svg too)")
    parser.set_defaults(func=run)


def run(args):
    import errno
    import pathlib

    from gnmt_tf.io_utils import check_output_file
    from gnmt_tf.plots import new_figure, plot_training_curves
    from gnmt_tf.training.metrics_log import metrics_path, read_metrics

    check_output_file(args.out)
    new_figure(1, 1)  # matplotlib missing: fail before reading anything
    path = metrics_path(args.model_dir)
    if not path.exists():
        raise FileNotFoundError(
            errno.ENOENT, "no such file (gnmt-tf train writes it from the "
            "first logged step on)", str(path))
    rows = read_metrics(path)
    if not rows:
        raise ValueError(f"{path} has no rows yet")
    out = plot_training_curves(rows, args.out,
                               title=pathlib.Path(args.model_dir).name)
    print(f"wrote {out}", file=sys.stderr)
    return 0
