"""The pod's OS (issue 30, item 4): ``spec.os.name`` keeps only that OS's platforms of the
images (the kubelet admits a pod only on a node of its OS: PodOSRejection); a pod of one OS
whose images run only on the other is a scheduling-conflict; HostProcess pods
(``securityContext.windowsOptions.hostProcess: true``, on the pod or a container) run on the
host, on any Windows build, so they are not pinned to one ``node.kubernetes.io/windows-build``.
Each of these failed before: the Windows pod of a Linux+Windows image got a Linux term too,
the Linux pod of a Windows-only image a Windows term, and the HostProcess pod its image's
build."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
import yaml

from kmultiarch.api import mutate_text
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import Policy, SchedulingPolicy
from kmultiarch.core.resolution import Resolution

BUILD = "node.kubernetes.io/windows-build"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
LINUX_AND_WINDOWS = "example.com/both:1"
WINDOWS_2022 = "example.com/win2022:1"

PLATFORMS = {
    LINUX_AND_WINDOWS: ["linux/amd64", "linux/arm64", "windows/amd64:10.0.17763.6659"],
    WINDOWS_2022: ["windows/amd64:10.0.20348.2227"],
}


def _resolve(references: Sequence[ImageRef]) -> Mapping[ImageRef, Resolution]:
    return {
        reference: Resolution(
            reference,
            frozenset(
                Platform.parse(p) for p in PLATFORMS[f"example.com/{reference.repository}:1"]
            ),
            "sha256:" + "1" * 64,
        )
        for reference in references
    }


POLICY = Policy(
    scheduling=SchedulingPolicy(
        platforms=(
            Platform.parse("linux/amd64"),
            Platform.parse("linux/arm64"),
            Platform.parse("windows/amd64"),
        ),
        tolerations={},
    )
)


def _pod(image: str, spec: str = "", container: str = "") -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
        f"{spec}  containers:\n  - name: c\n    image: {image}\n{container}"
    )


def _terms(text: str) -> list[dict[str, list[str]]]:
    spec = yaml.safe_load(text)["spec"]
    terms = spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    return [{e["key"]: e["values"] for e in term["matchExpressions"]} for term in terms]


def test_a_windows_pod_is_judged_on_its_images_windows_platforms_only() -> None:
    result = mutate_text(
        _pod(LINUX_AND_WINDOWS, "  os: {name: windows}\n"), POLICY, resolve=_resolve
    )
    assert _terms(result.stream()) == [
        {
            "kubernetes.io/arch": ["amd64"],
            "kubernetes.io/os": ["windows"],
            BUILD: ["10.0.17763"],
        }
    ]
    assert result.pods[0].plan is not None
    assert result.pods[0].plan.supported == {Platform.parse("windows/amd64")}


def test_a_linux_pod_is_judged_on_its_images_linux_platforms_only() -> None:
    result = mutate_text(_pod(LINUX_AND_WINDOWS, "  os: {name: linux}\n"), POLICY, resolve=_resolve)
    assert _terms(result.stream()) == [{"kubernetes.io/os": ["linux"]}]


def test_a_pod_whose_images_run_only_on_the_other_os_is_a_conflict() -> None:
    text = _pod(WINDOWS_2022, "  os: {name: linux}\n")
    result = mutate_text(text, POLICY, resolve=_resolve)
    assert result.stream() == text
    [finding] = [f for f in result.findings if f.rule == "scheduling-conflict"]
    assert "spec.os.name is linux, but the images run only on windows/amd64" in finding.message


@pytest.mark.parametrize(
    ("spec", "container"),
    [
        (
            "  os: {name: windows}\n  securityContext:\n    windowsOptions: {hostProcess: true}\n",
            "",
        ),
        (
            "  os: {name: windows}\n",
            "    securityContext:\n      windowsOptions: {hostProcess: true}\n",
        ),
    ],
    ids=["pod", "container"],
)
def test_a_host_process_pod_is_not_pinned_to_a_windows_build(spec: str, container: str) -> None:
    result = mutate_text(_pod(WINDOWS_2022, spec, container), POLICY, resolve=_resolve)
    assert _terms(result.stream()) == [
        {"kubernetes.io/arch": ["amd64"], "kubernetes.io/os": ["windows"]}
    ]


def test_a_pod_that_is_not_host_process_is_pinned_to_its_images_build() -> None:
    result = mutate_text(_pod(WINDOWS_2022, "  os: {name: windows}\n"), POLICY, resolve=_resolve)
    assert _terms(result.stream())[0][BUILD] == ["10.0.20348"]
