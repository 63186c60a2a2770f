"""Benchmark: translating in bfloat16 against float32, on a trained model.

`gnmt-tf translate --precision mixed_bfloat16` (`Translator.from_model_dir(
..., precision="mixed_bfloat16")`) runs the Transformer's layers in bfloat16
on its float32 weights. This translates the same test_2016_flickr sentences
both ways (in-graph beam search, the settings alternating), times them and
scores each with sacreBLEU against the references, so the speed-up and the
BLEU cost come from one run:

    python benchmarks/bfloat16_decoding.py --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k [--sentences 1000] \\
        [--batch-sizes 32,1] [--repeats 2] [--clock cpu]

Batch size 1 takes the first N // 8 sentences (BLEU is reported for the
batch-32 run, on all N). bfloat16 is faster only on CPUs with bfloat16
matmuls (AVX-512 BF16, AMX): the JSON records the SIMD flags. Writes
`benchmarks/results/bfloat16_decoding.json`.
"""

import pathlib
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from gnmt_tf.config import PRECISIONS  # noqa: E402
from growing_cache import (TASK, measure, paired_entry,  # noqa: E402
                           parse_args, sentences_for, write_result)

RESULT = REPO_ROOT / "benchmarks" / "results" / "bfloat16_decoding.json"


def main(argv=None):
    args, batch_sizes = parse_args(__doc__.split("\n")[0], argv, RESULT,
                                   repeats=2)

    from gnmt_tf.data import corpus
    from gnmt_tf.translator import SearchOptions, Translator

    translators = {p: Translator.from_model_dir(args.model, precision=p)
                   for p in PRECISIONS}
    read = lambda lang: corpus.read_lines(corpus.split_path(  # noqa: E731
        args.data_dir, "test_2016_flickr", lang))[:args.sentences]
    sources, references = read(TASK["src_lang"]), read(TASK["tgt_lang"])
    options = SearchOptions(beam_size=args.beam_size, length_penalty=0.6)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    result = {}
    for batch_size in batch_sizes:
        count = len(sentences_for(sources, batch_size))
        runs = measure(translators, sources[:count], options, batch_size,
                       args.repeats, clock)
        entry = paired_entry(
            runs, count, "float32", "mixed_bfloat16", "bfloat16_speedup",
            references[:count] if batch_size > 1 else None)
        result[f"batch{batch_size}"] = entry
        print(f"batch {batch_size}: {entry}", flush=True)
    write_result(result, args, "bfloat16_decoding.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
