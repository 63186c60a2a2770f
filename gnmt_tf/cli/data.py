"""`gnmt-tf data download multi30k`: fetch and verify public corpora."""


def register(subparsers):
    parser = subparsers.add_parser(
        "data", help="download public corpora into a cache (SHA-256 verified)")
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
