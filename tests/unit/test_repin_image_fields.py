"""Re-pinning changes only image fields (issue 36, item 9): ``spec.repinDigests`` (and so
``fix --repin``) writes the index digest into the image fields of the pods kmultiarch places,
through the minimal text edit (the scalar keeps its quoting), and leaves every other text that
writes the same reference as it is, with a note: a ConfigMap's data, a workload annotated
``kmultiarch.dev/skip``, a Tekton parameter. Before, the pinned reference was replaced across
the document's text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import PLATFORM_PINNED_DIGEST
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import Exclusions, Policy, ResolutionPolicy, ScopePolicy
from kmultiarch.core.resolution import DigestPin, Resolution, lines_left, reference_lines
from kmultiarch.yaml.edit import apply_operations
from kmultiarch.yaml.stream import read_stream

CHILD = "sha256:" + "a" * 64
INDEX = "sha256:" + "b" * 64
PINNED = f"registry.example/app:1.4@{CHILD}"
REPINNED = f"registry.example/app:1.4@{INDEX}"
POLICY = Policy(resolution=ResolutionPolicy(repin_digests=True))


def _resolve(references: Sequence[ImageRef]) -> Mapping[ImageRef, Resolution]:
    """The child is linux/amd64's manifest of the index tag 1.4 names; the index runs on both."""
    answers = {}
    for reference in references:
        if reference.digest == CHILD:
            answers[reference] = Resolution(
                reference,
                frozenset({Platform.parse("linux/amd64")}),
                CHILD,
                pin=DigestPin("1.4", INDEX, Platform.parse("linux/amd64")),
            )
        else:
            answers[reference] = Resolution(
                reference,
                frozenset({Platform.parse("linux/amd64"), Platform.parse("linux/arm64")}),
                reference.digest,
            )
    return answers


def _deployment(name: str, image: str, annotations: str = "") -> str:
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        f"  name: {name}\n"
        f"{annotations}"
        "spec:\n"
        "  template:\n"
        "    spec:\n"
        "      containers:\n"
        f"      - name: {name}\n"
        f"        image: {image}\n"
    )


CONFIG_MAP = (
    f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: launcher\ndata:\n  image: {PINNED}\n"
)
SKIPPED = "  annotations:\n    kmultiarch.dev/skip: 'true'\n"


def test_repin_digests_leaves_a_config_maps_data_and_a_skipped_workload_as_they_are() -> None:
    text = "---\n".join(
        [_deployment("web", PINNED), CONFIG_MAP, _deployment("legacy", PINNED, SKIPPED)]
    )
    result = mutate_text(text, POLICY, resolve=_resolve)
    out = result.stream()
    web, config_map, legacy = list(yaml.safe_load_all(out))
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == REPINNED
    assert config_map["data"]["image"] == PINNED
    assert legacy["spec"]["template"]["spec"]["containers"][0]["image"] == PINNED
    # the two documents left alone are byte for byte what they were
    assert CONFIG_MAP in out and _deployment("legacy", PINNED, SKIPPED) in out
    [note] = [
        f for f in result.findings if f.rule == PLATFORM_PINNED_DIGEST and f.severity == "info"
    ]
    config_map_line = text.splitlines().index(f"  image: {PINNED}") + 1
    legacy_line = text.splitlines().index(f"        image: {PINNED}", config_map_line) + 1
    assert note.line == config_map_line
    assert f"2 other occurrences of {PINNED!r} left as they are" in note.message
    assert f"lines {config_map_line}, {legacy_line}" in note.message


def test_repin_digests_leaves_a_list_items_config_map_in_the_same_document_as_it_is() -> None:
    """One document (a List) holding the pod and a ConfigMap naming the same reference: the
    document's text was rewritten whole."""
    text = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [yaml.safe_load(_deployment("web", PINNED)), yaml.safe_load(CONFIG_MAP)],
        }
    )
    result = mutate_text(text, POLICY, resolve=_resolve)
    web, config_map = yaml.safe_load(result.stream())["items"]
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == REPINNED
    assert config_map["data"]["image"] == PINNED


def test_repin_digests_keeps_the_image_fields_quoting() -> None:
    for written, expected in (
        (PINNED, REPINNED),
        (f"'{PINNED}'", f"'{REPINNED}'"),
        (f'"{PINNED}"', f'"{REPINNED}"'),
    ):
        text = _deployment("web", written) + "  # keep\n"
        out = mutate_text(text, POLICY, resolve=_resolve).stream()
        assert f"        image: {expected}\n" in out, out
        assert "  # keep\n" in out


def test_repin_digests_leaves_a_tekton_parameter_as_it_is_and_decides_on_the_pin() -> None:
    """A TaskRun's step names its image through $(params.image): the parameter's value is no
    image field (other steps may read it), so it is left as it is, the pod is decided on what
    it pulls (the pinned amd64 manifest: an amd64 affinity, not the index's arm64 toleration),
    and the finding says to change it where it is set."""
    text = (
        "apiVersion: tekton.dev/v1\n"
        "kind: TaskRun\n"
        "metadata:\n"
        "  name: build\n"
        "spec:\n"
        "  params:\n"
        "  - name: image\n"
        f"    value: {PINNED}\n"
        "  taskSpec:\n"
        "    params:\n"
        "    - name: image\n"
        "    steps:\n"
        "    - name: build\n"
        "      image: $(params.image)\n"
    )
    result = mutate_text(text, POLICY, resolve=_resolve)
    out = result.stream()
    assert f"    value: {PINNED}\n" in out
    assert "      image: $(params.image)\n" in out
    assert not result.documents["<text>"][0].repins
    [pod] = result.pods
    assert pod.status == "needs-change"
    placement = str(yaml.safe_load(out)["spec"]["podTemplate"])
    assert "amd64" in placement and "arm64" not in placement
    [pin] = [f for f in result.findings if f.rule == PLATFORM_PINNED_DIGEST]
    assert "it is not written in an image field" in pin.message
    assert "spec.repinDigests rewrites it" not in pin.message


def test_reference_lines_finds_the_reference_alone() -> None:
    text = (
        f"a: {PINNED}\n"  # 1
        f"b: x{PINNED}\n"  # 2: part of a longer name
        f"c: [{PINNED}, {PINNED}]\n"  # 3: twice
        f"d: {PINNED}0\n"  # 4: a longer digest
        f"# {PINNED}\n"  # 5: a comment writes it too
    )
    assert reference_lines(text, PINNED) == [1, 3, 3, 5]


def test_lines_left_takes_away_the_first_occurrence_at_or_after_each_field() -> None:
    text = f"x: {PINNED}\nimage:\n  {PINNED}\nz: {PINNED}\n"
    # the field's key is on line 2, its value on line 3
    assert lines_left(text, PINNED, [2]) == [1, 4]
    assert lines_left(text, PINNED, [1, 2, 4]) == []
    assert lines_left(text, PINNED, []) == [1, 3, 4]


def test_a_replaced_string_keeps_its_style_in_block_flow_and_json() -> None:
    cases = [
        (f"image: {PINNED} # c\n", f"image: {REPINNED} # c\n"),
        (f"image: '{PINNED}'\n", f"image: '{REPINNED}'\n"),
        (f'image: "{PINNED}"\n', f'image: "{REPINNED}"\n'),
        (f"v:\n  image: {{reference: {PINNED}}}\n", f"v:\n  image: {{reference: {REPINNED}}}\n"),
        (f'{{"image": "{PINNED}", "n": 1}}\n', f'{{"image": "{REPINNED}", "n": 1}}\n'),
    ]
    for text, expected in cases:
        (document,) = read_stream(text, "t.yaml")
        path = ["v", "image", "reference"] if text.startswith("v:") else ["image"]
        operation = {"op": "replace", "path": "/" + "/".join(path), "value": REPINNED}
        assert apply_operations(document, [operation]) == expected, text


def test_a_plain_string_that_would_not_read_back_plain_is_quoted() -> None:
    (document,) = read_stream("v: abc\n", "t.yaml")
    for value, expected in (
        ("1.25", 'v: "1.25"\n'),
        ("true", 'v: "true"\n'),
        ("a #b", 'v: "a #b"\n'),
    ):
        operation = {"op": "replace", "path": "/v", "value": value}
        assert apply_operations(document, [operation]) == expected


def test_repin_digests_leaves_a_workload_out_of_the_policys_scope_as_it_is() -> None:
    """A workload in a namespace spec.exclude names shares the run's answer for the pinned
    reference: its image field was listed for rewriting too."""
    policy = Policy(
        scope=ScopePolicy(exclude=Exclusions(namespaces=frozenset({"legacy"}))),
        resolution=ResolutionPolicy(repin_digests=True),
    )
    excluded = _deployment("old", PINNED).replace(
        "  name: old\n", "  name: old\n  namespace: legacy\n"
    )
    text = _deployment("web", PINNED) + "---\n" + excluded
    result = mutate_text(text, policy, resolve=_resolve)
    web, old = list(yaml.safe_load_all(result.stream()))
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == REPINNED
    assert old["spec"]["template"]["spec"]["containers"][0]["image"] == PINNED
    assert result.stream().endswith(excluded)
