"""Pure pieces of check/report/fix: which files are manifests, source lines of nodes, the
formatters' escaping and defaults, the progress line."""

from __future__ import annotations

import io

import pytest

from kmultiarch.assess.assessment import line_of
from kmultiarch.io.manifestfiles import non_manifest_reason
from kmultiarch.io.progress import HANDFUL, ProgressLine
from kmultiarch.output import default_format, display_path, table
from kmultiarch.output.safe import github_data as _escape_data
from kmultiarch.output.safe import github_property as _escape_property
from kmultiarch.yaml.stream import read_stream

POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
    "  containers:\n  - {name: a, image: nginx}\n"
)


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("pod.yaml", POD, None),
        ("list.yaml", "---\n# comment only\n---\n" + POD, None),
        ("policy.yaml", "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n", None),
        ("kustomization.yaml", "resources: [a.yaml]\n", "a kustomization"),
        ("overlay/kustomization.yml", POD, "a kustomization"),
        (
            "k.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
            "a kustomization",
        ),
        ("templates/deploy.yaml", POD.replace("nginx", "{{ .Values.image }}"), "a template"),
        ("templates/trim.yaml", "{{- if .Values.on }}\n" + POD, "a template"),
        (".gitlab-ci.yml", "test:\n  script: [make]\n", "no Kubernetes resource"),
        ("Chart.yaml", "apiVersion: v2\nname: shop\n", "no Kubernetes resource"),
        ("empty.yaml", "", "no Kubernetes resource"),
        ("list-of-things.yaml", "- a\n- b\n", "no Kubernetes resource"),
        ("broken.yaml", "a: [\n", "not valid YAML"),
        ("dupes.yaml", "apiVersion: v1\nkind: Pod\nkind: Pod\n", "not valid YAML"),
    ],
)
def test_non_manifest_reason(name: str, text: str, reason: str | None) -> None:
    found = non_manifest_reason(name, text)
    if reason is None:
        assert found is None
    else:
        assert found is not None and found.startswith(reason), found


def test_line_of_names_the_key_or_item_line() -> None:
    text = (
        "# leading comment\n"
        "apiVersion: v1\n"
        "kind: List\n"
        "items:\n"
        "- apiVersion: v1\n"  # 5
        "  kind: Pod\n"
        "  spec:\n"  # 7
        "    containers:\n"
        "    - name: a\n"  # 9
        "      image: nginx\n"  # 10
        "---\n"
        "apiVersion: v1\n"  # 12
        "kind: Pod\n"
        "spec:\n"  # 14
        "  containers: [{name: b, image: redis}]\n"  # 15
    )
    first, second = read_stream(text, "t.yaml")
    assert line_of(first, ("items", 0, "spec")) == 7
    assert line_of(first, ("items", 0, "spec", "containers", 0)) == 9
    assert line_of(first, ("items", 0, "spec", "containers", 0, "image")) == 10
    assert line_of(second, ("spec",)) == 14
    assert line_of(second, ("spec", "containers", 0, "image")) == 15
    # a path that leaves the tree gives the deepest line found
    assert line_of(second, ("spec", "nothing", "here")) == 14


def test_workflow_command_escaping() -> None:
    assert _escape_data("50% done\nnext\r") == "50%25 done%0Anext%0D"
    assert _escape_property("a:b,c") == "a%3Ab%2Cc"


def test_default_format_follows_github_actions() -> None:
    assert default_format({"GITHUB_ACTIONS": "true"}) == "github"
    assert default_format({"GITHUB_ACTIONS": "false"}) == "text"
    assert default_format({}) == "text"


def test_display_path() -> None:
    assert display_path("./deploy/app.yaml") == "deploy/app.yaml"
    assert display_path("<stdin>") == "<stdin>"


def test_table_pads_all_but_the_last_column() -> None:
    assert table([("a", "bb", "c")], ("X", "Y", "Z")) == ["X  Y   Z", "a  bb  c"]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_line_redraws_in_place_and_erases() -> None:
    stream = io.StringIO()
    clock = _Clock()
    hits = iter([2, 2, 3])
    line = ProgressLine(stream, lambda: next(hits), clock=clock)
    line(0, HANDFUL + 5)
    line(1, HANDFUL + 5)  # too soon after the first: not drawn
    clock.now = 1.0
    line(2, HANDFUL + 5)
    line(HANDFUL + 5, HANDFUL + 5)  # the last is always drawn
    line.finish()
    total = HANDFUL + 5
    assert stream.getvalue() == (
        f"\r\x1b[Kkmultiarch: resolving images 0/{total} (2 from cache or lock)"
        f"\r\x1b[Kkmultiarch: resolving images 2/{total} (2 from cache or lock)"
        f"\r\x1b[Kkmultiarch: resolving images {total}/{total} (3 from cache or lock)"
        "\r\x1b[K"
    )


def test_progress_line_is_silent_for_a_handful() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, lambda: 0)
    line(0, HANDFUL)
    line(HANDFUL, HANDFUL)
    line.finish()
    assert stream.getvalue() == ""
