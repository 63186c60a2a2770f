"""The document pipeline bound to a model, and its HTTP gateway.

`pipeline/` holds the text steps and stays free of TensorFlow and of the
serving client; this package binds them to a model (see "Where the gateway
lives" in docs/design.md):

- `gnmt_tf.gateway.backends`: `ModelBackend` (a model directory in this process)
  and `ServerBackend` (TF Serving / `gnmt-tf serve` over gRPC), each a
  translate callable returning `gnmt_tf.pipeline.results.SentenceResult`s;
- `gnmt_tf.gateway.pipelines`: `Pipeline` = `pipeline.Pipeline` plus
  `from_model_dir` / `from_server`;
- `gnmt_tf.gateway.service`: the HTTP service (FastAPI on uvicorn):
  `POST /v1/translate`, `GET /v1/languages`, `GET /healthz`;
- `gnmt_tf.gateway.cli`: `gnmt-tf gateway`, and the document mode of
  `gnmt-tf translate` (`--format`, `--src-lang auto`, ...).
- `gnmt_tf.gateway.batch` / `gnmt_tf.gateway.batch_cli`: `gnmt-tf translate-documents`,
  a resumable batch job over many documents with a manifest.

Example:
```python
from gnmt_tf.gateway import Pipeline

nmt = Pipeline.from_model_dir("runs/en-de")
nmt.translate_document("<p>A <b>big</b> dog runs.</p>", src_lang="auto",
                       tgt_lang="de", format="html")
```

Names load on first use (PEP 562), so `gnmt-tf --help`, which imports
`gnmt_tf.gateway.cli`, loads neither lxml, lingua nor gRPC.
"""

import importlib

_LAZY_NAMES = {"Pipeline": "gnmt_tf.gateway.pipelines",
               "ModelBackend": "gnmt_tf.gateway.backends",
               "ServerBackend": "gnmt_tf.gateway.backends"}

__all__ = sorted(_LAZY_NAMES)


def __getattr__(name):
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
