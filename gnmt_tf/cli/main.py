"""`gnmt-tf`: one command, one subcommand per job.

Each subcommand module has `register(subparsers)` and a `run(args) -> int`; this
module only parses flags and dispatches. TensorFlow is imported inside `run`, so
`gnmt-tf --help` is instant. The other packages' subcommands (`align`,
`export`, `serve`, ...) are their `cli` modules, which must stay as light.

The native libraries' log lines (TensorFlow's start-up lines, LiteRT's) are
kept off stderr unless `gnmt-tf --verbose` (`gnmt_tf.cli.native_logs`), so
a command's stderr holds its own messages only; an error is one line and
exit status 2, a warning one line (`warning: ...`).
"""

import argparse
import sys
import warnings

from gnmt_tf.cli import native_logs
from gnmt_tf.errors import UsageError

from gnmt_tf.alignment import cli as align_cli
from gnmt_tf.cli import (average, data, evaluate, lm, models, plot,
                         quickstart, task_space, train, translate,
                         translate_beam, vocab)
from gnmt_tf.export import cli as export_cli
from gnmt_tf.gateway import batch_cli as gateway_batch_cli
from gnmt_tf.gateway import cli as gateway_cli
from gnmt_tf.pipeline import cli as pipeline_cli
from gnmt_tf.serving import cli as serve_cli

# Each has `register(subparsers)`, in `gnmt-tf --help`'s order; all are light
# (TensorFlow is imported in `run`).
COMMAND_MODULES = (data, vocab, train, translate, translate_beam, evaluate,
                   quickstart, average, models, plot, lm, align_cli,
                   export_cli, gateway_cli, gateway_batch_cli, pipeline_cli,
                   serve_cli, task_space)

__all__ = ["UsageError", "build_parser", "main"]


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors (`gnmt-tf translate: error: argument
    --batch-size: must be an integer >= 1, got '-3'`), exit status 2; its
    subcommand parsers are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser():
    parser = ArgumentParser(
        prog="gnmt-tf",
        description="Train, evaluate, export and serve neural machine translation models.")
    parser.add_argument(
        "--verbose", action="store_true",
        help="also show the native libraries' log lines on stderr "
             "(TensorFlow's start-up lines, LiteRT's), hidden by default")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def describe_error(error) -> str:
    """One line for a user error: `path: reason` for the OS errors that name
    a file (`[Errno 21] Is a directory: 'x'` becomes `x: Is a directory`)."""
    if isinstance(error, OSError) and error.filename and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def out_of_memory(error) -> bool:
    """Whether `error` is Python's or TensorFlow's out-of-memory error."""
    tf = sys.modules.get("tensorflow")
    return isinstance(error, MemoryError) or (
        tf is not None and isinstance(error, tf.errors.ResourceExhaustedError))


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.verbose:
        native_logs.verbose_native_logs()
        return run_command(args)
    with native_logs.quiet_native_logs():
        return run_command(args)


def _show_warning(message, category, filename, lineno, file=None,
                  line=None):
    """A Python warning as one line, `warning: MESSAGE` (no source line)."""
    del category, filename, lineno, line
    print(f"warning: {message}", file=file or sys.stderr)


def run_command(args) -> int:
    """Runs the parsed command; a user error is one line, exit status 2,
    and a warning one line too."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.func(args) or 0
    except (UsageError, OSError, ValueError, TypeError,
            UnicodeDecodeError) as e:
        return _error(args, describe_error(e))
    except ModuleNotFoundError as e:  # an optional package: names its extra
        if "pip install" not in str(e):
            raise
        return _error(args, describe_error(e))
    except KeyboardInterrupt:
        print(f"gnmt-tf {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if not out_of_memory(e):
            raise
        return _error(args, "out of memory: lower --batch-size (or "
                            "--beam-size, --max-batch-size)")


def _error(args, message) -> int:
    print(f"gnmt-tf {args.command}: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
