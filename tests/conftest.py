"""Shared pytest fixtures and options for gnmt-tf."""

import os
import pathlib

import pytest

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow", action="store_true", default=False,
        help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir():
    """Multi30k directory from GNMT_TF_DATA or ../shared/data/multi30k."""
    candidates = [os.environ.get("GNMT_TF_DATA"),
                  str(REPO_ROOT.parent / "shared" / "data" / "multi30k")]
    for c in candidates:
        if c and pathlib.Path(c, "train.en.gz").exists():
            return pathlib.Path(c)
    pytest.skip("Multi30k data not found (set GNMT_TF_DATA)")
