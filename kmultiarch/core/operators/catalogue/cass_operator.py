"""cass-operator (k8ssandra/cass-operator): a CassandraDatacenter's racks, one StatefulSet each,
whose pod template is spec.podTemplateSpec with the datacenter's tolerations and node selector
and a node affinity the operator computes; and k8ssandra-operator's K8ssandraCluster, whose
datacenters become CassandraDatacenters."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import ImageSource, Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_CASS = "k8ssandra/cass-operator "
_K8SSANDRA = "k8ssandra/k8ssandra-operator "
_DC = "/spec/cassandra/datacenters/*"
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
    # Each of spec.cassandra.datacenters[] becomes a CassandraDatacenter (its racks' pods as
    # above) from the datacenter's options coalesced over the cluster's: a datacenter's own
    # value when set, else spec.cassandra's.
    OperatorKind(
        "k8ssandra.io",
        "K8ssandraCluster",
        (
            Placement(
                _p(_DC),
                (
                    # Coalesce: ServerImage the datacenter's, else the cluster's; neither: the
                    # CassandraDatacenter names none and cass-operator's image config picks
                    # the server by serverVersion (the operator's choice).
                    ImageSource((_p(f"{_DC}/serverImage"), _p("/spec/cassandra/serverImage"))),
                    # Coalesce: the datacenter's containers (init containers) when it has
                    # any, else the cluster's, added to the pod template.
                    ImageSource(
                        (
                            _p(f"{_DC}/containers/*/image"),
                            _p("/spec/cassandra/containers/*/image"),
                        ),
                        required=False,
                    ),
                    ImageSource(
                        (
                            _p(f"{_DC}/initContainers/*/image"),
                            _p("/spec/cassandra/initContainers/*/image"),
                        ),
                        required=False,
                    ),
                    ImageSource(
                        (),
                        operator_only="cass-operator's server-config-init and system logger, "
                        "and the Medusa and Reaper containers k8ssandra-operator adds",
                    ),
                ),
                # Coalesce: Tolerations the datacenter's when it has any, else the cluster's
                # (NewDatacenter: dc.Spec.Tolerations), which buildPodTemplateSpec makes the
                # pods'.
                inherits=Inheritance(_p("/spec/cassandra"), (("tolerations", "replace"),)),
                # Coalesce starts the CassandraDatacenter's podTemplateSpec empty (no field
                # takes an affinity into it); the racks' affinity terms are ORed with their
                # nodeAffinityLabels by cass-operator's calculateNodeAffinity, and the
                # datacenter's racks replace the cluster's whole: no field holds an arch term.
                writes_affinity=False,
                cites=_K8SSANDRA + "pkg/cassandra/datacenter.go Coalesce (ServerImage, Racks, "
                "Tolerations, Containers, InitContainers: the datacenter's when set, else "
                "spec.cassandra's; PodTemplateSpec created empty), NewDatacenter (the "
                "CassandraDatacenter's ServerImage, ServerVersion, Racks, PodTemplateSpec, "
                "Tolerations); " + _CASS + "pkg/reconciliation/construct_podtemplatespec.go "
                "buildPodTemplateSpec, calculateNodeAffinity",
            ),
        ),
        cites="K8ssandraCluster.spec.cassandra.{serverImage,tolerations,containers,"
        "initContainers}, spec.cassandra.datacenters[].{serverImage,tolerations,containers,"
        "initContainers}",
        adds="the Cassandra server unless serverImage is named (cass-operator's image for "
        "serverVersion), server-config-init, the system logger, Medusa and Reaper containers "
        "(declare them as defaultImages); Stargate and Reaper Deployments are not judged",
    ),
)
