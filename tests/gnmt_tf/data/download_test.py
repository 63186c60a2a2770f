import hashlib

import pytest

from gnmt_tf.data import download


def test_fetch_verified_from_file_url(tmp_path):
    source = tmp_path / "remote" / "train.en.gz"
    source.parent.mkdir()
    source.write_bytes(b"payload")
    digest = hashlib.sha256(b"payload").hexdigest()
    cache = tmp_path / "cache"
    got = download.download_multi30k(
        cache, sums={"train.en.gz": digest},
        url_template=(source.parent.as_uri() + "/{name}"))
    assert (got / "train.en.gz").read_bytes() == b"payload"


def test_checksum_mismatch_leaves_nothing(tmp_path):
    source = tmp_path / "f.gz"
    source.write_bytes(b"tampered")
    destination = tmp_path / "cache" / "f.gz"
    with pytest.raises(ValueError, match="checksum mismatch"):
        download.fetch_verified(source.as_uri(), destination, "0" * 64, progress=None)
    assert not destination.exists()
    assert list(destination.parent.iterdir()) == []


def test_known_sums_cover_every_file():
    assert len(download.MULTI30K_SHA256) == 15
    sums = download.parse_sha256sums("ab  x.gz\ncd *y.gz\n")
    assert sums == {"x.gz": "ab", "y.gz": "cd"}


def test_shared_copy_matches_known_sums(data_dir):
    for name, digest in download.MULTI30K_SHA256.items():
        assert download.sha256_of(data_dir / name) == digest, name
