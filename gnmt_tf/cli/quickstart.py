"""`gnmt-tf quickstart`: the main job end to end on Multi30k en->de.

Without `--data-dir` or `$GNMT_TF_DATA` it uses the Multi30k download cache,
downloading the corpus there first (SHA-256 verified) when it is not there yet.
"""

import os
import sys

from gnmt_tf.cli.arg_types import (beam_size, non_negative_int,
                                   positive_float, positive_int)


def register(subparsers):
    parser = subparsers.add_parser(
        "quickstart",
        help="vocabulary + small GNMT + beam search + sacreBLEU on Multi30k en->de")
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"))
    parser.add_argument("--model-dir", default="runs/quickstart")
    parser.add_argument("--minutes", type=positive_float, default=5.0,
                        help="training time budget (longer trains better)")
    parser.add_argument("--preset", default="gnmt_small")
    parser.add_argument("--beam-size", type=beam_size, default=5)
    parser.add_argument("--show", type=non_negative_int, default=5,
                        help="translations to print")
    parser.add_argument(
        "--no-download", dest="download", action="store_false",
        help="fail instead of downloading Multi30k when no data directory "
             "is given and the download cache is empty")
    parser.set_defaults(func=run)


def quickstart_data(data_dir=None, download=True, progress=sys.stderr):
    """The Multi30k directory to use: `data_dir`, `$GNMT_TF_DATA` or the
    download cache (see `gnmt_tf.data.corpus.resolve_data_dir`); when none
    is given and the cache is incomplete, downloads Multi30k into the cache
    first (if `download`).

    Raises:
      UsageError: the download failed.
      FileNotFoundError: a given directory is missing, or no data and
        `download` is False.
    """
    from gnmt_tf.errors import UsageError
    from gnmt_tf.data import corpus
    from gnmt_tf.data import download as downloads

    if (data_dir or os.environ.get(corpus.ENV_DATA_DIR) or not download
            or downloads.cached_multi30k() is not None):
        return corpus.resolve_data_dir(data_dir)
    cache = downloads.multi30k_cache()
    if progress:
        print(f"[0/3] downloading Multi30k into {cache}", file=progress,
              flush=True)
    try:
        return downloads.download_multi30k(progress=progress)
    except downloads.DownloadError as e:
        raise UsageError(f"{e} (pass --data-dir or set "
                         f"{corpus.ENV_DATA_DIR} to use a local copy)") \
            from None


def run(args):
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.presets import get_preset
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.training.trainer import train_gnmt
    from gnmt_tf.translator import SearchOptions, Translator

    data_dir = quickstart_data(args.data_dir, args.download)
    model_config, train_config = get_preset(args.preset)
    train_config = apply_overrides(train_config, [f"max_minutes={args.minutes}"])
    print(f"[1/3] training {args.preset} en->de for up to {args.minutes} min "
          f"in {args.model_dir}", flush=True)
    result = train_gnmt(args.model_dir, data_dir, "en", "de", model_config,
                        train_config)
    print(f"      step {result.steps}, {result.target_tokens_per_s:.0f} target tokens/s",
          flush=True)

    print(f"[2/3] translating test_2016_flickr (beam {args.beam_size})", flush=True)
    src, ref = corpus.read_parallel(data_dir, "test_2016_flickr", "en", "de")
    model, subwords, _ = load_model(args.model_dir)
    hyps = Translator(model, subwords).translate(
        src, SearchOptions(beam_size=args.beam_size))

    print("[3/3] sacreBLEU on test_2016_flickr")
    print(score_corpus(hyps, ref).format())
    for s, h, r in list(zip(src, hyps, ref))[:args.show]:
        print(f"\n  SRC {s}\n  HYP {h}\n  REF {r}")
    return 0
