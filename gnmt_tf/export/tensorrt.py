"""TF-TRT: a SavedModel with TensorRT engines for NVIDIA GPUs.

`convert_tensorrt` runs TF-TRT's `TrtGraphConverterV2` on an exported
SavedModel (`gnmt_tf.export.savedmodel`): TensorRT takes over the numeric subgraphs
(the LSTM / attention steps inside the search) in FP32, FP16 or INT8
(calibrated on real sentences), while the SentencePiece ops, the `While`
loop and the string handling stay TensorFlow ops, so the result is still a
SavedModel with the same `serving_default` signature, for a GPU build of
`tensorflow_model_server`.

It needs a GPU, CUDA and a TensorFlow linked against TensorRT;
`tensorrt_problem()` says what is missing (`gnmt-tf export tensorrt` prints
it and exits with code 2 on machines like the CI ones).
"""

PRECISIONS = ("FP32", "FP16", "INT8")


def tensorrt_problem():
    """Why TF-TRT cannot run here, or None if it could."""
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return ("TF-TRT needs a GPU and TensorRT; TensorFlow sees no GPU "
                "on this machine")
    try:
        from tensorflow.python.compiler.tensorrt import trt_convert
    except ImportError as e:
        return f"TF-TRT needs TensorRT; tensorflow.python.compiler.tensorrt: {e}"
    try:
        enabled = trt_convert._pywrap_py_utils.is_tensorrt_enabled()
    except Exception as e:  # noqa: BLE001 (any failure means: unavailable)
        return f"TensorRT is not usable: {type(e).__name__}: {e}"
    if not enabled:
        return "TF-TRT needs TensorRT; this TensorFlow build has none linked"
    return None


def convert_tensorrt(savedmodel_dir, out_dir, precision="FP16",
                     calibration_sentences=(), batch_size=32):
    """Converts an exported SavedModel with TF-TRT and saves it to `out_dir`.

    Args:
        savedmodel_dir: a `gnmt-tf export savedmodel` version directory.
        out_dir: where the converted SavedModel goes.
        precision: one of `PRECISIONS`.
        calibration_sentences: source sentences for INT8 calibration
            (required for INT8), fed through `serving_default` in batches.
        batch_size: calibration batch size.

    Raises:
        RuntimeError: TF-TRT cannot run here (see `tensorrt_problem`).
        ValueError: unknown precision, or INT8 without sentences.
    """
    import tensorflow as tf

    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; known: "
                         f"{', '.join(PRECISIONS)}")
    calibration_sentences = [s for s in calibration_sentences if s.strip()]
    if precision == "INT8" and not calibration_sentences:
        raise ValueError("INT8 needs calibration sentences (--calibration)")
    problem = tensorrt_problem()
    if problem:
        raise RuntimeError(problem)
    from tensorflow.python.compiler.tensorrt import trt_convert as trt

    converter = trt.TrtGraphConverterV2(
        input_saved_model_dir=str(savedmodel_dir),
        input_saved_model_signature_key="serving_default",
        conversion_params=trt.TrtConversionParams(
            precision_mode=precision,
            use_calibration=precision == "INT8"),
        use_dynamic_shape=True,
        dynamic_shape_profile_strategy="Optimal")

    def calibration_input():
        for start in range(0, len(calibration_sentences), batch_size):
            yield (tf.constant(calibration_sentences[start:start + batch_size]),)

    if precision == "INT8":
        converter.convert(calibration_input_fn=calibration_input)
    else:
        converter.convert()
    converter.save(str(out_dir))
    return out_dir
