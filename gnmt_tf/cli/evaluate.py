"""`gnmt-tf evaluate`: sacreBLEU BLEU and chrF (and optionally GLEU)."""


def register(subparsers):
    parser = subparsers.add_parser(
        "evaluate", help="score detokenised hypotheses with sacreBLEU (BLEU, chrF)")
    parser.add_argument("--hyp", required=True, help="hypotheses, one per line")
    parser.add_argument("--ref", required=True, help="references, one per line")
    parser.add_argument("--gleu", action="store_true", help="also print corpus GLEU")
    parser.set_defaults(func=run)


def run(args):
    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.evaluation import corpus_gleu, score_corpus

    hyps, refs = read_lines(args.hyp), read_lines(args.ref)
    print(score_corpus(hyps, refs).format())
    if args.gleu:
        print(f"GLEU = {100 * corpus_gleu(hyps, refs):.2f}")
    return 0
