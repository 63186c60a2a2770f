"""`Pipeline` bound to a model: `from_model_dir` (in process) and
`from_server` (gRPC)."""

from typing import Optional, Sequence

from gnmt_tf.pipeline.cache import TranslationCache
from gnmt_tf.pipeline.pipeline import Pipeline as _Pipeline


def _cache(cache_mb: Optional[float]) -> Optional[TranslationCache]:
    return None if cache_mb is None else TranslationCache(cache_mb)


class Pipeline(_Pipeline):
    """`pipeline.Pipeline` with constructors for a model directory and a
    served model; the backend (`gnmt_tf.gateway.backends`) is `self.backend`.

    Example:
      >>> nmt = Pipeline.from_model_dir("runs/en-de")
      >>> nmt.translate_document("<p>A <b>dog</b> runs.</p>", "en", "de",
      ...                        format="html")
      >>> nmt = Pipeline.from_server("127.0.0.1:8500", "ts",
      ...                            languages=["en", "de", "fr", "cs"])
    """

    def __init__(self, translate, languages, cache=None,
                 model_version="unversioned", **kwargs):
        # The backend's sentence limit, and its batches as the pipeline's
        # calls (cancellation is checked between them).
        kwargs.setdefault("max_sentence_length",
                          getattr(translate, "max_sentence_length", None))
        kwargs.setdefault("chunk_sentences",
                          getattr(translate, "batch_size", 32))
        super().__init__(translate, languages, cache, model_version, **kwargs)
        self.backend = translate

    @classmethod
    def from_model_dir(cls, model_dir, options=None, batch_size: int = 32,
                       languages: Optional[Sequence[str]] = None,
                       cache_mb: Optional[float] = None, **kwargs):
        """A pipeline around a model directory or shipped model name run in
        this process (`gnmt_tf.gateway.backends.ModelBackend`; loads TensorFlow).

        Args:
          model_dir: str or Path.
          options: `gnmt_tf.translator.SearchOptions` or None (defaults).
          batch_size: int. Sentences per search call.
          languages: codes (default: what the model says it knows).
          cache_mb: float or None. A `TranslationCache` of this size.
          **kwargs: `pipeline.Pipeline`'s (`max_bytes`).
        """
        from gnmt_tf.gateway.backends import ModelBackend

        backend = ModelBackend.from_model_dir(model_dir, options, batch_size,
                                              languages)
        return cls(backend, backend.languages, _cache(cache_mb),
                   backend.model_version, **kwargs)

    @classmethod
    def from_server(cls, target: str, model_name: str,
                    languages: Sequence[str],
                    cache_mb: Optional[float] = None,
                    max_bytes: Optional[int] = None, **client_kwargs):
        """A pipeline around a served model (`gnmt_tf.gateway.backends.ServerBackend`:
        TF Serving's gRPC API, no TensorFlow in this process).

        Args:
          target: "host:port".
          model_name: the served model's name.
          languages: the codes it knows; `(src, tgt)` for an export without
            task inputs (GNMT).
          cache_mb: float or None. A `TranslationCache` of this size (keyed
            by target and model name: a server that loads a new version
            keeps serving cached translations of the old one).
          max_bytes: int or None. The largest document accepted.
          **client_kwargs: `gnmt_tf.serving.client.TranslationClient`'s.
        """
        from gnmt_tf.gateway.backends import ServerBackend

        backend = ServerBackend.connect(target, model_name, languages,
                                        **client_kwargs)
        kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
        return cls(backend, backend.languages, _cache(cache_mb),
                   backend.model_version, **kwargs)
