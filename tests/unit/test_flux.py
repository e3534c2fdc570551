"""The Component builder (kmultiarch.output.flux): targets, List items, names, texts, and the
comparison ``check --component`` makes. Pure: engine results from a synthetic resolver, no
kustomize (tests/integration/test_flux_kustomize.py runs the real one)."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

import pytest
import yaml

from kmultiarch.api import mutate_text
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.patch import apply_patch
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.resolution import Resolution
from kmultiarch.engine import EngineResult
from kmultiarch.errors import InputError
from kmultiarch.io.config import parse_policy_text
from kmultiarch.output.flux import (
    KUSTOMIZATION,
    MARKER,
    Resource,
    Target,
    component_files,
    helmrelease_post_renderers,
    is_written_by_kmultiarch,
    regex_literal,
    staleness,
    targeted_patches,
    yaml_text,
)

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")


def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
    """Images named ``*amd64*`` run on amd64 only, the others on both platforms."""
    return {
        ref: Resolution(
            ref,
            frozenset({AMD64} if "amd64" in str(ref) else {AMD64, ARM64}),
            "sha256:" + "0" * 64,
        )
        for ref in references
    }


def deployment(name: str, namespace: str | None = None, *, image: str = "app:1") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}{ns}\n"
        f"spec:\n  template:\n    spec:\n      containers:\n      - name: c\n"
        f"        image: {image}\n"
    )


def run(*documents: str, source: str = "in.yaml") -> EngineResult:
    return mutate_text("---\n".join(documents), Policy(), resolve=resolve, source=source)


def documents_of(result: EngineResult) -> list[object]:
    return [
        outcome.document.value for outcomes in result.documents.values() for outcome in outcomes
    ]


# Targets ------------------------------------------------------------------------------------


def test_a_changed_deployment_is_targeted_by_group_version_kind_and_name() -> None:
    patches = targeted_patches(run(deployment("web", "shop"), deployment("db", "shop")))
    assert [(p.target.selector(), p.file_name) for p in patches] == [
        (
            {"group": "apps", "version": "v1", "kind": "Deployment", "name": "db"},
            "deployment_shop_db.yaml",
        ),
        (
            {"group": "apps", "version": "v1", "kind": "Deployment", "name": "web"},
            "deployment_shop_web.yaml",
        ),
    ]
    # The operations are mutate's, from the document's root.
    result = run(deployment("web", "shop"))
    (patch,) = targeted_patches(result)
    (outcome,) = result.documents["in.yaml"]
    assert patch.operations == tuple(outcome.operations)
    assert patch.resource.where == "in.yaml: document 1"


def test_namesakes_in_other_namespaces_are_told_apart_by_namespace() -> None:
    patches = targeted_patches(
        run(deployment("web", "a"), deployment("web", "b"), deployment("web"))
    )
    assert sorted((p.target.namespace, p.file_name) for p in patches) == [
        ("a", "deployment_a_web.yaml"),
        ("b", "deployment_b_web.yaml"),
        # No namespace is kustomize's "default", which a target can name.
        ("default", "deployment_web.yaml"),
    ]


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        pytest.param(
            (deployment("web", "shop"), deployment("web", "shop")),
            r"in\.yaml: document 1: apps/v1 Deployment shop/web cannot be selected alone: "
            r"kustomize's target \{group: apps, version: v1, kind: Deployment, name: web, "
            r"namespace: shop\} also selects apps/v1 Deployment shop/web at in\.yaml: document 2",
            id="the same id twice",
        ),
        pytest.param(
            (deployment("web"), deployment("web", "default")),
            r"document 1: .* also selects apps/v1 Deployment default/web at in\.yaml: document 2",
            id="no namespace is default",
        ),
        pytest.param(
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                "spec: {containers: [{name: c, image: app:1}]}\n",
                "apiVersion: example.com/v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
            ),
            r"v1 Pod p cannot be selected alone: .* also selects example\.com/v1 Pod p",
            id="a target cannot say core group",
        ),
        pytest.param(
            (
                "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: run-}\nspec:\n"
                "  template:\n    spec: {containers: [{name: c, image: app:1}]}\n",
            ),
            r"in\.yaml: document 1: batch/v1 Job \(no name\) has no metadata\.name "
            r"\(generateName\?\): a kustomize target cannot select it",
            id="no name",
        ),
    ],
)
def test_a_resource_that_cannot_be_targeted_alone_is_an_error(
    documents: tuple[str, ...], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        targeted_patches(run(*documents))


def test_a_namesake_of_another_group_does_not_need_a_namespace() -> None:
    other = "apiVersion: example.com/v1\nkind: Deployment\nmetadata: {name: web, namespace: x}\n"
    (patch,) = targeted_patches(run(deployment("web", "shop"), other))
    assert patch.target == Target("apps", "v1", "Deployment", "web", None)


def test_names_are_escaped_for_kustomize_regular_expressions() -> None:
    (patch,) = targeted_patches(run(deployment("web.v2", "shop")))
    assert patch.target.selector()["name"] == r"web\.v2"
    assert re.fullmatch(patch.target.selector()["name"], "web.v2")
    assert not re.fullmatch(patch.target.selector()["name"], "webxv2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("web", "web"),
        ("a.b", r"a\.b"),
        ("x+y*z?", r"x\+y\*z\?"),
        ("(a|b)[c]{2}^$\\", r"\(a\|b\)\[c\]\{2\}\^\$\\"),
        ("system:node-1_x", "system:node-1_x"),
    ],
)
def test_regex_literal_matches_exactly_its_text(text: str, expected: str) -> None:
    assert regex_literal(text) == expected
    assert re.fullmatch(expected, text)


@pytest.mark.parametrize(
    ("target", "resource", "selected"),
    [
        (Target("apps", "v1", "Deployment", "web"), ("apps/v1", "Deployment", "web", "x"), True),
        (Target("apps", "v1", "Deployment", "web"), ("apps/v1", "Deployment", "web2", None), False),
        (
            Target("apps", "v1", "Deployment", "web"),
            ("ext.io/v1", "Deployment", "web", None),
            False,
        ),
        (Target("apps", "v1", "Deployment", "web"), ("apps/v2", "Deployment", "web", None), False),
        (Target("", "v1", "Pod", "p"), ("ext.io/v1", "Pod", "p", None), True),
        (Target("", "v1", "Pod", "p", "default"), ("v1", "Pod", "p", None), True),
        (Target("", "v1", "Pod", "p", "default"), ("v1", "Pod", "p", "kube-system"), False),
        (Target("", "v1", "Pod", "p", "a"), ("v1", "Pod", "p", "a"), True),
    ],
)
def test_a_target_selects_as_kustomize_does(
    target: Target, resource: tuple[str, str, str, str | None], selected: bool
) -> None:
    assert target.selects(Resource(*resource, where="x")) is selected


# Lists ----------------------------------------------------------------------------------------


LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: settings}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop}
  spec:
    template:
      spec:
        containers: [{name: c, image: app:1}]
- apiVersion: v1
  kind: List
  items:
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: migrate, namespace: shop}
    spec:
      template:
        spec:
          containers: [{name: c, image: tool-amd64:1}]
          restartPolicy: Never
"""


def test_the_items_of_a_list_are_targeted_each_with_their_operations_re_based() -> None:
    result = run(LIST)
    patches = targeted_patches(result)
    assert [(p.target.kind, p.target.name, p.resource.where) for p in patches] == [
        ("Deployment", "web", "in.yaml: document 1 (/items/1)"),
        ("Job", "migrate", "in.yaml: document 1 (/items/2/items/0)"),
    ]
    for patch in patches:
        assert all(not op.pointer.startswith("/items") for op in patch.operations)
    # Applied to each item alone, the patches give the items of mutate's document.
    (outcome,) = result.documents["in.yaml"]
    original = outcome.document.value
    expected = apply_patch(original, outcome.operations)
    assert isinstance(original, dict) and isinstance(expected, dict)
    assert apply_patch(original["items"][1], patches[0].operations) == expected["items"][1]
    nested, changed = original["items"][2]["items"][0], expected["items"][2]["items"][0]
    assert apply_patch(nested, patches[1].operations) == changed
    assert changed != nested


def test_a_list_item_namesake_is_a_namesake() -> None:
    expected = r"document 1 \(/items/1\): .* also selects .* document 2;"
    with pytest.raises(InputError, match=expected):
        targeted_patches(run(LIST, deployment("web", "shop")))


# Files ------------------------------------------------------------------------------------


def test_the_component_lists_each_patch_file_with_its_target() -> None:
    result = run(deployment("web"), deployment("api", "shop", image="api-amd64:2"), LIST)
    files = component_files(targeted_patches(result))
    assert list(files)[-1] == KUSTOMIZATION  # written last
    kustomization = yaml.safe_load(files[KUSTOMIZATION])
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1alpha1"
    assert kustomization["kind"] == "Component"
    listed = [entry["path"] for entry in kustomization["patches"]]
    assert sorted(listed) == sorted(name for name in files if name != KUSTOMIZATION)
    assert all(is_written_by_kmultiarch(text) for text in files.values())
    # Each file's operations, applied to its resource, give mutate's resource.
    values = {
        (value["kind"], value["metadata"]["name"]): value
        for value in _flattened(documents_of(result))
    }
    mutated = {
        (value["kind"], value["metadata"]["name"]): value
        for value in _flattened(yaml.safe_load_all(result.stream()))
    }
    changed = 0
    for entry in kustomization["patches"]:
        key = (entry["target"]["kind"], entry["target"]["name"])
        operations = yaml.safe_load(files[entry["path"]])
        assert apply_patch(values[key], operations) == mutated[key]
        changed += values[key] != mutated[key]
    assert changed == 4
    # Everything not patched is as mutate left it: unchanged.
    untouched = set(values) - {
        (e["target"]["kind"], e["target"]["name"]) for e in kustomization["patches"]
    }
    assert untouched == {("ConfigMap", "settings")}
    assert all(values[key] == mutated[key] for key in untouched)


def _flattened(documents: object) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for value in documents:  # type: ignore[attr-defined]
        if isinstance(value, dict) and value.get("kind") == "List":
            found.extend(_flattened(value["items"]))
        elif isinstance(value, dict):
            found.append(value)
    return found


def test_nothing_changed_is_a_component_with_no_patches() -> None:
    result = run("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    assert targeted_patches(result) == []
    files = component_files([])
    assert list(files) == [KUSTOMIZATION]
    assert yaml.safe_load(files[KUSTOMIZATION]) == {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "patches": [],
    }
    assert yaml.safe_load(helmrelease_post_renderers([])) == {
        "postRenderers": [{"kustomize": {"patches": []}}]
    }


def test_the_files_do_not_depend_on_document_order_or_source_names() -> None:
    documents = [deployment(f"app-{n}", f"ns-{n % 3}", image=f"img-{n}:1") for n in range(12)]
    first = component_files(targeted_patches(run(*documents)))
    shuffled = documents[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != documents
    second = component_files(targeted_patches(run(*shuffled, source="elsewhere/all.yaml")))
    assert first == second
    assert len(first) == 13


def test_file_names_that_would_be_the_same_get_numbers() -> None:
    documents = [
        deployment("web", "a"),
        # Same kind, namespace and name in another group: the same file name at first.
        "apiVersion: ext.io/v1\nkind: Deployment\nmetadata: {name: web, namespace: a}\nspec:\n"
        "  template:\n    spec: {containers: [{name: c, image: app:1}]}\n",
        deployment("Web_App", "a"),
        deployment("web-app", "a"),
    ]
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        "spec:\n  podSpecs:\n"
        "  - apiVersion: ext.io/v1\n    kind: Deployment\n    path: /spec/template/spec\n",
        "policy.yaml",
    )
    result = mutate_text("---\n".join(documents), policy, resolve=resolve)
    names = [p.file_name for p in targeted_patches(result)]
    assert len(set(names)) == len(names)
    assert len(names) == 4
    assert "deployment_a_web-app.yaml" in names and "deployment_a_web-app-2.yaml" in names
    assert "deployment_a_web.yaml" in names and "deployment_a_web-2.yaml" in names


def test_the_helmrelease_post_renderers_hold_the_same_patches_inline() -> None:
    result = run(deployment("web"), deployment("api", image="api-amd64:2"), LIST)
    patches = targeted_patches(result)
    files = component_files(patches)
    kustomization = yaml.safe_load(files[KUSTOMIZATION])
    rendered = yaml.safe_load(helmrelease_post_renderers(patches))
    (renderer,) = rendered["postRenderers"]
    inline = renderer["kustomize"]["patches"]
    assert [p["target"] for p in inline] == [p["target"] for p in kustomization["patches"]]
    assert [yaml.safe_load(p["patch"]) for p in inline] == [
        yaml.safe_load(files[p["path"]]) for p in kustomization["patches"]
    ]
    assert len(inline) == 4


# YAML ---------------------------------------------------------------------------------------


TRICKY = [
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "true",
    "null",
    "~",
    "",
    " ",
    "0o12",
    "0x1F",
    "1_000",
    "012",
    "1e3",
    ".5",
    "-",
    "- a",
    "a: b",
    "#x",
    "a #b",
    "@x",
    "`x",
    "!x",
    "&x",
    "*x",
    "%x",
    "{a}",
    "[a]",
    "'q'",
    '"d"',
    "multi\nline",
    "tab\there",
    "trailing ",
    "é ✓",
    "\u2028",
    "kubernetes.io/arch",
    "arm64",
    "NoSchedule",
    "=",
    "?",
    "|",
    ">",
    "<<",
]


@pytest.mark.parametrize("text", TRICKY)
def test_yaml_text_reads_back_as_the_value(text: str) -> None:
    value = [
        {
            "op": "add",
            "path": "/x",
            "value": {text: [text, {"k": text}], "n": [1, 2.5, None, True, {}, []]},
        }
    ]
    assert yaml.safe_load(yaml_text(value)) == value


@pytest.mark.parametrize("text", ["0o12", "1_000", "yes", "y", "on", "1e3", "0x1F", "null", "~"])
def test_strings_a_yaml_1_2_or_1_1_reader_would_take_for_another_type_are_quoted(text: str) -> None:
    assert yaml_text({"k": text}) == f'k: "{text}"\n'


def test_a_written_file_is_recognised_by_its_first_line() -> None:
    assert is_written_by_kmultiarch(f"{MARKER}\n- op: add\n")
    assert is_written_by_kmultiarch(f"{MARKER}\r\nrest")
    assert not is_written_by_kmultiarch("- op: add\n")
    assert not is_written_by_kmultiarch(f"# note\n{MARKER}\n")
    assert not is_written_by_kmultiarch(f" {MARKER}\n")


# Staleness ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        ({KUSTOMIZATION: f"{MARKER}\nk", "a.yaml": f"{MARKER}\na"}, ""),
        ({KUSTOMIZATION: f"{MARKER}\nk"}, "a.yaml is missing"),
        ({}, "a.yaml is missing, kustomization.yaml is missing"),
        ({KUSTOMIZATION: f"{MARKER}\nk", "a.yaml": f"{MARKER}\nA"}, "a.yaml differs"),
        ({KUSTOMIZATION: "mine", "a.yaml": f"{MARKER}\na"}, "kustomization.yaml differs"),
        (
            {KUSTOMIZATION: f"{MARKER}\nk", "a.yaml": f"{MARKER}\na", "old.yaml": f"{MARKER}\n"},
            "old.yaml is left over (no longer written)",
        ),
    ],
)
def test_staleness_names_each_file_that_differs(present: dict[str, str], expected: str) -> None:
    wanted = {"a.yaml": f"{MARKER}\na", KUSTOMIZATION: f"{MARKER}\nk"}
    found = staleness(wanted, present)
    assert bool(found) is bool(expected)
    assert found.describe() == expected
