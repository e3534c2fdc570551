"""Elastic Cloud on Kubernetes (elastic/cloud-on-k8s): a pod template merged into the
operator's; images by version as ECK's container.go computes them; stack-monitoring sidecars
and Elasticsearch's default pod anti-affinity."""

from __future__ import annotations

from collections.abc import Mapping

from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


def _pod_template_kind(
    group: str,
    kind: str,
    path: str,
    cites: str,
    *templates: str,
    creates: int = 2,
) -> OperatorKind:
    """An ECK-style kind: a pod template whose spec the operator merges into its own; the main
    container runs spec.image, else the image ECK computes for spec.version (``templates``)."""
    monitored = kind in ("Elasticsearch", "Kibana", "Logstash")
    default_affinity = _ES_DEFAULT_AFFINITY if kind == "Elasticsearch" else None
    return OperatorKind(
        group,
        kind,
        (
            Placement(
                _p(path),
                (
                    ImageSource((_p("/spec/image"),), templates=templates),
                    *(_ECK_MONITORING_SIDECARS if monitored else ()),
                ),
                creates=creates,
                pod_spec=True,
                cites=_ECK_IMAGE_CITE
                + (_ECK_MONITORING_CITE if monitored else "")
                + (_ES_AFFINITY_CITE if default_affinity else "")
                if templates
                else "",
                default_affinity=default_affinity,
            ),
        ),
        cites=cites,
        adds="the main container (image from spec.image, else the operator's default for "
        "spec.version)",
    )


_ECK_IMAGE_CITE = (
    "elastic/cloud-on-k8s pkg/controller/common/container/container.go ImageRepository "
    "(docker.elastic.co/<image><suffix>:<version>; the Maps server below 8.16.0 with -ubi, "
    "-ubi8 below 7.17.16 and 8.12.0 (getUBISuffix); AgentImageFor: beats/elastic-agent "
    "below 9.0.0; getPackageRegistryImage: lite-<version>); an operator started with "
    "--container-registry, --container-repository, --container-suffix or --ubi-only runs "
    "others: declare them as defaultImages"
)


#: Elasticsearch's pods prefer nodes without another pod of the cluster, unless the pod
#: template has an affinity of its own.
_ES_DEFAULT_AFFINITY: Mapping[str, object] = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {
                        "matchLabels": {
                            "elasticsearch.k8s.elastic.co/cluster-name": "{/metadata/name}"
                        }
                    },
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
}
_ES_AFFINITY_CITE = (
    "; default affinity: pkg/controller/elasticsearch/nodespec/defaults.go DefaultAffinity "
    "(preferred pod anti-affinity by cluster name on kubernetes.io/hostname), applied by "
    "podtemplate.go WithAffinity only when the template has none"
)
#: Stack monitoring: a Metricbeat and a Filebeat sidecar of the resource's version when its
#: metrics or logs are shipped to an Elasticsearch.
_ECK_MONITORING_SIDECARS = tuple(
    ImageSource(
        (),
        templates=(f"docker.elastic.co/beats/{beat}:{{/spec/version}}",),
        when=((_p(f"/spec/monitoring/{signal}/elasticsearchRefs"), ()),),
        operator_only=f"the {beat} sidecar",
    )
    for beat, signal in (("metricbeat", "metrics"), ("filebeat", "logs"))
)
_ECK_MONITORING_CITE = (
    "; stack monitoring: pkg/controller/common/stackmon/sidecar.go NewMetricBeatSidecar, "
    "NewFileBeatSidecar (ImageRepository(MetricbeatImage or FilebeatImage, version)), added "
    "when spec.monitoring.{metrics,logs}.elasticsearchRefs are set (elasticsearch/stackmon, "
    "kibana/stackmon, logstash/stackmon)"
)


#: ECK kinds: pod template, and the image the operator runs for spec.version (ECK's
#: container registry and repositories by default; an operator configured with another
#: registry serves the same images).
_MAPS = "docker.elastic.co/elastic-maps-service/elastic-maps-server"
_ECK: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "elasticsearch.k8s.elastic.co",
        "Elasticsearch",
        "/spec/nodeSets/*/podTemplate/spec",
        ("docker.elastic.co/elasticsearch/elasticsearch:{/spec/version}",),
    ),
    (
        "kibana.k8s.elastic.co",
        "Kibana",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/kibana/kibana:{/spec/version}",),
    ),
    (
        "apm.k8s.elastic.co",
        "ApmServer",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/apm/apm-server:{/spec/version}",),
    ),
    (
        "enterprisesearch.k8s.elastic.co",
        "EnterpriseSearch",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/enterprise-search/enterprise-search:{/spec/version}",),
    ),
    (
        "maps.k8s.elastic.co",
        "ElasticMapsServer",
        "/spec/podTemplate/spec",
        (
            _MAPS + ":{/spec/version|>=8.16.0}",
            _MAPS + "-ubi:{/spec/version|>=8.12.0,<8.16.0}",
            _MAPS + "-ubi8:{/spec/version|>=8.0.0,<8.12.0}",
            _MAPS + "-ubi:{/spec/version|>=7.17.16,<8.0.0}",
            _MAPS + "-ubi8:{/spec/version|<7.17.16}",
        ),
    ),
    (
        "logstash.k8s.elastic.co",
        "Logstash",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/logstash/logstash:{/spec/version}",),
    ),
    (
        "packageregistry.k8s.elastic.co",
        "PackageRegistry",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/package-registry/distribution:lite-{/spec/version}",),
    ),
)


ENTRIES: tuple[OperatorKind, ...] = (
    # ECK: a pod template merged into the operator's.
    *(
        _pod_template_kind(
            group,
            kind,
            path,
            f"{kind}.{path[1:].replace('/', '.')}, spec.image, spec.version",
            *templates,
        )
        for group, kind, path, templates in _ECK
    ),
    *(
        _pod_template_kind(
            group,
            kind,
            f"/spec/{workload}/podTemplate/spec",
            f"{kind}.spec.{workload}.podTemplate, spec.image, spec.version",
            *templates,
        )
        for group, kind, templates in (
            (
                "beat.k8s.elastic.co",
                "Beat",
                ("docker.elastic.co/beats/{/spec/type}:{/spec/version}",),
            ),
            (
                "agent.k8s.elastic.co",
                "Agent",
                (
                    "docker.elastic.co/beats/elastic-agent:{/spec/version|<9.0.0}",
                    "docker.elastic.co/elastic-agent/elastic-agent:{/spec/version|>=9.0.0}",
                ),
            ),
        )
        for workload in ("daemonSet", "deployment", "statefulSet")
    ),
)
