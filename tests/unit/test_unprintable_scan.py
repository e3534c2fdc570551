"""decode_source refuses the characters YAML does not allow (``_NOT_PRINTABLE``); a test of the
bytes at C speed decides whether the regular expression must look at all. It must never say
"none" where the expression finds one."""

from __future__ import annotations

import pytest

from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.stream import _NOT_PRINTABLE, _may_hold_unprintable, decode_source


def _code_points() -> list[int]:
    every_bmp = [cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF]
    return every_bmp + list(range(0x10000, 0x110000, 0x3FF)) + [0x10FFFE, 0x10FFFF]


def test_no_character_the_expression_refuses_goes_unseen() -> None:
    for cp in _code_points():
        text = f"key: a{chr(cp)}b\n"
        if _NOT_PRINTABLE.search(text):
            assert _may_hold_unprintable(text.encode("utf-8")), hex(cp)


def test_plain_ascii_and_common_text_skip_the_expression() -> None:
    assert not _may_hold_unprintable(b"apiVersion: v1\r\nkind: ConfigMap\n\tdata: {}\n")
    assert not _may_hold_unprintable("name: caf\u00e9 \u2014 \u2713 \U0001f680\n".encode())


@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x7f", "\x80", "\x9f", "\ufffe", "\uffff"])
def test_decode_source_still_refuses_them(character: str) -> None:
    data = f"a: 1\nb: x{character}\n".encode()
    with pytest.raises(ManifestStreamError, match=r"^f\.yaml:2: control character"):
        decode_source(data, "f.yaml")
