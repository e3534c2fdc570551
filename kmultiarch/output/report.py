"""``kmultiarch report`` output: text, JSON, and one self-contained HTML page."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from kmultiarch.assess.assessment import (
    ImageEntry,
    Inventory,
    UpgradeSuggestion,
    WorkloadEntry,
    WorkloadUse,
)
from kmultiarch.core.findings import Finding
from kmultiarch.output import display_path, table
from kmultiarch.output.safe import printable
from kmultiarch.output.verification import image_json, verdict_detail, verdict_text
from kmultiarch.version import __version__

SUMMARY_LABELS = {
    "workloads": "workloads (pod specs)",
    "images": "images",
    "multi-arch": "multi-arch",
    "arm64-only": "arm64-only",
    "amd64-only": "amd64-only",
    "no-common-platform": "no common platform",
    "unresolvable": "unresolvable",
}


#: How an image with no platform of its own (OLM bundle, OCI artifact) is shown.
METADATA_ONLY = "metadata-only"


def summary_items(inventory: Inventory) -> list[tuple[str, str, int]]:
    """(key, label, count): the fixed counts first, then any other ``<arch>-only``."""
    counts = inventory.summary()
    keys = [*SUMMARY_LABELS, *sorted(k for k in counts if k not in SUMMARY_LABELS)]
    return [(key, SUMMARY_LABELS.get(key, key), counts.get(key, 0)) for key in keys]


def _use_text(use: WorkloadUse) -> str:
    """``Deployment web``, and ``Deployment web (volume data)`` for an image volume."""
    return (
        f"{use.workload} ({use.container})" if use.container.startswith("volume ") else use.workload
    )


def format_text(inventory: Inventory, generated: str) -> str:
    lines = ["Summary"]
    lines += [f"  {label + ':':<24}{count}" for _, label, count in summary_items(inventory)]
    lines += ["", "Images"]
    rows = [
        (
            image.reference,
            ", ".join(dict.fromkeys(_use_text(use) for use in image.used_by)),
            _platforms_text(image),
        )
        for image in inventory.images
    ]
    lines += ["  " + line for line in table(rows, ("IMAGE", "USED BY", "PLATFORMS"))]
    unresolved = [image for image in inventory.images if image.platforms is None]
    if unresolved:
        lines += ["", "Unresolved images"]
        lines += [f"  {image.reference}: {_error_text(image)}" for image in unresolved]
    lines += _verification_lines(inventory)
    lines += ["", "Workloads"]
    workload_rows = [
        (
            workload.workload,
            workload.category,
            ", ".join(workload.platforms) or "-",
            f"{display_path(workload.source)}:{workload.line}",
        )
        for workload in inventory.workloads
    ]
    lines += [
        "  " + line for line in table(workload_rows, ("WORKLOAD", "CATEGORY", "RUNS ON", "SOURCE"))
    ]
    lines += _unknown_kind_lines(inventory)
    if inventory.upgrades is not None:
        lines += ["", "Upgrades (nearest newer tag with the platforms an image lacks)"]
        lines += [f"  {_upgrade_text(upgrade)}" for upgrade in inventory.upgrades] or [
            "  every image runs on every cluster platform"
        ]
    lines += ["", f"cluster platforms: {', '.join(inventory.cluster)}; generated {generated}"]
    return "\n".join(printable(line) for line in lines) + "\n"


def _unknown_kind_lines(inventory: Inventory) -> list[str]:
    """Resources of kinds kmultiarch does not know that look like they make pods, each with
    the fields found and the spec.podSpecs entry that would have them judged."""
    if not inventory.unknown_kinds:
        return []
    lines = ["", "Kinds kmultiarch does not know, whose pods are not judged (spec.podSpecs)"]
    for finding in inventory.unknown_kinds:
        name = finding.resource.display_name if finding.resource else ""
        lines.append(f"  {name} ({display_path(finding.source)}:{finding.line})")
        lines += [f"    {line}" for line in (finding.suggestion or "").splitlines()]
    return lines


def _unknown_kind_json(finding: Finding) -> dict[str, Any]:
    return {
        **(finding.resource.as_dict() if finding.resource else {}),
        "source": display_path(finding.source),
        "line": finding.line,
        "message": finding.message,
        "suggestion": finding.suggestion,
    }


def _unknown_kinds_html(inventory: Inventory) -> str:
    if not inventory.unknown_kinds:
        return ""
    rows = "".join(
        f"<tr><td>{_html(finding.resource.display_name if finding.resource else '')}</td>"
        f"<td><pre><code>{_html_block(finding.suggestion or '')}</code></pre></td>"
        f"<td><code>{_html(display_path(finding.source))}:{finding.line}</code></td></tr>"
        for finding in inventory.unknown_kinds
    )
    return (
        f"<h2>Kinds kmultiarch does not know ({len(inventory.unknown_kinds)})</h2>\n"
        '<table id="unknown-kinds">\n<thead><tr><th>Resource</th>'
        "<th>spec.podSpecs entry to check and declare</th><th>Source</th></tr></thead>\n"
        f"<tbody>{rows}</tbody>\n</table>\n"
    )


def _html_block(text: str) -> str:
    """Lines of outside text for a ``<pre>``: each neutralised and escaped as :func:`_html`."""
    return "\n".join(_html(line) for line in text.splitlines())


def _verification_lines(inventory: Inventory) -> list[str]:
    """spec.verify's verdicts, per image (nothing when it is off)."""
    verified = [image for image in inventory.images if image.verification is not None]
    if not verified:
        return []
    lines = ["", "Verification (the program each platform starts)"]
    for image in verified:
        verification = image.verification
        assert verification is not None
        if image.used_by and all(use.container.startswith("volume ") for use in image.used_by):
            lines.append(f"  {image.reference}: skipped: an image volume starts no program")
            continue
        if verification.error is not None:
            lines.append(f"  {image.reference}: {_without(verification.error, image)}")
            continue
        lines.append(f"  {image.reference}")
        width = max((len(str(v.platform)) for v in verification.platforms), default=0)
        lines += [
            f"    {verdict.platform!s:<{width}}  {verdict_text(verdict)}"
            for verdict in verification.platforms
        ] or ["    (no platform to run on: nothing to verify)"]
    return lines


def _html(text: str) -> str:
    """Outside text on the page: neutralised as the text report neutralises it (the page is
    read in terminals and CI logs too: ``report -o html | tee``), then HTML-escaped."""
    return escape(printable(text))


def _upgrade_text(upgrade: UpgradeSuggestion) -> str:
    lacks = f"{upgrade.image} lacks {', '.join(upgrade.lacking)}"
    if upgrade.tag is None:
        return f"{lacks}: {upgrade.note}"
    return f"{lacks}: {upgrade.reference} runs on {', '.join(upgrade.platforms)}"


def _upgrades_html(inventory: Inventory) -> str:
    if inventory.upgrades is None:
        return ""
    rows = "".join(
        f"<tr><td><code>{_html(upgrade.image)}</code></td>"
        f"<td>{_html(', '.join(upgrade.lacking))}</td>"
        f"<td>{_upgrade_cell(upgrade)}</td></tr>"
        for upgrade in inventory.upgrades
    )
    return (
        f'<h2>Upgrades ({len(inventory.upgrades)})</h2>\n<table id="upgrades">\n'
        "<thead><tr><th>Image</th><th>Lacks</th><th>Nearest newer tag with it</th></tr></thead>"
        f"\n<tbody>{rows}</tbody>\n</table>\n"
    )


def _upgrade_cell(upgrade: UpgradeSuggestion) -> str:
    if upgrade.reference is None:
        return f'<span class="muted">{_html(upgrade.note)}</span>'
    return f"<code>{_html(upgrade.reference)}</code> ({_html(', '.join(upgrade.platforms))})"


def _upgrade_json(upgrade: UpgradeSuggestion) -> dict[str, Any]:
    return {
        "image": upgrade.image,
        "lacking": list(upgrade.lacking),
        "tag": upgrade.tag,
        "reference": upgrade.reference,
        "platforms": list(upgrade.platforms),
        "note": upgrade.note or None,
    }


def _platforms_text(image: ImageEntry) -> str:
    if image.platforms is None:
        return "unresolved (see below)"
    return ", ".join(image.platforms) or METADATA_ONLY


def _error_text(image: ImageEntry) -> str:
    return _without(image.error or "unknown error", image)


def _without(message: str, image: ImageEntry) -> str:
    """A message without the image's reference in front (it is shown beside it)."""
    return message.removeprefix(f"{image.reference}: ")


def format_json(inventory: Inventory, generated: str) -> str:
    document: dict[str, Any] = {
        "generated": generated,
        "cluster": list(inventory.cluster),
        "summary": inventory.summary(),
        "images": [_image_json(image) for image in inventory.images],
        "workloads": [_workload_json(workload) for workload in inventory.workloads],
    }
    if inventory.unknown_kinds:
        document["unknownPodKinds"] = [_unknown_kind_json(f) for f in inventory.unknown_kinds]
    if inventory.upgrades is not None:
        document["upgrades"] = [_upgrade_json(upgrade) for upgrade in inventory.upgrades]
    return json.dumps(document, indent=2) + "\n"


def _image_json(image: ImageEntry) -> dict[str, Any]:
    verification = (
        {"verification": image_json(image.verification)} if image.verification is not None else {}
    )
    return {
        "image": image.reference,
        "writtenAs": list(image.written_as),
        "platforms": list(image.platforms) if image.platforms is not None else None,
        "metadataOnly": image.platforms == (),
        "digest": image.digest,
        "resolvedFrom": image.resolved_from,
        "error": image.error,
        "usedBy": [
            {
                **use.resource.as_dict(),
                "container": use.container,
                "source": display_path(use.source),
                "line": use.line,
            }
            for use in image.used_by
        ],
        **verification,
    }


def _workload_json(workload: WorkloadEntry) -> dict[str, Any]:
    return {
        **workload.resource.as_dict(),
        "source": display_path(workload.source),
        "line": workload.line,
        "fieldPath": workload.field_path,
        "category": workload.category,
        "platforms": list(workload.platforms),
        "images": list(workload.images),
        "verdict": workload.verdict,
    }


_CSS = """
:root { color-scheme: light; --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec;
  --good: #1f7a4d; --good-bg: #e3f9ee; --warn: #8d5b00; --warn-bg: #fff4d6;
  --bad: #a61b1b; --bad-bg: #fde8e8; --info: #1c4f8f; --info-bg: #e3efff; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: #f5f7fa; }
header { background: #102a43; color: #fff; padding: 20px 32px; }
header h1 { margin: 0; font-size: 22px; font-weight: 600; }
header p { margin: 4px 0 0; color: #bcccdc; font-size: 13px; }
main { padding: 24px 32px 40px; max-width: 1400px; }
h2 { font-size: 17px; margin: 28px 0 10px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px;
  min-width: 150px; }
.card .count { font-size: 28px; font-weight: 700; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: .04em; }
.card.good .count { color: var(--good); } .card.warn .count { color: var(--warn); }
.card.bad .count { color: var(--bad); }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line);
  border-radius: 8px; overflow: hidden; }
th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { background: #f0f4f8; font-size: 12px; text-transform: uppercase; letter-spacing: .04em;
  color: var(--muted); }
tr:last-child td { border-bottom: none; }
code { font: 12.5px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  overflow-wrap: anywhere; }
#images td:first-child, #workloads td:nth-child(5) { min-width: 240px; }
.badge { display: inline-block; padding: 1px 8px; margin: 1px 2px 1px 0; border-radius: 10px;
  font-size: 12px; background: var(--info-bg); color: var(--info); white-space: nowrap; }
.badge.good { background: var(--good-bg); color: var(--good); }
.badge.warn { background: var(--warn-bg); color: var(--warn); }
.badge.bad { background: var(--bad-bg); color: var(--bad); }
.muted { color: var(--muted); font-size: 12px; }
ul.uses { margin: 0; padding-left: 16px; }
"""

_CATEGORY_TONE = {
    "multi-arch": "good",
    "unresolvable": "bad",
    "no-common-platform": "bad",
}
_VERDICT_TONE = {
    "ok": "good",
    "needs-change": "warn",
    "no-common-platform": "bad",
    "scheduling-conflict": "bad",
    "unresolved": "bad",
}


def format_html(inventory: Inventory, generated: str) -> str:
    """One page, inline CSS, no script and no external resource."""
    cards = "".join(
        f'<div class="card {_card_tone(key, count)}" data-key="{_html(key)}">'
        f'<div class="count">{count}</div><div class="label">{_html(label)}</div></div>'
        for key, label, count in summary_items(inventory)
    )
    verifying = any(image.verification is not None for image in inventory.images)
    image_rows = "".join(_image_row(image, verifying) for image in inventory.images)
    workload_rows = "".join(_workload_row(workload) for workload in inventory.workloads)
    cluster = ", ".join(inventory.cluster)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="kmultiarch {_html(__version__)}">
<title>kmultiarch report</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>kmultiarch: image platforms report</h1>
<p>Cluster platforms: {_html(cluster)} &middot; generated {_html(generated)}</p>
</header>
<main>
<h2>Summary</h2>
<section class="cards" id="summary">{cards}</section>
<h2>Images ({len(inventory.images)})</h2>
<table id="images">
<thead><tr><th>Image</th><th>Platforms</th><th>Digest</th><th>Used by</th>\
{"<th>Verification</th>" if verifying else ""}</tr></thead>
<tbody>{image_rows}</tbody>
</table>
<h2>Workloads ({len(inventory.workloads)})</h2>
<table id="workloads">
<thead><tr><th>Workload</th><th>Category</th><th>Runs on</th><th>Verdict</th><th>Images</th>
<th>Source</th></tr></thead>
<tbody>{workload_rows}</tbody>
</table>
{_unknown_kinds_html(inventory)}{_upgrades_html(inventory)}</main>
</body>
</html>
"""


def _card_tone(key: str, count: int) -> str:
    if key in ("unresolvable", "no-common-platform") and count:
        return "bad"
    if key.endswith("-only") and count:
        return "warn"
    if key == "multi-arch" and count:
        return "good"
    return ""


def _image_row(image: ImageEntry, verifying: bool = False) -> str:
    if image.platforms is None:
        platforms = (
            f'<span class="badge bad">unresolved</span> '
            f'<span class="muted">{_html(_error_text(image))}</span>'
        )
    else:
        platforms = "".join(
            f'<span class="badge">{_html(p)}</span>' for p in image.platforms or (METADATA_ONLY,)
        )
    source = (
        f' <span class="muted">({_html(image.resolved_from)})</span>'
        if (image.resolved_from)
        else ""
    )
    digest = f"<code>{_html(image.digest[:19])}&hellip;</code>" if image.digest else "-"
    uses = "".join(
        f'<li>{_html(use.workload)} <span class="muted">{_html(use.container)}</span></li>'
        for use in image.used_by
    )
    return (
        f'<tr class="image"><td><code>{_html(image.reference)}</code></td>'
        f"<td>{platforms}{source}</td><td>{digest}</td>"
        f'<td><ul class="uses">{uses}</ul></td>'
        + (f"<td>{_verification_cell(image)}</td>" if verifying else "")
        + "</tr>"
    )


_VERDICT_BADGE = {"verified": "good", "mismatch": "bad", "unverified": "warn"}


def _verification_cell(image: ImageEntry) -> str:
    verification = image.verification
    if verification is None:
        return '<span class="muted">-</span>'
    if verification.error is not None:
        return (
            '<span class="badge warn">not verified</span> '
            f'<span class="muted">{_html(_without(verification.error, image))}</span>'
        )
    cells = [
        f'<span class="badge {_VERDICT_BADGE[verdict.status]}">'
        f"{_html(str(verdict.platform))} {verdict.status}</span> "
        f'<span class="muted">{_html(verdict_detail(verdict))}</span>'
        for verdict in verification.platforms
    ]
    return "<br>".join(cells) or '<span class="muted">nothing to verify</span>'


def _workload_row(workload: WorkloadEntry) -> str:
    tone = _CATEGORY_TONE.get(
        workload.category, "warn" if workload.category.endswith("-only") else ""
    )
    platforms = (
        "".join(f'<span class="badge">{_html(p)}</span>' for p in workload.platforms)
        or '<span class="muted">-</span>'
    )
    verdict_tone = _VERDICT_TONE.get(workload.verdict, "")
    images = "<br>".join(f"<code>{_html(image)}</code>" for image in workload.images)
    return (
        f'<tr class="workload"><td>{_html(workload.workload)}</td>'
        f'<td><span class="badge {tone}">{_html(workload.category)}</span></td>'
        f"<td>{platforms}</td>"
        f'<td><span class="badge {verdict_tone}">{_html(workload.verdict)}</span></td>'
        f"<td>{images}</td>"
        f"<td><code>{_html(display_path(workload.source))}:{workload.line}</code></td></tr>"
    )


FORMATTERS = {"text": format_text, "json": format_json, "html": format_html}
