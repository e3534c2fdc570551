"""cass-operator (k8ssandra/cass-operator): a CassandraDatacenter's racks, one StatefulSet each,
whose pod template is spec.podTemplateSpec with the datacenter's tolerations and node selector
and a node affinity the operator computes."""

from __future__ import annotations

from kmultiarch.core.catalogue.common import optional_image
from kmultiarch.core.operators import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_CASS = "k8ssandra/cass-operator "
_TERMS = "affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/*"

ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "cassandra.datastax.com",
        "CassandraDatacenter",
        (
            Placement(
                _p("/spec"),
                (
                    optional_image("/spec/podTemplateSpec/spec/containers/*/image"),
                    optional_image("/spec/podTemplateSpec/spec/initContainers/*/image"),
                    # makeImage: spec.serverImage, else the operator's image config for
                    # serverType and serverVersion (pkg/images GetCassandraImage).
                    ImageSource((_p("/spec/serverImage"),)),
                    ImageSource(
                        (_p("/spec/systemLoggerImage"),),
                        unless=((_p("/spec/disableSystemLoggerSidecar"), ("true",)),),
                    ),
                    ImageSource(
                        (),
                        operator_only="server-config-init (the operator's k8ssandra-client "
                        "or config-builder image)",
                    ),
                ),
                shape="pod-template-affinity",
                # calculateNodeAffinity: the nodeAffinityLabels (the datacenter's and the
                # rack's, and a rack's zone) are one required term of their own, and the rack's
                # affinity's terms are appended beside the template's: terms are ORed, so an
                # arch term in the template would not hold for the pods.
                added_terms_when=(
                    (_p("/spec/nodeAffinityLabels/*"), ()),
                    (_p("/spec/racks/*/nodeAffinityLabels/*"), ()),
                    (_p("/spec/racks/*/zone"), ()),
                    (_p(f"/spec/racks/*/{_TERMS}"), ()),
                ),
                cites=_CASS + "pkg/reconciliation/construct_podtemplatespec.go "
                "buildPodTemplateSpec (the template: a copy of spec.podTemplateSpec; "
                "Tolerations = spec.tolerations, replacing the template's; buildAffinity, "
                "calculateNodeAffinity: a term of rackNodeAffinitylabels, then the template's "
                "and the rack's required terms appended), buildContainers (the cassandra "
                "container's image: makeImage; server-system-logger: spec.systemLoggerImage, "
                "else the operator's), buildInitContainers (server-config-init: the operator's "
                "client or config-builder image, spec.configBuilderImage for the latter); "
                "construct_statefulset.go newStatefulSetForCassandraDatacenter (spec.nodeSelector "
                "when set), rackNodeAffinitylabels",
            ),
        ),
        cites="CassandraDatacenter.spec.{tolerations,nodeSelector,nodeAffinityLabels,"
        "serverImage,systemLoggerImage}, spec.podTemplateSpec.spec (affinity, containers, "
        "initContainers), spec.racks[].{nodeAffinityLabels,zone,affinity}",
        adds="server-config-init and, unless serverImage and systemLoggerImage are named, "
        "Cassandra and the system logger (the operator's image config: declare them as "
        "defaultImages); a pod anti-affinity of its own beside the template's",
    ),
)
