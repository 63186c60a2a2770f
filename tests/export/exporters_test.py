"""The exporter registry: `gnmt-tf export FORMAT` finds one class a format,
and no exporter module imports another."""

import argparse
import ast
import pathlib

import pytest

from gnmt_tf.export import cli
from gnmt_tf.export.exporters import EXPORTERS, Exporter

EXPORT_DIR = pathlib.Path(cli.__file__).parent
# The modules that write one format each.
FORMAT_MODULES = {"savedmodel", "tflite", "onnx_export", "tensorrt"}


def test_every_format_is_one_registered_exporter():
    assert set(EXPORTERS) == {"savedmodel", "tflite", "qat", "tensorrt",
                              "onnx"}
    for name, exporter in EXPORTERS.items():
        assert isinstance(exporter, Exporter) and exporter.name == name
        assert exporter.help


def test_the_cli_has_one_action_per_exporter_with_its_own_flags():
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["export", "tflite", "--model", "m", "--out",
                              "o", "--cache-block", "16"])
    assert (args.action, args.cache_block) == ("tflite", 16)
    args = parser.parse_args(["export", "onnx", "--model", "m", "--out", "o"])
    assert (args.action, args.opset) == ("onnx", 17)
    with pytest.raises(SystemExit):
        parser.parse_args(["export", "onnx", "--model", "m", "--out", "o",
                           "--cache-block", "16"])


def test_an_exporter_that_is_not_complete_cannot_be_made():
    class NoRun(Exporter):
        name, help = "x", "x"

        def add_arguments(self, parser):
            pass

    with pytest.raises(TypeError):
        NoRun()


def test_no_format_module_imports_another():
    for name in sorted(FORMAT_MODULES):
        tree = ast.parse((EXPORT_DIR / f"{name}.py").read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        others = {f"export.{m}" for m in FORMAT_MODULES - {name}}
        assert not imported & others, f"export/{name}.py imports {imported & others}"
