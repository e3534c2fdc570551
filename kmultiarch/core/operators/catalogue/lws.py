"""LeaderWorkerSet (kubernetes-sigs/lws): each group's leader and workers, a StatefulSet each,
from the leader and worker pod templates."""

from __future__ import annotations

from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_LWS = "kubernetes-sigs/lws "

ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
        (
            Placement(
                _p("/spec/leaderWorkerTemplate/leaderTemplate/spec"),
                pod_spec=True,
                cites=_LWS + "pkg/controllers/leaderworkerset_controller.go "
                "constructLeaderStatefulSetApplyConfiguration (the leader's pod template: "
                "leaderTemplate, else a copy of workerTemplate)",
            ),
            Placement(
                _p("/spec/leaderWorkerTemplate/workerTemplate/spec"),
                pod_spec=True,
                cites=_LWS + "pkg/controllers/pod_controller.go "
                "constructWorkerStatefulSetApplyConfiguration (the workers' pod template: "
                "workerTemplate); leaderworkerset_controller.go (the leader's too when "
                "leaderTemplate is unset); pkg/webhooks/pod_webhook.go SetExclusiveAffinities "
                "adds pod (anti-)affinity terms only, beside the template's node affinity",
            ),
        ),
        cites="LeaderWorkerSet.spec.leaderWorkerTemplate.{leaderTemplate,workerTemplate} "
        "(PodTemplateSpecs)",
    ),
)
