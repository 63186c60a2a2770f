"""The document pipeline bound to a model, and its HTTP gateway.

`pipeline/` holds the text steps and stays free of TensorFlow and of the
serving client; this package binds them to a model (see "Where the gateway
lives" in docs/design.md):

- `gateway.backends`: `ModelBackend` (a model directory in this process)
  and `ServerBackend` (TF Serving / `gnmt-tf serve` over gRPC), each a
  translate callable returning `pipeline.results.SentenceResult`s;
- `gateway.pipelines`: `Pipeline` = `pipeline.Pipeline` plus
  `from_model_dir` / `from_server`;
- `gateway.service`: the HTTP service (FastAPI on uvicorn):
  `POST /v1/translate`, `GET /v1/languages`, `GET /healthz`;
- `gateway.cli`: `gnmt-tf gateway`, and the document mode of
  `gnmt-tf translate` (`--format`, `--src-lang auto`, ...).
- `gateway.batch` / `gateway.batch_cli`: `gnmt-tf translate-documents`,
  a resumable batch job over many documents with a manifest.

Example:
```python
from gateway import Pipeline

nmt = Pipeline.from_model_dir("runs/en-de")
nmt.translate_document("<p>A <b>big</b> dog runs.</p>", src_lang="auto",
                       tgt_lang="de", format="html")
```

Names load on first use (PEP 562), so `gnmt-tf --help`, which imports
`gateway.cli`, loads neither lxml, lingua nor gRPC.
"""

import importlib

_LAZY_NAMES = {"Pipeline": "gateway.pipelines",
               "ModelBackend": "gateway.backends",
               "ServerBackend": "gateway.backends"}

__all__ = sorted(_LAZY_NAMES)


def __getattr__(name):
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
