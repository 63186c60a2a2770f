"""`gnmt-tf export FORMAT`: a trained model directory to a deployable
artifact, through the format's `gnmt_tf.export.exporters.Exporter`. Like every
`gnmt-tf` subcommand module this one imports no TensorFlow until an export
runs."""

from gnmt_tf.export.exporters import EXPORTERS

ACTIONS = tuple(EXPORTERS)


def register(subparsers):
    """Adds `export` and one action per registered exporter to the
    `gnmt-tf` subparsers."""
    parser = subparsers.add_parser(
        "export", help="export a trained model (SavedModel, TFLite, ...)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for exporter in EXPORTERS.values():
        exporter.add_arguments(actions.add_parser(exporter.name,
                                                  help=exporter.help))
    parser.set_defaults(func=run)


def run(args) -> int:
    """Runs `gnmt-tf export ACTION`; returns the exit code."""
    exporter = EXPORTERS.get(args.action)
    if exporter is None:
        raise ValueError(f"unknown export action {args.action!r}")
    return exporter.run(args)
