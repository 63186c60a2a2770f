"""TF Serving's models.config and monitoring.config, read and written."""

import pytest

from gnmt_tf.serving import server_config
from gnmt_tf.serving.model_manager import VersionPolicy
from gnmt_tf.serving.server_config import ModelConfig

MODELS = """
model_config_list {
  config { name: "gnmt" base_path: "/models/gnmt" model_platform: "tensorflow"
           model_version_policy { specific { versions: 3 versions: 1 } } }
  config { name: "ts" base_path: "/models/ts"
           model_version_policy { latest { num_versions: 2 } } }
  config { name: "all" base_path: "/models/all"
           model_version_policy { all {} } }
  config { name: "plain" base_path: "/models/plain" }
}
"""


def test_read_model_config(tmp_path):
    path = tmp_path / "models.config"
    path.write_text(MODELS)
    assert server_config.read_model_config(path) == [
        ModelConfig("gnmt", "/models/gnmt", VersionPolicy(
            "specific", versions=(1, 3))),
        ModelConfig("ts", "/models/ts", VersionPolicy("latest", 2)),
        ModelConfig("all", "/models/all", VersionPolicy("all")),
        ModelConfig("plain", "/models/plain", VersionPolicy("latest", 1)),
    ]


def test_written_model_config_reads_back(tmp_path):
    models = [ModelConfig("a", "/m/a", VersionPolicy("all")),
              ModelConfig("b", "/m/b", VersionPolicy("latest", 3)),
              ModelConfig("c", "/m/c", VersionPolicy("specific",
                                                     versions=(2,)))]
    path = tmp_path / "models.config"
    path.write_text(server_config.model_config_text(models))
    assert server_config.read_model_config(path) == models


@pytest.mark.parametrize("text, message", [
    ("model_config_list { config { name: 'a' } }", "base_path are required"),
    ("model_config_list { config { name: 'a' base_path: '/a' } "
     "config { name: 'a' base_path: '/b' } }", "listed twice"),
    ("model_config_list { config { name: 'a' base_path: '/a' "
     "model_platform: 'pytorch' } }", "only tensorflow"),
    ("model_config_list { config { name: 'a' base_path: '/a' "
     "version_labels { key: 'stable' value: 1 } } }",
     "version_labels are not supported"),
    ("model_config_list { config { name: 'a' base_path: '/a' "
     "model_version_policy { specific {} } } }", "lists no versions"),
    ("model_config_list {}", "no model"),
    ("model_config_list { config { nmae: 'a' } }", "nmae"),
])
def test_bad_model_configs(tmp_path, text, message):
    path = tmp_path / "models.config"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        server_config.read_model_config(path)


def test_missing_file_is_one_line():
    with pytest.raises(ValueError, match="cannot read --model_config_file"):
        server_config.read_model_config("/nonexistent/models.config")


@pytest.mark.parametrize("text, path", [
    ('prometheus_config { enable: true path: "/metrics" }', "/metrics"),
    ("prometheus_config { enable: true }", "/monitoring/prometheus/metrics"),
    ('prometheus_config { path: "/metrics" }', None),
    ("", None),
])
def test_read_monitoring_config(tmp_path, text, path):
    config = tmp_path / "monitoring.config"
    config.write_text(text)
    assert server_config.read_monitoring_config(config) == path


def test_monitoring_config_round_trip_and_errors(tmp_path):
    config = tmp_path / "monitoring.config"
    config.write_text(server_config.monitoring_config_text())
    assert server_config.read_monitoring_config(config) == \
        server_config.DEFAULT_PROMETHEUS_PATH
    config.write_text('prometheus_config { enable: true path: "/v1/x" }')
    with pytest.raises(ValueError, match="must start with /"):
        server_config.read_monitoring_config(config)
    config.write_text("prometheus_config { enabled: true }")
    with pytest.raises(ValueError, match="--monitoring_config_file"):
        server_config.read_monitoring_config(config)
