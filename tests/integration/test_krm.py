"""``kmultiarch fn``, the KRM function, fed ResourceLists the way kustomize and kpt send them
(items carrying ``config.kubernetes.io/index``, ``internal.config.kubernetes.io/*``,
``kustomize.config.k8s.io/id``, comments, flow mappings), and run by the real kpt where it is
installed. Images are ``registry.test/<key>:1.0``, mirrored to the test registry by the policy.
"""

from __future__ import annotations

import difflib
import json
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.tools import REPO, kpt_binary, mirrored_policy, run_tool, tool_env

POLICY_HEADER = """\
functionConfig:
  apiVersion: kmultiarch.dev/v1alpha1
  kind: MultiArchPolicy
  metadata:
    name: cluster
    annotations:
      config.kubernetes.io/local-config: "true"
  spec:
    failurePolicy: {failure_policy}
    registries:
      registry.test: {{mirror: "{mirror}"}}
"""

# Shaped like kpt's and kustomize's input: a comment right after the dash, kyaml's annotations
# (index and path, internal ones, kustomize's id as a block scalar), a flow-style item.
ITEMS = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- # the web tier: amd64 only
  apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web # trailing comment
    namespace: shop
    annotations:
      config.kubernetes.io/index: '0'
      config.kubernetes.io/path: 'apps/web.yaml'
      internal.config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/path: 'apps/web.yaml'
      internal.config.kubernetes.io/seqindent: 'compact'
      internal.config.kubernetes.io/annotations-migration-resource-id: '0'
      kustomize.config.k8s.io/id: |
        group: apps
        kind: Deployment
        name: web
        namespace: shop
        version: v1
  spec:
    replicas: 2
    template:
      spec:
        containers:
        - name: web
          image: registry.test/single-docker-amd64:1.0 # pinned by the release
- apiVersion: batch/v1
  kind: Job
  metadata:
    name: migrate
    annotations:
      config.kubernetes.io/index: '1'
      config.kubernetes.io/path: 'apps/web.yaml'
      internal.config.kubernetes.io/index: '1'
      internal.config.kubernetes.io/path: 'apps/web.yaml'
  spec:
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: migrate
          image: {job_image}
- apiVersion: v1
  kind: Service
  metadata: {{name: web, annotations: {{config.kubernetes.io/index: '0',
    config.kubernetes.io/path: 'apps/svc.yaml',
    internal.config.kubernetes.io/path: 'apps/svc.yaml'}}}}
  spec:
    ports:
    - port: 80 # http
"""


def resource_list(
    registry: SeededRegistry,
    *,
    failure_policy: str = "Ignore",
    job_image: str = "registry.test/multiarch-oci:1.0",
    function_config: str | None = None,
) -> str:
    items = ITEMS.format(job_image=job_image)
    if function_config is None:
        function_config = POLICY_HEADER.format(failure_policy=failure_policy, mirror=registry.url)
    return items + function_config


def only_insertions(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``; fails if any line of ``before`` changed or went."""
    old, new = before.splitlines(), after.splitlines()
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        assert tag in ("equal", "insert"), (tag, old[i1:i2], new[j1:j2])
        if tag == "insert":
            added.extend(new[j1:j2])
    return added


def items_text(resource_list_text: str) -> str:
    """The ResourceList without its results (which a run appends)."""
    return resource_list_text.split("\nresults:\n", 1)[0].rstrip("\n") + "\n"


def results_of(output: str) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = yaml.safe_load(output)["results"]
    return results


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def test_items_are_edited_and_everything_else_passes_through(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    given = resource_list(registry)
    result = run_kmultiarch(["fn"], env=env, stdin=given)
    assert result.returncode == 0, result.stderr

    added = only_insertions(given, result.stdout)
    # Internal annotations, comments, flow style, the functionConfig: all lines kept, in order.
    for line in (
        "- # the web tier: amd64 only",
        "    name: web # trailing comment",
        "      internal.config.kubernetes.io/seqindent: 'compact'",
        "      kustomize.config.k8s.io/id: |",
        "          image: registry.test/single-docker-amd64:1.0 # pinned by the release",
        "    - port: 80 # http",
    ):
        assert line in result.stdout.splitlines()
    output = yaml.safe_load(result.stdout)
    web, job, service = output["items"]
    expressions = web["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]["matchExpressions"]
    assert expressions == [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
    assert "tolerations" not in web["spec"]["template"]["spec"]
    assert job["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    ]
    assert "affinity" not in job["spec"]["template"]["spec"]
    assert service == yaml.safe_load(given)["items"][2]
    assert output["functionConfig"] == yaml.safe_load(given)["functionConfig"]

    # Exactly one result, the info summary; the lines added are the edits and the results.
    assert output["results"] == [
        {
            "message": "kmultiarch: 2 pod specs, 2 changed; 2 images: 0 from cache or lock, "
            "2 looked up",
            "severity": "info",
        }
    ]
    assert "results:" in added
    assert not any("annotations" in line or "config.kubernetes.io" in line for line in added)

    # A second run changes no item (results from the first run are kept, one summary added).
    again = run_kmultiarch(["fn"], env=env, stdin=result.stdout)
    assert again.returncode == 0, again.stderr
    assert items_text(again.stdout) == items_text(result.stdout)
    assert [r["severity"] for r in results_of(again.stdout)] == ["info", "info"]
    assert "2 unchanged" in results_of(again.stdout)[1]["message"]


def test_an_unresolvable_image_under_fail_is_an_error_result_and_exit_1(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    given = resource_list(
        registry, failure_policy="Fail", job_image="registry.test/no-such-image:1.0"
    )
    result = run_kmultiarch(["fn"], env=env, stdin=given)
    assert result.returncode == 1, result.stderr

    # The whole ResourceList is written, with the results; no item is changed.
    added = only_insertions(given, result.stdout)
    assert added[0] == "results:"
    assert items_text(result.stdout) == given
    errors = [r for r in results_of(result.stdout) if r["severity"] == "error"]
    assert len(errors) == 1
    error = errors[0]
    assert "registry.test/no-such-image:1.0" in error["message"]
    assert "failurePolicy: Fail" in error["message"]
    assert error["resourceRef"] == {"apiVersion": "batch/v1", "kind": "Job", "name": "migrate"}
    assert error["field"] == {"path": "spec.template.spec.containers[0].image"}
    assert error["file"] == {"path": "apps/web.yaml", "index": 1}
    assert error["tags"] == {"image": "registry.test/no-such-image:1.0"}
    infos = [r for r in results_of(result.stdout) if r["severity"] == "info"]
    assert len(infos) == 1 and "1 unresolved" in infos[0]["message"]

    # kustomize shows a failing function's stderr: one line naming the resource and the image.
    error_lines = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(error_lines) == 1
    assert "apps/web.yaml: Job migrate: image 'registry.test/no-such-image:1.0'" in error_lines[0]


def test_an_unresolvable_image_under_ignore_is_a_warning_and_the_rest_is_edited(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    given = resource_list(registry, job_image="registry.test/no-such-image:1.0")
    result = run_kmultiarch(["fn"], env=env, stdin=given)
    assert result.returncode == 0, result.stderr
    only_insertions(given, result.stdout)
    output = yaml.safe_load(result.stdout)
    assert "affinity" in output["items"][0]["spec"]["template"]["spec"]
    assert output["items"][1] == yaml.safe_load(given)["items"][1]
    severities = [r["severity"] for r in output["results"]]
    assert severities == ["warning", "info"]
    warning = output["results"][0]
    assert warning["resourceRef"]["kind"] == "Job"
    assert warning["field"]["path"] == "spec.template.spec.containers[0].image"
    assert "left unchanged" in warning["message"]
    assert "registry.test/no-such-image:1.0" in result.stderr


def test_a_configmap_function_config_with_string_data(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    # What `kpt fn eval --exec ... -- key=value` sends: a ConfigMap named function-input.
    config = f"""\
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata:
    name: function-input
  data:
    platforms: "linux/amd64,linux/arm64"
    failurePolicy: Fail
    nodeAffinity: preferred
    registries: '{{registry.test: {{mirror: "{registry.url}"}}}}'
"""
    given = resource_list(registry, function_config=config)
    result = run_kmultiarch(["fn"], env=env, stdin=given)
    assert result.returncode == 0, result.stderr
    only_insertions(given, result.stdout)
    web = yaml.safe_load(result.stdout)["items"][0]["spec"]["template"]["spec"]
    preferred = web["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0]["preference"]["matchExpressions"] == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    ]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in web["affinity"]["nodeAffinity"]

    # failurePolicy: Fail from the ConfigMap is in force.
    failing = run_kmultiarch(
        ["fn"], env=env, stdin=given.replace("multiarch-oci:1.0", "no-such-image:1.0")
    )
    assert failing.returncode == 1
    assert [r["severity"] for r in results_of(failing.stdout)] == ["error", "info"]


def test_without_function_config_the_defaults_apply(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    # No mirror without a config: name the loopback registry itself (plain HTTP by default).
    given = (
        ITEMS.format(job_image=registry.reference("multiarch-oci"))
        .replace("registry.test/single-docker-amd64:1.0", registry.reference("single-docker-amd64"))
        .rstrip("\n")
    )
    assert "functionConfig" not in given
    result = run_kmultiarch(["fn"], env=env, stdin=given)
    assert result.returncode == 0, result.stderr
    output = yaml.safe_load(result.stdout)
    web, job, _ = output["items"]
    assert (
        "requiredDuringSchedulingIgnoredDuringExecution"
        in (web["spec"]["template"]["spec"]["affinity"]["nodeAffinity"])
    )
    assert job["spec"]["template"]["spec"]["tolerations"][0]["value"] == "arm64"
    assert [r["severity"] for r in output["results"]] == ["info"]


@pytest.mark.parametrize(
    ("function_config", "expected"),
    [
        (
            "functionConfig:\n  apiVersion: kmultiarch.dev/v1alpha1\n  kind: MultiArchPolicy\n"
            "  metadata: {name: bad}\n  spec: {nodeAffinity: sometimes}\n",
            "functionConfig: spec.nodeAffinity: expected one of required, preferred, none, "
            "got 'sometimes'",
        ),
        (
            "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n"
            "  data: {nodeAffinity: sometimes}\n",
            "functionConfig: data.nodeAffinity: expected one of required, preferred, none",
        ),
        (
            "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n"
            "  data: {platform: linux/arm64}\n",
            "functionConfig: data.platform: unknown key",
        ),
        (
            "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n"
            "  data: {excludeKinds: Job, platforms: 'linux/sparc/v99/x'}\n",
            "functionConfig: data.platforms[0]",
        ),
        (
            "functionConfig:\n  apiVersion: example.com/v1\n  kind: Something\n",
            "functionConfig: expected apiVersion: kmultiarch.dev/v1alpha1, kind: MultiArchPolicy",
        ),
    ],
)
def test_an_invalid_function_config_is_an_error_result(
    registry: SeededRegistry, env: dict[str, str], function_config: str, expected: str
) -> None:
    given = resource_list(registry, function_config=function_config)
    result = run_kmultiarch(["fn"], env=env, stdin=given)
    assert result.returncode == 1
    assert only_insertions(given, result.stdout)[0] == "results:"
    assert items_text(result.stdout) == given
    results = results_of(result.stdout)
    assert len(results) == 1
    assert results[0]["severity"] == "error"
    assert results[0]["message"].startswith(expected), results[0]["message"]
    assert expected in result.stderr


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # A self-referential alias: read with a bare yaml.load it gave a cyclic list that
        # reading the spec walked for ever (issue 36).
        ('"&a [*a]"', "an alias refers to a collection that contains it (a cycle)"),
        # An alias bomb: nine levels of ten aliases would expand to 10**9 items.
        (
            json.dumps(
                "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n"
                + "".join(f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
            ),
            "aliases expand to more than",
        ),
        ('"{matchLabels: {a: b}, matchLabels: {c: d}}"', "duplicate key 'matchLabels'"),
    ],
    ids=["self-referential-alias", "alias-bomb", "duplicate-key"],
)
def test_fn_does_not_hang_on_a_configmap_value_with_a_self_referential_alias(
    env: dict[str, str], value: str, expected: str
) -> None:
    """A ConfigMap value is YAML read with the policy file's reader and its guards: the
    function answers with an error result and exit 1 (the protocol's failure), never hangs."""
    given = (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
        "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: fn}\n"
        f"  data:\n    excludeNamespaceSelector: {value}\n"
    )
    result = run_kmultiarch(["fn"], env=env, stdin=given, timeout=30)
    assert result.returncode == 1
    assert items_text(result.stdout) == given
    (error,) = results_of(result.stdout)
    assert error["severity"] == "error"
    assert error["message"].startswith(
        "functionConfig: data.excludeNamespaceSelector: not valid YAML/JSON: "
    ), error["message"]
    assert expected in error["message"]


def test_stdin_that_is_not_a_resource_list_is_refused(env: dict[str, str]) -> None:
    result = run_kmultiarch(["fn"], env=env, stdin="apiVersion: v1\nkind: ConfigMap\n")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "expected one ResourceList" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# --- the kyaml standalone form: fn CONFIG [FILE...], plain streams ---------------------------

MANIFEST = """\
# the web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: registry.test/single-docker-amd64:1.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
"""


def test_standalone_form_with_a_policy_and_files(
    registry: SeededRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(mirrored_policy(None, registry.url)))
    manifest = tmp_path / "web.yaml"
    manifest.write_text(MANIFEST)
    result = run_kmultiarch(["fn", str(policy), str(manifest)], env=env)
    assert result.returncode == 0, result.stderr
    added = only_insertions(MANIFEST, result.stdout)
    assert "          - key: kubernetes.io/arch" in added or any("amd64" in a for a in added)
    assert "ResourceList" not in result.stdout
    assert yaml.safe_load_all(result.stdout)

    # Same from stdin.
    from_stdin = run_kmultiarch(["fn", str(policy)], env=env, stdin=MANIFEST)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == result.stdout


def test_standalone_form_with_a_configmap_and_a_failure(
    registry: SeededRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "fn-config.yaml"
    config.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: function-input}\n"
        "data:\n  failurePolicy: Fail\n"
        f"  registries: '{{registry.test: {{mirror: {registry.url}}}}}'\n"
    )
    good = run_kmultiarch(["fn", str(config)], env=env, stdin=MANIFEST)
    assert good.returncode == 0, good.stderr
    assert "amd64" in good.stdout

    bad = run_kmultiarch(
        ["fn", str(config)], env=env, stdin=MANIFEST.replace("single-docker-amd64", "nope")
    )
    assert bad.returncode == 1
    assert bad.stdout == ""
    assert "<stdin>:11: Deployment web: image 'registry.test/nope:1.0'" in bad.stderr


def test_kmultiarch_fn_console_script_runs_the_function(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kmultiarch-fn"] == "kmultiarch.__main__:krm_main"
    result = run_tool(
        [
            sys.executable,
            "-c",
            "import sys; from kmultiarch.__main__ import krm_main; sys.exit(krm_main())",
        ],
        env={**env, "PYTHONPATH": str(REPO)},
        stdin=resource_list(registry),
    )
    assert result.returncode == 0, result.stderr
    assert "2 changed" in results_of(result.stdout)[0]["message"]


# --- the real kpt: fn eval --exec, and a Kptfile pipeline ------------------------------------

PACKAGE_FILES = {
    "web.yaml": MANIFEST,
    "job.yaml": """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate # runs once
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.test/multiarch-oci:1.0
""",
}


def write_package(directory: Path) -> Path:
    directory.mkdir(parents=True)
    for name, text in PACKAGE_FILES.items():
        (directory / name).write_text(text)
    return directory


def test_kpt_fn_eval_runs_the_function(registry: SeededRegistry, tmp_path: Path) -> None:
    kpt = kpt_binary()
    env = tool_env(tmp_path)
    package = write_package(tmp_path / "pkg")
    result = run_tool(
        [
            kpt,
            "fn",
            "eval",
            package,
            "--exec",
            shutil.which("kmultiarch-fn", path=env["PATH"]) or "kmultiarch-fn",
            "--",
            "failurePolicy=Fail",
            f"registries={{registry.test: {{mirror: '{registry.url}'}}}}",
        ],
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "kmultiarch: 2 pod specs, 2 changed" in result.stderr  # kpt prints the results
    web = (package / "web.yaml").read_text()
    job = (package / "job.yaml").read_text()
    only_insertions(PACKAGE_FILES["web.yaml"], web)
    only_insertions(PACKAGE_FILES["job.yaml"], job)
    assert "values:\n                      - amd64" in web or "- amd64" in web
    assert "value: arm64" in job
    assert "config.kubernetes.io" not in web + job  # kpt strips what it added

    # Failing: kpt reports the error result and the exit code, and writes nothing.
    (package / "web.yaml").write_text(MANIFEST.replace("single-docker-amd64", "nope"))
    before = {p.name: p.read_text() for p in package.iterdir()}
    failing = run_tool(
        [
            kpt,
            "fn",
            "eval",
            package,
            "--exec",
            "kmultiarch-fn",
            "--",
            "failurePolicy=Fail",
            f"registries={{registry.test: {{mirror: '{registry.url}'}}}}",
        ],
        env=env,
    )
    assert failing.returncode != 0
    assert "[error]" in failing.stderr and "registry.test/nope:1.0" in failing.stderr
    assert {p.name: p.read_text() for p in package.iterdir()} == before


def test_kpt_render_runs_the_function_from_a_kptfile_pipeline(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    kpt = kpt_binary()
    env = tool_env(tmp_path)
    package = write_package(tmp_path / "pkg")
    (package / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"
        "  annotations:\n    config.kubernetes.io/local-config: 'true'\n"
        "pipeline:\n  mutators:\n  - exec: kmultiarch-fn\n    configPath: multiarch.yaml\n"
    )
    policy = mirrored_policy(None, registry.url)
    policy["metadata"]["annotations"] = {"config.kubernetes.io/local-config": "true"}
    (package / "multiarch.yaml").write_text(yaml.safe_dump(policy))
    result = run_tool([kpt, "fn", "render", package, "--allow-exec"], env=env)
    assert result.returncode == 0, result.stderr
    assert "value: arm64" in (package / "job.yaml").read_text()
    assert "- amd64" in (package / "web.yaml").read_text()
    assert yaml.safe_load((package / "multiarch.yaml").read_text()) == policy
