"""``kmultiarch verify``'s sizes and output: sizes as people write them, and text that came
from an image (paths, reasons) shown inert."""

from __future__ import annotations

import json

import click
import pytest

from kmultiarch.cli.commands.verify import parse_size
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.verification.verdicts import ImageVerification, PlatformVerification, claim_key
from kmultiarch.output.verification import verification_document, verification_text

DIGEST = "sha256:" + "d" * 64


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64MiB", 64 * 1024**2),
        ("1GiB", 1024**3),
        ("1gib", 1024**3),
        ("500k", 500_000),
        ("2 MB", 2_000_000),
        ("1048576", 1048576),
        ("4096b", 4096),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text, "--max-bytes") == size


@pytest.mark.parametrize("text", ["lots", "-1MiB", "1.5GiB", "10", "3TiB", ""])
def test_sizes_refused(text: str) -> None:
    with pytest.raises(click.BadParameter):
        parse_size(text, "--max-bytes")


def test_text_and_json() -> None:
    hostile = "/app/\x1b[2Jserver\n::error::forged"
    result = ImageVerification(
        ImageRef.parse("registry.test/app:1.0"),
        DIGEST,
        (
            PlatformVerification(
                Platform.parse("linux/amd64"), DIGEST, "verified", hostile, "x86-64"
            ),
            PlatformVerification(
                Platform.parse("linux/arm/v7"),
                DIGEST,
                "mismatch",
                "/bin/sh",
                "x86-64",
                "/bin/sh is built for x86-64 (linux/amd64); the manifest claims linux/arm/v7",
                via=("/entrypoint.sh",),
            ),
            PlatformVerification(
                Platform.parse("linux/s390x"),
                DIGEST,
                "unverified",
                reason="the image config has no Entrypoint or Cmd: nothing to start",
                code="no-entrypoint",
            ),
        ),
    )
    text = verification_text([result])
    assert text.splitlines() == [
        "registry.test/app:1.0",
        "  linux/amd64   verified    /app/\\x1b[2Jserver\\n::error::forged (x86-64)",
        "  linux/arm/v7  MISMATCH    /bin/sh is built for x86-64 (linux/amd64); the manifest "
        "claims linux/arm/v7 (via /entrypoint.sh)",
        "  linux/s390x   unverified  the image config has no Entrypoint or Cmd: nothing to start",
    ]
    spent = {claim_key(DIGEST, verdict.platform): 5 for verdict in result.platforms}
    (image,) = json.loads(verification_document([result], spent))
    assert image["platforms"][0]["file"] == hostile
    assert [p["bytes"] for p in image["platforms"]] == [5, 5, 5]
    assert image["platforms"][2]["code"] == "no-entrypoint"
