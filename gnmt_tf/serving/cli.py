"""`gnmt-tf serve`: run the local model server (gRPC, REST, metrics), or
write the config files for `tensorflow_model_server`.

    gnmt-tf serve --model_base_path /models/gnmt --model_name gnmt --port 8500 \\
        [--rest_api_port 8501] [--monitoring_config_file monitoring.config] \\
        [--batching_parameters_file batching_parameters.txt] [--host 127.0.0.1]
    gnmt-tf serve --model_config_file models.config --port 8500 ...
    gnmt-tf serve --emit-config DIR --model_name gnmt --model_base_path /models/gnmt

Flag names and config files follow `tensorflow_model_server`'s
(`gnmt_tf.serving.server_config`): `--rest_api_port 0`, the default, means no REST
API. Numeric flags are checked when parsed (usage error, exit 2), the config
files and ports before any model loads: a bad file or a port in use fails at
once with one line, exit 2. Nothing heavy is imported until `run`.
"""

import argparse
import errno
import math
import os
import socket
import sys

_MAX_INT32 = 2**31 - 1
_MAX_SECONDS = 24 * 3600.0


# These argparse types mirror gnmt_tf/flags/arg_types.py: `serving` may not
# import `gnmt_tf` (.importlinter), so that the server stays free of the
# TensorFlow-side packages.
def _int_in(low, high=_MAX_INT32):
    """argparse type: an integer in [low, high]."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be in {low}..{high}, got {value}")
        return value
    return parse


def _seconds(text):
    """argparse type: seconds, finite, in [0, 1 day]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and 0 <= value <= _MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"must be in 0..{_MAX_SECONDS:.0f} seconds, got {text}")
    return value


def register(subparsers):
    parser = subparsers.add_parser(
        "serve", help="serve SavedModels over TF Serving's gRPC and REST "
                      "APIs, or emit tensorflow_model_server config files")
    parser.add_argument("--model_base_path",
                        help="folder holding integer version folders")
    parser.add_argument("--model_name")
    parser.add_argument("--model_config_file",
                        help="TF Serving models.config (a model_config_list "
                             "text proto) instead of --model_name and "
                             "--model_base_path: several models, each with "
                             "its version policy")
    parser.add_argument("--port", type=_int_in(0, 65535), default=8500,
                        help="gRPC port; 0 picks a free port")
    parser.add_argument("--rest_api_port", type=_int_in(0, 65535), default=0,
                        help="port of TF Serving's REST API (usually 8501); "
                             "0 (the default) serves none")
    parser.add_argument("--rest_api_num_threads", type=_int_in(1, 4096),
                        default=16, help="REST handler threads")
    parser.add_argument("--rest_api_timeout_in_ms", type=_int_in(0),
                        default=30000,
                        help="deadline of each REST request; 0 = none")
    parser.add_argument("--monitoring_config_file",
                        help="TF Serving monitoring config (prometheus_config "
                             "{ enable: true path: ... }): serve Prometheus "
                             "metrics at that path of the REST port")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to bind (default: loopback only)")
    parser.add_argument("--enable_batching", action="store_true",
                        help="server-side dynamic batching (implied by "
                             "--batching_parameters_file; default "
                             "parameters pad to batch sizes 1,2,4,...,32)")
    parser.add_argument("--batching_parameters_file",
                        help="TF Serving BatchingParameters text proto")
    parser.add_argument("--model_version_policy", default="latest",
                        help="latest, latest:N, all or specific:V1,V2 (of "
                             "--model_name; a --model_config_file has its "
                             "own)")
    parser.add_argument("--file_system_poll_wait_seconds", type=_seconds,
                        default=1.0, help="version folder scan period; 0 = once")
    parser.add_argument("--max_message_bytes", type=_int_in(1),
                        default=64 * 1024 * 1024)
    parser.add_argument("--grpc_threads", type=_int_in(1, 4096), default=64,
                        help="handler threads (concurrent requests)")
    parser.add_argument("--max_concurrent_rpcs", type=_int_in(1),
                        default=None,
                        help="more concurrent requests get RESOURCE_EXHAUSTED "
                             "(clients retry)")
    parser.add_argument("--max_string_bytes", type=_int_in(1), default=4096,
                        help="longest input sentence, in UTF-8 bytes")
    parser.add_argument("--max_request_rows", type=_int_in(1), default=4096,
                        help="most sentences per request")
    parser.add_argument("--max_request_padded_bytes", type=_int_in(1),
                        help="most rows x longest sentence (UTF-8 bytes) per "
                             "request, which bounds the memory one request "
                             "takes; over it: INVALID_ARGUMENT (default "
                             "262144 = 256 KiB)")
    parser.add_argument("--max_rows_per_run", type=_int_in(1),
                        help="without batching, requests run in chunks of at "
                             "most this many rows (default 32); an expired "
                             "request stops after its current chunk")
    parser.add_argument("--grace_seconds", type=_seconds, default=10.0,
                        help="drain time for in-flight requests on shutdown")
    parser.add_argument("--emit-config", "--emit_config", dest="emit_config",
                        metavar="DIR",
                        help="write models.config, batching_parameters.txt "
                             "and monitoring.config for "
                             "tensorflow_model_server to DIR and exit")
    parser.set_defaults(func=run)


DEFAULT_ALLOWED_SIZES = (1, 2, 4, 8, 16, 32)


def check_port_free(host: str, port: int):
    """Raise `OSError` with one line if `host:port` cannot be bound (as the
    gRPC server binds it: SO_REUSEADDR, no SO_REUSEPORT). Port 0 passes."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise OSError(f"cannot resolve --host {host}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            reason = ("it is in use" if e.errno == errno.EADDRINUSE
                      else e.strerror)
            raise OSError(f"cannot serve on {host}:{port}: {reason} (choose "
                          "another --port)") from None


def _batching(args):
    from gnmt_tf.serving.batching_config import BatchingParameters

    if args.batching_parameters_file:
        return BatchingParameters.from_file(args.batching_parameters_file)
    if args.enable_batching or args.emit_config:
        # Padded to a few sizes: TensorFlow keeps memory for every batch
        # shape it runs, so 32 different sizes make RSS grow for a long
        # time (docs/benchmarks.md, "Serving under load").
        return BatchingParameters(allowed_batch_sizes=DEFAULT_ALLOWED_SIZES)
    return None


def emit_config(out_dir, model_name, model_base_path, policy_text="latest",
                batching=None):
    """Write `models.config` (a `ModelServerConfig` text proto),
    `batching_parameters.txt` and `monitoring.config` (Prometheus metrics at
    TF Serving's default path) to `out_dir`; returns the
    `tensorflow_model_server` command line that uses them (gRPC on 8500,
    REST and metrics on 8501). `gnmt-tf serve` reads the same files."""
    from gnmt_tf.serving import server_config
    from gnmt_tf.serving.batching_config import BatchingParameters
    from gnmt_tf.serving.model_manager import VersionPolicy

    model = server_config.ModelConfig(model_name,
                                      os.path.abspath(model_base_path),
                                      VersionPolicy.parse(policy_text))
    batching = batching or BatchingParameters()
    os.makedirs(out_dir, exist_ok=True)
    paths = {name: os.path.abspath(os.path.join(out_dir, name)) for name in
             ("models.config", "batching_parameters.txt",
              "monitoring.config")}
    texts = {"models.config": server_config.model_config_text([model]),
             "batching_parameters.txt": batching.to_text(),
             "monitoring.config": server_config.monitoring_config_text()}
    for name, text in texts.items():
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(text)
    return (f"tensorflow_model_server --port=8500 --rest_api_port=8501 "
            f"--model_config_file={paths['models.config']} "
            f"--enable_batching "
            f"--batching_parameters_file={paths['batching_parameters.txt']} "
            f"--monitoring_config_file={paths['monitoring.config']} "
            f"--file_system_poll_wait_seconds=1")


def _error(error) -> int:
    print(f"gnmt-tf serve: error: {error}", file=sys.stderr, flush=True)
    return 2


def _models(args):
    """`[ModelConfig]` from --model_config_file or --model_name and
    --model_base_path. Raises `ValueError` (a usage error)."""
    from gnmt_tf.serving import server_config
    from gnmt_tf.serving.model_manager import VersionPolicy

    if args.model_config_file:
        if args.model_name or args.model_base_path:
            raise ValueError("give --model_config_file or --model_name and "
                             "--model_base_path, not both")
        models = server_config.read_model_config(args.model_config_file)
    else:
        if not (args.model_name and args.model_base_path):
            raise ValueError("--model_name and --model_base_path (or "
                             "--model_config_file) are required")
        models = [server_config.ModelConfig(
            args.model_name, args.model_base_path,
            VersionPolicy.parse(args.model_version_policy))]
    for model in models:
        if not os.path.isdir(model.base_path):
            raise ValueError(f"the base path of {model.name}, "
                             f"{model.base_path}, is not a directory")
    return models


def _monitoring_path(args):
    """The metrics path of --monitoring_config_file (None: no metrics)."""
    from gnmt_tf.serving import server_config

    if not args.monitoring_config_file:
        return None
    path = server_config.read_monitoring_config(args.monitoring_config_file)
    if path and not args.rest_api_port:
        raise ValueError("the metrics are served on the REST port: "
                         "--monitoring_config_file needs --rest_api_port")
    return path


def run(args) -> int:
    batching = _batching(args)
    if args.emit_config:
        if not (args.model_name and args.model_base_path):
            return _error("--emit-config needs --model_name and "
                          "--model_base_path")
        command = emit_config(args.emit_config, args.model_name,
                              args.model_base_path, args.model_version_policy,
                              batching)
        written = [os.path.join(args.emit_config, name) for name in
                   ("models.config", "batching_parameters.txt",
                    "monitoring.config")]
        print(f"wrote {', '.join(written)}; run:\n  {command}")
        return 0
    try:
        models = _models(args)
        monitoring_path = _monitoring_path(args)
        check_port_free(args.host, args.port)
        if args.rest_api_port:
            check_port_free(args.host, args.rest_api_port)
    except (OSError, ValueError) as e:
        return _error(e)
    import logging
    import signal

    from gnmt_tf.serving import request_runner
    from gnmt_tf.serving import validation
    from gnmt_tf.serving.model_manager import ModelManager
    from gnmt_tf.serving.server import ModelServer

    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    manager = ModelManager(
        {m.name: m.base_path for m in models},
        policies={m.name: m.policy for m in models},
        poll_interval_s=args.file_system_poll_wait_seconds, batching=batching)
    server = ModelServer(
        manager, host=args.host, port=args.port,
        max_message_bytes=args.max_message_bytes,
        num_threads=args.grpc_threads,
        max_concurrent_rpcs=args.max_concurrent_rpcs,
        limits=validation.RequestLimits(
            max_string_bytes=args.max_string_bytes,
            max_rows=args.max_request_rows,
            max_padded_bytes=(args.max_request_padded_bytes
                              or validation.DEFAULT_MAX_PADDED_BYTES)),
        max_rows_per_run=(args.max_rows_per_run
                          or request_runner.DEFAULT_MAX_ROWS_PER_RUN),
        rest_port=args.rest_api_port or None,
        rest_threads=args.rest_api_num_threads,
        rest_timeout_s=args.rest_api_timeout_in_ms / 1000 or None,
        monitoring_path=monitoring_path)
    try:
        server.start()  # binds before loading: a port taken since fails fast
    except OSError as e:
        return _error(e)
    served = []
    for model in models:
        versions = manager.served_versions(model.name)
        if not versions:
            print(f"gnmt-tf serve: warning: no version of {model.name} "
                  f"loaded yet from {model.base_path}", file=sys.stderr,
                  flush=True)
        served.append(f"{model.name} versions {versions}")
    where = f"{server.target}" + (f", REST on {server.rest_url}"
                                  if server.rest_url else "")
    if monitoring_path:
        where += f" (metrics at {monitoring_path})"
    print(f"gnmt-tf serve: {'; '.join(served)} on {where}"
          + (" (batching)" if batching else ""), file=sys.stderr, flush=True)

    def shutdown(signum, frame):
        import threading
        threading.Thread(target=server.stop, args=(args.grace_seconds,),
                         daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    while not server.wait(1.0):
        pass
    return 0
