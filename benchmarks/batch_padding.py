"""Benchmark: how much of a training batch is padding, per bucket width.

Builds the training batches of Multi30k en->de exactly as `gnmt-tf train`
does (`gnmt_tf.data.datasets.make_dataset`, `--max-tokens` padded tokens per
batch, pairs longer than `--max-length` dropped) for each
`TrainConfig.bucket_width` in `--widths` (0: geometric buckets 25 % wide;
1: pairs of one longer side, as OpenNMT-tf's `length_bucket_width: 1`),
and counts over the first `--batches` batches: real (non-padding) target
tokens, padded target and source tokens, and sentences per batch.

The step's work follows the padded shape, so real target tokens per batch
is what the training throughput (target tokens/s) gains at equal step time.
No training: it runs in a minute, on a loaded machine too.

    python benchmarks/batch_padding.py --data-dir ../shared/data/multi30k \\
        [--vocab SPM_MODEL] [--widths 0,1] [--batches 400]

Writes `benchmarks/results/batch_padding.json`.
"""

import argparse
import json
import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from results_file import command_line  # noqa: E402

from gnmt_tf.flags.arg_types import positive_int  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "batch_padding.json"


def _widths(text):
    widths = [int(w) for w in text.split(",")]
    if not widths or min(widths) < 0:
        raise argparse.ArgumentTypeError("widths are integers >= 0")
    return widths


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument("--vocab", default=None,
                        help="SentencePiece model (default: the shipped "
                             "multi30k-transformer's)")
    parser.add_argument("--widths", type=_widths, default=[0, 1])
    parser.add_argument("--batches", type=positive_int, default=400)
    parser.add_argument("--max-tokens", type=positive_int, default=2048)
    parser.add_argument("--max-length", type=positive_int, default=64)
    parser.add_argument("--out", default=str(RESULT))
    return parser.parse_args(argv)


def measure(dataset, batches):
    """Per-batch means of real/padded tokens over the first `batches`."""
    real = padded_target = padded_source = sentences = count = 0
    for features, labels in dataset.take(batches):
        labels = labels.numpy()
        real += int((labels != 0).sum())
        padded_target += labels.size
        padded_source += features["source_ids"].numpy().size
        sentences += labels.shape[0]
        count += 1
    return {"real_target_tokens": round(real / count, 1),
            "padded_target_tokens": round(padded_target / count, 1),
            "padded_source_tokens": round(padded_source / count, 1),
            "sentences": round(sentences / count, 1),
            "target_padding_share": round(1 - real / padded_target, 4),
            "batches": count}


def main(argv=None):
    args = parse_args(argv)
    from gnmt_tf import pretrained
    from gnmt_tf.data.corpus import read_parallel
    from gnmt_tf.data.datasets import make_dataset
    from gnmt_tf.text.subword import Subwords

    vocab = args.vocab or str(pretrained.PRETRAINED_DIR
                              / "multi30k-transformer" / "spm.model")
    subwords = Subwords(vocab)
    src, tgt = read_parallel(args.data_dir, "train", args.src_lang,
                             args.tgt_lang)
    source_ids, target_ids = subwords.encode(src), subwords.encode(tgt)
    results = {}
    for width in args.widths:
        dataset = make_dataset(source_ids, target_ids, args.max_tokens,
                               args.max_length, seed=1,
                               bucket_width=width)
        results[f"bucket_width_{width}"] = measure(dataset, args.batches)
        print(width, results[f"bucket_width_{width}"], flush=True)
    if 0 in args.widths and 1 in args.widths:
        results["real_tokens_width1_over_width0"] = round(
            results["bucket_width_1"]["real_target_tokens"]
            / results["bucket_width_0"]["real_target_tokens"], 3)
    results["settings"] = {
        "data": f"Multi30k {args.src_lang}-{args.tgt_lang} train",
        "vocab": vocab if args.vocab else "multi30k-transformer/spm.model",
        "max_tokens": args.max_tokens, "max_length": args.max_length,
        "unit": "tokens per batch, mean over the first batches of a "
                "shuffled pass (seed 1)"}
    results["command"] = command_line("batch_padding.py", argv)
    from gnmt_tf.io_utils import write_text_atomic
    write_text_atomic(pathlib.Path(args.out),
                      json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
