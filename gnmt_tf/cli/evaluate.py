"""`gnmt-tf evaluate`: sacreBLEU BLEU and chrF (and optionally GLEU).

Two modes:
- `--hyp FILE --ref FILE...`: score a file of detokenised hypotheses
  against one or several references, as text or JSON;
- `--model M`: translate a Multi30k split (or the WMT22 general test sets)
  with a model and print the scores per direction (and WMT22 domain).

Example:

    gnmt-tf evaluate --model multi30k-transformer --split test_2016_flickr \
        --directions en-de,en-fr --max-lines 200
"""

from gnmt_tf.flags.evaluation import add_model_arguments
from gnmt_tf.flags.search import add_search_arguments


def register(subparsers):
    parser = subparsers.add_parser(
        "evaluate", help="score hypotheses (--hyp/--ref) or a model on test "
                         "sets (--model), with sacreBLEU (BLEU, chrF)")
    parser.add_argument("--hyp", help="hypotheses, one per line")
    parser.add_argument("--ref", nargs="+", metavar="FILE",
                        help="references, one per line; several files for "
                             "several references per line")
    add_model_arguments(parser.add_argument_group(
        "scoring a model (--model)"))
    parser.add_argument("--gleu", action="store_true",
                        help="also corpus GLEU (one reference only)")
    parser.add_argument("--json", action="store_true",
                        help="print the scores and signatures as one JSON "
                             "object")
    add_search_arguments(parser)
    parser.set_defaults(func=run)


def run(args):
    if args.model:
        if args.hyp or args.ref:
            raise ValueError("give either --model or --hyp/--ref")
        from gnmt_tf.cli.task_space import evaluate_from_args

        return evaluate_from_args(args)
    if not args.hyp or not args.ref:
        raise ValueError("give --hyp and --ref (or --model to score a "
                         "model on test sets)")
    return score_files(args)


def score_files(args):
    """Scores `--hyp` against `--ref`."""
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
