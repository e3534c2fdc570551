"""``report -o html`` and outside text (issue 21): resource names, container names, file names,
image references as written and registry error messages reach the page neutralised as the text
report neutralises them (``kmultiarch/output/safe.py``), then HTML-escaped. The page is read in
CI logs and terminals as often as in a browser (``kmultiarch report -o html | tee``)."""

from __future__ import annotations

import html
import html.parser
import json
import re
from pathlib import Path

from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.fault_proxy import FaultProxy, Status
from support.workflow_commands import workflow_commands

#: What the text report never prints raw: C0 controls but tab and line feed, DEL, C1, the
#: Unicode line and paragraph separators, bidirectional overrides and isolates.
_RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]")
#: Markup, a workflow command in two forms, an OSC title, a bell, a screen clear, a bidi override.
HOSTILE = "<i>x\n::error file=forged::forged\r##[warning]w\x1b]0;pwned\x07\x1b[2J\u202e"
#: How the text report shows it (safe.printable); the page shows the same, markup as text.
SHOWN = "<i>x\\n::error file=forged::forged\\r#\\x23[warning]w\\x1b]0;pwned\\x07\\x1b[2J\\u202e"
REGISTRY_MESSAGE = "manifest unknown\n::error::forged-by-registry\x1b]0;pwned\x07 ##[add-mask]x"


def _yaml_text(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text)


def _manifest(proxy_host: str) -> str:
    missing = f"{proxy_host}/missing/app:1.0"
    lacking = f"{proxy_host}/upgrades/app:1.0"
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {_yaml_text("web" + HOSTILE)}
  namespace: {_yaml_text("ns" + HOSTILE)}
spec:
  template:
    spec:
      containers:
      - name: {_yaml_text("c" + HOSTILE)}
        image: {missing}
      - name: old
        image: {lacking}
      - name: odd
        image: {_yaml_text("registry.test/app:1.0" + HOSTILE)}
"""


class _Text(html.parser.HTMLParser):
    """The text of the page as a browser shows it (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def test_the_html_report_neutralises_outside_text_as_the_text_report_does(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Manifest text and registry error text were written raw into the HTML page (ESC, BEL,
    line breaks starting lines '::error ...', '##[warning]'), though the text report
    neutralised them."""
    directory = tmp_path / "manifests"
    directory.mkdir()
    error = json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN", "message": REGISTRY_MESSAGE}]})
    with FaultProxy(registry.url) as proxy:
        proxy.inject("/v2/missing/app/", Status(404, body=error.encode()))
        proxy.inject("/tags/list", Status(403, body=error.encode()))
        (directory / f"app{HOSTILE}.yaml").write_text(_manifest(proxy.host))
        policy = tmp_path / "policy.yaml"
        policy.write_text(
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n"
            f"  registries: {{'{proxy.host}': {{insecure: true}}}}\n"
        )
        env = clean_env(tmp_path)
        args = ["report", "--suggest-upgrades", "--config", str(policy), str(directory)]
        page = run_kmultiarch([*args, "-o", "html"], env=env)
        text = run_kmultiarch([*args, "-o", "text"], env=env)
    assert page.returncode == 0, page.stderr
    assert text.returncode == 0, text.stderr
    for output in (text.stdout, page.stdout):
        assert not _RAW_CONTROLS.search(output), _RAW_CONTROLS.findall(output)
        assert workflow_commands(output) == [], workflow_commands(output)
    shown = _Text()
    shown.feed(page.stdout)
    visible = "".join(shown.parts)
    for piece in ("web", "ns", "c", "app"):  # name, namespace, container, file name
        assert piece + SHOWN in visible, piece
    assert "web" + SHOWN in text.stdout and "app" + SHOWN in text.stdout
    assert "registry.test/app:1.0" + SHOWN in visible  # an image as written, unparsable
    registry_shown = "manifest unknown\\n::error::forged-by-registry\\x1b]0;pwned\\x07"
    assert visible.count(registry_shown) >= 2  # the image's error and the upgrade's note
    assert registry_shown in text.stdout
    # Escaped for HTML as before: no markup from outside.
    assert "<i>" not in page.stdout and html.escape("<i>") in page.stdout
