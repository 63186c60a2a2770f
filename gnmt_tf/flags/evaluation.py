"""The flags of scoring a model on test sets (`gnmt-tf evaluate --model`)."""

import os

from gnmt_tf.flags.arg_types import positive_int


def add_model_arguments(parser, json_flag="--scores-json"):
    """The flags of the `--model` mode (`json_flag` writes the scores)."""
    parser.add_argument("--model", help="model directory or shipped name")
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"),
                        help="Multi30k directory (default $GNMT_TF_DATA, "
                             "else the download cache)")
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument(
        "--directions", default=None,
        help="default: every direction between the split's languages")
    parser.add_argument(
        "--wmt22-dir", default=None,
        help="evaluate the WMT22 general test sets in this directory "
             "instead (tags = their domains)")
    parser.add_argument(
        "--tags", default=None,
        help="translate with these tags instead of each test set's own "
             "('' = none)")
    parser.add_argument("--max-lines", type=positive_int, default=None,
                        help="first lines of each direction (and WMT22 "
                             "domain) only")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument(json_flag, dest="scores_json", metavar="FILE",
                        help="also write the scores here")
