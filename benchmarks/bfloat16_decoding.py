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

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from gnmt_tf.config import PRECISIONS  # noqa: E402
from growing_cache import (compare_settings, parse_args,  # noqa: E402
                           write_result)

RESULT = REPO_ROOT / "benchmarks" / "results" / "bfloat16_decoding.json"


def main(argv=None):
    args, batch_sizes = parse_args(__doc__.split("\n")[0], argv, RESULT,
                                   repeats=2)

    from gnmt_tf.translator import Translator

    translators = {p: Translator.from_model_dir(args.model, precision=p)
                   for p in PRECISIONS}
    result = compare_settings(translators, args, batch_sizes, "float32",
                              "mixed_bfloat16", "bfloat16_speedup")
    write_result(result, args, "bfloat16_decoding.py", argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
