"""Fetching public corpora into a local cache, verified by SHA-256.

Only `gnmt-tf data download` and `gnmt-tf quickstart` call this; nothing
downloads at import or test time. The cache is `$XDG_CACHE_HOME/gnmt_tf`
(default `~/.cache/gnmt_tf`); `$GNMT_TF_MULTI30K_URL` replaces the default
URL template (e.g. to use a mirror).
"""

import hashlib
import http.client
import os
import pathlib
import shutil
import sys
import tempfile
import urllib.error
import urllib.request

MULTI30K_URL = ("https://raw.githubusercontent.com/multi30k/dataset/master/"
                "data/task1/raw/{name}")
ENV_MULTI30K_URL = "GNMT_TF_MULTI30K_URL"

# SHA-256 of the Multi30k Task 1 raw files (multi30k/dataset, data/task1/raw).
MULTI30K_SHA256 = {
    "test_2016_flickr.cs.gz":
        "200a4a74cc9560f051924abb9803be008d1908d77f747e9141aeb86dfd2797f1",
    "test_2016_flickr.de.gz":
        "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz":
        "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz":
        "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "test_2017_flickr.de.gz":
        "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
    "test_2017_flickr.en.gz":
        "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
    "test_2017_flickr.fr.gz":
        "3ba671ceb2299f3304ffafefea7a833d08632fbaf0ba18546f8a2ec2391af496",
    "train.cs.gz":
        "a65adb8b32e3bc664f21ecba7a6e7f6950fd1f405e135f7c312faabdb6255077",
    "train.de.gz":
        "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz":
        "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz":
        "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.cs.gz":
        "b63226e05c4bd5dd6a42897d74b86a1b9d2c31498252c572b1ea7f7996927fcc",
    "val.de.gz":
        "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz":
        "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz":
        "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
}


class DownloadError(RuntimeError):
    """A file could not be fetched (network, HTTP or checksum failure)."""


def default_cache_dir() -> pathlib.Path:
    """`$XDG_CACHE_HOME/gnmt_tf`, or `~/.cache/gnmt_tf`."""
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "gnmt_tf"


def sha256_of(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_sha256sums(text: str) -> dict:
    """Parses `sha256sum` output (`<hex>  <name>` lines) into {name: hex}."""
    sums = {}
    for line in text.splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.lstrip("*").strip()] = digest.lower()
    return sums


def _reason(error) -> str:
    """A short description of a network error (no traceback material)."""
    reason = getattr(error, "reason", None)
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if reason is not None:
        return str(reason)
    return str(error) or type(error).__name__


def fetch_verified(url: str, destination, sha256: str, progress=sys.stderr,
                   timeout: float = 60.0):
    """Downloads `url` to `destination` unless a verified copy is there.

    The file is written to a temporary `.part` name and moved into place only
    after its SHA-256 matches, so a failed, interrupted or corrupted download
    leaves nothing behind.

    Raises:
      DownloadError: the server cannot be reached, answers with an HTTP error,
        the transfer breaks off, or the file's checksum does not match.
    """
    destination = pathlib.Path(destination)
    if destination.exists() and sha256_of(destination) == sha256:
        return destination
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DownloadError(f"cannot create {destination.parent}: "
                            f"{e.strerror or e}") from None
    if progress:
        print(f"downloading {url}", file=progress)
    tmp = tempfile.NamedTemporaryFile(dir=destination.parent, delete=False,
                                      prefix=destination.name + ".",
                                      suffix=".part")
    try:
        with tmp:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
                shutil.copyfileobj(response, tmp)
                missing = getattr(response, "length", None)  # HTTP only
        if missing:
            raise DownloadError(f"cannot download {url}: the connection "
                                f"closed {missing} bytes short")
        actual = sha256_of(tmp.name)
        if actual != sha256:
            raise DownloadError(f"checksum mismatch for {url}: expected "
                                f"{sha256}, got {actual}")
        os.replace(tmp.name, destination)
    except BaseException as e:  # KeyboardInterrupt too: leave no .part
        _remove(tmp.name)
        if isinstance(e, (OSError, http.client.HTTPException, ValueError)):
            raise DownloadError(f"cannot download {url}: {_reason(e)}") \
                from None
        raise
    return destination


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def multi30k_url_template() -> str:
    """`$GNMT_TF_MULTI30K_URL` (a URL with `{name}`), or `MULTI30K_URL`."""
    return os.environ.get(ENV_MULTI30K_URL) or MULTI30K_URL


def multi30k_cache(cache_dir=None) -> pathlib.Path:
    """Where `download_multi30k` puts the files: `<cache>/multi30k`."""
    return pathlib.Path(cache_dir or default_cache_dir()) / "multi30k"


def cached_multi30k(cache_dir=None):
    """The cached Multi30k directory if every file has been downloaded
    (files only appear there once verified), else None."""
    cache = multi30k_cache(cache_dir)
    if all((cache / name).is_file() for name in MULTI30K_SHA256):
        return cache
    return None


def download_multi30k(cache_dir=None, sums=None, url_template=None,
                      progress=sys.stderr):
    """Downloads every Multi30k file listed in `sums` ({name: sha256}) into
    `<cache_dir>/multi30k` and returns that directory.

    Files already there and verified are kept; a failure leaves the
    verified files fetched so far (the next call resumes) and nothing else,
    and removes the directory if it is left empty.

    Args:
      cache_dir: default `default_cache_dir()`.
      sums: default `MULTI30K_SHA256` (all 15 files of Task 1).
      url_template: URL with `{name}`; default `multi30k_url_template()`.
      progress: stream for "downloading URL" lines, or None.

    Raises:
      DownloadError: see `fetch_verified`.
    """
    cache = multi30k_cache(cache_dir)
    existed = cache.exists()
    sums = sums or MULTI30K_SHA256
    template = url_template or multi30k_url_template()
    try:
        for name, digest in sorted(sums.items()):
            fetch_verified(template.format(name=name), cache / name, digest,
                           progress=progress)
    except BaseException:
        if not existed:
            try:
                cache.rmdir()  # only succeeds when nothing was fetched
            except OSError:
                pass
        raise
    return cache
