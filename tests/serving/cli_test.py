"""`gnmt-tf serve`: config emission and real server processes."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from google.protobuf import text_format

from gnmt_tf.cli.main import main
from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.client import TranslationClient
from gnmt_tf.serving import server_config
from gnmt_tf.serving.protos import model_server_config_pb2

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
    command = capsys.readouterr().out
    assert "tensorflow_model_server" in command
    assert "--rest_api_port=8501" in command
    monitoring = out / "monitoring.config"
    assert f"--monitoring_config_file={monitoring}" in command
    assert server_config.read_monitoring_config(monitoring) == \
        "/monitoring/prometheus/metrics"
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


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http_get(url):
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as response:
        return response.read().decode("utf-8")


def test_serve_reads_model_and_monitoring_config_files(make_base, tmp_path):
    """Two models from a models.config (one pinned to version 1), REST and
    metrics as configured, health SERVING, through a real process."""
    import grpc
    from grpc_health.v1 import health_pb2
    from grpc_health.v1 import health_pb2_grpc

    from gnmt_tf.serving.model_manager import VersionPolicy

    config = tmp_path / "models.config"
    config.write_text(server_config.model_config_text([
        server_config.ModelConfig("pinned", make_base((1, 2)),
                                  VersionPolicy("specific", versions=(1,))),
        server_config.ModelConfig("latest", make_base((1, 2)))]))
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text(server_config.monitoring_config_text("/metrics"))
    port, rest_port = _free_port(), _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gnmt_tf.cli.main", "serve",
         "--model_config_file", str(config), "--port", str(port),
         "--rest_api_port", str(rest_port), "--monitoring_config_file",
         str(monitoring), "--grace_seconds", "2"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        with TranslationClient(f"127.0.0.1:{port}", "pinned") as client:
            assert client.wait_until_available(timeout=90) == 1
            assert client.translate(["one"]) == ["ONE"]
        rest = f"http://127.0.0.1:{rest_port}"
        status = json.loads(_http_get(f"{rest}/v1/models/pinned"))
        assert [s["version"] for s in status["model_version_status"]] == [
            "1"]
        import urllib.request
        request = urllib.request.Request(
            f"{rest}/v1/models/latest:predict",
            data=json.dumps({"instances": ["two"]}).encode(),
            headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=30) as response:
            assert json.loads(response.read()) == {"predictions": [
                {"translations": "v2 TWO", "scores": 3.0}]}
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "pinned", "latest"):
                assert health.Check(health_pb2.HealthCheckRequest(
                    service=service), timeout=10).status == \
                    health_pb2.HealthCheckResponse.SERVING
        metrics = _http_get(f"{rest}/metrics")
        assert ('gnmt_tf_serving_requests_total{code="OK",method="predict",'
                'model="latest",protocol="rest"} 1.0') in metrics
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    output = process.stdout.read()
    assert (f"pinned versions [1]; latest versions [2] on 127.0.0.1:{port}, "
            f"REST on http://127.0.0.1:{rest_port} (metrics at /metrics)"
            ) in output


@pytest.mark.parametrize("args, message", [
    (["--model_config_file", "models.config", "--model_name", "m"],
     "not both"),
    (["--model_name", "m"], "are required"),
    (["--model_name", "m", "--model_base_path", "/nonexistent"],
     "is not a directory"),
    (["--model_config_file", "/nonexistent/models.config"],
     "cannot read --model_config_file"),
    (["--model_config_file", "{bad}"], "version_labels are not supported"),
    (["--model_name", "m", "--model_base_path", "{tmp}",
      "--monitoring_config_file", "{monitoring}"],
     "--monitoring_config_file needs --rest_api_port"),
])
def test_config_errors_are_one_line(tmp_path, capsys, args, message):
    bad = tmp_path / "bad.config"
    bad.write_text("model_config_list { config { name: 'a' base_path: '/a' "
                   "version_labels { key: 'stable' value: 1 } } }")
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text(server_config.monitoring_config_text())
    args = [a.format(bad=bad, tmp=tmp_path, monitoring=monitoring)
            for a in args]
    assert main(["serve"] + args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gnmt-tf serve: error: ") and message in err
    assert len(err.splitlines()) == 1


def _serve(args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", "serve"] + args,
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)


def test_port_in_use_fails_at_once_with_one_line(make_base):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        start = time.monotonic()
        result = _serve(["--model_base_path", make_base(), "--model_name",
                         "toy", "--port", str(port)])
        elapsed = time.monotonic() - start
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"gnmt-tf serve: error: cannot serve on 127.0.0.1:{port}: it is in "
        "use (choose another --port)"]
    assert elapsed < 10  # no model was loaded


def test_server_binds_before_loading_models(tmp_path):
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "saved_model.pb").write_bytes(b"")
    loads = []
    manager = ModelManager({"m": str(tmp_path / "m")},
                           load_fn=lambda path: loads.append(path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = ModelServer(manager, port=taken.getsockname()[1])
        with pytest.raises(OSError, match="cannot bind"):
            server.start()
    assert loads == []


@pytest.mark.parametrize("flag, value, message", [
    ("--port", "99999", "must be in 0..65535, got 99999"),
    ("--port", "-1", "must be in 0..65535"),
    ("--port", "85OO", "must be an integer, got '85OO'"),
    ("--rest_api_port", "70000", "must be in 0..65535, got 70000"),
    ("--rest_api_num_threads", "0", "must be in 1..4096"),
    ("--rest_api_timeout_in_ms", "-1", "must be in 0.."),
    ("--grpc_threads", "0", "must be in 1..4096"),
    ("--max_concurrent_rpcs", "0", "must be in 1.."),
    ("--max_message_bytes", str(2**31), "must be in 1..2147483647"),
    ("--max_string_bytes", "0", "must be in 1.."),
    ("--max_request_rows", "-5", "must be in 1.."),
    ("--max_request_padded_bytes", "0", "must be in 1.."),
    ("--max_rows_per_run", "0", "must be in 1.."),
    ("--file_system_poll_wait_seconds", "-1", "must be in 0..86400 seconds"),
    ("--file_system_poll_wait_seconds", "inf", "must be in 0..86400"),
    ("--grace_seconds", "nan", "must be in 0..86400 seconds, got nan"),
    ("--grace_seconds", "soon", "must be a number of seconds"),
])
def test_numeric_flags_are_checked(tmp_path, capsys, flag, value, message):
    with pytest.raises(SystemExit) as info:  # a usage error, while parsing
        main(["serve", "--model_name", "m", "--model_base_path",
              str(tmp_path / "missing"), flag, value])
    assert info.value.code == 2
    assert f"argument {flag}: {message}" in capsys.readouterr().err
