"""Benchmark: the whole search compiled with XLA, against the plain
in-graph search, on a trained model.

`Translator(..., jit_compile_search=True)` (`gnmt-tf translate --xla`)
compiles the encoder, the decoder loop and the beam bookkeeping as one XLA
computation, every shape fixed by the batch's source width (padded up to a
multiple of `translator.XLA_WIDTH_MULTIPLE`). This translates the same
test_2016_flickr sentences both ways, checks that the outputs are the same,
and times them:

    python benchmarks/xla_search.py --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k [--sentences 1000] \\
        [--batch-sizes 32,1] [--repeats 3] [--clock cpu]

Per batch size: one untimed pass over all the sentences first (`first_pass`:
tracing, and for XLA compiling every batch shape the file has; its time is
reported), then the two settings alternate and the median of the repeats
is reported, as seconds and as the speed-up of the compiled search, with
sacreBLEU where all sentences are translated. Writes
`benchmarks/results/xla_search.json`.
"""

import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from growing_cache import (compare_settings, parse_args,  # noqa: E402
                           write_result)

RESULT = REPO_ROOT / "benchmarks" / "results" / "xla_search.json"


def main(argv=None):
    args, batch_sizes = parse_args(__doc__.split("\n")[0], argv, RESULT,
                                   repeats=3)

    from gnmt_tf.model_dir import load_model
    from gnmt_tf.translator import Translator, XLA_WIDTH_MULTIPLE

    model, subwords, _ = load_model(args.model)
    translators = {"plain": Translator(model, subwords),
                   "xla": Translator(model, subwords,
                                     jit_compile_search=True)}
    result = compare_settings(translators, args, batch_sizes, "plain", "xla",
                              "xla_speedup", first_pass=True)
    write_result(result, args, "xla_search.py", argv,
                 width_multiple=XLA_WIDTH_MULTIPLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
