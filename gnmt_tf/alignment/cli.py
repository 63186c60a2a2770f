"""`gnmt-tf align`: fast_align-compatible word alignment and symmetrisation.

    gnmt-tf align -i corpus.de-en -d -o -v > forward.align
    gnmt-tf align -i corpus.de-en -d -o -v -r > reverse.align
    gnmt-tf align --symmetrize grow-diag-final-and \\
        --forward forward.align --reverse reverse.align > sym.align

The corpus has one `source ||| target` line per sentence pair, tokenised by
whitespace. Bad input (missing file, malformed line) prints an error naming
the problem and exits with status 2.
"""

import argparse
import itertools
import sys

from gnmt_tf.alignment import head_cli
from gnmt_tf.flags.arg_types import number, positive_float, positive_int

_METHODS = ("intersect", "union", "grow-diag", "grow-diag-final",
            "grow-diag-final-and")


def register(subparsers) -> argparse.ArgumentParser:
    """Adds the `align` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "align", help="word-align a parallel corpus (fast_align) or "
        "symmetrise two alignments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--input",
                        help="corpus of 'source ||| target' lines")
    # `-r` alone flips the direction; `--reverse FILE` with --symmetrize
    # names the reverse alignment, as in the documented command lines.
    parser.add_argument("-r", "--reverse", nargs="?", const=True,
                        default=False, metavar="FILE",
                        help="align in reverse (condition on the target); "
                        "with --symmetrize: the reverse alignment file")
    parser.add_argument("-d", "--favor-diagonal", action="store_true",
                        help="favour links close to the diagonal")
    parser.add_argument("-o", "--optimize-tension", action="store_true",
                        help="re-estimate the diagonal tension")
    parser.add_argument("-v", "--variational-bayes", action="store_true",
                        help="Dirichlet prior on lexical translations")
    parser.add_argument("-I", "--iterations", type=positive_int, default=5,
                        help="EM iterations incl. the final alignment pass (5)")
    parser.add_argument("-p", "--p0", type=number(minimum=0, below=1),
                        default=0.08,
                        help="null alignment probability with -d (0.08)")
    parser.add_argument("-T", "--diagonal-tension", type=positive_float,
                        default=4.0,
                        help="starting diagonal tension (4.0)")
    parser.add_argument("-a", "--alpha", type=positive_float, default=0.01,
                        help="Dirichlet concentration for -v (0.01)")
    parser.add_argument("-N", "--no-null-word", action="store_true",
                        help="do not align to the null word")
    parser.add_argument("--exact-tension-gradient", action="store_true",
                        help="with -o, use the exact gradient instead of the "
                        "original tool's (see FastAlign)")
    parser.add_argument("--symmetrize", choices=_METHODS, metavar="METHOD",
                        help="symmetrise --forward and --reverse alignments "
                        f"with one of: {', '.join(_METHODS)}")
    parser.add_argument("--forward", help="forward Pharaoh alignment file")
    parser.add_argument("--output", help="write here instead of stdout")
    parser.set_defaults(func=run)
    _register_lexical_table(subparsers)
    head_cli.register(subparsers)
    return parser


def _register_lexical_table(subparsers) -> None:
    table = subparsers.add_parser(
        "lexical-table",
        help="build a lexical translation table (fast_align over "
        "SentencePiece pieces) for --shortlist and --replace-unk",
        description="Writes 'source<TAB>target<TAB>t(target|source)' "
        "lines (the --top-k best per source piece), then "
        "'<TAB>target<TAB>count' lines (target piece frequencies); "
        "see gnmt_tf.text.lexical_table.")
    table.add_argument("--source", required=True,
                       help="source sentences, one a line (.gz allowed)")
    table.add_argument("--target", required=True,
                       help="target sentences, parallel to --source")
    vocabulary = table.add_mutually_exclusive_group(required=True)
    vocabulary.add_argument("--model", help="model directory (its spm.model)")
    vocabulary.add_argument("--spm", help="SentencePiece .model file")
    table.add_argument("--output", "-o", required=True, help="table file")
    table.add_argument("--top-k", type=positive_int, default=50,
                       help="translations kept per source piece (50)")
    table.add_argument("-I", "--iterations", type=positive_int, default=5,
                       help="fast_align iterations (5)")
    table.add_argument("--max-lines", type=positive_int, default=None,
                       help="use only the first N sentence pairs")
    table.set_defaults(func=run_lexical_table)


def run_lexical_table(args) -> int:
    """Runs `gnmt-tf lexical-table`; returns the exit status."""
    import os

    from gnmt_tf.alignment.lexical_table import build_lexical_table
    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.io_utils import atomic_write, check_output_file
    from gnmt_tf.text.lexical_table import write_lexical_table
    from gnmt_tf.text.subword import Subwords

    def fail(message):
        print(f"gnmt-tf lexical-table: error: {message}", file=sys.stderr)
        return 2

    try:
        check_output_file(args.output, {"--source": args.source,
                                        "--target": args.target})
        subwords = Subwords(args.spm or os.path.join(args.model, "spm.model"))
        sources, targets = read_lines(args.source), read_lines(args.target)
        if args.max_lines:
            sources, targets = (sources[:args.max_lines],
                                targets[:args.max_lines])
        table = build_lexical_table(sources, targets, subwords.pieces,
                                    top_k=args.top_k,
                                    iterations=args.iterations)
        with atomic_write(args.output) as out:
            write_lexical_table(out, table.translations, table.frequencies)
    except OSError as e:
        return fail(f"{e.filename}: {e.strerror}" if e.filename else str(e))
    except ValueError as e:
        return fail(str(e))
    return 0


def _error(message: str) -> int:
    print(f"gnmt-tf align: error: {message}", file=sys.stderr)
    return 2


def _align(args, out) -> None:
    from gnmt_tf.alignment import fast_align, pharaoh

    aligner = fast_align.FastAlign(
        reverse=bool(args.reverse), favor_diagonal=args.favor_diagonal,
        iterations=args.iterations, variational_bayes=args.variational_bayes,
        alpha=args.alpha, optimize_tension=args.optimize_tension, p0=args.p0,
        tension=args.diagonal_tension, use_null_word=not args.no_null_word,
        exact_tension_gradient=args.exact_tension_gradient)
    aligner.fit(pharaoh.read_corpus(args.input))
    pharaoh.write_alignments(aligner.training_alignments(), out)


def _symmetrize(args, out) -> None:
    from gnmt_tf.alignment import pharaoh, symmetrize

    if args.symmetrize not in symmetrize.METHODS:
        raise ValueError(f"unknown symmetrization method {args.symmetrize!r}")
    combine = symmetrize.METHODS[args.symmetrize]
    forward = pharaoh.read_alignments(args.forward)
    reverse = pharaoh.read_alignments(args.reverse)
    # Streamed, like atools: a length mismatch is found where it occurs.
    for number, (f, r) in enumerate(
            itertools.zip_longest(forward, reverse), start=1):
        if f is None or r is None:
            shorter = args.forward if f is None else args.reverse
            raise ValueError(f"{shorter} has fewer lines than the other "
                             f"alignment file (ends before line {number})")
        out.write(pharaoh.format_alignment(combine(f, r)) + "\n")


def run(args) -> int:
    """Runs `gnmt-tf align` for parsed arguments; returns the exit status."""
    reverse_file = isinstance(args.reverse, str)
    if args.symmetrize:
        if not args.forward or not reverse_file:
            return _error(
                "--symmetrize needs --forward FILE and --reverse FILE")
        action = _symmetrize
    else:
        if reverse_file:
            return _error("--reverse FILE is only valid with --symmetrize")
        if not args.input:
            return _error("-i/--input CORPUS is required (or use --symmetrize)")
        if args.iterations < 1:
            return _error(f"-I must be >= 1, got {args.iterations}")
        action = _align
    from gnmt_tf.io_utils import atomic_write, check_output_file

    try:
        # Written to a temporary file renamed on success: bad input leaves
        # an existing --output as it was, and an input is never emptied.
        check_output_file(args.output, {
            "-i/--input": args.input, "--forward": args.forward,
            "--reverse": args.reverse if reverse_file else None})
        if args.output:
            with atomic_write(args.output) as out:
                action(args, out)
        else:
            action(args, sys.stdout)
    except OSError as e:
        if e.filename:
            return _error(f"{e.strerror or e}: {e.filename}")
        return _error(str(e))
    except ValueError as e:  # includes PharaohFormatError
        return _error(str(e))
    return 0
