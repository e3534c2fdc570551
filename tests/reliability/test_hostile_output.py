"""Text from pull requests and registries, printed where people and runners read it (issue 13):
terminals, CI logs, GitHub workflow commands. Nothing that came from outside may act there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy
from support.workflow_commands import workflow_commands

_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def parse_workflow_commands(stdout: str) -> list[tuple[str, str]]:
    """The commands a GitHub Actions runner would act on in ``stdout`` (support.workflow_commands
    follows the runner's rules), as (name, message)."""
    return [(command.name, command.data) for command in workflow_commands(stdout)]


def test_the_parser_sees_what_the_runner_would(tmp_path: Path) -> None:
    text = (
        "::error file=a::x\n   ::add-mask::y\n::stop-commands::T\n::error::z\n##[warning]v\n"
        "::t::\n::warning::w\rsay ##[Debug]d\r\n::nonsense::n\n::error file=a%3Ab::m%25%0A\n"
    )
    assert parse_workflow_commands(text) == [
        ("error", "x"),
        ("add-mask", "y"),
        ("warning", "w"),
        ("debug", "d"),
        ("error", "m%\n"),
    ]
    assert workflow_commands("::error file=a%3Ab%2Cc::m")[0].properties == {"file": "a:b,c"}


HOSTILE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "web\\n::error file=forged::forged annotation\\e]0;pwned\\a"
  namespace: default
spec:
  template:
    spec:
      containers:
      - name: app
        image: {image}
        args:
        - |
          ::add-mask::hunter2
          ::stop-commands::silenced
"""


@pytest.fixture
def hostile(registry: SeededRegistry, tmp_path: Path) -> tuple[Path, Path]:
    directory = tmp_path / "manifests"
    directory.mkdir()
    # A file name with a line break and a workflow command in it.
    path = directory / "app\n::error::forged-by-file-name.yaml"
    path.write_text(HOSTILE_DEPLOYMENT.format(image=image(registry, "multiarch-oci")))
    return path, write_policy(tmp_path / "policy.yaml", registry)


def test_github_output_with_diff_cannot_be_forged_or_silenced(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    path, policy = hostile
    result = run_kmultiarch(
        ["check", "--output", "github", "--diff", "--config", str(policy), str(path)],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 1, result.stderr
    assert "::add-mask::hunter2" in result.stdout, "the diff is shown"
    commands = parse_workflow_commands(result.stdout)
    assert [name for name, _ in commands] == ["error"], commands
    assert "forged" not in commands[0][0]
    assert "\n" not in commands[0][1] and "\x1b" not in commands[0][1]


def test_warnings_and_tables_show_control_characters_escaped(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    stream = tmp_path / "stream.yaml"
    stream.write_text(HOSTILE_DEPLOYMENT.format(image="registry.test/does-not-exist:1.0"))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    mutate = run_kmultiarch(["mutate", "--config", str(policy), str(stream)], env=env)
    check = run_kmultiarch(
        ["check", "--output", "text", "--config", str(policy), str(stream)], env=env
    )
    assert mutate.returncode == 0, mutate.stderr
    assert "could not be resolved" in mutate.stderr
    for line in mutate.stderr.splitlines():
        assert line.startswith("kmultiarch: "), line
    assert not _ESCAPES.search(mutate.stderr), repr(mutate.stderr)
    assert "\\n::error file=forged" in mutate.stderr and "\\x1b]0;pwned\\x07" in mutate.stderr
    assert not _ESCAPES.search(check.stdout), repr(check.stdout)
    assert not [line for line in check.stdout.splitlines() if line.lstrip().startswith("::error")]


def test_a_non_utf8_stdout_gets_utf8_not_a_crash_that_dumps_the_output(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """With an ASCII stdout, a '✓' anywhere made the encoder fail, and the crash line quoted
    the exception, that is the whole output (Secrets included)."""
    stream = tmp_path / "stream.yaml"
    stream.write_text(
        "# ✓ reviewed\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"
        "stringData:\n  password: hunter2\n---\n"
        + HOSTILE_DEPLOYMENT.format(image=image(registry, "multiarch-oci")).replace(
            '"web\\n::error file=forged::forged annotation\\e]0;pwned\\a"', "web"
        )
    )
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path, {"PYTHONIOENCODING": "ascii", "LC_ALL": "C", "LANG": "C"})
    result = run_kmultiarch(["mutate", "--config", str(policy), str(stream)], env=env)
    assert result.returncode == 0, result.stderr
    assert "✓ reviewed" in result.stdout
    assert "hunter2" not in result.stderr


@pytest.mark.parametrize("what", ["config", "lock", "policy-lock"])
def test_dev_zero_as_a_policy_or_lock_is_refused_at_once(tmp_path: Path, what: str) -> None:
    """A policy's lock: /dev/zero (repository-controlled, e.g. through kustomize or Argo CD)
    was read until memory ran out; the same for --config and --lock."""
    import time

    stream = tmp_path / "stream.yaml"
    stream.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n"
        + ("  lock: /dev/zero\n" if what == "policy-lock" else "  platforms: [linux/amd64]\n")
    )
    args = {
        "config": ["--config", "/dev/zero"],
        "lock": ["--config", str(policy), "--lock", "/dev/zero"],
        "policy-lock": ["--config", str(policy)],
    }[what]
    started = time.monotonic()
    result = run_kmultiarch(["mutate", *args, str(stream)], env=clean_env(tmp_path), timeout=60)
    assert time.monotonic() - started < 10
    assert result.returncode == 2, result.stderr
    assert "/dev/zero" in result.stderr and "not a regular file" in result.stderr
    assert result.stdout == ""


def test_fn_accepts_a_resource_list_larger_than_one_document_may_be(tmp_path: Path) -> None:
    """kustomize sends every resource in one ResourceList; fn refused one over 8 MB ('split
    it') although mutate handles the same resources. Each item is still held to 8 MB."""
    import json

    filler = "x" * 3000
    items = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"c{i}"},
            "data": {"k": filler},
        }
        for i in range(3200)
    ]
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
    }
    text = json.dumps(resource_list)
    assert len(text) > 9 * 1024 * 1024
    result = run_kmultiarch(["fn"], env=clean_env(tmp_path), stdin=text, timeout=120)
    assert result.returncode == 0, result.stderr[-500:]
    assert "c3199" in result.stdout
    items[0]["data"]["k"] = "y" * (9 * 1024 * 1024)
    too_big = run_kmultiarch(
        ["fn"], env=clean_env(tmp_path), stdin=json.dumps(resource_list), timeout=120
    )
    assert too_big.returncode == 2
    assert "items[0]" in too_big.stderr and "8388608" in too_big.stderr


ARGO_WORKFLOW = """\
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: hello-
spec:
  entrypoint: main
  templates:
  - name: main
    inputs:
      parameters:
      - name: message
    container:
      image: {image}
      args: ["{{{{inputs.parameters.message}}}}"]
"""


def test_the_hook_checks_argo_workflows_and_skips_helm_templates(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """--skip-non-manifests skipped any file containing '{{' or '{%', even in a quoted string,
    so every Argo Workflow passed the hook unchecked."""
    workflow = tmp_path / "workflow.yaml"
    workflow.write_text(ARGO_WORKFLOW.format(image=image(registry, "multiarch-oci")))
    template = tmp_path / "deployment.yaml"
    template.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
        "{{- if .Values.x }}\nspec: {}\n{{- end }}\n"
    )
    policy = write_policy(tmp_path / "policy.yaml", registry)
    result = run_kmultiarch(
        [
            "check",
            "-v",
            "--skip-non-manifests",
            "--output",
            "text",
            "--config",
            str(policy),
            str(workflow),
            str(template),
        ],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 1, result.stderr  # the workflow needs the arm64 toleration
    assert "Workflow" in result.stdout and "NEEDS CHANGE" in result.stdout
    assert "deployment.yaml" in result.stderr and "skipped" in result.stderr


def test_template_detection_is_linear(tmp_path: Path) -> None:
    """The detection regex was quadratic: 240 KB of '{{x' took 89 s."""
    import time

    path = tmp_path / "odd.yaml"
    path.write_text("{{x" * 80_000)
    started = time.monotonic()
    result = run_kmultiarch(
        ["check", "-v", "--skip-non-manifests", str(path)], env=clean_env(tmp_path)
    )
    assert time.monotonic() - started < 10
    assert result.returncode == 0, result.stderr
    assert "skipped" in result.stderr


def test_check_diff_of_a_file_without_a_final_newline_applies(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """The patch lacked the '\\ No newline at end of file' marker, so git apply refused it."""
    import json
    import subprocess

    manifest = tmp_path / "app.yaml"
    text = deployment("app", [image(registry, "multiarch-oci")]).rstrip("\n")
    manifest.write_text(text)
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    result = run_kmultiarch(
        ["check", "--config", str(policy), "--diff", "-o", "json", "app.yaml"],
        env=env,
        cwd=tmp_path,
    )
    diff = json.loads(result.stdout)["diffs"]["app.yaml"]
    assert "\\ No newline at end of file" in diff
    mutated = run_kmultiarch(["mutate", "--config", str(policy), "app.yaml"], env=env, cwd=tmp_path)
    (tmp_path / "change.diff").write_text(diff)
    subprocess.run(["git", "apply", "-p1", "change.diff"], cwd=tmp_path, check=True, timeout=30)
    assert manifest.read_text() == mutated.stdout


def test_a_lock_of_a_path_with_a_line_break_reads_back(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """The lock's header comment quoted the command, paths included: a line break in a path
    left a line that is not a comment, and the lock could not be read back."""
    directory = tmp_path / "odd\nname"
    directory.mkdir()
    (directory / "app.yaml").write_text(deployment("app", [image(registry, "multiarch-oci")]))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    lock = tmp_path / "kmultiarch.lock"
    made = run_kmultiarch(
        ["lock", "--config", str(policy), "-o", str(lock), str(directory)], env=env
    )
    assert made.returncode == 0, made.stderr
    used = run_kmultiarch(
        ["mutate", "--config", str(policy), "--lock", str(lock), "--offline", str(directory)],
        env=env,
    )
    assert used.returncode == 0, used.stderr
    assert "tolerations" in used.stdout


def test_an_out_of_range_source_date_epoch_is_a_clear_error(tmp_path: Path) -> None:
    stream = tmp_path / "stream.yaml"
    stream.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    env = clean_env(tmp_path, {"SOURCE_DATE_EPOCH": "99999999999999999999"})
    result = run_kmultiarch(["report", str(stream)], env=env)
    assert result.returncode == 2, result.stderr
    assert "SOURCE_DATE_EPOCH" in result.stderr and "bug" not in result.stderr


@pytest.mark.parametrize(
    ("document", "kept"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a,"
            " image: IMAGE, env: [{name: T, value: 10:30}, {name: M, value: 0o644}]}]}\n",
            ["value: 10:30", "value: 0o644"],
        ),
        (
            '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers":'
            ' [{"name": "a", "image": "IMAGE", "resources": {"limits": {"cpu": 3e1}}}]}}\n',
            ['"cpu": 3e1'],
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a,"
            " image: IMAGE}], nodeSelector: {1: x}, overhead: {on: y}}\n",
            ["1: x", "on: y"],
        ),
    ],
    ids=["flow-sexagesimal-and-octal", "json-exponent", "flow-non-string-keys"],
)
def test_re_rendered_documents_keep_each_scalars_text(
    registry: SeededRegistry, tmp_path: Path, document: str, kept: list[str]
) -> None:
    """Flow-style pod specs and JSON documents were re-rendered with YAML 1.1 rules: '10:30'
    (a string to Kubernetes) became 630, '0o644' became a quoted string, a JSON 3e1 became
    "3e1"; a non-string key crashed."""
    stream = tmp_path / "stream.yaml"
    stream.write_text(document.replace("IMAGE", image(registry, "multiarch-oci")))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    result = run_kmultiarch(
        ["mutate", "--config", str(policy), str(stream)], env=clean_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert "arm64" in result.stdout
    for text in kept:
        assert text in result.stdout, result.stdout
