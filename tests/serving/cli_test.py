"""`gnmt-tf serve`: config emission and a real server process."""

import os
import signal
import socket
import subprocess
import sys
import time

from google.protobuf import text_format

from gnmt_tf.cli.main import main
from serving.batching_config import BatchingParameters
from serving.client import TranslationClient
from serving.protos import model_server_config_pb2

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_emit_config_parses(tmp_path, capsys):
    batching = tmp_path / "in.txt"
    batching.write_text("max_batch_size { value: 16 }\n"
                        "allowed_batch_sizes: 4\nallowed_batch_sizes: 16\n")
    out = tmp_path / "conf"
    assert main(["serve", "--emit-config", str(out), "--model_name", "gnmt",
                 "--model_base_path", "models/gnmt",
                 "--model_version_policy", "latest:2",
                 "--batching_parameters_file", str(batching)]) == 0
    assert "tensorflow_model_server" in capsys.readouterr().out
    config = text_format.Parse((out / "models.config").read_text(),
                               model_server_config_pb2.ModelServerConfig())
    model, = config.model_config_list.config
    assert model.name == "gnmt" and model.model_platform == "tensorflow"
    assert model.base_path == os.path.abspath("models/gnmt")
    assert model.model_version_policy.latest.num_versions == 2
    params = BatchingParameters.from_file(out / "batching_parameters.txt")
    assert params.max_batch_size == 16
    assert params.allowed_batch_sizes == (4, 16)


def test_default_batching_pads_to_allowed_sizes(tmp_path, capsys):
    out = tmp_path / "conf"
    assert main(["serve", "--emit-config", str(out), "--model_name", "gnmt",
                 "--model_base_path", "models/gnmt"]) == 0
    params = BatchingParameters.from_file(out / "batching_parameters.txt")
    assert params.max_batch_size == 32
    assert params.allowed_batch_sizes == (1, 2, 4, 8, 16, 32)


def test_bad_batching_file_is_a_usage_error(tmp_path, capsys):
    batching = tmp_path / "b.txt"
    batching.write_text("max_batch_size { value: -1 }")
    assert main(["serve", "--model_name", "m", "--model_base_path",
                 str(tmp_path), "--batching_parameters_file",
                 str(batching)]) == 2
    assert "max_batch_size" in capsys.readouterr().err


def test_serve_process_end_to_end(make_base, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    batching = tmp_path / "batching_parameters.txt"
    batching.write_text(BatchingParameters(max_batch_size=8,
                                           num_batch_threads=1).to_text())
    process = subprocess.Popen(
        [sys.executable, "-m", "gnmt_tf.cli.main", "serve", "--model_base_path",
         make_base(), "--model_name", "toy", "--port", str(port),
         "--batching_parameters_file", str(batching), "--grace_seconds", "2"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        with TranslationClient(f"127.0.0.1:{port}", "toy") as client:
            assert client.wait_until_available(timeout=90) == 1
            assert client.translate(["one", "two"]) == ["ONE", "TWO"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    output = process.stdout.read()
    assert "versions [1] on 127.0.0.1:" in output
