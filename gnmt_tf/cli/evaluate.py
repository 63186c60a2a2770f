"""`gnmt-tf evaluate`: sacreBLEU BLEU and chrF (and optionally GLEU), against
one or several references, as text or JSON."""


def register(subparsers):
    parser = subparsers.add_parser(
        "evaluate", help="score detokenised hypotheses with sacreBLEU (BLEU, chrF)")
    parser.add_argument("--hyp", required=True, help="hypotheses, one per line")
    parser.add_argument("--ref", required=True, nargs="+", metavar="FILE",
                        help="references, one per line; several files for "
                             "several references per line")
    parser.add_argument("--gleu", action="store_true",
                        help="also corpus GLEU (one reference only)")
    parser.add_argument("--json", action="store_true",
                        help="print the scores and signatures as one JSON "
                             "object")
    parser.set_defaults(func=run)


def run(args):
    import json

    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.evaluation import corpus_gleu, score_references

    if args.gleu and len(args.ref) > 1:
        raise ValueError("--gleu scores against one reference; give one "
                         "--ref file")
    hyps = read_lines(args.hyp)
    reference_sets = [read_lines(path) for path in args.ref]
    for path, refs in zip(args.ref, reference_sets):
        if len(refs) != len(hyps):
            raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} "
                             f"references in {path}")
    scores = score_references(hyps, reference_sets)
    gleu = 100 * corpus_gleu(hyps, reference_sets[0]) if args.gleu else None
    if args.json:
        result = {**scores.to_json(), "sentences": len(hyps),
                  "references": len(reference_sets)}
        if gleu is not None:
            result["gleu"] = gleu
        print(json.dumps(result, indent=2))
        return 0
    print(scores.format())
    if gleu is not None:
        print(f"GLEU = {gleu:.2f}")
    return 0
