"""Loading, hot-swapping and unloading SavedModel versions, as TF Serving does.

Models live in TF Serving's layout `BASE/NAME/VERSION/saved_model.pb` with
integer version folders. A background poller lists the folders every
`poll_interval_s`; versions wanted by the `VersionPolicy` are loaded (a new
version is loaded completely before it is served), then the served set is
switched under a lock, then versions no longer wanted are unloaded once their
in-flight requests have finished. So a request never sees a half-loaded or
vanished model.

Exporters should write a version into a temporary folder and rename it into
place. A folder without `saved_model.pb` is not a version yet; one that fails
to load (a slow copy still under way) stays LOADING, with the reason in its
status and in the log, and is retried with back-off and as soon as its files
have changed and settled (`gnmt_tf.serving.load_retry`), as long as the policy wants
it: it is served once it is complete.
"""

import contextlib
import dataclasses
import logging
import os
import threading
import time
from typing import Callable, Dict, List, Optional

from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.dynamic_batcher import DynamicBatcher
from gnmt_tf.serving.load_retry import LoadRetry
from gnmt_tf.serving.load_retry import folder_fingerprint
from gnmt_tf.serving.memory import release_free_memory

log = logging.getLogger("gnmt_tf.serving")

LOADING, AVAILABLE, UNLOADING, END = "LOADING", "AVAILABLE", "UNLOADING", "END"


class ModelNotFoundError(LookupError):
    """No such model / version is being served; maps to NOT_FOUND."""


@dataclasses.dataclass(frozen=True)
class VersionPolicy:
    """Which versions to serve: "latest" (newest `num_versions`), "all", or
    "specific" (`versions`). Parse from "latest", "latest:2", "all",
    "specific:1,3" with `VersionPolicy.parse`."""
    kind: str = "latest"
    num_versions: int = 1
    versions: tuple = ()

    @classmethod
    def parse(cls, text: str) -> "VersionPolicy":
        kind, _, arg = text.partition(":")
        try:
            if kind == "latest":
                policy = cls("latest", int(arg) if arg else 1)
                if policy.num_versions < 1:
                    raise ValueError
                return policy
            if kind == "all" and not arg:
                return cls("all")
            if kind == "specific" and arg:
                return cls("specific", versions=tuple(
                    sorted(int(v) for v in arg.split(","))))
        except ValueError:
            pass
        raise ValueError(f"bad version policy {text!r}; use latest, latest:N, "
                         "all or specific:V1,V2")

    def select(self, versions: List[int]) -> List[int]:
        if self.kind == "latest":
            return sorted(versions)[-self.num_versions:]
        if self.kind == "all":
            return sorted(versions)
        return sorted(v for v in versions if v in self.versions)


def list_versions(model_path: str) -> List[int]:
    """Integer version folders under `BASE/NAME` that hold a `saved_model.pb`."""
    try:
        names = os.listdir(model_path)
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names if n.isdigit()
                  and os.path.isfile(os.path.join(model_path, n, "saved_model.pb")))


class ServedSignature:
    """One signature of a loaded version: its `SignatureDef` and how to run it.

    `run(inputs)` calls the model directly, or through a `DynamicBatcher` when
    batching is on (then use `submit(inputs)` for a cancellable handle)."""

    def __init__(self, name, signature_def, run_fn, batching=None, label=""):
        self.name = name
        self.signature_def = signature_def
        self.run_fn = run_fn
        # Signatures with scalar (or unknown-rank) inputs, such as options
        # like `beam_size`, cannot be concatenated: they run unbatched.
        batchable = all(not i.tensor_shape.unknown_rank and i.tensor_shape.dim
                        for i in signature_def.inputs.values())
        self.batcher = (DynamicBatcher(run_fn, batching, name=f"batch-{label}")
                        if batching is not None and batchable else None)

    def stop(self):
        if self.batcher is not None:
            self.batcher.stop(drain=True)


def _rows(inputs) -> int:
    """Dim 0 of a model call's inputs (scalar inputs have none)."""
    return max((len(v) for v in inputs.values() if getattr(v, "ndim", 0)),
               default=1)


def _observed(run_fn, name, observers):
    """`run_fn` that first tells each observer `(name, rows)`."""
    def run(inputs):
        rows = _rows(inputs)
        for observe in observers:
            observe(name, rows)
        return run_fn(inputs)
    return run


class ServedVersion:
    """A loaded version, reference-counted by the requests that use it.
    `run_observers` are told `(name, rows)` before each model call."""

    def __init__(self, name, version, path, loaded, batching,
                 run_observers=()):
        self.name, self.version, self.path = name, version, path
        self._loaded = loaded  # keeps the TF objects alive
        self.signature_defs = loaded.signature_defs
        runners = loaded.runners
        if run_observers:
            runners = {k: _observed(fn, name, tuple(run_observers))
                       for k, fn in runners.items()}
        self.signatures = {
            key: ServedSignature(key, loaded.signature_defs[key], fn, batching,
                                 label=f"{name}-{version}-{key}")
            for key, fn in runners.items()}
        self._refs = 0
        self._idle = threading.Condition()

    def _ref(self, delta):
        with self._idle:
            self._refs += delta
            if self._refs == 0:
                self._idle.notify_all()

    def wait_idle(self, timeout):
        with self._idle:
            return self._idle.wait_for(lambda: self._refs == 0, timeout)

    def stop(self):
        """Stop the batchers and drop the model (its memory can be freed)."""
        for s in self.signatures.values():
            s.stop()
        self.signatures = {}
        self._loaded = None


@dataclasses.dataclass
class LoadedModel:
    """What a loader returns: `SignatureDef`s and a runner per servable
    signature (`{key: ndarray} -> {key: ndarray}`)."""
    signature_defs: dict
    runners: Dict[str, Callable]
    handle: object = None


WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAX_WARMUP_RECORDS = 1000  # TF Serving's limit


def replay_warmup(path: str, runners: Dict[str, Callable]) -> int:
    """Run the `PredictionLog` records of `path/assets.extra/
    tf_serving_warmup_requests` (TF Serving's warm-up file) through `runners`;
    returns how many ran. Raises if a record fails, as TF Serving does."""
    import tensorflow as tf

    from gnmt_tf.serving import tensor_codec
    from tensorflow_serving.apis import prediction_log_pb2

    warmup = os.path.join(path, WARMUP_FILE)
    if not os.path.exists(warmup):
        return 0
    count = 0
    for record in tf.data.TFRecordDataset(warmup).take(MAX_WARMUP_RECORDS):
        entry = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        if not entry.HasField("predict_log"):
            continue  # classify/regress/multi_inference: not served here
        request = entry.predict_log.request
        key = request.model_spec.signature_name or "serving_default"
        if key not in runners:
            raise ValueError(f"warm-up request for unknown signature {key!r}")
        runners[key]({k: tensor_codec.to_numpy(v)
                      for k, v in request.inputs.items()})
        count += 1
    return count


def load_saved_model(path: str) -> LoadedModel:
    """Load a TF2 SavedModel (tag "serve") with TensorFlow and replay its
    warm-up requests, if any."""
    import tensorflow as tf

    from gnmt_tf.serving.protos import saved_model_pb2

    try:
        import tensorflow_text  # noqa: F401  (registers SentencePiece ops)
    except ImportError:
        pass

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    metas = [m for m in proto.meta_graphs if "serve" in m.meta_info_def.tags]
    if not metas:
        raise ValueError(f"{path}: no MetaGraph tagged 'serve'")
    signature_defs = {k: v for k, v in metas[0].signature_def.items()
                      if not k.startswith("__")}
    model = tf.saved_model.load(path, tags=["serve"])

    def runner(fn, sig):
        dtypes = {k: tf.dtypes.as_dtype(v.dtype) for k, v in sig.inputs.items()}

        def run(inputs):
            out = fn(**{k: tf.convert_to_tensor(v, dtype=dtypes[k])
                        for k, v in inputs.items()})
            return {k: v.numpy() for k, v in out.items()}
        return run

    runners = {k: runner(model.signatures[k], sig)
               for k, sig in signature_defs.items() if k in model.signatures}
    try:
        warmed = replay_warmup(path, runners)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"warm-up failed: {e}") from e
    if warmed:
        log.info("%s: replayed %d warm-up requests", path, warmed)
    return LoadedModel(signature_defs, runners, handle=model)


class ModelManager:
    """Serves the versions of one or more models and keeps them up to date.

    Args:
      models: `{name: base_path}` where `base_path` holds version folders.
      policy: `VersionPolicy` (default: latest only, as TF Serving).
      policies: `{name: VersionPolicy}` for models whose policy differs
        from `policy` (a `--model_config_file` gives one per model).
      poll_interval_s: float. Seconds between folder scans; 0 = scan once.
      batching: `BatchingParameters` or None (no server-side batching).
      load_fn: `path -> LoadedModel` (default: `load_saved_model`).
      max_load_attempts: int or None. Failed loads in a row (files
        unchanged) before giving up on a version (END) until its files
        change; None (default) keeps retrying while it is wanted.
      load_retry_initial_s: float. Delay after a first failed load; it
        doubles with each failure.
      load_retry_max_s: float. Longest delay between load attempts.
      unload_timeout_s: float. How long an old version may finish requests.
    """

    def __init__(self, models: Dict[str, str],
                 policy: VersionPolicy = VersionPolicy(),
                 policies: Optional[Dict[str, VersionPolicy]] = None,
                 poll_interval_s: float = 1.0,
                 batching: Optional[BatchingParameters] = None,
                 load_fn: Callable[[str], LoadedModel] = load_saved_model,
                 max_load_attempts: Optional[int] = None,
                 load_retry_initial_s: float = 1.0,
                 load_retry_max_s: float = 60.0,
                 unload_timeout_s: float = 60.0):
        self.models = {n: os.path.abspath(p) for n, p in models.items()}
        self.policy = policy
        self.policies = dict(policies or {})
        unknown = sorted(set(self.policies) - set(self.models))
        if unknown:
            raise ValueError(f"policies for models not served: {unknown}")
        self.poll_interval_s = poll_interval_s
        self.batching = batching
        self.load_fn = load_fn
        self.max_load_attempts = max_load_attempts
        self.load_retry_initial_s = load_retry_initial_s
        self.load_retry_max_s = load_retry_max_s
        self.unload_timeout_s = unload_timeout_s
        self._lock = threading.Lock()
        self._served = {n: {} for n in self.models}   # name -> {version: SV}
        self._states = {n: {} for n in self.models}   # name -> {v: (state, err)}
        self._retries = {}                            # (name, v) -> LoadRetry
        self._stop = threading.Event()
        self._poller = None
        self._listeners = []
        self._run_observers = []

    def add_listener(self, callback: Callable[[], None]):
        """Call `callback()` after each folder scan and after `stop()`, when
        the versions served may have changed (`served_versions`)."""
        self._listeners.append(callback)

    def observe_runs(self, callback: Callable[[str, int], None]):
        """Call `callback(name, rows)` before each model call (a batch, with
        server-side batching). Affects versions loaded later: call it before
        `start()`."""
        self._run_observers.append(callback)

    def _notify(self):
        for callback in self._listeners:
            try:
                callback()
            except Exception:  # noqa: BLE001  (a listener must not stop us)
                log.exception("model listener failed")

    def start(self):
        """Load what is there now, then keep polling in a daemon thread."""
        self.refresh()
        if self.poll_interval_s > 0:
            self._poller = threading.Thread(target=self._poll, daemon=True,
                                            name="model-poller")
            self._poller.start()

    def _poll(self):
        while not self._stop.wait(self.poll_interval_s):
            try:
                self.refresh()
            except Exception:  # noqa: BLE001  (the poller must keep running)
                log.exception("model poll failed")

    def stop(self):
        """Stop polling and unload everything (in-flight requests finish)."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=self.unload_timeout_s)
        with self._lock:
            old = [sv for versions in self._served.values()
                   for sv in versions.values()]
            for versions in self._served.values():
                versions.clear()
        for sv in old:
            self._unload(sv)
        self._notify()

    def _set_state(self, name, version, state, error=None):
        with self._lock:
            self._states[name][version] = (state, error)

    def refresh(self):
        """One scan: load wanted versions, switch, unload unwanted ones
        (listeners are called after each model's)."""
        for name, base in self.models.items():
            self._refresh_model(name, base)
            self._notify()

    def _refresh_model(self, name, base):
        policy = self.policies.get(name, self.policy)
        wanted = policy.select(list_versions(base))
        if not wanted and self._served[name]:
            return  # folder emptied or unreadable: keep serving
        for version in wanted:
            if version not in self._served[name]:
                self._load(name, version, os.path.join(base, str(version)))
        self._forget_unwanted(name, wanted)
        with self._lock:
            served = self._served[name]
            if not any(v in served for v in wanted):
                return  # nothing new loaded yet: keep the old ones
            stale = [served.pop(v) for v in list(served) if v not in wanted]
            for sv in stale:
                self._states[name][sv.version] = (UNLOADING, None)
        for sv in stale:
            self._unload(sv)

    def _load(self, name, version, path):
        key = (name, version)
        retry = self._retries.get(key)
        if retry is None:
            retry = self._retries[key] = LoadRetry(
                self.load_retry_initial_s, self.load_retry_max_s,
                self.max_load_attempts)
        fingerprint = folder_fingerprint(path)
        if not retry.should_try(fingerprint, time.monotonic()):
            return
        retry.started(fingerprint)
        self._set_state(name, version, LOADING)
        try:
            loaded = self.load_fn(path)
            sv = ServedVersion(name, version, path, loaded, self.batching,
                               self._run_observers)
        except Exception as e:  # noqa: BLE001  (a bad export must not kill us)
            reason = next((line for line in str(e).splitlines() if line),
                          type(e).__name__)
            error = f"load failed (attempt {retry.attempts}): {reason}"
            delay = retry.failed(time.monotonic())
            if self.poll_interval_s <= 0:
                then = "not retried (no polling)"
            elif delay is None:
                then = "giving up until its files change"
            else:
                then = f"retrying in {delay:.1f} s, or once its files change"
            log.warning("loading %s version %d failed (attempt %d; %s): %s",
                        name, version, retry.attempts, then, reason)
            retrying = delay is not None and self.poll_interval_s > 0
            self._set_state(name, version, LOADING if retrying else END,
                            error)
            return
        del self._retries[key]
        with self._lock:
            self._served[name][version] = sv
            self._states[name][version] = (AVAILABLE, None)
        log.info("serving %s version %d from %s", name, version, path)

    def _forget_unwanted(self, name, wanted):
        """Stop retrying versions the policy no longer wants (END)."""
        for key in [k for k in self._retries
                    if k[0] == name and k[1] not in wanted]:
            del self._retries[key]
            with self._lock:
                state, error = self._states[name].get(key[1], (None, None))
                if state == LOADING:
                    self._states[name][key[1]] = (END, error)

    def _unload(self, sv):
        if not sv.wait_idle(self.unload_timeout_s):
            log.warning("%s version %d still busy after %.0f s; unloading",
                        sv.name, sv.version, self.unload_timeout_s)
        sv.stop()
        self._set_state(sv.name, sv.version, END)
        release_free_memory()  # else the RSS keeps what the version used
        log.info("unloaded %s version %d", sv.name, sv.version)

    @contextlib.contextmanager
    def acquire(self, name: str, version: Optional[int] = None):
        """Hold a served version (the latest if `version` is None) for one
        request; it is not unloaded before the `with` block ends.

        Raises:
          ModelNotFoundError: unknown model or version not being served.
        """
        with self._lock:
            if name not in self._served:
                raise ModelNotFoundError(f"model {name!r} is not served "
                                         f"(serving {sorted(self._served)})")
            versions = self._served[name]
            if not versions:
                raise ModelNotFoundError(f"model {name!r} has no version loaded")
            if version is None:
                sv = versions[max(versions)]
            elif version in versions:
                sv = versions[version]
            else:
                raise ModelNotFoundError(
                    f"model {name!r} version {version} is not served "
                    f"(serving {sorted(versions)})")
            sv._ref(+1)
        try:
            yield sv
        finally:
            sv._ref(-1)

    def status(self, name: str, version: Optional[int] = None) -> list:
        """`[(version, state, error or None)]` for GetModelStatus.

        Raises:
          ModelNotFoundError: unknown model, or a version never seen.
        """
        with self._lock:
            if name not in self._states:
                raise ModelNotFoundError(f"model {name!r} is not served")
            states = dict(self._states[name])
        if version is not None:
            if version not in states:
                raise ModelNotFoundError(
                    f"model {name!r} has no version {version}")
            states = {version: states[version]}
        return [(v, s, e) for v, (s, e) in sorted(states.items())]

    def served_versions(self, name: str) -> List[int]:
        """Versions of `name` being served now."""
        with self._lock:
            return sorted(self._served.get(name, {}))

    def batchers(self) -> list:
        """`(name, version, signature, DynamicBatcher)` of everything served."""
        with self._lock:
            return [(n, v, k, s.batcher)
                    for n, versions in self._served.items()
                    for v, sv in versions.items()
                    for k, s in sv.signatures.items() if s.batcher is not None]


def wait_until_served(manager: ModelManager, name: str, version: int,
                      timeout: float = 30.0) -> bool:
    """Poll until `version` of `name` is served (for tests and tools)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if version in manager.served_versions(name):
            return True
        time.sleep(0.05)
    return False
