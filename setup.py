"""gnmt-tf: one distribution with five packages and the `gnmt-tf` command."""

import pathlib

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).parent


# ai-edge-litert runs the TFLite exports; ctranslate2 is the decoding-speed
# reference of the task-space benchmark and its converter test; matplotlib
# draws the benchmark plots; tf2onnx + onnxruntime make and check `gnmt-tf
# export onnx`; hypothesis drives the serving property tests.
DEV_REQUIREMENTS = ["pytest>=7", "hypothesis==6.170.15",
                    "ai-edge-litert==2.3.0", "ctranslate2==4.8.5",
                    "matplotlib>=3.8", "tf2onnx==1.17.0", "onnxruntime==1.32.0"]


def _requirements():
    """requirements.txt (which also pins test tools for `make venv`) less the
    dev extra."""
    lines = (HERE / "requirements.txt").read_text().splitlines()
    return [l.strip() for l in lines if l.strip() and not l.startswith("#")
            and l.strip() not in DEV_REQUIREMENTS]


setup(
    name="gnmt-tf",
    version="0.1.0",
    description="TensorFlow/Keras NMT model zoo: GNMT, task-space Transformer, "
                "alignment, export and serving",
    long_description=(HERE / "README.md").read_text(encoding="utf-8")
    if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(
        include=["gnmt_tf*", "task_space*", "alignment*", "export*", "serving*"]),
    package_data={"export": ["allowed_ops.txt"]},
    install_requires=_requirements(),
    extras_require={"dev": DEV_REQUIREMENTS},
    entry_points={"console_scripts": ["gnmt-tf = gnmt_tf.cli.main:main"]},
)
