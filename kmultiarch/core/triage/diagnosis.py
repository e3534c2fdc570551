"""From failing pods back to what causes them: the pure part of ``kmultiarch triage``.

Three steps, each plain data in and out (no file, no registry; the cluster's objects come from
:mod:`kmultiarch.io.clusterdump`, the images' platforms and what ``mutate`` would change from
the engine, joined by :mod:`kmultiarch.assess.triage`):

1. **Keep** (:class:`ClusterState`): of each object of a dump, only what triage reads: pods that
   show a failure or are not running (their owners, node, images, scheduling fields and
   container states), the events that may name an architecture failure, nodes (their
   architecture, OS and taints) and every other object's owner references (the chain from a
   pod up to its workload). A field of the wrong type is a :class:`DumpShapeError`.
2. **Recognise** (:func:`failures`): each pod's architecture failures, with the evidence quoted
   and where it was read. The messages are those the components really print:

   - ``exec format error``: the kernel's ENOEXEC as runc reports it (``exec /app: exec format
     error``; ``runc create failed: unable to start container process: exec: "/app": exec
     format error: unknown``) in a container's ``state``/``lastState``, and in events; the
     multiarch-tuning-operator's event reason ``ExecFormatError`` and pod label
     ``multiarch.openshift.io/exec-format-error=true`` (its ``pkg/utils/const.go``:
     ``ExecFormatErrorLabelKey``, ``ExecFormatErrorEventReason``);
   - image pulls with no image for the node's platform: containerd's ``no match for platform in
     manifest`` (``core/images/image.go``, ``fmt.Errorf("no match for platform in manifest:
     %w", errdefs.ErrNotFound)``), CRI-O's (containers/image ``manifest``) ``no image found in
     image index for architecture ...`` and ``no image found in manifest list for architecture
     ...``, Docker's ``no matching manifest for linux/arm64/v8 in the manifest list entries``;
   - ``FailedScheduling`` (the scheduler's plugins' reasons: ``tainttoleration``'s
     ``node(s) had untolerated taint {%s: %s}``, ``nodeaffinity``'s ``ErrReasonPod = "node(s)
     didn't match Pod's node affinity/selector"``) and cluster-autoscaler's
     ``NotTriggerScaleUp`` (``pod didn't trigger scale-up: ...``, the same reasons per node
     group) when they concern the architecture: a ``kubernetes.io/arch`` taint (or one the
     policy tolerates per platform) left untolerated, or a selector or affinity on the
     architecture that the nodes' labels show no room for.
3. **Classify** (:func:`classify`): a cause and a next step per failure, from the evidence, the
   node's platform, the images' platforms (what their registries list) and what the engine
   says of the workload's template (or, without one, of the pod's own spec):

   ========================  ===========================================================
   ``missing-constraint``    the template lacks what ``mutate`` would add
   ``image-lies``            the registry lists the node's platform, yet the container died
                             with exec format error
   ``platform-pinned-digest`` the image is pinned to one platform's manifest, not the index,
                             and the pod ran on another platform
   ``over-constrained``      a selector or affinity leaves no node whose architecture runs
                             the images, or a taint is not tolerated though they run there
   ``not-in-manifests``      the workload that made the pod is not in the files given
   ``undetermined``          the images' platforms are not known (not resolved)
   ========================  ===========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kmultiarch.core.findings import ResourceRef, Rule
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.shellwords import file_operand, shell_join
from kmultiarch.core.triage.clusterstate import (
    ARCH_LABEL,
    EXEC_FORMAT,
    EXEC_FORMAT_LABEL,
    EXEC_FORMAT_REASON,
    IMAGE_PLATFORM,
    Taint,
)

if TYPE_CHECKING:
    from kmultiarch.core.triage.clusterstate import ClusterState, Node, Pod


__all__ = [
    "CAUSES",
    "Diagnosis",
    "Evidence",
    "ImageFacts",
    "PodFailure",
    "SchedulingReasons",
    "TemplateFacts",
    "classify",
    "failures",
    "required_architectures",
    "scheduling_reasons",
    "tolerated",
]


_UNTOLERATED = re.compile(
    r"(\d+) node\(s\) had (?:untolerated )?taints? \{([^:{}]*):\s*([^{}]*)\}"
    r"|(\d+) node\(s\) had untolerated taint\(s\)"
)

_AFFINITY = re.compile(
    r"(\d+) node\(s\) didn't match (?:Pod's node affinity(?:/selector)?|node selector)"
)

_SCALE_UP = re.compile(r"pod didn't trigger scale-up", re.IGNORECASE)

FailureKind = Literal["exec-format-error", "image-platform", "unschedulable", "no-scale-up"]

Cause = Literal[
    "missing-constraint",
    "image-lies",
    "platform-pinned-digest",
    "over-constrained",
    "not-in-manifests",
    "undetermined",
]

#: What each failure kind is called in messages.
FAILURE_TEXT: dict[str, str] = {
    "exec-format-error": "exec format error",
    "image-platform": "no image for the node's platform",
    "unschedulable": "FailedScheduling",
    "no-scale-up": "NotTriggerScaleUp",
}

#: The causes as rules (SARIF, annotations, the Markdown summary), in the findings' model.
CAUSES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            "missing-constraint",
            "MissingConstraint",
            "The workload's template lacks the tolerations or node affinity its images need",
            "Run `kmultiarch fix FILE` (with the policy and lock of your checks) and deploy "
            "the result: the pods are then kept to the platforms their images run on.",
        ),
        Rule(
            "image-lies",
            "ImageLiesAboutItsPlatforms",
            "The image's registry lists the node's platform, yet its program is not built for it",
            "Run `kmultiarch verify IMAGE`: it reads the layers and names the program and its "
            "machine. Rebuild the image for the platform, or keep the pods off it "
            "(spec.verify: {mode: enforce}).",
        ),
        Rule(
            "platform-pinned-digest",
            "PlatformPinnedDigest",
            "The image is pinned to one platform's manifest, not to the tag's index",
            "Pin the digest of the index (the tag's digest) instead of one platform's child "
            "manifest, then run `kmultiarch fix FILE`.",
        ),
        Rule(
            "over-constrained",
            "OverConstrained",
            "A selector, an affinity or an untolerated taint leaves no node whose "
            "architecture runs the images",
            "Change the nodeSelector or node affinity to an architecture the images run on "
            "and the cluster has, or tolerate the taint of the nodes they run on (the "
            "policy's spec.tolerations, then `kmultiarch fix FILE`).",
        ),
        Rule(
            "not-in-manifests",
            "NotInManifests",
            "The workload that made the failing pod is not in the manifests given",
            "Give triage the manifests that render it (its chart, its kustomization, its "
            "operator's resource), or fix the owner named.",
        ),
        Rule(
            "undetermined",
            "Undetermined",
            "An architecture failure whose cause cannot be told: an image's platforms are "
            "not known",
            "Make the images resolvable (`kmultiarch inspect IMAGE`, the lock, spec.overrides) "
            "and run triage again.",
        ),
    )
}


@dataclass(frozen=True)
class Evidence:
    """A failure as the cluster said it: where it was read and the text, quoted."""

    kind: FailureKind
    where: str
    text: str
    container: str = ""


@dataclass(frozen=True)
class SchedulingReasons:
    """What a FailedScheduling or NotTriggerScaleUp message says about the architecture."""

    untolerated: tuple[Taint, ...] = ()  # the taints named (effect unknown: NoSchedule)
    untolerated_unnamed: int = 0  # "had untolerated taint(s)", newer schedulers
    affinity: int = 0  # nodes that "didn't match Pod's node affinity/selector"


def scheduling_reasons(message: str) -> SchedulingReasons:
    taints: list[Taint] = []
    unnamed = 0
    for match in _UNTOLERATED.finditer(message):
        if match.group(1) is not None:
            taints.append(Taint(match.group(2).strip(), match.group(3).strip(), "NoSchedule"))
        else:
            unnamed += int(match.group(4))
    affinity = sum(int(match.group(1)) for match in _AFFINITY.finditer(message))
    return SchedulingReasons(tuple(dict.fromkeys(taints)), unnamed, affinity)


@dataclass(frozen=True)
class PodFailure:
    """One pod's architecture failure: the evidence (the first is the headline)."""

    pod: Pod
    kind: FailureKind
    evidence: tuple[Evidence, ...]
    #: For scheduling failures: the architectures the pod's nodeSelector/affinity allow
    #: (None: not constrained), the taints of arch-tainted nodes it does not tolerate.
    required_architectures: frozenset[str] | None = None
    untolerated: tuple[Taint, ...] = ()
    node: Node | None = None
    #: The architectures of nodes the pod's architecture requirement left out that it could
    #: go to otherwise (not cordoned, their taints tolerated).
    room: frozenset[str] = frozenset()

    @property
    def containers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.container for e in self.evidence if e.container))


def failures(state: ClusterState, taint_keys: Iterable[str] = (ARCH_LABEL,)) -> list[PodFailure]:
    """Every architecture failure of the kept pods, in the dump's order. ``taint_keys``: the
    keys of taints that keep pods off a platform (``kubernetes.io/arch``, and the keys of the
    policy's per-platform tolerations)."""
    keys = frozenset(taint_keys) | {ARCH_LABEL}
    found: list[PodFailure] = []
    for pod in state.pods.values():
        found.extend(_pod_failures(pod, state, keys))
    return found


def _pod_failures(pod: Pod, state: ClusterState, keys: frozenset[str]) -> Iterator[PodFailure]:
    node = state.nodes.get(pod.node_name) if pod.node_name else None
    events = state.events_of(pod)
    exec_format: list[Evidence] = []
    pulls: list[Evidence] = []
    for container in pod.containers:
        for where, text in container.states:
            if EXEC_FORMAT.search(text):
                exec_format.append(
                    Evidence(
                        "exec-format-error", f"{where} ({container.name})", text, container.name
                    )
                )
            elif IMAGE_PLATFORM.search(text):
                pulls.append(
                    Evidence("image-platform", f"{where} ({container.name})", text, container.name)
                )
    if pod.labels.get(EXEC_FORMAT_LABEL) == "true":
        exec_format.append(
            Evidence("exec-format-error", "metadata.labels", f"{EXEC_FORMAT_LABEL}=true")
        )
    scheduling: list[Evidence] = []
    for event in events:
        named = _container_named(pod, event.message)
        if event.reason == EXEC_FORMAT_REASON or EXEC_FORMAT.search(event.message):
            exec_format.append(Evidence("exec-format-error", event.where, event.message, named))
        elif IMAGE_PLATFORM.search(event.message):
            pulls.append(Evidence("image-platform", event.where, event.message, named))
        elif event.reason == "FailedScheduling" or (
            event.reason == "NotTriggerScaleUp" and _SCALE_UP.search(event.message)
        ):
            kind: FailureKind = (
                "unschedulable" if event.reason == "FailedScheduling" else ("no-scale-up")
            )
            scheduling.append(Evidence(kind, event.where, event.message))
    said = {item.text for item in scheduling}
    for where, text in pod.conditions:
        if "node(s)" in text and text not in said:
            scheduling.append(Evidence("unschedulable", where, text))
    if exec_format:
        yield PodFailure(pod, "exec-format-error", tuple(exec_format), node=node)
    if pulls:
        yield PodFailure(pod, "image-platform", tuple(pulls), node=node)
    if scheduling and not pod.node_name:
        failure = _scheduling_failure(pod, scheduling, state, keys)
        if failure is not None:
            yield failure


def _container_named(pod: Pod, message: str) -> str:
    """The container an event's message names (``container "app"``, ``image "x"``)."""
    for container in pod.containers:
        if f'"{container.name}"' in message or (
            container.image and f'"{container.image}"' in message
        ):
            return container.name
    return ""


def _scheduling_failure(
    pod: Pod, evidence: list[Evidence], state: ClusterState, keys: frozenset[str]
) -> PodFailure | None:
    """A FailedScheduling/NotTriggerScaleUp failure when it concerns the architecture: a taint
    of ``keys`` left untolerated, or the pod's selector or affinity on the architecture while
    nodes of other architectures were there."""
    required = required_architectures(pod.scheduling)
    tolerations = _sequence_of_mappings(pod.scheduling.get("tolerations"))
    untolerated: dict[Taint, None] = {}
    kept: list[Evidence] = []
    for item in evidence:
        reasons = scheduling_reasons(item.text)
        named = [taint for taint in reasons.untolerated if taint.key in keys]
        if reasons.untolerated_unnamed:
            named.extend(
                taint
                for node in state.nodes.values()
                for taint in node.taints
                if taint.key in keys
                and taint.effect in ("NoSchedule", "NoExecute")
                and not tolerated(taint, tolerations)
            )
        on_architecture = bool(reasons.affinity) and required is not None
        if named or on_architecture:
            untolerated.update(dict.fromkeys(named))
            kept.append(item)
    if not kept:
        return None
    # Nodes the architecture requirement left out that would take the pod otherwise (not
    # cordoned, every taint tolerated): where the images may run instead.
    room = frozenset(
        node.architecture
        for node in state.nodes.values()
        if required is not None
        and node.architecture
        and node.architecture not in required
        and not node.unschedulable
        and all(
            tolerated(taint, tolerations)
            for taint in node.taints
            if taint.effect in ("NoSchedule", "NoExecute")
        )
    )
    return PodFailure(
        pod,
        kept[0].kind,
        tuple(kept),
        required_architectures=required,
        untolerated=tuple(untolerated),
        room=room,
    )


def _sequence_of_mappings(value: object) -> list[Mapping[str, object]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def tolerated(taint: Taint, tolerations: Sequence[Mapping[str, object]]) -> bool:
    """Whether a toleration of the pod tolerates ``taint`` (the API's matching rules)."""
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.effect:
            continue
        key = toleration.get("key")
        operator = toleration.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.key:
            continue
        if operator == "Exists" or str(toleration.get("value") or "") == taint.value:
            return True
    return False


def required_architectures(scheduling: Mapping[str, object]) -> frozenset[str] | None:
    """The architectures a pod's nodeSelector and required node affinity allow (None: they
    say nothing of ``kubernetes.io/arch``). Terms are ORed: a term without an arch
    requirement allows every architecture."""
    allowed: set[str] | None = None
    selector = scheduling.get("nodeSelector")
    if isinstance(selector, Mapping) and isinstance(selector.get(ARCH_LABEL), str):
        allowed = {str(selector[ARCH_LABEL])}
    affinity = scheduling.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node_affinity, Mapping)
        else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if isinstance(terms, list) and terms:
        from_terms: set[str] = set()
        for term in terms:
            expressions = term.get("matchExpressions") if isinstance(term, Mapping) else None
            term_values: set[str] | None = None
            for expression in _sequence_of_mappings(expressions):
                if expression.get("key") != ARCH_LABEL or expression.get("operator") != "In":
                    continue
                values = expression.get("values")
                found = {str(v) for v in values} if isinstance(values, list) else set()
                term_values = found if term_values is None else term_values & found
            if term_values is None:
                return frozenset(allowed) if allowed is not None else None
            from_terms |= term_values
        allowed = from_terms if allowed is None else allowed & from_terms
    return frozenset(allowed) if allowed is not None else None


@dataclass(frozen=True)
class ImageFacts:
    """What is known of one container's image: its registry's platforms (None: not
    resolved), the digest it is pinned to, whether that digest is one platform's manifest
    (not an index), and the verification verdict for the node's platform, when it ran."""

    container: str
    image: str
    platforms: frozenset[Platform] | None
    pinned: bool = False
    single_manifest: bool = False
    #: For a digest-pinned reference with a tag: the tag's index now, to pin instead
    #: (``NAME:TAG@sha256:...``) and its platforms; empty when not known.
    index_reference: str = ""
    index_platforms: frozenset[Platform] = frozenset()
    verification: str = ""


@dataclass(frozen=True)
class TemplateFacts:
    """What the engine says of a pod spec: the workload's template in the manifests (with its
    file and line), or the pod's own spec (no file)."""

    resource: ResourceRef
    status: str  # the engine's PodStatus
    changes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    source: str = ""
    line: int | None = None
    images: Mapping[str, str] = field(default_factory=dict)  # container -> image
    pinned_digest_findings: tuple[str, ...] = ()  # the engine's platform-pinned-digest


@dataclass(frozen=True)
class Diagnosis:
    cause: Cause
    detail: str
    next_step: str


#: How a command the user is told to run is written: its words (``("fix",)``) and arguments
#: to one shell-quoted line. The CLI's carries the options of the triage run (its policy, its
#: lock...), so that pasted as printed the command decides as triage did.
CommandLine = Callable[[Sequence[str], Sequence[str]], str]


def plain_command(verb: Sequence[str], arguments: Sequence[str]) -> str:
    """``kmultiarch VERB ARGUMENTS``, shell-quoted (core/shellwords), with no option."""
    return shell_join(["kmultiarch", *verb, *(file_operand(word) for word in arguments)])


def classify(
    failure: PodFailure,
    images: Sequence[ImageFacts],
    template: TemplateFacts | None,
    pod_view: TemplateFacts | None,
    *,
    manifests_given: bool,
    owner: str,
    cluster_architectures: frozenset[str] = frozenset(),
    command: CommandLine = plain_command,
) -> Diagnosis | None:
    """The cause of one failure and what to do; None when a scheduling failure turns out not
    to concern the architecture. ``template``: the workload's template found in the manifests
    (None: not found); ``pod_view``: the engine on the pod's own spec; ``owner``: how to name
    the workload that made the pod; ``cluster_architectures``: those of the dump's nodes."""
    involved = [
        image for image in images if not failure.containers or image.container in failure.containers
    ] or list(images)
    if failure.kind in ("unschedulable", "no-scale-up"):
        return _scheduling_cause(
            failure,
            involved,
            template,
            pod_view,
            manifests_given,
            owner,
            cluster_architectures,
            command,
        )
    node_platform = failure.node.platform if failure.node is not None else None
    fix = _fix_command(template, command)
    pinned = _pinned(involved, node_platform, template)
    if pinned is not None:
        detail, instead = pinned
        return Diagnosis(
            "platform-pinned-digest",
            detail,
            "pin "
            + (instead or "the digest of the tag's index")
            + " instead"
            + (f", then run `{fix}`" if fix else f" in the template of {owner}"),
        )
    if failure.kind == "exec-format-error" and node_platform is not None:
        liars = [
            image
            for image in involved
            if image.platforms is not None and _runs_on(image.platforms, node_platform)
        ]
        if liars:
            image = liars[0]
            verdict = f"; verification: {image.verification}" if image.verification else ""
            return Diagnosis(
                "image-lies",
                f"the registry of {image.image} lists {node_platform}, the node's platform, yet "
                f"container {image.container!r} died there with exec format error{verdict}",
                command(("verify",), (image.image,)),
            )
    if any(image.platforms is None for image in involved) and (
        template is None or template.status == "unresolved"
    ):
        unknown = next(image for image in involved if image.platforms is None)
        return Diagnosis(
            "undetermined",
            f"the platforms of {unknown.image} are not known (it could not be resolved)",
            command(("inspect",), (unknown.image,)),
        )
    if template is None:
        return _without_template(pod_view, manifests_given, owner, "")
    if template.status == "needs-change":
        return _missing(template, owner, command)
    if template.status in ("no-common-platform", "scheduling-conflict"):
        return Diagnosis(
            "over-constrained",
            "; ".join(template.problems) or "the template's constraints exclude its images",
            f"change the nodeSelector/affinity in {template.source}:{template.line}",
        )
    if template.status in _NOT_PLACED:
        return _not_placed(template, pod_view, command)
    view = _view_text(pod_view)
    if view:
        return Diagnosis(
            "missing-constraint",
            "the manifests already keep the pod where its images run, the pod does not: the "
            f"cluster runs another render than the files ({view})",
            f"deploy {template.source} again (render and apply it)",
        )
    involved_images = list(dict.fromkeys(image.image for image in involved))
    if failure.kind == "exec-format-error":
        return Diagnosis(
            "image-lies",
            "the pod is kept to platforms its images' registries list (its node is not in the "
            "dump), yet it died with exec format error",
            command(("verify",), involved_images),
        )
    return Diagnosis(
        "undetermined",
        "the pod is kept to platforms its images' registries list, yet no image was found for "
        "its node: the tag may have moved since the pull",
        command(("inspect",), involved_images),
    )


#: Engine statuses of a template whose pods kmultiarch leaves as they are, and why.
_NOT_PLACED: dict[str, tuple[str, str]] = {
    "unknown": (
        "is of a kind kmultiarch does not place",
        "declare where its pods' scheduling fields go in the policy's spec.podSpecs "
        "(docs/operators.md), then run `{fix}`",
    ),
    "chosen-by-operator": (
        "names no image: its operator chooses one",
        "name the image in {file}, or declare the kind's defaultImages in spec.podSpecs, then "
        "run `{fix}`",
    ),
    "excluded": (
        "is out of the policy's scope (spec.exclude, spec.mode: optIn)",
        "bring it into scope and run `{fix}`, or add the constraint by hand",
    ),
    "skipped": (
        "is opted out (kmultiarch.dev/skip)",
        "remove the annotation and run `{fix}`, or add the constraint by hand",
    ),
}


def _not_placed(
    template: TemplateFacts, pod_view: TemplateFacts | None, command: CommandLine
) -> Diagnosis:
    why, step = _NOT_PLACED[template.status]
    view = _view_text(pod_view)
    return Diagnosis(
        "missing-constraint",
        f"{template.resource.display_name} {why}" + (f"; {view}" if view else ""),
        step.format(file=template.source, fix=command(("fix",), (template.source,))),
    )


def _fix_command(template: TemplateFacts | None, command: CommandLine) -> str:
    if template is None or not template.source or template.source.startswith("<"):
        return ""
    return command(("fix",), (template.source,))


def _missing(template: TemplateFacts, owner: str, command: CommandLine) -> Diagnosis:
    fix = _fix_command(template, command)
    return Diagnosis(
        "missing-constraint",
        f"{template.resource.display_name} lacks what mutate would add: "
        + "; ".join(template.changes),
        fix or f"add it to the manifest of {owner} (`kmultiarch mutate` on its render)",
    )


def _without_template(
    pod_view: TemplateFacts | None, manifests_given: bool, owner: str, problem: str
) -> Diagnosis:
    """No template in the manifests: named by its owner, with what the pod's own spec says."""
    detail = problem or _view_text(pod_view)
    if manifests_given:
        return _not_in_manifests(owner, detail)
    if problem:
        return Diagnosis(
            "over-constrained",
            problem,
            f"change the nodeSelector/affinity or tolerations of {owner}'s pod template",
        )
    return Diagnosis(
        "missing-constraint",
        detail or "the pod's template lacks the constraint its images need",
        f"add it to the pod template of {owner} (`kmultiarch fix` on the file that renders it)",
    )


def _scheduling_cause(
    failure: PodFailure,
    images: Sequence[ImageFacts],
    template: TemplateFacts | None,
    pod_view: TemplateFacts | None,
    manifests_given: bool,
    owner: str,
    cluster: frozenset[str],
    command: CommandLine,
) -> Diagnosis | None:
    runs_on = _architectures(images)
    # An arch taint of nodes the images do not run on is not why the pod waits.
    taints = [
        taint
        for taint in failure.untolerated
        if runs_on is None or taint.key != ARCH_LABEL or taint.value in runs_on
    ]
    view = template if template is not None else pod_view
    if taints and view is not None and view.status == "needs-change":
        if template is None:
            return _without_template(pod_view, manifests_given, owner, "")
        return _missing(template, owner, command)
    problem = ""
    if taints:
        taint = taints[0]
        runs_there = runs_on is not None and taint.value in runs_on
        problem = f"the taint {taint.key}={taint.value} is not tolerated" + (
            ", though the images run there" if runs_there else ""
        )
    else:
        problem = (
            _affinity_problem(failure.required_architectures, runs_on, cluster, failure.room) or ""
        )
    if (
        not problem
        and template is not None
        and template.status
        in (
            "no-common-platform",
            "scheduling-conflict",
        )
    ):
        problem = "; ".join(template.problems)
    if not problem:
        return None
    if template is None:
        return _without_template(pod_view, manifests_given, owner, problem)
    where = f"{template.source}:{template.line}" if template.source else owner
    return Diagnosis(
        "over-constrained",
        problem,
        f"change the nodeSelector/affinity or the tolerations in {where}",
    )


def _architectures(images: Sequence[ImageFacts]) -> frozenset[str] | None:
    known = [image.platforms for image in images if image.platforms is not None]
    if not known:
        return None
    return frozenset.intersection(*[frozenset(p.architecture for p in s) for s in known])


def _affinity_problem(
    required: frozenset[str] | None,
    runs_on: frozenset[str] | None,
    cluster: frozenset[str],
    room: frozenset[str] = frozenset(),
) -> str | None:
    if required is None or runs_on is None:
        return None
    wanted = ", ".join(sorted(required))
    if not required & runs_on:
        return (
            f"the pod requires {ARCH_LABEL} in [{wanted}], where its images do not run (they "
            f"run on {', '.join(sorted(runs_on)) or 'no architecture in common'})"
        )
    if cluster and not required & cluster and runs_on & cluster:
        return (
            f"the pod requires {ARCH_LABEL} in [{wanted}] and no node of the cluster has it; "
            f"its images run on {', '.join(sorted(runs_on & cluster))}, which the cluster has"
        )
    if runs_on & room:
        return (
            f"the pod requires {ARCH_LABEL} in [{wanted}], whose nodes did not take it, and "
            f"leaves out the nodes of {', '.join(sorted(runs_on & room))}, where its images run "
            "too and whose taints it tolerates"
        )
    return None


def _view_text(view: TemplateFacts | None) -> str:
    if view is None or view.status != "needs-change":
        return ""
    return "its pods lack what mutate would add: " + "; ".join(view.changes)


def _not_in_manifests(owner: str, detail: str) -> Diagnosis:
    return Diagnosis(
        "not-in-manifests",
        f"{owner} is not in the manifests given" + (f"; {detail}" if detail else ""),
        f"find what renders {owner} and give it to triage, or fix it there",
    )


def _runs_on(platforms: frozenset[Platform], node: Platform) -> bool:
    return any(p.os == node.os and p.architecture == node.architecture for p in platforms)


def _pinned(
    images: Sequence[ImageFacts], node: Platform | None, template: TemplateFacts | None
) -> tuple[str, str] | None:
    """Why the failure comes from a digest pinned to one platform's manifest, and the
    reference to pin instead (empty when not known); None when it does not: the pin is the
    cause only where the node is not of the platform pinned (pinned to linux/amd64 and dead
    on an amd64 node, the pod ran what it was pinned to, though the engine finds the pin)."""
    pins = [i for i in images if i.pinned and i.single_manifest and i.platforms]
    if node is not None and pins and all(_runs_on(i.platforms or frozenset(), node) for i in pins):
        return None
    if template is not None and template.pinned_digest_findings:
        return template.pinned_digest_findings[0], ""
    for image in pins:
        if not image.platforms or (node is not None and _runs_on(image.platforms, node)):
            continue
        only = ", ".join(sorted(str(p) for p in image.platforms))
        on = f", and the pod ran on {node}" if node is not None else ""
        index = ""
        if image.index_reference:
            listed = ", ".join(sorted(str(p) for p in image.index_platforms))
            index = f"; the tag's index lists {listed}"
        return (
            f"{image.image} names the digest of one platform's manifest ({only}), not of an "
            f"index{on}{index}",
            image.index_reference,
        )
    return None
