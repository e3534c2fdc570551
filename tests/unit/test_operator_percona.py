"""Percona's PerconaXtraDBCluster and PerconaServerMongoDB (issue 29, "operators as they
really run"), from the operators' own samples (tests/fixtures/operators: each names its
repository, path and commit). Each component is placed by its own nodeSelector, tolerations
and ``affinity``, an object of the operator's: ``affinity.advanced`` is the pods' whole
Affinity when set, else the operator requires a pod anti-affinity on
``antiAffinityTopologyKey`` (pkg/pxc/statefulset.go and pkg/psmdb/statefulset.go
PodAffinity). Unknown kinds before: an ``unknown-pod-kind`` warning and no change."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, ARCH_IN_AMD64_TERM, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, SCHEDULING_CONFLICT
from kmultiarch.engine import EngineResult
from kmultiarch.errors import KmultiarchError
from kmultiarch.io.config import parse_policy_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operators"

_PXC_INIT = (
    "#  initContainer:\n#    image: perconalab/percona-xtradb-cluster-operator:main\n",
    "  initContainer:\n    image: perconalab/percona-xtradb-cluster-operator:main\n",
)
_PXC_IMAGE = "perconalab/percona-xtradb-cluster-operator:main-pxc8.4\n"
_PSMDB_INIT = "#  initImage: perconalab/percona-server-mongodb-operator:main\n"
_PSMDB_IMAGE = "  image: perconalab/percona-server-mongodb-operator:main-mongod8.0\n"


def _run(text: str) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    return document, result


def _replaced(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _pxc(*pairs: tuple[str, str]) -> str:
    """The sample, its init image named (else the operator's own: its pods left alone)."""
    text = (FIXTURES / "percona-xtradb-cluster-cr.yaml").read_text(encoding="utf-8")
    return _replaced(text, _PXC_INIT, *pairs)


def _pxc_amd64(*pairs: tuple[str, str]) -> str:
    """The sample with an amd64-only PXC image (HAProxy's and the backup's run on both)."""
    return _pxc(("image: " + _PXC_IMAGE, "image: registry.test/pxc-amd64:8.4\n"), *pairs)


def _anti_affinity(key: str, **labels: str) -> dict[str, object]:
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchLabels": {f"app.kubernetes.io/{k}": v for k, v in labels.items()}
                },
                "topologyKey": key,
            }
        ]
    }


def _pxc_anti_affinity(key: str, component: str = "pxc") -> dict[str, object]:
    """naming.componentLabels(cr, component), as PodAffinity selects them."""
    return _anti_affinity(
        key,
        component=component,
        instance="cluster1",
        **{"managed-by": "percona-xtradb-cluster-operator"},
        name="percona-xtradb-cluster",
        **{"part-of": "percona-xtradb-cluster"},
    )


def _spec(document: dict[str, object]) -> dict[str, object]:
    spec = document["spec"]
    assert isinstance(spec, dict)
    return spec


# -- PerconaXtraDBCluster ----------------------------------------------------------------------


def test_a_pxc_sample_of_multi_arch_images_gets_tolerations_where_the_operator_reads_them() -> None:
    """StatefulSet: Tolerations of spec.pxc, spec.haproxy; job.go JobSpec: of each
    backup storage. No affinity is written: nothing to keep the pods off."""
    text = _pxc()
    document, result = _run(text)
    spec, sample = _spec(document), yaml.safe_load(text)["spec"]
    for component in ("pxc", "haproxy"):
        assert spec[component] == {**sample[component], "tolerations": [ARM64_TOLERATION]}
    assert spec["proxysql"] == sample["proxysql"]  # not enabled: no pods
    storages = spec["backup"]["storages"]  # type: ignore[index]
    for name, storage in sample["backup"]["storages"].items():
        assert storages[name] == {**storage, "tolerations": [ARM64_TOLERATION]}
    assert result.findings == []


def test_a_pxc_sample_of_an_amd64_only_image_gets_advanced_with_the_operators_anti_affinity() -> (
    None
):
    """PodAffinity: once affinity.advanced is set it is the pods' whole Affinity, so the
    required anti-affinity the operator built from antiAffinityTopologyKey is written beside
    the arch term; the key itself is kept."""
    document, _ = _run(_pxc_amd64())
    pxc = _spec(document)["pxc"]
    assert pxc["affinity"] == {  # type: ignore[index]
        "antiAffinityTopologyKey": "kubernetes.io/hostname",
        "advanced": {
            "nodeAffinity": ARCH_IN_AMD64["nodeAffinity"],
            "podAntiAffinity": _pxc_anti_affinity("kubernetes.io/hostname"),
        },
    }
    assert "tolerations" not in pxc  # type: ignore[operator]


def test_a_pxc_sample_without_affinity_gets_the_default_topology_key() -> None:
    """reconcileAffinityOpts: no affinity (or a key the operator does not accept) is
    kubernetes.io/hostname; an affinity created holds advanced alone."""
    text = _pxc_amd64(
        ('    affinity:\n      antiAffinityTopologyKey: "kubernetes.io/hostname"\n', "")
    )
    document, _ = _run(text)
    assert _spec(document)["pxc"]["affinity"] == {  # type: ignore[index]
        "advanced": {
            "nodeAffinity": ARCH_IN_AMD64["nodeAffinity"],
            "podAntiAffinity": _pxc_anti_affinity("kubernetes.io/hostname"),
        }
    }
    text = _pxc_amd64(
        ('antiAffinityTopologyKey: "kubernetes.io/hostname"', "antiAffinityTopologyKey: rack")
    )
    document, _ = _run(text)
    advanced = _spec(document)["pxc"]["affinity"]["advanced"]  # type: ignore[index]
    assert advanced["podAntiAffinity"] == _pxc_anti_affinity("kubernetes.io/hostname")


def test_a_pxc_zone_key_is_the_operators_anti_affinity_topology() -> None:
    text = _pxc_amd64(
        (
            'antiAffinityTopologyKey: "kubernetes.io/hostname"',
            'antiAffinityTopologyKey: "topology.kubernetes.io/zone"',
        )
    )
    document, _ = _run(text)
    advanced = _spec(document)["pxc"]["affinity"]["advanced"]  # type: ignore[index]
    assert advanced["podAntiAffinity"] == _pxc_anti_affinity("topology.kubernetes.io/zone")


def test_a_pxc_anti_affinity_key_none_gets_the_arch_term_alone() -> None:
    """PodAffinity: antiAffinityTopologyKey "none" is no anti-affinity: none is made up."""
    text = _pxc_amd64(
        ('antiAffinityTopologyKey: "kubernetes.io/hostname"', 'antiAffinityTopologyKey: "none"')
    )
    document, _ = _run(text)
    assert _spec(document)["pxc"]["affinity"] == {  # type: ignore[index]
        "antiAffinityTopologyKey": "none",
        "advanced": ARCH_IN_AMD64,
    }


def test_a_pxc_existing_advanced_keeps_the_users_rules_and_gains_the_arch_term() -> None:
    """The sample's own advanced (commented out there): the operator uses it whole, so only
    the arch expression is added to its node selector term; no anti-affinity is added."""
    advanced = (
        "#      advanced:\n#        nodeAffinity:\n"
        "#          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "#            nodeSelectorTerms:\n#            - matchExpressions:\n"
        "#              - key: kubernetes.io/e2e-az-name\n#                operator: In\n"
        "#                values:\n#                - e2e-az1\n#                - e2e-az2\n"
    )
    text = _pxc_amd64((advanced, advanced.replace("#", "")))
    document, _ = _run(text)
    affinity = _spec(document)["pxc"]["affinity"]  # type: ignore[index]
    az = {"key": "kubernetes.io/e2e-az-name", "operator": "In", "values": ["e2e-az1", "e2e-az2"]}
    assert affinity == {
        "antiAffinityTopologyKey": "kubernetes.io/hostname",
        "advanced": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [az, *ARCH_IN_AMD64_TERM["matchExpressions"]]}
                    ]
                }
            }
        },
    }


def test_a_pxc_haproxy_of_an_amd64_only_image_gets_its_own_component_labels() -> None:
    """haproxy.go Labels: naming.LabelsHAProxy (component haproxy); the pxc-monit sidecar
    runs the same image."""
    text = _pxc(
        (
            "image: perconalab/percona-xtradb-cluster-operator:main-haproxy",
            "image: registry.test/haproxy-amd64:2.8",
        )
    )
    document, _ = _run(text)
    advanced = _spec(document)["haproxy"]["affinity"]["advanced"]  # type: ignore[index]
    assert advanced["podAntiAffinity"] == _pxc_anti_affinity("kubernetes.io/hostname", "haproxy")


def test_a_pxc_node_selector_for_arm64_with_an_amd64_only_image_is_a_conflict() -> None:
    text = _pxc_amd64(
        (
            "  pxc:\n    size: 3\n",
            "  pxc:\n    size: 3\n    nodeSelector: {kubernetes.io/arch: arm64}\n",
        )
    )
    document, result = _run(text)
    assert _spec(document)["pxc"] == yaml.safe_load(text)["spec"]["pxc"]
    assert [f.rule for f in result.findings] == [SCHEDULING_CONFLICT]


def test_a_pxc_sample_without_an_init_image_is_the_operators_choice() -> None:
    """k8s/utils.go GetInitImage: the operator's own image unless spec.initContainer.image
    (or spec.initImage), with a warning. The PXC pods' own image runs on amd64 only, so they
    are kept to amd64 all the same and given no toleration (issue 36 item 15: partial
    knowledge narrows); HAProxy's pods, whose known images run everywhere, are left as they
    are."""
    text = (FIXTURES / "percona-xtradb-cluster-cr.yaml").read_text(encoding="utf-8")
    text = text.replace(_PXC_IMAGE, "registry.test/pxc-amd64:8.4\n", 1)
    document, result = _run(text)
    pxc = _spec(document)["pxc"]
    assert pxc["affinity"]["advanced"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]  # type: ignore[index]
    assert "tolerations" not in pxc
    assert _spec(document)["haproxy"] == yaml.safe_load(text)["spec"]["haproxy"]
    assert result.findings
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    assert all("spec.initContainer.image" in f.message for f in result.findings)
    assert any("kept to linux/amd64" in f.message for f in result.findings)


def test_a_pxc_log_collector_of_an_amd64_only_image_constrains_the_pxc_pods_only() -> None:
    """node.go LogCollectorContainer: in the PXC pods, not HAProxy's."""
    text = _pxc(
        (
            "image: perconalab/fluentbit:main-logcollector",
            "image: registry.test/fluentbit-amd64:main",
        )
    )
    document, _ = _run(text)
    spec = _spec(document)
    assert spec["pxc"]["affinity"]["advanced"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]  # type: ignore[index]
    assert "advanced" not in spec["haproxy"]["affinity"]  # type: ignore[index]


@pytest.mark.parametrize("apply", ["recommended", "8.0-latest", "8.0.41-32.1"])
def test_a_pxc_whose_images_the_version_service_chooses_is_left_alone(apply: str) -> None:
    """controller.go Reconcile, version.go ensurePXCVersion: unless upgradeOptions.apply is
    disabled or never, the operator writes the version service's images into the resource."""
    text = _pxc_amd64(("    apply: disabled\n", f"    apply: {apply}\n"))
    document, result = _run(text)
    assert document == yaml.safe_load(text)
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    assert all("version service" in f.message for f in result.findings)


@pytest.mark.parametrize("apply", ["Never", "disabled", None])
def test_a_pxc_that_never_asks_the_version_service_runs_its_own_images(
    apply: str | None,
) -> None:
    """versionUpgradeEnabled compares lowercased; unset is disabled (CheckNSetDefaults)."""
    line = "    apply: disabled\n"
    text = _pxc_amd64((line, f"    apply: {apply}\n" if apply else ""))
    document, result = _run(text)
    assert "advanced" in _spec(document)["pxc"]["affinity"]  # type: ignore[operator,index]
    assert result.findings == []


# -- PerconaServerMongoDB ----------------------------------------------------------------------


def _psmdb(*pairs: tuple[str, str]) -> str:
    text = (FIXTURES / "percona-server-mongodb-cr.yaml").read_text(encoding="utf-8")
    return _replaced(text, (_PSMDB_INIT, _PSMDB_INIT[1:]), *pairs)


def _psmdb_amd64(*pairs: tuple[str, str]) -> str:
    return _psmdb((_PSMDB_IMAGE, "  image: registry.test/mongod-amd64:8.0\n"), *pairs)


def _psmdb_labels(component: str, **more: str) -> dict[str, str]:
    """naming.ClusterLabels and the component (RSLabels adds the replset)."""
    return {
        "component": component,
        "instance": "my-cluster-name",
        "managed-by": "percona-server-mongodb-operator",
        "name": "percona-server-mongodb",
        "part-of": "percona-server-mongodb",
        **more,
    }


def test_a_psmdb_sample_of_multi_arch_images_gets_tolerations_per_component() -> None:
    text = _psmdb()
    document, result = _run(text)
    spec, sample = _spec(document), yaml.safe_load(text)["spec"]
    assert spec["replsets"][0] == {**sample["replsets"][0], "tolerations": [ARM64_TOLERATION]}  # type: ignore[index]
    sharding = spec["sharding"]
    for component in ("configsvrReplSet", "mongos"):
        assert sharding[component] == {  # type: ignore[index]
            **sample["sharding"][component],
            "tolerations": [ARM64_TOLERATION],
        }
    assert result.findings == []


def test_a_psmdb_sample_of_an_amd64_only_image_keeps_each_members_anti_affinity() -> None:
    """MongodLabels (replset rs0), the config replset's (cfg), MongosLabels: PodAffinity's
    labels for each StatefulSet."""
    document, _ = _run(_psmdb_amd64())
    spec = _spec(document)
    for holder, labels in (
        (spec["replsets"][0], _psmdb_labels("mongod", replset="rs0")),  # type: ignore[index]
        (spec["sharding"]["configsvrReplSet"], _psmdb_labels("mongod", replset="cfg")),  # type: ignore[index]
        (spec["sharding"]["mongos"], _psmdb_labels("mongos")),  # type: ignore[index]
    ):
        assert holder["affinity"] == {
            "antiAffinityTopologyKey": "kubernetes.io/hostname",
            "advanced": {
                "nodeAffinity": ARCH_IN_AMD64["nodeAffinity"],
                "podAntiAffinity": _anti_affinity("kubernetes.io/hostname", **labels),
            },
        }
        assert "tolerations" not in holder


def test_a_psmdb_members_own_labels_join_the_operators_as_the_operator_joins_them() -> None:
    """StatefulSpec: a replset's labels only where the operator's have no such key;
    MongosTemplateSpec: mongos.labels over the operator's."""
    text = _psmdb_amd64(
        (
            "  - name: rs0\n    size: 3\n",
            "  - name: rs0\n    size: 3\n    labels: {rack: r1, app.kubernetes.io/component: x}\n",
        ),
        (
            "    mongos:\n      size: 3\n",
            "    mongos:\n      size: 3\n"
            "      labels: {rack: r2, app.kubernetes.io/component: y}\n",
        ),
    )
    document, _ = _run(text)
    spec = _spec(document)
    replset = spec["replsets"][0]["affinity"]["advanced"]["podAntiAffinity"]  # type: ignore[index]
    labels = replset["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]
    assert labels["matchLabels"]["app.kubernetes.io/component"] == "mongod"
    assert labels["matchLabels"]["rack"] == "r1"
    mongos = spec["sharding"]["mongos"]["affinity"]["advanced"]["podAntiAffinity"]  # type: ignore[index]
    labels = mongos["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]
    assert labels["matchLabels"]["app.kubernetes.io/component"] == "y"
    assert labels["matchLabels"]["rack"] == "r2"


def test_a_psmdb_arbiter_is_placed_by_its_own_fields_with_its_replsets_name() -> None:
    """reconcileReplset: ArbiterLabels(cr, replset) when arbiter.enabled; multiAZ is the
    arbiter's."""
    text = _psmdb_amd64(
        ("    arbiter:\n      enabled: false\n", "    arbiter:\n      enabled: true\n")
    )
    document, _ = _run(text)
    arbiter = _spec(document)["replsets"][0]["arbiter"]  # type: ignore[index]
    assert arbiter["affinity"]["advanced"] == {
        "nodeAffinity": ARCH_IN_AMD64["nodeAffinity"],
        "podAntiAffinity": _anti_affinity(
            "kubernetes.io/hostname", **_psmdb_labels("arbiter", replset="rs0")
        ),
    }
    hidden = _spec(document)["replsets"][0]["hidden"]  # type: ignore[index]
    assert "advanced" not in hidden["affinity"]  # not enabled: no pods


def test_a_psmdb_arbiter_is_placed_only_where_its_own_replset_enables_it() -> None:
    """reconcileReplset, per replset: an arbiter not enabled makes no pods, whatever another
    replset's does (the condition's `*` is the placement's item)."""
    sample = yaml.safe_load(_psmdb_amd64())
    rs0 = sample["spec"]["replsets"][0]
    rs1 = {**rs0, "name": "rs1", "arbiter": {**rs0["arbiter"], "enabled": True}}
    sample["spec"]["replsets"].append(rs1)
    document, _ = _run(yaml.safe_dump(sample))
    rs0_out, rs1_out = _spec(document)["replsets"]  # type: ignore[misc]
    assert rs0_out["arbiter"] == rs0["arbiter"]
    assert rs1_out["arbiter"]["affinity"]["advanced"]["podAntiAffinity"] == _anti_affinity(
        "kubernetes.io/hostname", **_psmdb_labels("arbiter", replset="rs1")
    )


def test_a_psmdb_anti_affinity_key_none_gets_the_arch_term_alone() -> None:
    text = _psmdb_amd64(
        (
            '    affinity:\n      antiAffinityTopologyKey: "kubernetes.io/hostname"\n',
            '    affinity:\n      antiAffinityTopologyKey: "none"\n',
        )
    )
    document, _ = _run(text)
    assert _spec(document)["replsets"][0]["affinity"] == {  # type: ignore[index]
        "antiAffinityTopologyKey": "none",
        "advanced": ARCH_IN_AMD64,
    }


def test_a_psmdb_node_selector_for_arm64_with_an_amd64_only_image_is_a_conflict() -> None:
    text = _psmdb_amd64(
        (
            "  - name: rs0\n    size: 3\n",
            "  - name: rs0\n    size: 3\n    nodeSelector: {kubernetes.io/arch: arm64}\n",
        )
    )
    document, result = _run(text)
    assert _spec(document)["replsets"] == yaml.safe_load(text)["spec"]["replsets"]
    assert SCHEDULING_CONFLICT in [f.rule for f in result.findings]


def test_a_psmdb_whose_images_the_version_service_chooses_is_left_alone() -> None:
    """version.go ensureVersion: spec.image, spec.backup.image, spec.pmm.image replaced."""
    text = _psmdb_amd64(("    apply: disabled\n", "    apply: recommended\n"))
    document, result = _run(text)
    assert document == yaml.safe_load(text)
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}


def test_a_psmdb_sample_without_an_init_image_is_the_operators_choice() -> None:
    """init.go Containers: spec.initImage, else the operator's own image."""
    text = (FIXTURES / "percona-server-mongodb-cr.yaml").read_text(encoding="utf-8")
    document, result = _run(text)
    assert document == yaml.safe_load(text)
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    assert all("spec.initImage" in f.message for f in result.findings)


# -- the policy says the same: shape advanced-affinity -----------------------------------------

_PERCONA_SERVER_MYSQL = (
    "apiVersion: ps.percona.com/v1\nkind: PerconaServerMySQL\nmetadata: {name: ps}\n"
    "spec:\n  mysql:\n    image: registry.test/mysql-amd64:8.4\n"
    "    affinity: {antiAffinityTopologyKey: kubernetes.io/hostname}\n"
)


def _policy(shape: str) -> str:
    return (
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  podSpecs:\n  - apiVersion: ps.percona.com/v1\n    kind: PerconaServerMySQL\n"
        f"    placements:\n    - {{path: /spec/mysql, shape: {shape}, "
        "images: [[/spec/mysql/image]]}\n"
    )


def test_a_policy_placement_of_shape_advanced_affinity_writes_affinity_advanced() -> None:
    """Percona Server for MySQL's PodSpec has the same PodAffinity: a podSpecs entry says so."""
    policy = parse_policy_text(_policy("advanced-affinity"), "policy.yaml")
    result = mutate_text(_PERCONA_SERVER_MYSQL, policy, resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert document["spec"]["mysql"]["affinity"] == {
        "antiAffinityTopologyKey": "kubernetes.io/hostname",
        "advanced": ARCH_IN_AMD64,
    }


def test_a_policy_image_source_may_say_unless_as_the_catalogues_do() -> None:
    """An image counted unless a condition holds (the catalogue's version service): said in
    spec.podSpecs the same way."""
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  podSpecs:\n  - apiVersion: ps.percona.com/v1\n    kind: PerconaServerMySQL\n"
        "    placements:\n    - path: /spec/mysql\n      shape: advanced-affinity\n"
        "      images:\n      - [/spec/mysql/image]\n"
        "      - {image: /spec/backup/image, unless: {/spec/backup/enabled: false}}\n",
        "policy.yaml",
    )
    text = (
        "apiVersion: ps.percona.com/v1\nkind: PerconaServerMySQL\nmetadata: {name: ps}\n"
        "spec:\n  mysql: {image: registry.test/mysql:8.4}\n"
        "  backup: {enabled: ENABLED, image: registry.test/xtrabackup-amd64:8.4}\n"
    )
    result = mutate_text(text.replace("ENABLED", "false"), policy, resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert document["spec"]["mysql"] == {
        "image": "registry.test/mysql:8.4",
        "tolerations": [ARM64_TOLERATION],
    }
    result = mutate_text(text.replace("ENABLED", "true"), policy, resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert document["spec"]["mysql"]["affinity"] == {"advanced": ARCH_IN_AMD64}


def test_a_policy_placement_of_an_unknown_shape_is_refused_naming_the_shapes() -> None:
    with pytest.raises(KmultiarchError, match="affinity, node-affinity, advanced-affinity"):
        parse_policy_text(_policy("percona"), "policy.yaml")
