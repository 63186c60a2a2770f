"""`gnmt-tf lm`: estimate a target-side n-gram LM over a model's pieces.

Writes an ARPA file (modified Kneser-Ney, `gnmt_tf.lm.arpa`) of the text
tokenized into the model's SentencePiece pieces, which the ``lm`` predictor
of `gnmt-tf translate --predictors ...,lm --lm FILE` reads with kenlm.
"""

import sys

from gnmt_tf.flags.arg_types import number


def register(subparsers):
    parser = subparsers.add_parser(
        "lm", help="estimate an n-gram LM (ARPA) over a model's "
                   "target pieces, for the lm predictor")
    parser.add_argument("--model", required=True,
                        help="model directory whose spm.model tokenizes "
                             "the text (or the .model file itself)")
    parser.add_argument("--text", required=True, action="append",
                        help="target-language text, one sentence a line "
                             "(.gz read as gzip); repeatable")
    parser.add_argument("--order", type=number(integer=True, minimum=2),
                        default=4, help="n-gram order >= 2 (default 4)")
    parser.add_argument("--out", required=True, help="ARPA file to write")
    parser.set_defaults(func=run)


def run(args):
    import pathlib

    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.io_utils import check_output_file
    from gnmt_tf.lm.arpa import estimate_arpa
    from gnmt_tf.lm.predictor import lm_tokens
    from gnmt_tf.model_dir import VOCAB_FILE
    from gnmt_tf.pretrained import locate
    from gnmt_tf.text.subword import Subwords

    check_output_file(args.out, {"--text": args.text[0]})
    vocab = pathlib.Path(args.model)
    if not vocab.is_file():
        vocab = locate(args.model) / VOCAB_FILE
    subwords = Subwords(vocab)
    lines = [line for path in args.text for line in read_lines(path)
             if line.strip()]
    sizes = estimate_arpa(lm_tokens(subwords, subwords.encode(lines)),
                          args.order, args.out)
    print(f"wrote {args.out}: {len(lines)} sentences, n-grams per order "
          f"{', '.join(map(str, sizes))}", file=sys.stderr)
    return 0
