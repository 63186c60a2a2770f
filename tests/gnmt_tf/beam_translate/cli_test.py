"""`gnmt-tf translate-beam` without Apache Beam: its flags, pipeline options
after `--`, and the one-line error that names the extra."""

import subprocess
import sys

from gnmt_tf.cli.main import build_parser
from gnmt_tf.cli.translate_beam import pipeline_arguments


def _parse(*argv):
    return build_parser().parse_args(["translate-beam", "--input", "i",
                                      "--output", "o", "--model", "m",
                                      *argv])


def test_pipeline_options_follow_the_double_dash():
    args = _parse("--beam-size", "2", "--", "--runner=DataflowRunner",
                  "--project", "p")
    assert args.beam_size == 2
    assert pipeline_arguments(args) == ["--runner=DataflowRunner",
                                        "--project", "p"]
    assert pipeline_arguments(_parse("--runner", "FlinkRunner", "--",
                                     "--flink_master", "h:8081")) == [
        "--runner=FlinkRunner", "--flink_master", "h:8081"]
    assert pipeline_arguments(_parse()) == ["--runner=DirectRunner"]


def test_without_apache_beam_the_error_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['apache_beam'] = None\n"
            "from gnmt_tf.cli.main import main\n"
            "sys.exit(main(['translate-beam', '--input', 'x', '--output', "
            "'y', '--model', 'z']))")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": ":".join(sys.path)})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "gnmt-tf translate-beam: error: translate-beam needs Apache Beam: "
        "pip install 'gnmt-tf[beam]' (in its own environment: see "
        "docs/beam.md)")
