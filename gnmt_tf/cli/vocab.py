"""`gnmt-tf vocab`: train a shared SentencePiece vocabulary."""

from gnmt_tf.cli.arg_types import positive_int


def register(subparsers):
    parser = subparsers.add_parser(
        "vocab", help="train a shared SentencePiece (wordpiece) vocabulary")
    parser.add_argument("--input", nargs="+", required=True,
                        help="text files (.gz allowed), one sentence a line")
    parser.add_argument("--model-prefix", required=True,
                        help="writes PREFIX.model and PREFIX.vocab")
    parser.add_argument("--vocab-size", type=positive_int, default=8000)
    parser.add_argument("--model-type", default="unigram", choices=["unigram", "bpe"])
    parser.add_argument("--user-defined-symbols", nargs="*", default=[],
                        help="tokens that never split (e.g. placeholders)")
    parser.set_defaults(func=run)


def run(args):
    import pathlib

    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.io_utils import check_output_file
    from gnmt_tf.text.subword import train_sentencepiece

    prefix = pathlib.Path(args.model_prefix)
    for suffix in (".model", ".vocab"):  # the two files SentencePiece writes
        for path in args.input:
            check_output_file(prefix.with_name(prefix.name + suffix),
                              {"--input": path})
    sentences = [line for path in args.input for line in read_lines(path)]
    path = train_sentencepiece(sentences, args.model_prefix, args.vocab_size,
                               args.model_type, args.user_defined_symbols)
    print(path)
    return 0
