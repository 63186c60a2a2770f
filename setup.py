"""gnmt-tf: one distribution, one import root (`gnmt_tf`), and the `gnmt-tf` command.

`INSTALL_REQUIRES` holds the ranges that a user's installation may resolve
within; `requirements.txt` pins the exact versions CI tests (each inside its
range: `tests/packaging_test.py` checks it), and so do `EXTRAS_REQUIRE` and
`DEV_REQUIRE`. Python 3.11 to 3.13: TensorFlow 2.21 has no wheels for 3.14,
onnxruntime 1.32 (the `onnx` extra) none for 3.10.
"""

import pathlib

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).parent

PYTHON_REQUIRES = ">=3.11,<3.14"

INSTALL_REQUIRES = [
    # TensorFlow and its companions move together, one minor version at a
    # time: tensorflow-text is built against one TensorFlow minor, tfmot
    # needs Keras 2 (tf_keras), tensorflow-serving-api follows TensorFlow.
    "tensorflow>=2.21.0,<2.22",
    "tf-keras>=2.21.0,<2.22",
    "tensorflow-text>=2.21.1,<2.22",
    "tensorflow-serving-api>=2.21.0,<2.22",
    "tensorflow-model-optimization>=0.8.1,<0.9",
    "sacrebleu>=2.6.0,<3",
    "nltk>=3.9,<4",  # GLEU (gnmt_tf.evaluation.gleu), GNMT's RL reward
    "sentencepiece>=0.2.1,<0.3",
    # Sentence splitting (gnmt_tf.pipeline.sentence_split): `translate --server`
    # and the server's request batching split documents into sentences.
    "sentencex>=1.0.32,<2",
    "scipy>=1.11,<2",  # gnmt_tf.alignment.placeholder_translation (Hungarian matching)
    "numpy>=1.26,<3",
    "grpcio>=1.60,<2",
    # The local server (`gnmt-tf serve`): TF Serving's REST API, Prometheus
    # metrics and the standard gRPC health service (grpc.health.v1).
    "fastapi>=0.115,<1",
    "uvicorn>=0.30,<1",
    "prometheus-client>=0.20,<1",
    "grpcio-health-checking>=1.60,<2",
    "protobuf>=6.31.1,<8",  # the range TensorFlow 2.21 accepts
    "filelock>=3.12,<5",  # one training run per model dir (model_dir_guard)
    # Watching training and translation: TensorBoard summaries (tf.summary
    # needs tensorboard, which TensorFlow 2.21 no longer installs; it
    # follows TensorFlow's minor version), progress bars, --config files.
    "tensorboard>=2.21.0,<2.22",
    "tqdm>=4.66,<5",
    "pyyaml>=6.0,<7",
]

# What one use needs beyond `train`, `translate`, `export savedmodel` and
# `serve` (the base install). Each optional import names its extra when it
# is missing.
EXTRAS_REQUIRE = {
    # `translate --tflite` and the TFLite exports' checks run on LiteRT
    # (without it: TensorFlow's deprecated tf.lite.Interpreter).
    "tflite": ["ai-edge-litert>=2.3.0,<2.4"],
    # `gnmt-tf export onnx` (tf2onnx) and `translate --onnx` (onnxruntime).
    "onnx": ["tf2onnx>=1.17.0,<1.18", "onnxruntime>=1.32.0,<2"],
    # `gnmt-tf plot` and `translate --plot-attention`.
    "plot": ["matplotlib>=3.8,<4"],
    # benchmarks/: CTranslate2 is the task-space decoding-speed reference
    # (gnmt_tf.models.task_space.ctranslate2_converter); matplotlib draws the figures.
    # pysbd: the other splitter of benchmarks/sentence_split.py.
    "bench": ["ctranslate2>=4.8.5,<5", "matplotlib>=3.8,<4",
              "pysbd>=0.3.4,<0.4"],
    # The document pipeline and its HTTP gateway (pipeline/, gateway/):
    # language identification (models inside the wheel), HTML/XHTML
    # extraction, Moses punctuation normalisation, the result cache. Its
    # web server (fastapi, uvicorn) is in the base install already, for
    # `serve --rest_api_port`.
    "gateway": ["lingua-language-detector>=2.1,<3", "lxml>=5.2,<7",
                "sacremoses>=0.1.1,<0.3", "cachetools>=5.3,<9",
                # Unicode properties in the pipeline's length check
                # (sacremoses needs it too).
                "regex>=2023.1"],
    # `gnmt-tf translate-beam` (Apache Beam's RunInference). apache-beam
    # 2.77 requires protobuf < 7 (and pillow < 13): it resolves with
    # TensorFlow 2.21 (protobuf >= 6.31.1) but not with the protobuf 7 that
    # requirements.txt pins, so it lives in its own environment
    # (requirements-beam.txt, `make test-beam`) and is not part of `dev`.
    "beam": ["apache-beam>=2.77.0,<3"],
    # The lm predictor (`translate --predictors ...,lm --lm FILE`) queries
    # n-gram models with kenlm (built from source: PyPI has no wheels).
    "lm": ["kenlm>=0.3.0,<0.4"],
}

# Extras that cannot share the pinned test environment (see "beam").
SEPARATE_EXTRAS = ["beam"]

# What the tests need besides every extra above but SEPARATE_EXTRAS:
# `make test` installs `.[dev]`.
DEV_REQUIRE = [
    "pytest>=7,<10",
    "hypothesis>=6.170,<7",  # the property tests
    "import-linter>=2.17,<3",  # `make lint` (.importlinter)
]

setup(
    name="gnmt-tf",
    version="0.1.0",
    description="TensorFlow/Keras NMT model zoo: GNMT, task-space Transformer, "
                "alignment, export and serving",
    long_description=(HERE / "README.md").read_text(encoding="utf-8")
    if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=PYTHON_REQUIRES,
    packages=find_packages(include=["gnmt_tf*"]),
    package_data={"gnmt_tf.export": ["allowed_ops.txt"],
                  "gnmt_tf": ["pretrained/*/*",
                              "pretrained/*/tflite_int8/*",
                              "pretrained/*/tflite_float32/*"]},
    install_requires=INSTALL_REQUIRES,
    extras_require={
        **EXTRAS_REQUIRE,
        "dev": DEV_REQUIRE + sorted(set(sum(
            (reqs for extra, reqs in EXTRAS_REQUIRE.items()
             if extra not in SEPARATE_EXTRAS), []))),
    },
    entry_points={
        "console_scripts": ["gnmt-tf = gnmt_tf.cli.main:main"],
        # Model types by config.json's "model_type" (gnmt_tf.model_types).
        "gnmt_tf.model_types": [
            "gnmt = gnmt_tf.models.gnmt.registry:GNMT",
            "gnmt_qat = gnmt_tf.models.gnmt.registry:GNMT_QAT",
            "task_space_transformer = gnmt_tf.models.task_space.registry:TASK_SPACE_TRANSFORMER",
            "task_space_transformer_qat = "
            "gnmt_tf.models.task_space.registry:TASK_SPACE_TRANSFORMER_QAT",
        ],
    },
)
