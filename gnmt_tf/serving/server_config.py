"""TF Serving's config files, read and written as text protos.

- `models.config` (`--model_config_file`): a `ModelServerConfig` with a
  `model_config_list`, one `config { name base_path model_platform
  model_version_policy }` per model, parsed with `text_format` and the
  `tensorflow_serving.config` protos of tensorflow-serving-api.
  `read_model_config` gives one `ModelConfig` per model.
- `monitoring.config` (`--monitoring_config_file`): a `MonitoringConfig`,
  `prometheus_config { enable: true path: "/monitoring/prometheus/metrics" }`.
  tensorflow-serving-api does not ship its proto, so `_monitoring_config_class`
  builds the message from its two-field definition (TF Serving's
  `tensorflow_serving/config/monitoring_config.proto`) in a descriptor pool of
  its own. `read_monitoring_config` gives the metrics path, or None.

Both files are written by `gnmt-tf serve --emit-config` and read by `gnmt-tf
serve` itself as well as by `tensorflow_model_server`.
"""

import dataclasses
import functools
from typing import List, Optional

from google.protobuf import descriptor_pb2
from google.protobuf import descriptor_pool
from google.protobuf import message_factory
from google.protobuf import text_format

from gnmt_tf.serving.model_manager import VersionPolicy

DEFAULT_PROMETHEUS_PATH = "/monitoring/prometheus/metrics"  # TF Serving's


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One model of a `model_config_list`."""
    name: str
    base_path: str
    policy: VersionPolicy = VersionPolicy()


def _read(path, message, what):
    try:
        with open(path, encoding="utf-8") as f:
            text_format.Parse(f.read(), message)
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror}") from None
    except text_format.ParseError as e:
        raise ValueError(f"{what} {path}: {e}") from None
    return message


def _policy(proto) -> VersionPolicy:
    kind = proto.WhichOneof("policy_choice")
    if kind == "all":
        return VersionPolicy("all")
    if kind == "specific":
        if not proto.specific.versions:
            raise ValueError("a specific version policy lists no versions")
        return VersionPolicy("specific",
                             versions=tuple(sorted(proto.specific.versions)))
    # latest (TF Serving's default, 1 version unless told otherwise)
    return VersionPolicy("latest", proto.latest.num_versions or 1)


def read_model_config(path) -> List[ModelConfig]:
    """The models of a `models.config` file.

    Raises:
      ValueError: unreadable, not a text `ModelServerConfig`, no
        `model_config_list`, a model without name or base_path, a name twice,
        a platform other than "tensorflow", or version labels (not
        supported).
    """
    from gnmt_tf.serving.protos import model_server_config_pb2

    config = _read(path, model_server_config_pb2.ModelServerConfig(),
                   "--model_config_file")
    if config.WhichOneof("config") != "model_config_list" \
            or not config.model_config_list.config:
        raise ValueError(f"--model_config_file {path}: no model in "
                         "model_config_list")
    models, names = [], set()
    for model in config.model_config_list.config:
        where = f"--model_config_file {path}: model {model.name!r}"
        if not model.name or not model.base_path:
            raise ValueError(f"{where}: name and base_path are required")
        if model.name in names:
            raise ValueError(f"{where} is listed twice")
        if model.model_platform not in ("", "tensorflow"):
            raise ValueError(f"{where}: model_platform "
                             f"{model.model_platform!r} is not served (only "
                             "tensorflow)")
        if model.version_labels:
            raise ValueError(f"{where}: version_labels are not supported by "
                             "gnmt-tf serve")
        try:
            policy = _policy(model.model_version_policy)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        names.add(model.name)
        models.append(ModelConfig(model.name, model.base_path, policy))
    return models


def model_config_text(models: List[ModelConfig]) -> str:
    """A `models.config` text proto for `models`."""
    from gnmt_tf.serving.protos import model_server_config_pb2

    config = model_server_config_pb2.ModelServerConfig()
    for model in models:
        entry = config.model_config_list.config.add()
        entry.name = model.name
        entry.base_path = model.base_path
        entry.model_platform = "tensorflow"
        policy = entry.model_version_policy
        if model.policy.kind == "latest":
            policy.latest.num_versions = model.policy.num_versions
        elif model.policy.kind == "all":
            policy.all.SetInParent()
        else:
            policy.specific.versions.extend(model.policy.versions)
    return text_format.MessageToString(config)


@functools.lru_cache(maxsize=None)
def _monitoring_config_class():
    """The `tensorflow.serving.MonitoringConfig` message class."""
    field = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(
        name="tensorflow_serving/config/monitoring_config.proto",
        package="tensorflow.serving", syntax="proto3")
    prometheus = f.message_type.add(name="PrometheusConfig")
    prometheus.field.add(name="enable", number=1, type=field.TYPE_BOOL,
                         label=field.LABEL_OPTIONAL)
    prometheus.field.add(name="path", number=2, type=field.TYPE_STRING,
                         label=field.LABEL_OPTIONAL)
    monitoring = f.message_type.add(name="MonitoringConfig")
    monitoring.field.add(name="prometheus_config", number=1,
                         type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
                         type_name=".tensorflow.serving.PrometheusConfig")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tensorflow.serving.MonitoringConfig"))


def read_monitoring_config(path) -> Optional[str]:
    """The path the Prometheus metrics are served at, or None when the file
    does not enable them (an empty path is TF Serving's default)."""
    config = _read(path, _monitoring_config_class()(),
                   "--monitoring_config_file")
    prometheus = config.prometheus_config
    if not prometheus.enable:
        return None
    path_ = prometheus.path or DEFAULT_PROMETHEUS_PATH
    if not path_.startswith("/") or path_.startswith("/v1/"):
        raise ValueError(f"--monitoring_config_file {path}: the metrics path "
                         f"{path_!r} must start with / and not with /v1/")
    return path_


def monitoring_config_text(path: str = DEFAULT_PROMETHEUS_PATH) -> str:
    """A `monitoring.config` text proto enabling the metrics at `path`."""
    config = _monitoring_config_class()()
    config.prometheus_config.enable = True
    config.prometheus_config.path = path
    return text_format.MessageToString(config)
