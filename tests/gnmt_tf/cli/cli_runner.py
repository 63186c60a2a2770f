"""Running `gnmt-tf` in process for the command-line tests."""

from gnmt_tf.cli.main import main


def run(argv, capsys):
    """`(exit status, stdout, stderr)` of `gnmt-tf ARGV`."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse errors
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err
