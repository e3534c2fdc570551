"""``kmultiarch triage``: the real command over the cluster of ``tests/fixtures/triage/shop``
(built by its ``build.py`` with kubectl, statuses and events as the components print them),
its manifests and its lock: each of the five causes, every output format, stdin and YAML dumps,
events of both API groups, an operator's custom resource, no manifests, and bad input."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from support.cli import Completed, clean_env, run_kmultiarch
from support.schemas import validate_sarif
from support.workflow_commands import workflow_commands

FIXTURES = Path(__file__).parents[1] / "fixtures" / "triage"
SHOP = FIXTURES / "shop"
DOC = Path(__file__).parents[2] / "docs" / "triage.md"
OFFLINE = ["--lock", "kmultiarch.lock", "--offline"]
#: The index report:3.1 points to (the lock's entry for the tag): what to pin instead.
REPORT_INDEX = "sha256:3432c54b7d6228850c00cb00acf7943b2c6ca6cce910543c9ea4e1f86761d251"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    copied = tmp_path / "shop"
    shutil.copytree(SHOP, copied)
    return copied


def triage(shop: Path, *args: str, stdin: str | bytes | None = None) -> Completed:
    return run_kmultiarch(
        ["triage", *args, *OFFLINE], env=clean_env(shop.parent), cwd=shop, stdin=stdin
    )


def by_workload(result: Completed) -> dict[str, dict[str, Any]]:
    return {
        f"{f['workload']['kind']} {f['workload']['name']}": f for f in result.json()["failures"]
    }


def test_each_cause_is_found_with_its_file_line_and_command(shop: Path) -> None:
    result = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "json")
    assert result.returncode == 1, result.stderr
    found = by_workload(result)
    assert {name: (f["cause"], f["source"], f["line"], f["next"]) for name, f in found.items()} == {
        "DaemonSet node-agent": (
            "missing-constraint",
            "deploy/node-agent.yaml",
            14,
            "kmultiarch fix --lock kmultiarch.lock --offline deploy/node-agent.yaml",
        ),
        "Deployment storefront": (
            "image-lies",
            "deploy/storefront.yaml",
            15,
            "kmultiarch verify registry.example/shop/storefront:1.8",
        ),
        "CronJob nightly-report": (
            "platform-pinned-digest",
            "deploy/nightly-report.yaml",
            11,
            f"pin registry.example/shop/report:3.1@{REPORT_INDEX} instead, then run "
            "`kmultiarch fix --lock kmultiarch.lock --offline deploy/nightly-report.yaml`",
        ),
        "Deployment search": (
            "over-constrained",
            "deploy/search.yaml",
            14,
            "change the nodeSelector/affinity or the tolerations in deploy/search.yaml:14",
        ),
        "Deployment metrics-proxy": (
            "not-in-manifests",
            None,
            None,
            "find what renders Deployment shop/metrics-proxy and give it to triage, or fix it "
            "there",
        ),
    }
    # The line is that of the pod spec, as check gives it.
    text = (shop / "deploy/node-agent.yaml").read_text().splitlines()
    assert text[14 - 1] == "    spec:"
    # The evidence is quoted, with where it was read.
    agent = found["DaemonSet node-agent"]
    assert agent["evidence"] == [
        {
            "where": "status.containerStatuses[0].lastState.terminated (node-agent)",
            "text": "Error: exec /usr/local/bin/node-agent: exec format error",
            "container": "node-agent",
        }
    ]
    assert agent["node"] == "arm-1" and agent["nodePlatform"] == "linux/arm64"
    assert found["CronJob nightly-report"]["owners"] == [
        "Job shop/nightly-report-29403360",
        "CronJob shop/nightly-report (inferred from its name)",
    ]
    assert found["Deployment metrics-proxy"]["owners"] == [
        "ReplicaSet shop/metrics-proxy-84c9b7d5f",
        "Deployment shop/metrics-proxy (inferred from its name)",
    ]
    search = found["Deployment search"]
    assert [e["where"] for e in search["evidence"]] == [
        "event Warning FailedScheduling from default-scheduler (core/v1, x9)",
        "event Normal NotTriggerScaleUp from cluster-autoscaler (core/v1, x31)",
    ]
    summary = result.json()["summary"]
    assert summary["objectsRead"] == 13 and summary["podsKept"] == 5


def test_the_pipe_of_the_issue_yaml_and_events_of_both_api_groups(shop: Path) -> None:
    """``kubectl get pods,events,nodes -A -o yaml | kmultiarch triage deploy/ --cluster -``,
    with the events also read through events.k8s.io/v1: the same failures, each event once."""
    as_json = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "json")
    dump = json.loads((shop / "cluster.json").read_text())
    as_yaml = yaml.safe_dump(dump, sort_keys=False)
    piped = triage(
        shop, "deploy/", "--cluster", "-", "--cluster", "events.json", "-o", "json", stdin=as_yaml
    )
    assert piped.returncode == 1, piped.stderr
    expected = as_json.json()["failures"]
    for failure in expected:
        failure["clusterFile"] = "<stdin>"
    assert piped.json()["failures"] == expected
    # events.k8s.io/v1 alone (no core/v1 Event in the first dump) is read alike.
    without_events = copy.deepcopy(dump)
    without_events["items"] = [i for i in dump["items"] if i["kind"] != "Event"]
    (shop / "no-events.json").write_text(json.dumps(without_events))
    new_api = triage(
        shop, "deploy/", "--cluster", "no-events.json", "--cluster", "events.json", "-o", "json"
    )
    search = by_workload(new_api)["Deployment search"]
    assert [e["where"] for e in search["evidence"]] == [
        "event Warning FailedScheduling from default-scheduler (events.k8s.io/v1, x9)",
        "event Normal NotTriggerScaleUp from cluster-autoscaler (events.k8s.io/v1, x31)",
    ]
    assert by_workload(new_api)["Deployment storefront"]["cause"] == "image-lies"


def test_the_verdict_of_verification_is_said(shop: Path) -> None:
    result = triage(shop, "deploy/", "--cluster", "cluster.json", "--verify", "warn", "-o", "json")
    assert result.returncode == 1, result.stderr
    assert by_workload(result)["Deployment storefront"]["detail"].endswith(
        "; verification: mismatch: /usr/bin/storefront is built for x86-64"
    )


def test_without_manifests_the_owner_is_named(shop: Path) -> None:
    result = triage(shop, "--cluster", "cluster.json", "-o", "json")
    assert result.returncode == 1, result.stderr
    found = by_workload(result)
    assert {name: f["cause"] for name, f in found.items()} == {
        "DaemonSet node-agent": "missing-constraint",
        "Deployment storefront": "image-lies",
        "CronJob nightly-report": "platform-pinned-digest",
        "Deployment search": "over-constrained",
        "Deployment metrics-proxy": "missing-constraint",
    }
    assert found["DaemonSet node-agent"]["detail"] == (
        "its pods lack what mutate would add: require node affinity kubernetes.io/arch In [amd64]"
    )
    assert "DaemonSet shop/node-agent" in found["DaemonSet node-agent"]["next"]
    assert found["DaemonSet node-agent"]["workload"] == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "node-agent",
        "namespace": "shop",
    }
    assert all(f["source"] is None for f in found.values())


def test_text_is_grouped_per_workload(shop: Path) -> None:
    result = triage(shop, "deploy/", "--cluster", "cluster.json")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "DaemonSet shop/node-agent  deploy/node-agent.yaml:14"
    assert "Deployment shop/metrics-proxy  (not in the manifests; owners: " in result.stdout
    assert (
        "deploy/search.yaml:14: error: Deployment shop/search: pod shop/search-5f7d8c6b54-hz2mw: "
        "FailedScheduling: over-constrained; next: change the nodeSelector/affinity or the "
        "tolerations in deploy/search.yaml:14 [over-constrained]"
    ) in lines
    assert lines[-1].startswith("triage FAILED: 5 architecture failures (5 pods) in 5 workloads")


def test_github_sarif_and_markdown(shop: Path) -> None:
    github = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "github")
    assert github.returncode == 1
    annotations = [line for line in github.stdout.splitlines() if line.startswith("::error ")]
    assert len(annotations) == 5
    assert annotations[0].startswith(
        "::error file=deploy/node-agent.yaml,line=14,title=kmultiarch triage missing-constraint::"
    )
    assert annotations[-1].startswith("::error title=kmultiarch triage not-in-manifests::")
    sarif = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "sarif")
    assert sarif.returncode == 1
    log = sarif.json()
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == [
        "missing-constraint",
        "image-lies",
        "platform-pinned-digest",
        "over-constrained",
        "not-in-manifests",
    ]
    assert results[0]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "deploy/node-agent.yaml"},
        "region": {"startLine": 14},
    }
    # Not in the manifests: on the dump it was read from, no line.
    assert results[-1]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "cluster.json"}
    }
    markdown = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "markdown")
    assert markdown.returncode == 1
    assert markdown.stdout.startswith("## kmultiarch triage failed\n")
    # Code spans: never links, copied as they are (issue 36: no invisible character).
    assert (
        "| `DaemonSet shop/node-agent` | `deploy/node-agent.yaml:14` | `shop/node-agent-7xk2p` |"
        in markdown.stdout
    )


def test_no_architecture_failure_exits_0(shop: Path) -> None:
    dump = json.loads((shop / "cluster.json").read_text())
    dump["items"] = [
        item
        for item in dump["items"]
        if item["kind"] == "Node" or item["metadata"]["name"] == "storefront-6b8d5f7c9d-tn5vq"
    ]
    (shop / "healthy.json").write_text(json.dumps(dump))
    result = triage(shop, "deploy/", "--cluster", "healthy.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "triage found no architecture failure; read 3 objects (0 pods not running or failed, "
        "2 nodes, 0 events kept)\n"
    )


def load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("triage_build", FIXTURES / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl builds the objects")
def test_a_custom_resources_pods_are_traced_to_it(shop: Path) -> None:
    """ECK's Kibana: Kibana -> Deployment logs-kb -> ReplicaSet -> Pod, the chain in the dump
    (``kubectl get pods,replicasets,deployments,kibanas,nodes -n shop -o json``); the manifest
    is the Kibana, located on its podTemplate.spec."""
    build = load_build()
    image = "registry.example/shop/kibana:8.15.0"
    deployment = build.kubectl("deployment", "logs-kb", f"--image={image}", "-n", "shop")
    deployment["metadata"].update(
        {
            "uid": build.uid("Deployment/logs-kb"),
            "ownerReferences": [build.owner("kibana.k8s.elastic.co/v1", "Kibana", "logs")],
        }
    )
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "logs-kb-7c9f8d6b5",
            "namespace": "shop",
            "uid": build.uid("ReplicaSet/logs-kb-7c9f8d6b5"),
            "ownerReferences": [build.owner("apps/v1", "Deployment", "logs-kb")],
        },
        "spec": copy.deepcopy(deployment["spec"]),
    }
    kibana = {
        "apiVersion": "kibana.k8s.elastic.co/v1",
        "kind": "Kibana",
        "metadata": {"name": "logs", "namespace": "shop", "uid": build.uid("Kibana/logs")},
        "spec": {"version": "8.15.0", "image": image, "count": 1},
    }
    pod = build.pod_from(
        deployment["spec"]["template"],
        "logs-kb-7c9f8d6b5-2xk4p",
        [build.owner("apps/v1", "ReplicaSet", "logs-kb-7c9f8d6b5")],
    )
    pod["spec"]["nodeName"] = "arm-1"
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]
    pod["status"] = build.running_status(
        "10.0.0.12",
        [
            build.container_status(
                "kibana",
                image,
                image_id=f"registry.example/shop/kibana@{build.digest('kibana:8.15.0')}",
                restarts=3,
                state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                last_state={
                    "terminated": {
                        "exitCode": 1,
                        "reason": "StartError",
                        "message": "failed to create containerd task: failed to create shim "
                        "task: OCI runtime create failed: runc create failed: unable to start "
                        'container process: exec: "/bin/tini": exec format error: unknown',
                    }
                },
            )
        ],
    )
    pod["spec"]["containers"][0]["name"] = "kibana"
    dump = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            pod,
            replica_set,
            deployment,
            kibana,
            build.node("arm-1", "arm64", "10.0.0.12", []),
        ],
        "metadata": {"resourceVersion": ""},
    }
    (shop / "eck.json").write_text(json.dumps(dump, indent=4))
    (shop / "eck").mkdir()
    (shop / "eck" / "kibana.yaml").write_text(
        "apiVersion: kibana.k8s.elastic.co/v1\n"
        "kind: Kibana\n"
        "metadata:\n"
        "  name: logs\n"
        "  namespace: shop\n"
        "spec:\n"
        "  version: 8.15.0\n"
        f"  image: {image}\n"
        "  count: 1\n"
        "  podTemplate:\n"
        "    spec:\n"
        "      tolerations:\n"
        "      - operator: Exists\n"
    )
    with (shop / "kmultiarch.lock").open("a") as lock:
        lock.write(
            f"  {image}:\n"
            f"    digest: {build.digest('kibana:8.15.0')}\n"
            "    mediaType: application/vnd.oci.image.manifest.v1+json\n"
            "    platforms: [linux/amd64]\n"
        )
    result = triage(shop, "eck/", "--cluster", "eck.json", "-o", "json")
    assert result.returncode == 1, result.stderr
    (failure,) = result.json()["failures"]
    assert failure["workload"] == {
        "apiVersion": "kibana.k8s.elastic.co/v1",
        "kind": "Kibana",
        "name": "logs",
        "namespace": "shop",
    }
    assert (failure["source"], failure["line"]) == ("eck/kibana.yaml", 11)
    assert failure["owners"] == [
        "ReplicaSet shop/logs-kb-7c9f8d6b5",
        "Deployment shop/logs-kb",
        "Kibana shop/logs",
    ]
    assert failure["cause"] == "missing-constraint"
    assert failure["next"] == "kmultiarch fix --lock kmultiarch.lock --offline eck/kibana.yaml"


BAD_INPUT = [
    ("not-json.json", b"<html>502 Bad Gateway</html>", "not-json.json:1: the document is"),
    ("array.json", b"[]", "array.json:1: not a kubectl JSON dump: a JSON array"),
    (
        "wrong.json",
        b'{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod",'
        b'"metadata":{"name":"p"},"spec":{"containers":{"name":"x"}}}]}',
        "wrong.json: object 1: Pod /p: spec.containers is not a list",
    ),
    (
        "deep.json",
        b'{"apiVersion":"v1","kind":"List","items":[' + b"[" * 50_000 + b"]" * 50_000 + b"]}",
        "deep.json:1: an item of items nests deeper than",
    ),
]


@pytest.mark.parametrize(("name", "data", "expected"), BAD_INPUT)
def test_bad_input_exits_2_naming_the_file(
    shop: Path, name: str, data: bytes, expected: str
) -> None:
    (shop / name).write_bytes(data)
    result = triage(shop, "deploy/", "--cluster", name)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert f"kmultiarch: error: {expected}" in result.stderr


def test_a_huge_object_is_refused_at_the_limit(shop: Path) -> None:
    huge = b'{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","x":"'
    (shop / "huge.json").write_bytes(huge + b"a" * 3_000_000 + b'"}]}')
    result = triage(shop, "--cluster", "huge.json", "--max-object-size", "1048576")
    assert result.returncode == 2
    assert "huge.json:1: an item of items is larger than 1048576 bytes" in result.stderr
    usage = triage(shop, "-", "--cluster", "-")
    assert usage.returncode == 2 and "stdin (-) can be read once" in usage.stderr


def test_the_worked_example_of_the_doc_is_what_triage_prints(shop: Path) -> None:
    """docs/triage.md's console block, run in the fixture's directory."""
    text = DOC.read_text()
    block = re.search(r"<!-- triage-example -->\n```console\n(.*?)```", text, re.DOTALL)
    assert block is not None
    command, _, expected = block.group(1).partition("\n")
    words = command.removeprefix("$ ").split()
    assert words[:2] == ["kmultiarch", "triage"]
    result = run_kmultiarch(words[1:], env=clean_env(shop.parent), cwd=shop)
    assert result.returncode == 1, result.stderr
    assert result.stdout == expected


def test_a_pod_running_another_image_than_the_manifest_is_said(shop: Path) -> None:
    manifest = shop / "deploy" / "storefront.yaml"
    manifest.write_text(manifest.read_text().replace("storefront:1.8", "storefront:1.9"))
    result = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "json")
    assert result.returncode == 1, result.stderr
    (row,) = by_workload(result)["Deployment storefront"]["images"]
    assert row["image"] == "registry.example/shop/storefront:1.8"
    assert row["manifestImage"] == "registry.example/shop/storefront:1.9"
    text = triage(shop, "deploy/", "--cluster", "cluster.json").stdout
    assert (
        "              the manifests say registry.example/shop/storefront:1.9: the cluster runs "
        "another render than the files"
    ) in text.splitlines()


def test_quoted_messages_cannot_act_on_a_terminal_a_ci_log_or_markdown(shop: Path) -> None:
    """A terminated container's message is its logs (FallbackToLogsOnError): anything at all.
    Quoted, it is made inert as check makes the manifests' text inert."""
    dump = json.loads((shop / "cluster.json").read_text())
    agent = next(i for i in dump["items"] if i["metadata"]["name"] == "node-agent-7xk2p")
    hostile = (
        "exec /bin/x: exec format error\x1b]0;owned\x07\n::add-mask::secret\n##[group]x "
        "<img src=x onerror=alert(1)> [link](https://example.com) | cell"
    )
    agent["status"]["containerStatuses"][0]["lastState"]["terminated"]["message"] = hostile
    (shop / "hostile.json").write_text(json.dumps(dump))
    text = triage(shop, "deploy/", "--cluster", "hostile.json").stdout
    github = triage(shop, "deploy/", "--cluster", "hostile.json", "-o", "github").stdout
    markdown = triage(shop, "deploy/", "--cluster", "hostile.json", "-o", "markdown").stdout
    for output in (text, github, markdown):
        assert "\x1b" not in output and "\x07" not in output
        assert not any(line.lstrip().startswith("::add-mask") for line in output.splitlines())
        assert "##[group]" not in output
    # One line: the runner sees no command at the start of a line.
    assert "\\x1b]0;owned\\x07\\n::add-mask::secret\\n#\\x23[group]x" in text
    # As the runner reads the log: annotations only, whatever the quoted text holds.
    commands = workflow_commands(github, text, markdown)
    assert [command.name for command in commands] == ["error"] * 5
    assert "<img" not in markdown and "&lt;img" in markdown
    # no link (a code span), no cell
    assert "\\[`link](https://example.com`)" in markdown and "\\| cell" in markdown


def test_manifests_that_name_no_namespace_are_found(shop: Path) -> None:
    """``helm template`` names no namespace (``helm install -n shop`` puts the resources
    there): the workloads are found by kind and name."""
    for manifest in (shop / "deploy").iterdir():
        manifest.write_text(manifest.read_text().replace("  namespace: shop\n", ""))
    result = triage(shop, "deploy/", "--cluster", "cluster.json", "-o", "json")
    assert result.returncode == 1, result.stderr
    found = by_workload(result)
    assert found["DaemonSet node-agent"]["source"] == "deploy/node-agent.yaml"
    assert found["DaemonSet node-agent"]["line"] == 13
    assert found["DaemonSet node-agent"]["cause"] == "missing-constraint"
    assert found["Deployment metrics-proxy"]["cause"] == "not-in-manifests"


def test_pods_failing_alike_are_one_failure(shop: Path) -> None:
    """A DaemonSet fails on every arm64 node alike: one failure naming the other pods."""
    dump = json.loads((shop / "cluster.json").read_text())
    agent = next(i for i in dump["items"] if i["metadata"]["name"] == "node-agent-7xk2p")
    for suffix, node_name in (("b2c4d", "arm-2"), ("q9z8w", "arm-3")):
        twin = copy.deepcopy(agent)
        twin["metadata"]["name"] = f"node-agent-{suffix}"
        twin["metadata"]["uid"] = f"uid-{suffix}"
        twin["spec"]["nodeName"] = node_name
        dump["items"].append(twin)
    (shop / "three.json").write_text(json.dumps(dump))
    result = triage(shop, "deploy/", "--cluster", "three.json", "-o", "json")
    assert result.returncode == 1, result.stderr
    agent_failure = by_workload(result)["DaemonSet node-agent"]
    assert agent_failure["pod"] == "shop/node-agent-7xk2p"
    assert agent_failure["otherPods"] == ["shop/node-agent-b2c4d", "shop/node-agent-q9z8w"]
    assert len(result.json()["failures"]) == 5
    text = triage(shop, "deploy/", "--cluster", "three.json").stdout
    assert "    alike:    shop/node-agent-b2c4d, shop/node-agent-q9z8w" in text.splitlines()
    assert "5 architecture failures (7 pods) in 5 workloads" in text


def test_a_failing_pod_with_scheduling_fields_of_the_wrong_shape_is_no_crash(shop: Path) -> None:
    """The pod's own fields go to the engine (what mutate would add to it): a hostile dump's
    tolerations or affinity of any shape are judged, or said, never a crash (exit 3)."""
    dump = json.loads((shop / "cluster.json").read_text())
    agent = next(i for i in dump["items"] if i["metadata"]["name"] == "node-agent-7xk2p")
    for tolerations, affinity in (("all", [1]), ([{"key": 7}], {"nodeAffinity": "x"})):
        agent["spec"]["tolerations"] = tolerations
        agent["spec"]["affinity"] = affinity
        (shop / "odd.json").write_text(json.dumps(dump))
        result = triage(shop, "--cluster", "odd.json")
        assert result.returncode in (1, 2), result.stderr
        assert "unexpected error" not in result.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl builds the objects")
def test_the_fixture_dumps_are_what_build_py_makes_with_kubectl() -> None:
    """cluster.json and events.json are build.py's output with this kubectl: the objects are
    kubectl's, not hand-written."""
    cluster, events = load_build().build()
    assert json.loads((SHOP / "cluster.json").read_text()) == cluster
    assert json.loads((SHOP / "events.json").read_text()) == events
