"""Benchmark: a decoding step's attention as products and sums, against the
einsums, on a trained model, in TensorFlow and in TFLite.

`CachedMultiHeadAttention` can attend for one query position (every step
of the task-space Transformer's search) with broadcast products and sums
(`one_query_products`; TFLite exports do, TensorFlow keeps the einsums)
instead of the two einsums of the full pass. This translates the same test_2016_flickr sentences both ways, the
two settings alternating, with the in-graph search (`Translator`) and with
float32 TFLite exports of each (`TFLiteTranslator`, the host search), and
reports the speed-up, sacreBLEU and how many outputs are the same:

    python benchmarks/one_query_attention.py --model multi30k-transformer \\
        --data-dir ../shared/data/multi30k [--sentences 1000] \\
        [--batch-sizes 32,1] [--repeats 3] [--engines translator,tflite]

Batch size 1 takes the first N // 8 sentences; BLEU is reported where all N
are translated. Writes `benchmarks/results/one_query_attention.json`.
"""

import pathlib
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from growing_cache import (compare_settings, parse_args,  # noqa: E402
                           write_result)

RESULT = REPO_ROOT / "benchmarks" / "results" / "one_query_attention.json"
ENGINES = ("translator", "tflite")
SETTINGS = {"einsum": False, "products": True}


class WithSetting:
    """A translator whose calls (and so its traces) run with one setting
    of `one_query_products`, as `growing_cache.measure` calls it."""

    def __init__(self, translator, on):
        self.translator, self.on = translator, on

    def translate(self, sentences, options, batch_size, **task):
        from gnmt_tf.models.task_space.cached_multi_head_attention import \
            one_query_products

        with one_query_products(self.on):
            if hasattr(self.translator, "runtime"):  # a TFLiteTranslator
                return self.translator.translate(
                    sentences, beam_size=options.beam_size,
                    length_penalty=options.length_penalty,
                    batch_size=batch_size, **task)
            return self.translator.translate(sentences, options, batch_size,
                                             **task)


def tflite_translators(model, work):
    """`{setting: WithSetting(TFLiteTranslator)}`: a float32 export of
    `model` per setting, written under `work`."""
    from gnmt_tf.export.tflite import export_tflite
    from gnmt_tf.tflite_translator import TFLiteTranslator

    translators = {}
    for name, on in SETTINGS.items():
        paths = export_tflite(model, pathlib.Path(work) / name, "float32",
                              attention_products=on)
        translators[name] = WithSetting(TFLiteTranslator(paths["model"]), on)
    return translators


def main(argv=None):
    args, batch_sizes = parse_args(
        __doc__.split("\n")[0], argv, RESULT, repeats=3,
        extra=[("--engines", dict(default=",".join(ENGINES),
                                  help="comma-separated: translator "
                                       "(in-graph search), tflite"))])
    engines = args.engines.split(",")
    if not engines or not set(engines) <= set(ENGINES):
        sys.exit(f"--engines: choose from {', '.join(ENGINES)}")

    from gnmt_tf.translator import Translator

    result = {}
    with tempfile.TemporaryDirectory() as work:
        for engine in engines:
            if engine == "translator":
                translator = Translator.from_model_dir(args.model)
                translators = {name: WithSetting(translator, on)
                               for name, on in SETTINGS.items()}
            else:
                translators = tflite_translators(args.model, work)
            result[engine] = compare_settings(
                translators, args, batch_sizes, "einsum", "products",
                "products_speedup", label=f"{engine} ")
    write_result(result, args, "one_query_attention.py", argv,
                 engines=engines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
