"""``kmultiarch report``: the inventory in text and JSON, and the HTML page rendered by a real
headless Chromium (a screenshot that must show a page, and the DOM Chromium built from it)."""

from __future__ import annotations

import html.parser
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path, {"SOURCE_DATE_EPOCH": "1767225600"})


@pytest.fixture
def manifest(tmp_path: Path, registry: SeededRegistry) -> Path:
    path = tmp_path / "apps.yaml"
    path.write_text(
        "---\n".join(
            [
                deployment(
                    "web", [image(registry, "multiarch-oci"), image(registry, "team-app-api")]
                ),
                deployment("legacy", [image(registry, "single-docker-amd64")], namespace="shop"),
                deployment("edge", [image(registry, "single-oci-arm64")]),
                deployment("also-web", [image(registry, "multiarch-oci")]),
                deployment("ghost", ["registry.test/missing/app:1.0"]),
                deployment(
                    "mixed",
                    [image(registry, "single-oci-arm64"), image(registry, "amd64-only-index")],
                ),
            ]
        )
    )
    return path


@pytest.fixture
def policy(tmp_path: Path, registry: SeededRegistry) -> Path:
    return write_policy(tmp_path / "policy.yaml", registry)


def test_json_inventory_and_summary(
    registry: SeededRegistry, manifest: Path, policy: Path, env: dict[str, str]
) -> None:
    result = run_kmultiarch(
        ["report", "--config", str(policy), "-o", "json", str(manifest)], env=env
    )
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["generated"] == "2026-01-01T00:00:00Z"
    summary = report["summary"]
    assert summary == {
        "workloads": 6,
        "images": 6,
        "multi-arch": 2,
        "arm64-only": 1,
        "amd64-only": 1,
        "no-common-platform": 1,
        "unresolvable": 1,
    }
    images = {entry["image"]: entry for entry in report["images"]}
    oci = images["registry.test/multiarch-oci:1.0"]
    assert oci["platforms"] == ["linux/amd64", "linux/arm64"]
    assert oci["digest"] == registry.images["multiarch-oci"].digest
    assert [use["name"] for use in oci["usedBy"]] == ["web", "also-web"]
    missing = images["registry.test/missing/app:1.0"]
    assert missing["platforms"] is None and "not found" in missing["error"]
    categories = {w["name"]: w["category"] for w in report["workloads"]}
    assert categories == {
        "web": "multi-arch",
        "legacy": "amd64-only",
        "edge": "arm64-only",
        "also-web": "multi-arch",
        "ghost": "unresolvable",
        "mixed": "no-common-platform",
    }


def test_text_report(manifest: Path, policy: Path, env: dict[str, str]) -> None:
    result = run_kmultiarch(["report", "--config", str(policy), str(manifest)], env=env)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("Summary\n  workloads (pod specs):  6\n")
    assert "  multi-arch:             2\n" in text
    assert "  unresolvable:           1\n" in text
    oci_line = next(line for line in text.splitlines() if "multiarch-oci:1.0" in line)
    assert "linux/amd64, linux/arm64" in oci_line
    assert "Deployment default/web, Deployment default/also-web" in oci_line
    assert "Unresolved images\n  registry.test/missing/app:1.0: " in text


class _Rows(html.parser.HTMLParser):
    """Collects the text of every cell, per row, per table id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.table: str | None = None
        self.cell: list[str] | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table":
            self.table = attributes.get("id") or ""
            self.tables[self.table] = []
        elif tag == "tr" and self.table is not None:
            self.tables[self.table].append([])
        elif tag == "td" and self.table is not None:
            self.cell = []
        for name in ("src", "href"):
            if attributes.get(name):
                self.external.append(f"{tag} {name}={attributes[name]}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None and self.table is not None:
            self.tables[self.table][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the raw scanlines (filter bytes removed) of an 8-bit RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, chunks, header = 8, [], b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        position += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color in (2, 6), (depth, color)
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                estimate = left + up - up_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/install-tools)")
def test_html_report_renders_in_chromium(
    tmp_path: Path, manifest: Path, policy: Path, env: dict[str, str]
) -> None:
    result = run_kmultiarch(
        ["report", "--config", str(policy), "-o", "html", str(manifest)], env=env
    )
    assert result.returncode == 0, result.stderr
    page = tmp_path / "report.html"
    page.write_text(result.stdout)

    source = _Rows()
    source.feed(result.stdout)
    assert source.external == [], "the page must be self-contained"
    assert "<script" not in result.stdout and "@import" not in result.stdout
    assert "url(" not in result.stdout

    screenshot = tmp_path / "report.png"
    shot = _chromium(
        f"--screenshot={screenshot}",
        "--window-size=1280,1400",
        page.as_uri(),
        profile=tmp_path / "p1",
    )
    assert screenshot.exists(), shot.stderr.decode(errors="replace")[-2000:]
    data = screenshot.read_bytes()
    assert 10_000 < len(data) < 5_000_000
    width, height, rows = _png_pixels(data)
    assert (width, height) == (1280, 1400)
    # The header band is dark, the body light, and there is more than a handful of colours:
    # a blank or failed page is one colour.
    colours = {row[i : i + 3] for row in rows[::7] for i in range(0, len(row), 3 * 11)}
    assert len(colours) > 20
    channels = len(rows[0]) // width
    header_pixel = rows[20][channels * 600 : channels * 600 + 3]
    body_pixel = rows[height - 5][channels * 1270 : channels * 1270 + 3]
    assert sum(header_pixel) < 200, header_pixel
    assert sum(body_pixel) > 600, body_pixel

    dom = _chromium("--dump-dom", page.as_uri(), profile=tmp_path / "p2")
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    parsed = _Rows()
    parsed.feed(dom.stdout.decode())
    images = parsed.tables["images"]
    workloads = parsed.tables["workloads"]
    assert len(images) == 1 + 6 and len(workloads) == 1 + 6  # header row + one per entry
    oci = next(row for row in images if row and row[0] == "registry.test/multiarch-oci:1.0")
    assert oci[1].startswith("linux/amd64linux/arm64")
    assert "Deployment default/web" in oci[3] and "Deployment default/also-web" in oci[3]
    ghost = next(row for row in workloads if row and row[0] == "Deployment default/ghost")
    assert ghost[1] == "unresolvable"
    assert "2 multi-arch" in " ".join(dom.stdout.decode().split()).replace(
        '<div class="count">2</div><div class="label">multi-arch</div>', "2 multi-arch"
    )
