"""`gnmt-tf data`: download public corpora (`download multi30k`) and turn
the corpora of a data configuration into clean training shards
(`prepare`, see `gnmt_tf.data.prepare`)."""

from gnmt_tf.flags.arg_types import number, positive_int

ratio = number(minimum=1, name="ratio")


def register(subparsers):
    parser = subparsers.add_parser(
        "data", help="download public corpora (SHA-256 verified); prepare "
                     "training shards from a data configuration")
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    sub.required = True
    download = sub.add_parser("download", help="download a corpus")
    download.add_argument("corpus", choices=["multi30k"])
    download.add_argument(
        "--cache-dir",
        help="default: $XDG_CACHE_HOME/gnmt_tf, else ~/.cache/gnmt_tf")
    download.add_argument(
        "--url-template", default=None,
        help="URL with {name} for each file (default: $GNMT_TF_MULTI30K_URL, "
             "else the public Multi30k URLs)")
    download.set_defaults(func=run)

    prepare = sub.add_parser(
        "prepare", help="stream, clean and shard the corpora of a data "
                        "configuration (gzip TSV shards + manifest.json)")
    prepare.add_argument("--data-config", required=True, metavar="FILE",
                         help="YAML or JSON data configuration")
    prepare.add_argument("--out", metavar="DIR",
                         help="where the shards go (default: the "
                              "configuration's 'prepared' directory)")
    prepare.add_argument("--shard-size", type=positive_int, default=None,
                         metavar="N", help="sentence pairs per shard "
                                           "(default 100000)")
    prepare.add_argument("--skip-bad-lines", action="store_true",
                         help="count and skip malformed input (invalid "
                              "UTF-8, a TSV line without one tab, a broken "
                              "TMX element) instead of stopping")
    prepare.add_argument("--max-length-chars", type=positive_int,
                         default=None, metavar="N",
                         help="drop pairs with a side longer than N "
                              "characters (default 1000)")
    prepare.add_argument("--max-ratio", type=ratio, default=None,
                         metavar="R",
                         help="drop pairs whose longer side has more than R "
                              "times the characters of the shorter "
                              "(default 3)")
    prepare.add_argument("--check-language", action="store_true",
                         help="drop pairs whose sides are detected as "
                              "another language than the declared one "
                              "(needs the language identifier: "
                              "pip install 'gnmt-tf[gateway]')")
    prepare.set_defaults(func=run_prepare)


def run(args):
    from gnmt_tf.errors import UsageError
    from gnmt_tf.data import download

    try:
        path = download.download_multi30k(args.cache_dir,
                                          url_template=args.url_template)
    except download.DownloadError as e:
        raise UsageError(str(e)) from None
    print(path)
    return 0


def run_prepare(args):
    """`gnmt-tf data prepare`."""
    from gnmt_tf.data.data_config import load_data_config
    from gnmt_tf.data.prepare import PrepareOptions, prepare

    config = load_data_config(args.data_config)
    out = args.out or config.prepared
    if out is None:
        raise ValueError(f"give --out, or a 'prepared' directory in "
                         f"{args.data_config}")
    given = {key: getattr(args, key) for key in
             ("shard_size", "max_length_chars", "max_ratio")
             if getattr(args, key) is not None}
    options = PrepareOptions(skip_bad_lines=args.skip_bad_lines,
                             check_language=args.check_language, **given)
    manifest = prepare(config, out, options)
    counts = manifest["counts"]
    print(f"{counts['kept']} of {counts['read']} pairs in "
          f"{sum(len(c['shards']) for c in manifest['corpora'])} shards "
          f"in {out}")
    return 0
