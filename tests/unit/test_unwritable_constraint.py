"""A constraint kmultiarch may not write must be said (issue 29's criterion: no pod left
unconstrained in silence). Where an operator gives pods an affinity of its own when their
placement has none (a Vitess component's node affinity to its cell's zone:
vitess-operator vtctld/vtorc/vttablet deployments), an affinity created by kmultiarch would
replace the operator's, so none is created; the pods whose images need one used to come out
"ok" with no word."""

from __future__ import annotations

import yaml
from support.operators import ARCH_IN_AMD64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import RULES, UNWRITABLE_CONSTRAINT
from kmultiarch.io.config import parse_policy_text

VITESS = """\
apiVersion: planetscale.com/v2
kind: VitessCluster
metadata: {name: example}
spec:
  images:
    vtctld: registry.test/vitess-amd64:1
    vtgate: registry.test/vitess:1
  cells:
  - name: zone1
    zone: us-east-1a
    gateway: {replicas: 1}
  vitessDashboard:
    cells: [zone1]
    replicas: 1
"""


def test_a_needed_constraint_the_operators_own_affinity_forbids_is_a_warning() -> None:
    result = mutate_text(VITESS, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    assert "affinity" not in cluster["spec"]["vitessDashboard"]
    (finding,) = [f for f in result.findings if f.rule == UNWRITABLE_CONSTRAINT]
    assert finding.severity == "warning"
    assert finding.path is not None and finding.resource is not None
    assert "spec.vitessDashboard" in finding.message
    assert "linux/amd64 only" in finding.message


def test_no_warning_where_the_constraint_is_written_or_not_needed() -> None:
    """The dashboard with an affinity of its own gets the constraint there; the gateway's
    multi-arch image needs none (a toleration is all)."""
    dashboard_with_affinity = VITESS.replace(
        "  vitessDashboard:\n    cells: [zone1]\n    replicas: 1\n",
        "  vitessDashboard:\n    cells: [zone1]\n    replicas: 1\n"
        "    affinity: {podAntiAffinity: {}}\n",
    )
    result = mutate_text(dashboard_with_affinity, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    assert (
        cluster["spec"]["vitessDashboard"]["affinity"]["nodeAffinity"]
        == (ARCH_IN_AMD64["nodeAffinity"])
    )
    assert [f for f in result.findings if f.rule == UNWRITABLE_CONSTRAINT] == []


def test_the_rule_is_described_for_sarif_and_check() -> None:
    rule = RULES[UNWRITABLE_CONSTRAINT]
    assert rule.name == "UnwritableConstraint" and "affinity of its own" in rule.help


def test_a_field_taken_from_an_object_nothing_writes_is_said_not_dropped() -> None:
    """A placement merged over an object no placement of the kind is: the affinity its pods
    take from there is written nowhere. It used to vanish (the pods "ok"). (Were neither to
    set one, the worker's own would be the pods': written there, see set_nowhere.)"""
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Store\n"
        "    placements:\n    - path: /spec/worker\n      inherits:\n"
        "        path: /spec/common\n        fields: {affinity: replace}\n"
        "      images: [/spec/image]\n",
        "policy.yaml",
    )
    text = (
        "apiVersion: example.com/v1\nkind: Store\nmetadata: {name: s}\nspec:\n"
        "  image: registry.test/store-amd64:1\n  common: {affinity: {podAffinity: {}}}\n"
        "  worker: {replicas: 1}\n"
    )
    result = mutate_text(text, policy, resolve=resolve)
    (store,) = yaml.safe_load_all(result.stream())
    assert store["spec"]["worker"] == {"replicas": 1}
    (finding,) = [f for f in result.findings if f.rule == UNWRITABLE_CONSTRAINT]
    assert "spec.worker" in finding.message


def test_a_policy_says_the_operator_adds_terms_of_its_own() -> None:
    """addedTermsWhen: while it holds (per item), no affinity is written, and a pod that needs
    one is warned about; the catalogue's ClickHouse zone rule in the policy's words."""
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Store\n"
        "    placements:\n    - path: /spec/pools/*\n"
        "      addedTermsWhen: {/spec/pools/*/zone: null}\n"
        "      images: [/spec/image]\n",
        "policy.yaml",
    )
    text = (
        "apiVersion: example.com/v1\nkind: Store\nmetadata: {name: s}\nspec:\n"
        "  image: registry.test/store-amd64:1\n  pools:\n  - {name: a, zone: z1}\n  - {name: b}\n"
    )
    result = mutate_text(text, policy, resolve=resolve)
    (store,) = yaml.safe_load_all(result.stream())
    zoned, plain = store["spec"]["pools"]
    assert zoned == {"name": "a", "zone": "z1"}
    assert plain == {"name": "b", "affinity": ARCH_IN_AMD64}
    (finding,) = result.findings
    assert finding.rule == UNWRITABLE_CONSTRAINT and "spec.pools[0]" in finding.message
