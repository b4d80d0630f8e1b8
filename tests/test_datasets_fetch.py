"""Downloads against a local HTTP server serving copies of the real MNIST test files.

The server (127.0.0.1, port 0, one thread per request) has one route per way a
mirror can behave: good, nolength (no Content-Length), missing (404), corrupt
(wrong bytes), cut (a Content-Length larger than the body, then the connection
closes), slow (no body before the client's timeout), and failN-HOW, which fails
its first N requests of a file in one of those ways (HTTP 503 or 429, cut, or
drop: the connection closed before any answer) and then serves it: the transient
failures download retries. Only the two 10k test files are used, with a checksum
table built for them, so no 60k training file is needed. Retries wait through
fetch._sleep, which the tests replace with a recorder: no real waits.
"""

from __future__ import annotations

import dataclasses
import http.server
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import dlbench.datasets as datasets
from dlbench.datasets import fetch, mnist
from local_http import serving

SHARED_MNIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"
T10K = {f.gz_name: f for f in mnist.MNIST.files if f.name.startswith("t10k")}


@pytest.fixture(scope="module")
def payloads() -> dict[str, bytes]:
    if not SHARED_MNIST.is_dir():
        reason = f"{SHARED_MNIST} absent (the project's shared MNIST test set)"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    return {name: (SHARED_MNIST / name).read_bytes() for name in T10K}


class _Handler(http.server.BaseHTTPRequestHandler):
    payloads: dict[str, bytes] = {}
    hits: list[str] = []

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:
        self.hits.append(self.path)
        _, route, name = self.path.split("/", 2)
        body = self.payloads.get(name)
        if route.startswith("fail"):  # failN-HOW: the first N requests of this path fail, then "good"
            times, how = route[4:].split("-")
            if self.hits.count(self.path) <= int(times):
                route = how
                if how.isdigit():
                    self.send_error(int(how))
                    return
                if how == "drop":  # no answer at all: the client sees the connection closed
                    self.close_connection = True
                    return
        if route == "missing" or body is None:
            self.send_error(404)
            return
        if route == "corrupt":
            body = body[:100] + bytes([body[100] ^ 0xFF]) + body[101:]
        self.send_response(200)
        if route != "nolength":  # nolength: no Content-Length, the body ends when the connection closes
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if route == "cut":
            self.wfile.write(body[: len(body) // 3])
            self.wfile.flush()
            self.close_connection = True
            return
        if route == "slow":
            time.sleep(1.0)
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server(payloads: dict[str, bytes]) -> Iterator[str]:
    _Handler.payloads = payloads
    with serving(_Handler) as url:
        yield url


@pytest.fixture()
def hits() -> list[str]:
    _Handler.hits = []
    return _Handler.hits


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits download takes between retries, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr(fetch, "_sleep", waited.append)
    return waited


NAME = "t10k-labels-idx1-ubyte.gz"
MD5 = T10K[NAME].gz_md5


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_good_download_lands_verified(server: str, tmp_path: Path, hits: list[str]) -> None:
    calls: list[tuple[str, int, int | None]] = []
    dest = fetch.download(
        [f"{server}/good/{NAME}"], tmp_path / "cache" / NAME, MD5, progress=lambda *a: calls.append(a)
    )
    assert dest == tmp_path / "cache" / NAME
    assert fetch.file_digest(dest) == MD5
    assert _leftovers(dest.parent) == [NAME]  # no temporary file left
    assert dest.stat().st_mode & 0o777 == 0o644  # readable by all, like any dataset file
    size = dest.stat().st_size
    assert calls[0] == (NAME, 0, size) and calls[-1] == (NAME, size, size)
    assert hits == [f"/good/{NAME}"]


def test_wrong_checksum_leaves_nothing(server: str, tmp_path: Path) -> None:
    url = f"{server}/corrupt/{NAME}"
    with pytest.raises(fetch.DownloadError) as err:
        fetch.download([url], tmp_path / NAME, MD5)
    message = str(err.value)
    assert url in message and "wrong md5 checksum" in message and MD5 in message
    assert _leftovers(tmp_path) == []


def test_interrupted_transfer_leaves_nothing(server: str, tmp_path: Path) -> None:
    url = f"{server}/cut/{NAME}"
    with pytest.raises(fetch.DownloadError) as err:
        fetch.download([url], tmp_path / NAME, MD5)
    message = str(err.value)
    assert url in message and "transfer interrupted" in message and "Content-Length" in message
    assert _leftovers(tmp_path) == []


def test_timeout_leaves_nothing(server: str, tmp_path: Path) -> None:
    url = f"{server}/slow/{NAME}"
    with pytest.raises(fetch.DownloadError, match="timed out") as err:
        fetch.download([url], tmp_path / NAME, MD5, timeout=0.2)
    assert url in str(err.value)
    assert _leftovers(tmp_path) == []


def test_next_mirror_after_404(server: str, tmp_path: Path, hits: list[str]) -> None:
    urls = [f"{server}/missing/{NAME}", f"{server}/good/{NAME}"]
    dest = fetch.download(urls, tmp_path / NAME, MD5)
    assert fetch.file_digest(dest) == MD5
    assert hits == [f"/missing/{NAME}", f"/good/{NAME}"]


def test_every_mirror_failing_names_each(server: str, tmp_path: Path) -> None:
    urls = [f"{server}/missing/{NAME}", f"{server}/cut/{NAME}", f"{server}/corrupt/{NAME}"]
    with pytest.raises(fetch.DownloadError) as err:
        fetch.download(urls, tmp_path / NAME, MD5)
    lines = str(err.value).splitlines()
    assert "HTTP 404" in lines[1] and urls[0] in lines[1]
    assert "interrupted" in lines[2] and urls[1] in lines[2]
    assert "checksum" in lines[3] and urls[2] in lines[3]
    assert _leftovers(tmp_path) == []


def test_unreachable_mirror(tmp_path: Path) -> None:
    # Port 9 (discard) on localhost: refused at once, no network needed.
    with pytest.raises(fetch.DownloadError, match="cannot connect"):
        fetch.download(["http://127.0.0.1:9/x.gz"], tmp_path / "x.gz", MD5, timeout=2)


def _t10k_spec(mirrors: tuple[str, ...]) -> mnist.IdxDataset:
    return dataclasses.replace(mnist.MNIST, files=tuple(T10K.values()), mirrors=mirrors)


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user cache and no $DLBENCH_DATA; returns the cache root."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DLBENCH_DATA", raising=False)
    return tmp_path / "xdg" / "dlbench"


def test_ensure_downloads_into_cache(
    server: str, isolated: Path, monkeypatch: pytest.MonkeyPatch, hits: list[str]
) -> None:
    spec = _t10k_spec((f"{server}/missing/", f"{server}/good"))
    monkeypatch.setitem(mnist.SPECS, "mnist", spec)
    assert datasets.locate("mnist")[0] is None
    found = datasets.ensure("mnist")
    assert found == isolated / "mnist"
    assert _leftovers(found) == sorted(T10K)
    for name, f in T10K.items():
        assert fetch.file_digest(found / name) == f.gz_md5
    assert datasets.locate("mnist")[0] == found
    hits.clear()
    assert datasets.ensure("mnist") == found and hits == []  # found: nothing fetched again


def test_ensure_reports_failed_download(server: str, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _t10k_spec((f"{server}/cut/",))
    monkeypatch.setitem(mnist.SPECS, "mnist", spec)
    with pytest.raises(datasets.DatasetNotFound) as err:
        datasets.ensure("mnist")
    message = str(err.value)
    assert "Download failed" in message and f"{server}/cut/" in message
    assert str(isolated / "mnist") in message and "--data-dir" in message
    assert _leftovers(isolated / "mnist") == []


def test_ensure_without_download_fetches_nothing(
    server: str, isolated: Path, monkeypatch: pytest.MonkeyPatch, hits: list[str]
) -> None:
    monkeypatch.setitem(mnist.SPECS, "mnist", _t10k_spec((f"{server}/good/",)))
    with pytest.raises(datasets.DatasetNotFound, match="Download was not allowed"):
        datasets.ensure("mnist", download=False)
    assert hits == []


@pytest.mark.parametrize("how", ["503", "429", "cut", "drop"])
def test_transient_failures_are_retried_until_the_file_lands(
    how: str, server: str, tmp_path: Path, hits: list[str], sleeps: list[float]
) -> None:
    calls: list[tuple[str, int, int | None]] = []
    path = f"/fail2-{how}/{NAME}"
    dest = fetch.download([server + path], tmp_path / NAME, MD5, progress=lambda *a: calls.append(a))
    assert fetch.file_digest(dest) == MD5
    assert hits == [path] * 3  # two failures, then the file
    assert sleeps == [fetch.BACKOFF, 2 * fetch.BACKOFF]  # waits doubling between attempts
    assert _leftovers(tmp_path) == [NAME]  # no temporary file from the failed attempts
    assert dest.stat().st_mode & 0o777 == 0o644
    size = dest.stat().st_size
    assert calls[-1] == (NAME, size, size)


def test_retries_exhausted_name_the_url_the_failure_and_the_attempts(
    server: str, tmp_path: Path, hits: list[str], sleeps: list[float]
) -> None:
    url = f"{server}/fail9-503/{NAME}"
    with pytest.raises(fetch.DownloadError) as err:
        fetch.download([url], tmp_path / NAME, MD5)
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and url in lines[1] and "HTTP 503" in lines[1] and "(3 attempts)" in lines[1]
    assert len(hits) == 1 + fetch.RETRIES and sleeps == [1.0, 2.0]
    assert _leftovers(tmp_path) == []


def test_a_mirror_that_stays_down_gives_way_to_the_next(
    server: str, tmp_path: Path, hits: list[str], sleeps: list[float]
) -> None:
    urls = [f"{server}/fail9-drop/{NAME}", f"{server}/good/{NAME}"]
    dest = fetch.download(urls, tmp_path / NAME, MD5, retries=1, backoff=0.25)
    assert fetch.file_digest(dest) == MD5
    assert hits == [f"/fail9-drop/{NAME}"] * 2 + [f"/good/{NAME}"] and sleeps == [0.25]


def test_permanent_failures_are_not_retried(server: str, tmp_path: Path, hits: list[str], sleeps: list[float]) -> None:
    urls = [f"{server}/missing/{NAME}", f"{server}/corrupt/{NAME}", f"{server}/fail1-404/{NAME}"]
    with pytest.raises(fetch.DownloadError) as err:
        fetch.download(urls, tmp_path / NAME, MD5)
    assert hits == [f"/missing/{NAME}", f"/corrupt/{NAME}", f"/fail1-404/{NAME}"] and sleeps == []
    assert "attempts" not in str(err.value)


def test_no_retries_when_told(server: str, tmp_path: Path, hits: list[str], sleeps: list[float]) -> None:
    with pytest.raises(fetch.DownloadError, match="HTTP 503"):
        fetch.download([f"{server}/fail1-503/{NAME}"], tmp_path / NAME, MD5, retries=0)
    assert len(hits) == 1 and sleeps == []


def test_a_file_already_in_place_is_kept_or_replaced(server: str, tmp_path: Path, hits: list[str]) -> None:
    dest = fetch.download([f"{server}/good/{NAME}"], tmp_path / NAME, MD5)
    hits.clear()
    assert fetch.download([f"{server}/good/{NAME}"], dest, MD5) == dest and hits == []  # right bytes: nothing fetched
    dest.write_bytes(b"not the data")
    assert fetch.download([f"{server}/good/{NAME}"], dest, MD5) == dest and hits == [f"/good/{NAME}"]
    assert fetch.file_digest(dest) == MD5 and _leftovers(tmp_path) == [NAME]


def test_pooch_logs_nothing(server: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    fetch.download([f"{server}/good/{NAME}"], tmp_path / NAME, MD5)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_progress_without_content_length_ends_on_the_true_size(server: str, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int | None]] = []
    dest = fetch.download([f"{server}/nolength/{NAME}"], tmp_path / NAME, MD5, progress=lambda *a: calls.append(a))
    assert calls[0] == (NAME, 0, None) and calls[-1] == (NAME, dest.stat().st_size, None)
