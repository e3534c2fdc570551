"""The Vitess operator's VitessCluster and the Tigera operator's Installation (issue 29,
"operators as they really run"), from the operators' own samples (tests/fixtures/operators:
each file names its repository and commit). Both kinds were unknown: an unknown-pod-kind
warning and no change."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, ARCH_IN_AMD64_TERM, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import (
    IMAGE_CHOSEN_BY_OPERATOR,
    SCHEDULING_CONFLICT,
    UNWRITABLE_CONSTRAINT,
)
from kmultiarch.core.policy.model import Policy
from kmultiarch.engine import EngineResult
from kmultiarch.errors import PolicyError
from kmultiarch.io.config import parse_policy_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operators"
VITESS = (FIXTURES / "vitess-101-initial-cluster.yaml").read_text(encoding="utf-8")
TIGERA = (FIXTURES / "tigera-installation.yaml").read_text(encoding="utf-8")
#: The sample's one image, for every Vitess component.
VITESS_LITE = "vitess/lite:v24.0.0-rc1-mysql80"


def _run(text: str, policy: Policy | None = None) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, policy, resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    return document, result


def _policy(entry: str) -> Policy:
    return parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n  podSpecs:\n{entry}",
        "policy.yaml",
    )


def _pool(spec: object, keyspace: int = 0) -> dict[str, object]:
    keyspaces = spec["keyspaces"]  # type: ignore[index]
    return keyspaces[keyspace]["partitionings"][0]["equal"]["shardTemplate"]["tabletPools"][0]  # type: ignore[no-any-return]


# -- Vitess: planetscale/vitess-operator ------------------------------------------------------


def test_the_vitess_sample_tolerates_arm64_where_each_component_reads_tolerations() -> None:
    """vtgate/deployment.go, vtctld/deployment.go, vtorc/deployment.go, vttablet/pod.go: each
    component's pods take its own tolerations (gateway created under the cell); the global
    etcd the operator deploys runs its --default_etcd_image."""
    cluster, result = _run(VITESS)
    spec = cluster["spec"]
    assert spec["cells"][0]["gateway"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert spec["vitessDashboard"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    keyspace = spec["keyspaces"][0]  # type: ignore[index]
    assert keyspace["vitessOrchestrator"]["tolerations"] == [ARM64_TOLERATION]
    assert _pool(spec)["tolerations"] == [ARM64_TOLERATION]
    assert "globalLockserver" not in spec  # type: ignore[operator]
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR
    assert "spec.globalLockserver.etcd.image" in finding.message


def test_an_amd64_only_mysqld_constrains_the_tablets_and_nothing_else() -> None:
    """Each component its own verdict: only the tablet pods run mysqld."""
    text = VITESS.replace(
        f"mysql80Compatible: {VITESS_LITE}", "mysql80Compatible: registry.test/mysql-amd64:8.0"
    ).replace(
        "\nspec:\n",
        "\nspec:\n  globalLockserver: {etcd: {image: 'quay.io/coreos/etcd:v3.5.17'}}\n",
        1,
    )
    cluster, result = _run(text)
    spec = cluster["spec"]
    pool = _pool(spec)
    assert pool["affinity"] == ARCH_IN_AMD64
    assert "tolerations" not in pool
    assert spec["cells"][0]["gateway"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert "affinity" not in spec["cells"][0]["gateway"]  # type: ignore[index]
    assert spec["globalLockserver"]["etcd"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert result.findings == []


def test_a_keyspaces_own_image_wins_over_the_clusters_for_its_own_tablets() -> None:
    """reconcile_keyspaces.go: DefaultVitessKeyspaceImages(the cluster's), then
    MergeVitessKeyspaceTemplateImages(keyspace.images): the keyspace's vttablet and vtorc
    images for its pods alone."""
    document = yaml.safe_load(VITESS.split("\n", 1)[1])
    first = document["spec"]["keyspaces"][0]
    second = yaml.safe_load(yaml.safe_dump(first))
    second["name"] = "customer"
    second["images"] = {
        "vttablet": "registry.test/vttablet-amd64:24",
        "vtorc": "registry.test/vtorc-amd64:24",
    }
    document["spec"]["keyspaces"].append(second)
    cluster, _ = _run(yaml.safe_dump(document, sort_keys=False))
    spec = cluster["spec"]
    assert _pool(spec, 0)["tolerations"] == [ARM64_TOLERATION]
    assert "affinity" not in _pool(spec, 0)
    assert _pool(spec, 1)["affinity"] == ARCH_IN_AMD64
    keyspaces = spec["keyspaces"]  # type: ignore[index]
    assert keyspaces[0]["vitessOrchestrator"]["tolerations"] == [ARM64_TOLERATION]
    assert keyspaces[1]["vitessOrchestrator"]["affinity"] == ARCH_IN_AMD64


def test_a_tablet_pool_requiring_arm64_for_an_amd64_only_mysqld_is_a_conflict() -> None:
    arm64_only = (
        "            affinity:\n              nodeAffinity:\n"
        "                requiredDuringSchedulingIgnoredDuringExecution:\n"
        "                  nodeSelectorTerms:\n                  - matchExpressions:\n"
        "                    - {key: kubernetes.io/arch, operator: In, values: [arm64]}\n"
    )
    text = VITESS.replace(
        f"mysql80Compatible: {VITESS_LITE}", "mysql80Compatible: registry.test/mysql-amd64:8.0"
    ).replace("            type: replica\n", "            type: replica\n" + arm64_only)
    cluster, result = _run(text)
    assert _pool(cluster["spec"]) == _pool(yaml.safe_load(text.split("\n", 1)[1])["spec"])
    assert [f.rule for f in result.findings if f.rule != IMAGE_CHOSEN_BY_OPERATOR] == [
        SCHEDULING_CONFLICT
    ]


_ZONE_TERM = {
    "key": "failure-domain.beta.kubernetes.io/zone",
    "operator": "In",
    "values": ["us-east-1a"],
}


def test_a_cell_with_a_zone_keeps_the_operators_zone_affinity() -> None:
    """vtgate/deployment.go UpdateDeployment: with no gateway.affinity, the pods get a node
    affinity to the cell's zone (k8s.ZoneFailureDomainLabel): written beside the constraint,
    both required, each gateway its own cell's. vtctld (one Deployment per dashboard cell) and
    the tablets (their pool's cell) cannot be given theirs: no affinity is created while a cell
    names a zone, tolerations still are."""
    document = yaml.safe_load(VITESS.split("\n", 1)[1])
    spec = document["spec"]
    spec["images"].update(
        vtgate="registry.test/vtgate-amd64:24", vtctld="registry.test/vtctld-amd64:24"
    )
    zoned = spec["cells"][0]
    spec["cells"].append({"name": "zone2", "gateway": {"replicas": 1}})
    zoned["zone"] = "us-east-1a"
    cluster, result = _run(yaml.safe_dump(document, sort_keys=False))
    first, second = cluster["spec"]["cells"]  # type: ignore[index]
    (term,) = first["gateway"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [*ARCH_IN_AMD64_TERM["matchExpressions"], _ZONE_TERM]}
    assert second["gateway"]["affinity"] == ARCH_IN_AMD64
    dashboard = cluster["spec"]["vitessDashboard"]  # type: ignore[index]
    assert "affinity" not in dashboard and "tolerations" not in dashboard
    assert _pool(cluster["spec"])["tolerations"] == [ARM64_TOLERATION]
    # The dashboard's amd64-only vtctld needs the constraint it cannot be given: said (the
    # etcd's image is the operator's choice, as in the sample).
    rules = [f.rule for f in result.findings]
    assert rules == [UNWRITABLE_CONSTRAINT, IMAGE_CHOSEN_BY_OPERATOR]
    assert "spec.vitessDashboard" in result.findings[0].message


def test_a_cells_own_etcd_keeps_its_zone_beside_the_constraint() -> None:
    """vitesscell reconcile_etcd.go: a cell's lockserver.etcd is deployed in the cell's zone
    (etcd/pod.go: a node affinity to it when the template has no affinity)."""
    etcd = "{etcd: {image: 'registry.test/etcd-amd64:3.5'}}"
    text = VITESS.replace(
        "  - name: zone1\n", f"  - name: zone1\n    zone: us-east-1a\n    lockserver: {etcd}\n"
    )
    cluster, _ = _run(text)
    local = cluster["spec"]["cells"][0]["lockserver"]["etcd"]  # type: ignore[index]
    (term,) = local["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term == {"matchExpressions": [*ARCH_IN_AMD64_TERM["matchExpressions"], _ZONE_TERM]}


def test_a_vtctldclient_backup_schedule_is_placed_by_its_own_fields_over_the_dashboards() -> None:
    """vitessbackupschedule_controller.go createVtctldclientJobPod: the Job's pod runs the vtctld
    image, with the schedule's affinity, and its tolerations when set, else the dashboard's
    (written there); a vtbackup schedule (the default) is not catalogued."""
    schedules = (
        "    schedules:\n"
        "    - {name: every-day, schedule: '0 0 * * *', backupMethod: vtctldclient,"
        " strategies: [{name: BackupShard, keyspace: commerce, shard: '-'}]}\n"
        "    - {name: tolerant, schedule: '0 1 * * *', backupMethod: vtctldclient,"
        " tolerations: [], strategies: [{name: BackupShard, keyspace: commerce, shard: '-'}]}\n"
        "    - {name: by-vtbackup, schedule: '0 2 * * *',"
        " strategies: [{name: BackupShard, keyspace: commerce, shard: '-'}]}\n"
    )
    text = VITESS.replace("    engine: xtrabackup\n", "    engine: xtrabackup\n" + schedules)
    cluster, _ = _run(text)
    spec = cluster["spec"]
    first, tolerant, by_vtbackup = spec["backup"]["schedules"]  # type: ignore[index]
    assert "tolerations" not in first and "affinity" not in first
    assert spec["vitessDashboard"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert tolerant["tolerations"] == [ARM64_TOLERATION]
    assert "tolerations" not in by_vtbackup
    amd64 = text.replace(f"vtctld: {VITESS_LITE}", "vtctld: registry.test/vtctld-amd64:24")
    cluster, _ = _run(amd64)
    first, tolerant, by_vtbackup = cluster["spec"]["backup"]["schedules"]  # type: ignore[index]
    assert first["affinity"] == tolerant["affinity"] == ARCH_IN_AMD64
    assert "affinity" not in by_vtbackup


def test_a_components_own_affinity_gets_the_constraint_whatever_the_zones() -> None:
    """reconcile_vtctld.go: vitessDashboard.affinity, when set, is the pods' whole affinity."""
    spread = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    text = (
        VITESS.replace("  - name: zone1\n", "  - name: zone1\n    zone: us-east-1a\n")
        .replace(f"vtctld: {VITESS_LITE}", "vtctld: registry.test/vtctld-amd64:24")
        .replace("  vitessDashboard:\n", f"  vitessDashboard:\n    affinity: {spread}\n")
    )
    cluster, _ = _run(text)
    assert cluster["spec"]["vitessDashboard"]["affinity"] == {**spread, **ARCH_IN_AMD64}  # type: ignore[index]


# -- Tigera: tigera/operator Installation -----------------------------------------------------

_CALICO_MULTI_ARCH = "quay.io/calico/calico:v3.30.0"
_CALICO_AMD64 = "registry.test/calico-amd64:v3.30.0"


def _calico(image: str) -> Policy:
    return _policy(
        "  - apiVersion: operator.tigera.io/v1\n    kind: Installation\n"
        f"    defaultImages: ['{image}']\n"
    )


def _installation(spec: str) -> str:
    return TIGERA + "spec:\n" + spec


def test_the_tigera_sample_runs_images_the_operator_chooses() -> None:
    """components.CombinedCalicoImage, GetReference: the images come from the operator's
    release (registry, imagePath, variant), not the resource: Typha and kube-controllers each
    warned, nothing written."""
    text = _installation("  variant: Calico\n")
    installation, result = _run(text)
    assert installation == yaml.safe_load(text)
    assert [f.rule for f in result.findings] == [IMAGE_CHOSEN_BY_OPERATOR] * 2
    assert all("Calico's" in f.message for f in result.findings)


def test_multi_arch_calico_is_tolerated_only_where_an_override_has_tolerations() -> None:
    """components.go applyReplicatedPodResourceOverrides: an override's tolerations replace
    the rendered ones (controlPlaneTolerations and the operator's own): a toleration is added
    to an override's own list, never created."""
    text = _installation(
        "  typhaDeployment:\n    spec:\n      template:\n        spec:\n"
        "          tolerations: [{key: dedicated, operator: Exists}]\n"
    )
    installation, result = _run(text, _calico(_CALICO_MULTI_ARCH))
    spec = installation["spec"]
    typha = spec["typhaDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert typha["tolerations"] == [{"key": "dedicated", "operator": "Exists"}, ARM64_TOLERATION]
    assert "calicoKubeControllersDeployment" not in spec  # type: ignore[operator]
    assert result.findings == []


def test_amd64_only_calico_gets_each_deployments_affinity_in_its_override() -> None:
    """typha.go typhaDeployment: with no override affinity, Typha's pods get a preferred
    anti-affinity across zones, kept beside the constraint; kube-controllers has none."""
    installation, result = _run(_installation("  variant: Calico\n"), _calico(_CALICO_AMD64))
    spec = installation["spec"]
    typha = spec["typhaDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert typha["affinity"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    (term,) = typha["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "topology.kubernetes.io/zone"
    controllers = spec["calicoKubeControllersDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert controllers == {"affinity": ARCH_IN_AMD64}
    assert result.findings == []


def test_an_arm64_control_plane_node_selector_conflicts_with_amd64_kube_controllers() -> None:
    """kube-controllers.go: NodeSelector controlPlaneNodeSelector, the override's keys merged
    in (MergeMaps); Typha takes no controlPlaneNodeSelector: its own verdict."""
    text = _installation(
        "  controlPlaneNodeSelector: {kubernetes.io/arch: arm64}\n"
        "  calicoKubeControllersDeployment:\n    spec:\n      template:\n        spec:\n"
        "          nodeSelector: {disktype: ssd}\n"
    )
    installation, result = _run(text, _calico(_CALICO_AMD64))
    spec = installation["spec"]
    controllers = spec["calicoKubeControllersDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert controllers == {"nodeSelector": {"disktype": "ssd"}}
    typha = spec["typhaDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert typha["affinity"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    (finding,) = result.findings
    assert finding.rule == SCHEDULING_CONFLICT and "arm64" in finding.message


def test_the_deprecated_typha_affinity_keeps_typha_unwritten() -> None:
    """typha.go affinity(): spec.typhaAffinity's nodeAffinity is part of the affinity an
    override's would replace: no constraint for Typha; kube-controllers its own verdict."""
    text = _installation(
        "  typhaAffinity:\n    nodeAffinity:\n"
        "      preferredDuringSchedulingIgnoredDuringExecution: []\n"
    )
    installation, result = _run(text, _calico(_CALICO_AMD64))
    spec = installation["spec"]
    assert "typhaDeployment" not in spec  # type: ignore[operator]
    controllers = spec["calicoKubeControllersDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert controllers == {"affinity": ARCH_IN_AMD64}
    assert result.findings == []


# -- the model's extensions, in a policy's terms ------------------------------------------------


def test_a_policy_says_the_same_with_inherits_names_and_default_affinity_when() -> None:
    """spec.podSpecs reads inherits.names and defaultAffinityWhen as the catalogue does."""
    policy = _policy(
        "  - apiVersion: example.com/v1\n    kind: Db\n    placements:\n"
        "    - path: /spec/pod\n      creates: 1\n      images: [[/spec/image]]\n"
        "      inherits: {path: /spec, fields: {nodeSelector: merge-by-key},"
        " names: {nodeSelector: sharedSelector}}\n"
        "      defaultAffinityWhen: {/spec/zone: null}\n"
    )
    db = (
        "apiVersion: example.com/v1\nkind: Db\nmetadata: {name: d}\n"
        "spec: {image: 'registry.test/db-amd64:1'}\n"
    )
    document, _ = _run(db, policy)
    assert document["spec"]["pod"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    document, _ = _run(db.replace("spec: {", "spec: {zone: z1, "), policy)
    assert "pod" not in document["spec"]  # type: ignore[operator]
    _, result = _run(
        db.replace("spec: {", "spec: {sharedSelector: {kubernetes.io/arch: arm64}, "), policy
    )
    assert [f.rule for f in result.findings] == [SCHEDULING_CONFLICT]


def test_a_policys_inherits_names_must_name_a_merged_field() -> None:
    with pytest.raises(PolicyError, match="names: expected a mapping of a field of fields"):
        _policy(
            "  - apiVersion: example.com/v1\n    kind: Db\n    placements:\n"
            "    - path: /spec/pod\n"
            "      inherits: {path: /spec, fields: {nodeSelector: merge-by-key},"
            " names: {tolerations: sharedTolerations}}\n"
        )


def test_an_installation_without_a_spec_gets_both_overrides() -> None:
    """The sample as published has no spec (the operator's defaults): both control-plane
    overrides are created under one new spec; the second used to replace the first, so the
    placements were limited to an existing spec and the sample was not judged."""
    installation, result = _run(TIGERA, _calico(_CALICO_AMD64))
    spec = installation["spec"]
    controllers = spec["calicoKubeControllersDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert controllers == {"affinity": ARCH_IN_AMD64}
    typha = spec["typhaDeployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert typha["affinity"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    assert result.findings == []
