"""`gnmt-tf vocab`: train a shared SentencePiece vocabulary."""

from gnmt_tf.flags.arg_types import number, positive_int

coverage = number(above=0, maximum=1, name="coverage")


def register(subparsers):
    parser = subparsers.add_parser(
        "vocab", help="train a shared SentencePiece (wordpiece) vocabulary")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", nargs="+",
                        help="text files (.gz allowed), one sentence a line")
    source.add_argument(
        "--data-config", metavar="FILE",
        help="train on a bounded random sample (--max-sentences) of the "
             "shards `gnmt-tf data prepare` made: a data configuration "
             "with a 'prepared' directory, or that directory")
    parser.add_argument("--max-sentences", type=positive_int,
                        default=None, metavar="N",
                        help="with --data-config: sample at most N "
                             "sentences (default 1000000)")
    parser.add_argument("--model-prefix", required=True,
                        help="writes PREFIX.model and PREFIX.vocab")
    parser.add_argument("--vocab-size", type=positive_int, default=8000)
    parser.add_argument("--model-type", default="unigram", choices=["unigram", "bpe"])
    parser.add_argument("--user-defined-symbols", nargs="*", default=[],
                        help="tokens that never split (e.g. placeholders)")
    parser.add_argument(
        "--character-coverage", type=coverage, default=None,
        help="SentencePiece's share of the text's characters kept as base "
             "pieces; the rarest others become <unk> (default 1.0)")
    parser.add_argument(
        "--max-base-characters", type=positive_int, default=None,
        metavar="N",
        help="keep only the N most frequent characters as base pieces, "
             "the rest <unk> (GNMT caps them at about 500); sets "
             "--character-coverage")
    parser.set_defaults(func=run)


def run(args):
    import pathlib

    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.io_utils import check_output_file
    from gnmt_tf.text.subword import (coverage_for_base_characters,
                                      train_sentencepiece)

    prefix = pathlib.Path(args.model_prefix)
    for suffix in (".model", ".vocab"):  # the two files SentencePiece writes
        for path in args.input or [None]:
            check_output_file(prefix.with_name(prefix.name + suffix),
                              {"--input": path})
    if args.character_coverage and args.max_base_characters:
        raise ValueError("give --character-coverage or "
                         "--max-base-characters, not both")
    if args.max_sentences is not None and not args.data_config:
        raise ValueError("--max-sentences goes with --data-config")
    if args.data_config:
        from gnmt_tf.data.prepare import prepared_dir_of
        from gnmt_tf.data.shard_sample import (DEFAULT_MAX_SENTENCES,
                                               sample_sentences)

        sentences = sample_sentences(
            prepared_dir_of(args.data_config),
            args.max_sentences or DEFAULT_MAX_SENTENCES)
    else:
        sentences = [line for path in args.input for line in read_lines(path)]
    character_coverage = args.character_coverage or 1.0
    if args.max_base_characters:
        character_coverage = coverage_for_base_characters(
            sentences, args.max_base_characters)
    path = train_sentencepiece(sentences, args.model_prefix, args.vocab_size,
                               args.model_type, args.user_defined_symbols,
                               character_coverage=character_coverage)
    print(path)
    return 0
