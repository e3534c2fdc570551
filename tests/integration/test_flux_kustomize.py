"""The Component of ``mutate --output kustomize`` and the HelmRelease patches of ``--output
helmrelease-patches`` under the real kustomize (``kubectl kustomize``): added to the original
kustomization they give ``mutate``'s documents, compared parsed and in any order (kustomize
sorts resources and keys).

Every example that holds manifests or a kustomization runs through the command line as a user
would run it (its policy and lock, offline); every file of tests/corpus/corpus runs through the
engine with the synthetic "mixed" cluster (a third of the images amd64-only: affinity and
tolerations both), one kustomize build per file and per mutate output. A corpus file kustomize
cannot load whole is cut into pieces it can load (renders concatenated: an id seen again starts
a new piece; documents kustomize refuses, such as resources without a name, are left out), and
each reason is asserted against kustomize's own error on the whole file."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.corpus import CLUSTERS, corpus_files
from support.tools import EXAMPLES, helm_binary, kubectl_binary

from integration.test_mutate_golden import expectations, policy_for
from kmultiarch.api import mutate_text
from kmultiarch.core.policy.model import Policy
from kmultiarch.errors import InputError, ManifestStreamError
from kmultiarch.output.flux import (
    KUSTOMIZATION,
    TargetedPatch,
    component_files,
    helmrelease_post_renderers,
    targeted_patches,
)
from kmultiarch.yaml.stream import SourceDocument, read_stream

# kustomize ---------------------------------------------------------------------------------


def kustomize(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(kubectl_binary()), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def build(directory: Path) -> str:
    completed = kustomize(directory)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def write_kustomization(directory: Path, **fields: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / KUSTOMIZATION).write_text(yaml.safe_dump(fields, sort_keys=False))
    return directory


def kustomization_of(directory: Path, stream: str, **fields: object) -> Path:
    """A kustomization whose one resource file holds ``stream``."""
    write_kustomization(directory, resources=["r.yaml"], **fields)
    (directory / "r.yaml").write_text(stream)
    return directory


def write_files(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir()
    for name, content in files.items():
        (directory / name).write_text(content)
    return directory


def resources(text: str) -> dict[tuple[str, str, str, str], Any]:
    """The resources of a stream by id, Lists flattened as kustomize loads them."""
    found: dict[tuple[str, str, str, str], Any] = {}
    # libyaml: the corpus builds are megabytes of CustomResourceDefinitions.
    for value in _flattened(yaml.load_all(text, Loader=yaml.CSafeLoader)):
        metadata = value.get("metadata") or {}
        key = (value["apiVersion"], value["kind"], metadata.get("namespace", ""), metadata["name"])
        assert key not in found, f"{key} twice"
        found[key] = value
    return found


def _flattened(values: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for value in values:
        if (
            isinstance(value, dict)
            and str(value.get("kind", "")).endswith("List")
            and (value.get("kind") == "List" or isinstance(value.get("items"), list))
        ):
            yield from _flattened(value.get("items") or [])
        elif value is not None:
            yield value


def assert_same_resources(built: str, expected: str) -> None:
    got, wanted = resources(built), resources(expected)
    assert sorted(got) == sorted(wanted)
    different = [key for key in wanted if got[key] != wanted[key]]
    assert not different, f"{len(different)} resources differ, first {different[0]}"


# Examples ----------------------------------------------------------------------------------


@dataclass
class Example:
    """An example as the test runs it: ``original`` a directory (relative to the example's
    copy) holding the kustomization to add the Component to, made by ``prepare``; mutate reads
    ``inputs`` (paths relative to the copy), or, when None, what kustomize builds of
    ``original``."""

    name: str
    original: str
    policy: str
    lock: str
    inputs: list[str] | None = None
    prepare: str = "kustomization"
    #: Resources of the build that the Component changes, at least.
    changed: int = 1
    env: dict[str, str] = field(default_factory=dict)


EXAMPLE_CASES = [
    Example("demo", "manifests", "policy.yaml", "kmultiarch.lock", ["manifests/*.yaml"], "list", 5),
    Example(
        "kustomize-overlay",
        "overlays/prod",
        "overlays/prod/multiarch.yaml",
        "overlays/prod/kmultiarch.lock",
        changed=2,
    ),
    Example("kustomize-krm", ".", "multiarch.yaml", "kmultiarch.lock", changed=2),
    Example("container-fn", ".", "multiarch.yaml", "kmultiarch.lock", changed=2),
    Example("pre-commit", "overlays/prod", "multiarch-policy.yaml", "kmultiarch.lock", changed=2),
    Example("helm-chart", "rendered", "policy.yaml", "kmultiarch.lock", None, "helm", 2),
]


def test_every_example_with_manifests_is_a_case() -> None:
    with_manifests = {
        path.name
        for path in EXAMPLES.iterdir()
        if path.is_dir()
        and (
            any(path.rglob(KUSTOMIZATION))
            or (path / "manifests").is_dir()
            or (path / "chart").is_dir()
        )
    }
    assert with_manifests == {case.name for case in EXAMPLE_CASES}


def _prepare(case: Example, copy: Path) -> Path:
    """The original kustomization: the example's, without its kmultiarch transformer (what
    Flux builds, which runs no plugin); a list of the demo's manifests; a Helm render."""
    original = copy / case.original
    if case.prepare == "list":
        names = sorted(path.name for path in original.glob("*.yaml"))
        write_kustomization(original, resources=names)
    elif case.prepare == "helm":
        rendered = subprocess.run(
            [str(helm_binary(3)), "template", "storefront", str(copy / "chart")],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        original.mkdir()
        (original / "storefront.yaml").write_text(rendered)
        write_kustomization(original, resources=["storefront.yaml"])
    else:
        kustomization = yaml.safe_load((original / KUSTOMIZATION).read_text())
        kustomization.pop("transformers", None)
        write_kustomization(original, **kustomization)
    return original


@pytest.mark.parametrize("case", EXAMPLE_CASES, ids=[case.name for case in EXAMPLE_CASES])
def test_the_component_gives_mutates_documents_for_each_example(
    case: Example, tmp_path: Path
) -> None:
    copy = tmp_path / case.name
    shutil.copytree(EXAMPLES / case.name, copy)
    # The manifests' files (a pattern is expanded before the kustomization joins them).
    inputs = sorted(
        str(path.relative_to(copy)) for pattern in case.inputs or [] for path in copy.glob(pattern)
    )
    original = _prepare(case, copy)
    if case.prepare == "helm":
        inputs = [str((original / "storefront.yaml").relative_to(copy))]
    env = clean_env(tmp_path)
    options = ["--config", case.policy, "--lock", case.lock, "--offline"]
    stdin = None if inputs else build(original)

    mutated = run_kmultiarch(["mutate", *options, *inputs], env=env, stdin=stdin, cwd=copy)
    assert mutated.returncode == 0, mutated.stderr
    written = run_kmultiarch(
        ["mutate", *options, "--output", "kustomize", "--output-dir", "kmultiarch", *inputs],
        env=env,
        stdin=stdin,
        cwd=copy,
    )
    assert written.returncode == 0, written.stderr
    component = copy / "kmultiarch"
    patches = yaml.safe_load((component / KUSTOMIZATION).read_text())["patches"]
    assert len(patches) >= case.changed
    before = resources(build(original))
    after = resources(mutated.stdout)
    assert sum(before[key] != after[key] for key in after) >= case.changed

    # Listed in the original kustomization itself, beside its own transformers (the overlay
    # sets namespace: and labels, which kustomize applies after the Component).
    kustomization = yaml.safe_load((original / KUSTOMIZATION).read_text())
    direct = tmp_path / "direct"
    shutil.copytree(original, direct)
    relative = Path("..") / case.name / "kmultiarch"
    write_kustomization(
        direct,
        **{
            **kustomization,
            "resources": [
                _rebased(r, original, direct) for r in kustomization.get("resources", [])
            ],
        },
        components=[str(relative)],
    )
    assert_same_resources(build(direct), mutated.stdout)

    # Over the original as a whole (the layout docs/flux.md shows).
    wrapper = write_kustomization(
        tmp_path / "wrapper",
        resources=[str(Path("..") / case.name / case.original)],
        components=[str(relative)],
    )
    assert_same_resources(build(wrapper), mutated.stdout)

    # The HelmRelease's post-renderer patches, as helm-controller gives them to kustomize.
    post = run_kmultiarch(
        ["mutate", *options, "--output", "helmrelease-patches", *inputs],
        env=env,
        stdin=stdin,
        cwd=copy,
    )
    assert post.returncode == 0, post.stderr
    (renderer,) = yaml.safe_load(post.stdout)["postRenderers"]
    inline = write_kustomization(
        tmp_path / "helmrelease",
        resources=[str(Path("..") / case.name / case.original)],
        patches=renderer["kustomize"]["patches"],
    )
    assert_same_resources(build(inline), mutated.stdout)

    # And check agrees that the Component is the one mutate writes.
    checked = run_kmultiarch(
        ["check", *options, "--component", "kmultiarch", *inputs], env=env, stdin=stdin, cwd=copy
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "the Component is up to date" in checked.stderr


def _rebased(resource: str, original: Path, moved: Path) -> str:
    """A kustomization's resource path, for the kustomization moved from ``original`` to
    ``moved`` (a sibling directory of the example's copy)."""
    target = (original / resource).resolve()
    if target.is_relative_to(original.resolve()):
        return resource
    return str(Path("..") / target.relative_to(moved.parent.resolve()))


# Corpus ----------------------------------------------------------------------------------------


@dataclass
class Piece:
    """Documents of one corpus file that kustomize loads together."""

    documents: list[SourceDocument] = field(default_factory=list)
    ids: set[tuple[str, str, str, str]] = field(default_factory=set)

    @property
    def text(self) -> str:
        parts = []
        for document in self.documents:
            text = document.text if document.text.endswith("\n") else document.text + "\n"
            parts.append(text if text.startswith("---") else "---\n" + text)
        return "".join(parts)


def loadable_pieces(documents: list[SourceDocument]) -> tuple[list[Piece], set[str]]:
    """The documents in pieces kustomize loads, and why some had to be cut or left out."""
    pieces = [Piece()]
    reasons: set[str] = set()
    for document in documents:
        if document.value is None:
            continue
        values = list(_flattened([document.value]))
        if any(
            not isinstance(v, dict) or not (v.get("metadata") or {}).get("name") for v in values
        ):
            reasons.add("missing metadata.name")
            continue
        ids = {
            (
                v["apiVersion"].rpartition("/")[0],
                v["kind"],
                v["metadata"].get("namespace") or "",
                v["metadata"]["name"],
            )
            for v in values
        }
        if ids & pieces[-1].ids or len(ids) < len(values):
            reasons.add("already registered id")
            pieces.append(Piece())
        pieces[-1].documents.append(document)
        pieces[-1].ids |= ids
    return [piece for piece in pieces if piece.documents], reasons


CORPUS = corpus_files()


@pytest.mark.slow
@pytest.mark.parametrize("path", CORPUS, ids=[path.name for path in CORPUS])
def test_the_component_gives_mutates_documents_for_each_corpus_file(
    path: Path, tmp_path: Path
) -> None:
    text = path.read_text(encoding="utf-8")
    whole = kustomization_of(tmp_path / "whole", text)
    try:
        documents = read_stream(text, path.name)
    except ManifestStreamError as exc:
        # kmultiarch refuses it (duplicate keys): so does kustomize.
        assert "duplicate key" in str(exc)
        refused = kustomize(whole)
        assert refused.returncode != 0
        assert "already defined" in refused.stderr or "missing metadata.name" in refused.stderr
        return
    pieces, reasons = loadable_pieces(documents)
    if reasons:
        refused = kustomize(whole)
        assert refused.returncode != 0
        assert any(reason in refused.stderr for reason in reasons), (reasons, refused.stderr)
        # The Component of the whole file is refused as well, or has nothing to say about
        # what kustomize refused (a duplicate nobody changes).
        try:
            targeted_patches(mutate_text(text, Policy(), resolve=CLUSTERS["mixed"]))
        except InputError as exc:
            assert "cannot be selected alone" in str(exc) or "no metadata.name" in str(exc)

    for number, piece in enumerate(pieces):
        result = mutate_text(piece.text, Policy(), resolve=CLUSTERS["mixed"], source=path.name)
        assert not result.failed
        patches = targeted_patches(result)
        if not patches:
            continue
        write_files(tmp_path / f"component-{number}", component_files(patches))
        original = kustomization_of(
            tmp_path / f"original-{number}", piece.text, components=[f"../component-{number}"]
        )
        mutated = result.stream()
        expected = kustomization_of(tmp_path / f"mutated-{number}", mutated)
        built = build(original)
        assert_same_resources(built, build(expected))
        # Each patched resource, as kustomize wrote it, is mutate's document parsed.
        got, wanted = resources(built), resources(mutated)
        for patch in patches:
            (key,) = [
                k
                for k in wanted
                if k[1] == patch.target.kind
                and k[3] == patch.target.name
                and k[0] == patch.resource.api_version
                and k[2] == (patch.resource.namespace or "")
            ]
            assert without_empty_metadata(got[key]) == without_empty_metadata(wanted[key]), key


def without_empty_metadata(value: Any) -> Any:
    """``value`` without empty ``annotations`` and ``labels``, which kustomize drops from every
    resource it writes, patched or not."""
    if isinstance(value, dict):
        return {
            key: without_empty_metadata(member)
            for key, member in value.items()
            if not (key in ("annotations", "labels") and member in ({}, None))
        }
    if isinstance(value, list):
        return [without_empty_metadata(member) for member in value]
    return value


def corpus_patches() -> Iterator[TargetedPatch]:
    for path in CORPUS:
        try:
            documents = read_stream(path.read_text(encoding="utf-8"), path.name)
        except ManifestStreamError:
            continue
        for piece in loadable_pieces(documents)[0]:
            result = mutate_text(piece.text, Policy(), resolve=CLUSTERS["mixed"], source=path.name)
            yield from targeted_patches(result)


def test_the_corpus_exercises_every_shape_of_patch() -> None:
    """The corpus test above proves something: many patches, adds and replaces, paths through
    list indices and to a list's end, core and named groups, namesakes told apart by namespace."""
    patches = list(corpus_patches())
    operations = [operation for patch in patches for operation in patch.operations]
    assert len(patches) > 300
    assert {operation.op for operation in operations} == {"add", "replace"}
    assert any("-" in operation.tokens for operation in operations)
    assert any(token.isdigit() for operation in operations for token in operation.tokens)
    assert any(not patch.target.group for patch in patches)
    assert any(patch.target.group for patch in patches)
    assert any(patch.target.namespace for patch in patches)


def test_the_items_of_lists_are_patched_under_kustomize(tmp_path: Path) -> None:
    """No List of the corpus needs a change (its pods are running ones): the resources of a
    chart, put in a List, a List inside it and a DeploymentList, do."""
    (path,) = [p for p in CORPUS if p.name == "cert-manager.yaml"]
    values = [v for v in yaml.safe_load_all(path.read_text(encoding="utf-8")) if v]
    deployments = [v for v in values if v["kind"] == "Deployment"]
    others = [v for v in values if v["kind"] != "Deployment"]
    assert len(deployments) == 3
    stream = yaml.safe_dump_all(
        [
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    *others[:5],
                    {"apiVersion": "v1", "kind": "List", "items": deployments[:1]},
                ],
            },
            {"apiVersion": "apps/v1", "kind": "DeploymentList", "items": deployments[1:]},
            *others[5:],
        ]
    )
    result = mutate_text(stream, Policy(), resolve=CLUSTERS["amd64-only"], source="lists.yaml")
    patches = targeted_patches(result)
    assert {
        "lists.yaml: document 1 (/items/5/items/0)",
        "lists.yaml: document 2 (/items/0)",
        "lists.yaml: document 2 (/items/1)",
    } <= {patch.resource.where for patch in patches}
    write_files(tmp_path / "component", component_files(patches))
    original = kustomization_of(tmp_path / "original", stream, components=["../component"])
    expected = kustomization_of(tmp_path / "mutated", result.stream())
    built = build(original)
    assert_same_resources(built, build(expected))
    unchanged = kustomization_of(tmp_path / "unchanged", stream)
    before, after = resources(build(unchanged)), resources(built)
    assert sum(before[key] != after[key] for key in after) == len(patches)

    # The inline form of a HelmRelease's post-renderer gives the same.
    (renderer,) = yaml.safe_load(helmrelease_post_renderers(patches))["postRenderers"]
    inline = kustomization_of(tmp_path / "inline", stream, patches=renderer["kustomize"]["patches"])
    assert_same_resources(build(inline), built)


# docs/flux.md ----------------------------------------------------------------------------------

DOC = EXAMPLES.parent / "docs" / "flux.md"


def documented_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_docs_show_the_files_mutate_writes(tmp_path: Path) -> None:
    example = EXAMPLES / "kustomize-overlay"
    written = run_kmultiarch(
        [
            "mutate",
            "--config",
            str(example / "overlays" / "prod" / "multiarch.yaml"),
            "--offline",
            "--output",
            "kustomize",
            "--output-dir",
            str(tmp_path / "kmultiarch"),
        ],
        env=clean_env(tmp_path),
        stdin=build(example / "base"),
    )
    assert written.returncode == 0, written.stderr
    shown = [block for block in documented_blocks("yaml") if block.startswith("# Written by")]
    files = {path.name: path.read_text() for path in (tmp_path / "kmultiarch").iterdir()}
    assert shown == [files[KUSTOMIZATION], files["statefulset_worker.yaml"]]


def test_the_docs_show_the_post_renderers_mutate_prints(tmp_path: Path) -> None:
    example = EXAMPLES / "helm-chart"
    rendered = subprocess.run(
        [str(helm_binary(3)), "template", "storefront", str(example / "chart"), "-n", "shop"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    printed = run_kmultiarch(
        [
            "mutate",
            "--config",
            str(example / "policy.yaml"),
            "--lock",
            str(example / "kmultiarch.lock"),
            "--offline",
            "--output",
            "helmrelease-patches",
        ],
        env=clean_env(tmp_path),
        stdin=rendered,
    )
    assert printed.returncode == 0, printed.stderr
    (release,) = [
        yaml.safe_load(block) for block in documented_blocks("yaml") if "kind: HelmRelease" in block
    ]
    assert release["spec"]["postRenderers"] == yaml.safe_load(printed.stdout)["postRenderers"]


# Golden cases ----------------------------------------------------------------------------------

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
GOLDEN_CASES = sorted(path.name for path in GOLDEN.iterdir() if (path / "input.yaml").exists())


@pytest.mark.parametrize("name", GOLDEN_CASES)
def test_the_component_gives_mutates_documents_for_each_golden_case(
    name: str, registry: SeededRegistry, tmp_path: Path
) -> None:
    """The golden cases hold the edits that are hard to get right (terms of existing affinity
    replaced, preferences, annotations, quoted values, List items, operators' shapes), against
    the test registry: through kustomize, the Component gives their expected output."""
    case = GOLDEN / name
    policy = policy_for(case, registry, tmp_path / "policy.yaml")
    env = clean_env(tmp_path)
    text = (case / "input.yaml").read_text()
    written = run_kmultiarch(
        ["mutate", "--config", str(policy), "--output", "kustomize", "--output-dir", "component"],
        env=env,
        stdin=text,
        cwd=tmp_path,
    )
    if expectations(case)["exit"] != 0:
        assert written.returncode == expectations(case)["exit"]
        assert not (tmp_path / "component").exists()
        return
    if name == "crd-kinds":
        # Its Argo Workflow has only generateName: kustomize refuses to load it, and no
        # target can select it.
        assert "missing metadata.name" in kustomize(kustomization_of(tmp_path / "k", text)).stderr
        assert written.returncode == 2
        assert "has no metadata.name (generateName?)" in written.stderr
        assert not (tmp_path / "component").exists()
        return
    assert written.returncode == 0, written.stderr
    expected = (case / "expected.yaml").read_text()
    original = kustomization_of(tmp_path / "original", text, components=["../component"])
    built = build(original)
    assert_same_resources(built, build(kustomization_of(tmp_path / "expected", expected)))
    patches = yaml.safe_load((tmp_path / "component" / KUSTOMIZATION).read_text())["patches"]
    before = resources(build(kustomization_of(tmp_path / "input", text)))
    # The Component changes something exactly when mutate does.
    assert bool(patches) == (resources(built) != before) == (resources(expected) != resources(text))
