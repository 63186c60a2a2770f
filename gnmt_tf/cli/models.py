"""`gnmt-tf models`: the trained models shipped with the package."""


def register(subparsers):
    parser = subparsers.add_parser(
        "models", help="list the shipped models, their sizes and scores")
    parser.set_defaults(func=run)


def _headline(scores):
    """`en-de 35.1, en-fr 50.2` from `scores.json` (test_2016_flickr BLEU)."""
    bleu = scores.get("sacrebleu", {})
    parts = [f"{direction} {splits['test_2016_flickr']:.1f}"
             for direction, splits in sorted(bleu.items())
             if "test_2016_flickr" in splits]
    return ", ".join(parts) or "not scored"


def run(args):
    from gnmt_tf import pretrained

    names = pretrained.names()
    if not names:
        print("no shipped models in this installation")
        return 0
    print(f"{'name':<24} {'type':<24} {'MB':>6} {'int8 MB':>8}  "
          "BLEU test_2016_flickr")
    for name in names:
        info = pretrained.describe(name)
        int8 = (f"{info['tflite_int8_mb']:.1f}"
                if info["tflite_int8_mb"] is not None else "-")
        print(f"{name:<24} {info['model_type']:<24} {info['size_mb']:>6.1f} "
              f"{int8:>8}  {_headline(info['scores'])}")
    return 0
