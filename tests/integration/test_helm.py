"""Helm post-rendering with the real Helm binaries (``scripts/install-tools``):

- Helm 3: ``--post-renderer kmultiarch --post-renderer-args mutate`` (an executable on PATH;
  hooks are not post-rendered; stderr shown on failure);
- Helm 4: the ``plugin/helm`` post-renderer plugin (``helm plugin install``, then
  ``--post-renderer kmultiarch``): hooks included, each document annotated with its template
  file name, the plugin's stderr thrown away, empty output refused.

Each test writes its chart (a Deployment, a pre-install hook Job, a Service) and policy, and
uses isolated ``HELM_*_HOME`` directories.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.tools import (
    PLUGIN,
    Ran,
    helm_binary,
    load_all,
    run_tool,
    tool_env,
    write_mirrored_policy,
)

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: shop\nversion: 1.2.3\nappVersion: '1.0'\n",
    "values.yaml": """\
image: registry.test/single-docker-amd64:1.0
migrationImage: registry.test/multiarch-oci:1.0
""",
    "templates/_helpers.tpl": (
        '{{- define "shop.labels" -}}\napp: {{ .Release.Name }}\n{{- end }}\n'
    ),
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels:
    {{- include "shop.labels" . | nindent 4 }}
spec:
  replicas: 2
  selector:
    matchLabels:
      {{- include "shop.labels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "shop.labels" . | nindent 8 }}
    spec:
      containers:
        - name: web
          image: {{ .Values.image }}
          ports:
            - containerPort: 8080
""",
    "templates/migrate-hook.yaml": """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: {{ .Values.migrationImage }}
""",
    "templates/service.yaml": """\
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
spec:
  selector:
    {{- include "shop.labels" . | nindent 4 }}
  ports:
    - port: 80
      targetPort: 8080
""",
    "templates/NOTES.txt": "Installed {{ .Release.Name }}.\n",
}

ARM64_TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}
AMD64_TERMS = [
    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
]


def write_chart(directory: Path, files: dict[str, str] | None = None) -> Path:
    for name, text in (files or CHART).items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


class Helm:
    """One Helm binary with private data, config and cache homes, and the test's PATH."""

    def __init__(self, major: int, tmp_path: Path, extra_env: dict[str, str]) -> None:
        self.binary = helm_binary(major)
        home = tmp_path / f"helm{major}-home"
        self.env = tool_env(
            tmp_path,
            {
                "HELM_DATA_HOME": str(home / "data"),
                "HELM_CONFIG_HOME": str(home / "config"),
                "HELM_CACHE_HOME": str(home / "cache"),
                # No cluster anywhere: what works here works without one.
                "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
                **extra_env,
            },
        )

    def __call__(self, *args: str | Path, **env: str) -> Ran:
        return run_tool([self.binary, *args], env={**self.env, **env})


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    return write_chart(tmp_path / "shop")


@pytest.fixture
def policy_file(registry: SeededRegistry, tmp_path: Path) -> Path:
    return write_mirrored_policy(tmp_path / "policy.yaml", registry.url)


@pytest.fixture
def failing_policy(registry: SeededRegistry, tmp_path: Path) -> Path:
    policy = tmp_path / "failing-policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: strict}\n"
        "spec:\n  failurePolicy: Fail\n  registries:\n"
        f"    registry.test: {{mirror: '{registry.url}'}}\n"
    )
    return policy


def by_kind(stream: str) -> dict[str, dict[str, Any]]:
    return {document["kind"]: document for document in load_all(stream)}


def pod_spec(document: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = document["spec"]["template"]["spec"]
    return spec


def without_scheduling(document: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(document)
    pod = stripped.get("spec", {}).get("template", {}).get("spec")
    if pod is not None:
        pod.pop("affinity", None)
        pod.pop("tolerations", None)
    return stripped


# --- Helm 3 -----------------------------------------------------------------------------------


def test_helm3_post_renderer_mutates_the_rendered_manifests(
    chart: Path, policy_file: Path, tmp_path: Path
) -> None:
    helm = Helm(3, tmp_path, {"KMULTIARCH_CONFIG": str(policy_file)})
    plain = helm("template", "rel", chart)
    assert plain.returncode == 0, plain.stderr
    result = helm(
        "template", "rel", chart, "--post-renderer", "kmultiarch", "--post-renderer-args", "mutate"
    )
    assert result.returncode == 0, result.stderr

    documents, baseline = by_kind(result.stdout), by_kind(plain.stdout)
    assert {k: without_scheduling(d) for k, d in documents.items()} == baseline
    web = pod_spec(documents["Deployment"])
    assert (
        web["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        == AMD64_TERMS
    )
    # Helm 3 does not send hooks through a post-renderer: the Job comes out as rendered.
    assert documents["Job"] == baseline["Job"]
    assert "tolerations" not in pod_spec(documents["Job"])


def test_helm3_shows_the_error_when_the_post_renderer_fails(
    chart: Path, failing_policy: Path, tmp_path: Path
) -> None:
    helm = Helm(3, tmp_path, {"KMULTIARCH_CONFIG": str(failing_policy)})
    result = helm(
        "template",
        "rel",
        chart,
        "--set",
        "image=registry.test/no-such-image:1.0",
        "--post-renderer",
        "kmultiarch",
        "--post-renderer-args",
        "mutate",
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert (
        "kmultiarch: error: shop/templates/deployment.yaml: Deployment rel-web: image "
        "'registry.test/no-such-image:1.0'"
    ) in result.stderr


# --- Helm 4 -----------------------------------------------------------------------------------


def install_plugin(helm: Helm) -> None:
    installed = helm("plugin", "install", PLUGIN / "helm")
    # A local directory needs no --verify=false: Helm links it ("development mode").
    assert installed.returncode == 0, installed.stderr
    listed = helm("plugin", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line.split() for line in listed.stdout.splitlines() if line.startswith("kmultiarch"))
    assert row[:4] == ["kmultiarch", "0.1.0", "postrenderer/v1", "v1"]


@pytest.fixture
def helm4(tmp_path: Path, policy_file: Path) -> Helm:
    helm = Helm(4, tmp_path, {"KMULTIARCH_CONFIG": str(policy_file)})
    install_plugin(helm)
    return helm


def test_helm4_plugin_post_renders_manifests_and_hooks(helm4: Helm, chart: Path) -> None:
    plain = helm4("template", "rel", chart)
    assert plain.returncode == 0, plain.stderr
    result = helm4("template", "rel", chart, "--post-renderer", "kmultiarch")
    assert result.returncode == 0, result.stderr

    documents, baseline = by_kind(result.stdout), by_kind(plain.stdout)
    assert {k: without_scheduling(d) for k, d in documents.items()} == baseline
    web = pod_spec(documents["Deployment"])
    assert (
        web["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        == AMD64_TERMS
    )
    # The hook went through the post-renderer too.
    assert pod_spec(documents["Job"])["tolerations"] == [ARM64_TOLERATION]
    assert documents["Service"] == baseline["Service"]
    # Helm split the output back into its templates by the postrender-filename annotation,
    # which kmultiarch kept: otherwise the sources would be generated-by-postrender-N.yaml.
    for template in ("deployment.yaml", "migrate-hook.yaml", "service.yaml"):
        assert f"# Source: shop/templates/{template}\n" in result.stdout
    assert "generated-by-postrender" not in result.stdout
    assert "postrenderer.helm.sh" not in result.stdout


def test_helm4_install_dry_run_needs_no_cluster(helm4: Helm, chart: Path) -> None:
    result = helm4("install", "rel", chart, "--dry-run=client", "--post-renderer", "kmultiarch")
    assert result.returncode == 0, result.stderr
    hooks, manifest = result.stdout.split("\nHOOKS:\n", 1)[1].split("\nMANIFEST:\n", 1)
    assert pod_spec(by_kind(hooks)["Job"])["tolerations"] == [ARM64_TOLERATION]
    assert "affinity" in pod_spec(by_kind(manifest.split("\nNOTES:\n")[0])["Deployment"])


def test_helm4_shows_the_failing_image_in_its_one_error_line(
    helm4: Helm, chart: Path, failing_policy: Path
) -> None:
    for command in (["template"], ["install", "--dry-run=client"]):
        result = helm4(
            *command,
            "rel",
            chart,
            "--set",
            "image=registry.test/no-such-image:1.0",
            "--post-renderer",
            "kmultiarch",
            KMULTIARCH_CONFIG=str(failing_policy),
        )
        assert result.returncode == 1, result.stdout
        assert result.stdout == ""
        error = next(line for line in result.stderr.splitlines() if line.startswith("Error:"))
        assert (
            "kmultiarch stopped the render: shop/templates/deployment.yaml: Deployment rel-web: "
            "image 'registry.test/no-such-image:1.0' of container 'web' could not be resolved"
        ) in error, result.stderr
        assert "failurePolicy: Fail" in error
        assert "nothing was written" not in error


def test_helm4_failure_from_a_bad_option_is_shown_too(helm4: Helm, chart: Path) -> None:
    result = helm4(
        "template", "rel", chart, "--post-renderer", "kmultiarch", "--post-renderer-args=--bogus"
    )
    assert result.returncode == 1
    assert "kmultiarch stopped the render: No such option '--bogus'" in result.stderr


def test_helm4_post_renderer_args_reach_mutate(
    tmp_path: Path, chart: Path, policy_file: Path
) -> None:
    helm = Helm(4, tmp_path, {})
    install_plugin(helm)
    preferred = tmp_path / "preferred.yaml"
    preferred.write_text(
        policy_file.read_text().replace("spec:\n", "spec:\n  nodeAffinity: preferred\n", 1)
    )
    result = helm(
        "template",
        "rel",
        chart,
        "--post-renderer",
        "kmultiarch",
        "--post-renderer-args=--config",
        f"--post-renderer-args={preferred}",
    )
    assert result.returncode == 0, result.stderr
    affinity = pod_spec(by_kind(result.stdout)["Deployment"])["affinity"]["nodeAffinity"]
    assert list(affinity) == ["preferredDuringSchedulingIgnoredDuringExecution"]


def test_helm4_warnings_go_to_the_warnings_file(helm4: Helm, chart: Path, tmp_path: Path) -> None:
    warnings_file = tmp_path / "kmultiarch-warnings.txt"
    result = helm4(
        "template",
        "rel",
        chart,
        "--set",
        "migrationImage=registry.test/no-such-image:1.0",
        "--post-renderer",
        "kmultiarch",
        KMULTIARCH_WARNINGS_FILE=str(warnings_file),
    )
    assert result.returncode == 0, result.stderr
    assert "no-such-image" not in result.stderr  # Helm 4 hides the plugin's stderr
    lines = warnings_file.read_text().splitlines()
    assert lines[0].startswith(
        "kmultiarch: warning: shop/templates/migrate-hook.yaml: Job rel-migrate: image "
        "'registry.test/no-such-image:1.0'"
    ), lines
    assert lines[-1].startswith("kmultiarch: 2 pod specs, 1 changed, 1 unresolved")


def test_helm4_chart_that_renders_nothing(helm4: Helm, tmp_path: Path) -> None:
    """Helm 4 refuses empty post-renderer output; `mutate` of nothing is nothing."""
    empty = write_chart(
        tmp_path / "empty",
        {
            "Chart.yaml": "apiVersion: v2\nname: empty\nversion: 0.1.0\n",
            "templates/off.yaml": "{{- if false }}\nkind: ConfigMap\n{{- end }}\n",
        },
    )
    result = helm4("template", "rel", empty, "--post-renderer", "kmultiarch")
    assert result.returncode == 0, result.stderr
    assert load_all(result.stdout) == []


def test_helm_postrender_outside_helm4_fails_plainly(failing_policy: Path, tmp_path: Path) -> None:
    """Without HELM_PLUGIN_NAME nothing is disguised as a document: exit 1, empty stdout."""
    helm = Helm(4, tmp_path, {"KMULTIARCH_CONFIG": str(failing_policy)})
    stream = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec:\n  containers:\n  - {name: c, image: registry.test/no-such-image:1.0}\n"
    )
    result = run_tool(["kmultiarch", "helm-postrender"], env=helm.env, stdin=stream)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "registry.test/no-such-image:1.0" in result.stderr
    as_plugin = run_tool(
        ["kmultiarch", "helm-postrender"],
        env={**helm.env, "HELM_PLUGIN_NAME": "kmultiarch"},
        stdin=stream,
    )
    assert as_plugin.returncode == 0
    document = yaml.safe_load(as_plugin.stdout)
    assert document["kind"] == ["PostRenderFailure"]
    name = document["metadata"]["annotations"]["postrenderer.helm.sh/postrender-filename"]
    assert "Pod p: image 'registry.test/no-such-image:1.0'" in name
    assert "\n" not in name


def test_helm4_plugin_metadata_matches_the_package() -> None:
    import kmultiarch

    metadata = yaml.safe_load((PLUGIN / "helm" / "plugin.yaml").read_text())
    assert metadata["apiVersion"] == "v1"
    assert metadata["type"] == "postrenderer/v1"
    assert metadata["runtime"] == "subprocess"
    assert metadata["name"] == "kmultiarch"
    assert metadata["version"] == kmultiarch.__version__
    commands = metadata["runtimeConfig"]["platformCommand"]
    assert {entry["command"] for entry in commands} == {"${HELM_PLUGIN_DIR}/kmultiarch-postrender"}


def test_helm4_says_when_kmultiarch_is_not_installed(tmp_path: Path, chart: Path) -> None:
    helm = Helm(4, tmp_path, {})
    install_plugin(helm)
    no_python = tmp_path / "no-kmultiarch"
    no_python.mkdir()
    (no_python / "python3").write_text("#!/bin/sh\nexit 1\n")  # no kmultiarch module either
    (no_python / "python3").chmod(0o755)
    path = f"{no_python}:/usr/bin:/bin"
    assert shutil.which("kmultiarch", path=path) is None
    result = helm("template", "rel", chart, "--post-renderer", "kmultiarch", PATH=path)
    assert result.returncode == 1
    assert "kmultiarch stopped the render: kmultiarch is not installed" in result.stderr
