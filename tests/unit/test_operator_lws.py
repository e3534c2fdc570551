"""LeaderWorkerSet (issue 39, item 2), from its own sample (tests/fixtures/operators/
lws-multi-template.yaml: kubernetes-sigs/lws config/samples/leaderworkerset_multi_template.yaml,
commit 060ab4da17eea1f0865fcbd3236bb1075e2cea32). The kind was unknown: an unknown-pod-kind
warning and nothing written."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.engine import EngineResult

SAMPLE = (
    (Path(__file__).resolve().parents[1] / "fixtures" / "operators")
    .joinpath("lws-multi-template.yaml")
    .read_text(encoding="utf-8")
)


def _run(text: str) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    (lws,) = yaml.safe_load_all(result.stream())
    return lws["spec"]["leaderWorkerTemplate"], result


def test_a_leader_worker_set_places_its_leader_and_worker_templates_apart() -> None:
    """leaderworkerset_controller.go constructLeaderStatefulSetApplyConfiguration (the leader
    StatefulSet's pods: leaderTemplate), pod_controller.go
    constructWorkerStatefulSetApplyConfiguration (each group's workers: workerTemplate)."""
    text = SAMPLE.replace(
        "        - name: nginx2\n          image: nginxinc/nginx-unprivileged:1.27\n",
        "        - name: nginx2\n          image: registry.test/leader-amd64:1.27\n",
    )
    template, result = _run(text)
    assert template["leaderTemplate"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert "tolerations" not in template["leaderTemplate"]["spec"]  # type: ignore[index]
    assert template["workerTemplate"]["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert result.findings == []


def test_without_a_leader_template_the_worker_template_places_the_leader_too() -> None:
    """constructLeaderStatefulSetApplyConfiguration: no leaderTemplate, the leader's pods are a
    copy of workerTemplate, which the constraint in it covers."""
    document = yaml.safe_load(SAMPLE.split("\n", 2)[2])
    del document["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    worker = document["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    worker["containers"][0]["image"] = "registry.test/worker-amd64:1.27"
    template, _ = _run(yaml.safe_dump(document, sort_keys=False))
    assert "leaderTemplate" not in template
    assert template["workerTemplate"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
