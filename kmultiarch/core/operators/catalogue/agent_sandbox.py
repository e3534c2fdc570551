"""Agent Sandbox (kubernetes-sigs/agent-sandbox): a Sandbox's pod, and the pods of the
Sandboxes a SandboxTemplate makes (for a SandboxClaim or a SandboxWarmPool)."""

from __future__ import annotations

from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_SANDBOX = "kubernetes-sigs/agent-sandbox "
_POD_CITE = (
    _SANDBOX + "api/v1beta1/sandbox_types.go SandboxBlueprint.PodTemplate (PodTemplate.Spec, a "
    "PodSpec; api/v1alpha1: SandboxSpec.PodTemplate, the same); controllers/sandbox_controller.go "
    "reconcilePod (the pod's spec is a copy of spec.podTemplate.spec, only volumes of "
    "volumeClaimTemplates added)"
)


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "agents.x-k8s.io",
        "Sandbox",
        (Placement(_p("/spec/podTemplate/spec"), pod_spec=True, cites=_POD_CITE),),
        cites="Sandbox.spec.podTemplate (its pod's spec and metadata)",
    ),
    # A SandboxTemplate's blueprint is copied into each Sandbox made from it.
    OperatorKind(
        "extensions.agents.x-k8s.io",
        "SandboxTemplate",
        (
            Placement(
                _p("/spec/podTemplate/spec"),
                pod_spec=True,
                cites=_SANDBOX + "extensions/api/v1beta1/sandboxtemplate_types.go "
                "SandboxTemplateSpec (SandboxBlueprint inline; v1alpha1: PodTemplate); "
                "extensions/controllers/sandboxclaim_controller.go (sandbox.Spec."
                "SandboxBlueprint = *template.Spec.SandboxBlueprint.DeepCopy(), then only "
                "labels, annotations and env added), extensions/controllers/utils.go "
                "ApplySandboxSecureDefaults (automountServiceAccountToken, DNS only); " + _POD_CITE,
            ),
        ),
        cites="SandboxTemplate.spec.podTemplate (the pod template of its Sandboxes)",
    ),
)
