"""Does a GNMT model's attention align? Monotonicity on Multi30k val.

For the first `--sentences` val pairs, the teacher-forced pass gives each
target position's attention over the source; the source position attended
most is compared with the target position by Spearman's rank correlation
per sentence (scipy), averaged. A monotone en->de alignment gives a clearly
positive value; attention that reads the source some other way gives a
value near zero or below. Also reported: the mean largest attention weight
and the attention entropy (against the uniform distribution's), and the
attended source piece for each target piece of a few examples. Writes
`attention_alignment.<name>` of `benchmarks/results/gnmt_ablation.json`.

    python benchmarks/attention_alignment.py /work/zoo/multi30k-gnmt-en-de \\
        --data-dir ../shared/data/multi30k --steps 1000,2000,5498
"""

import argparse
import pathlib
import sys

from results_file import REPO_ROOT, command_line, update_section

RESULTS = REPO_ROOT / "benchmarks" / "results" / "gnmt_ablation.json"


def parse_args(argv=None):
    from gnmt_tf.flags.arg_types import positive_int

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--name", default=None,
                        help="results key (default: the model dir's name)")
    parser.add_argument("--steps", default="",
                        help="checkpoint steps to measure, comma-separated "
                             "(default: the latest checkpoint)")
    parser.add_argument("--sentences", type=positive_int, default=64)
    parser.add_argument("--examples", type=int, default=2)
    parser.add_argument("--output", default=str(RESULTS))
    return parser.parse_args(argv)


def measure(model, subwords, sources, references, examples):
    """`{spearman, max_weight, entropy, uniform_entropy, examples}`."""
    import numpy as np
    import scipy.stats

    from gnmt_tf.data.datasets import ragged_sequences
    from gnmt_tf.text.subword import BOS_ID, EOS_ID

    source = [list(ids) + [EOS_ID] for ids in subwords.encode(sources)]
    target = [list(ids) for ids in subwords.encode(references)]
    _, attention = model(
        {"source_ids": ragged_sequences(source).to_tensor(),
         "target_in_ids": ragged_sequences(target, prefix=(BOS_ID,)).to_tensor()},
        return_attention=True)
    attention = attention.numpy()
    correlations, weights, entropies, uniform, shown = [], [], [], [], []
    for b, (src, tgt) in enumerate(zip(source, target)):
        rows = attention[b, :len(tgt) + 1, :len(src)]  # + the end token
        attended = rows.argmax(-1)
        if len(attended) > 3 and len(set(attended)) > 1:
            correlations.append(scipy.stats.spearmanr(
                np.arange(len(attended)), attended).correlation)
        weights += list(rows.max(-1))
        entropies += list(-(rows * np.log(rows + 1e-12)).sum(-1))
        uniform += [np.log(len(src))] * len(rows)
        if b < examples:
            pieces = subwords.id_pieces(src)
            shown.append(" ".join(
                f"{piece}->{pieces[a]}" for piece, a in
                zip(subwords.id_pieces(tgt + [EOS_ID]), attended)))
    return {"spearman": round(float(np.mean(correlations)), 3),
            "max_weight": round(float(np.mean(weights)), 3),
            "entropy": round(float(np.mean(entropies)), 3),
            "uniform_entropy": round(float(np.mean(uniform)), 3),
            "examples": shown}


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    from gnmt_tf import model_dir as model_dir_lib
    from gnmt_tf.data import corpus
    from gnmt_tf.text.subword import Subwords

    model_dir = pathlib.Path(args.model_dir)
    try:
        payload = model_dir_lib.read_config(model_dir)
        src_lang, tgt_lang = payload["src_lang"], payload["tgt_lang"]
        sources, references = corpus.read_parallel(
            corpus.resolve_data_dir(args.data_dir), "val", src_lang, tgt_lang)
        model, _ = model_dir_lib.build_model(model_dir)
        subwords = Subwords(model_dir / model_dir_lib.VOCAB_FILE)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    model(model.dummy_inputs())
    checkpoints = model_dir / model_dir_lib.CHECKPOINT_DIR
    steps = [s for s in args.steps.split(",") if s]
    paths = ([str(checkpoints / f"ckpt-{s}") for s in steps] if steps
             else [tf.train.latest_checkpoint(str(checkpoints))])
    result = {}
    for path in paths:
        try:
            tf.train.Checkpoint(model=model).restore(path).expect_partial()
        except (tf.errors.OpError, ValueError) as e:
            print(f"error: cannot restore {path}: {e}", file=sys.stderr)
            return 2
        row = measure(model, subwords, sources[:args.sentences],
                      references[:args.sentences], args.examples)
        step = path.rsplit("-", 1)[-1]
        result[step] = row
        print(f"step {step}: spearman {row['spearman']}, max weight "
              f"{row['max_weight']}, entropy {row['entropy']} (uniform "
              f"{row['uniform_entropy']})")
        for line in row["examples"]:
            print("  " + line)
    section = f"attention_alignment.{args.name or model_dir.name}"
    update_section(args.output, section,
                   {"sentences": args.sentences, "steps": result},
                   command_line("attention_alignment.py", argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
