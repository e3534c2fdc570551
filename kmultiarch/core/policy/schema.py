"""The MultiArchPolicy schema: one declaration per key of ``spec``, and the reader it drives.

Like pre-commit's ``cfgv`` (``Optional('files', check_string_regex, '')``), each key of
:data:`SPEC` says in one place what it is: its name, the section of the policy and the field it
fills, the function that reads and validates its value, its default as a policy would write it,
its documentation (docs/policy.md's table is checked against it) and how a KRM ConfigMap's
string data gives it.
:func:`policy_from_spec` is driven by the table alone: a key the table does not declare is
refused with the list of those it does, and each key is read by its entry, in the table's
order, with the policy read so far (``tolerations`` and ``preferences`` name platforms of
``platforms``, read before them).

Every problem is a :class:`~kmultiarch.errors.PolicyError` naming the file and the key path, as
fields. Pure but for the paths in a policy (``lock``, ``cache.ca``, ``registries.*.ca``), which
are resolved against the policy file's directory, and a CA bundle, which must exist.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import canonical_registry, normalised_glob
from kmultiarch.core.lock import ImageLock, LockFileError, lock_from_object
from kmultiarch.core.policy.model import (
    API_VERSION,
    DEFAULT_STALE_IF_ERROR,
    FAILURE_POLICIES,
    KIND,
    MODES,
    NODE_AFFINITY_MODES,
    TAINT_EFFECTS,
    TOLERATION_OPERATORS,
    VERIFY_MODES,
    CacheSettings,
    Conditions,
    Exclusions,
    Injection,
    Override,
    Policy,
    RegistrySettings,
    Toleration,
    VerifyMode,
    VerifySettings,
)
from kmultiarch.core.policy.nodelabels import NodeLabelRule, read_node_labels
from kmultiarch.core.policy.podspecs import _flag, _image_list, _listed, _pod_specs
from kmultiarch.core.policy.reading import Where, check_keys
from kmultiarch.core.policy.scope import parse_label_selector
from kmultiarch.errors import InvalidPlatformError, PolicyError

#: How a KRM ConfigMap's data (strings only) gives a key: ``list``, comma-separated
#: (``linux/amd64,linux/arm64``); ``string``, as it is (trimmed); ``yaml``, a YAML or JSON
#: string holding the value.
ConfigMapForm = Literal["list", "string", "yaml"]

#: The sections of a Policy, each taken by the layer it configures.
Section = Literal["scheduling", "scope", "resolution"]

#: Reads a key's value, as written at ``where``, given the policy read so far (the keys before
#: it in :data:`SPEC`; defaults for the others): the value of the field(s) it fills.
Reader = Callable[[object, Where, Policy], Any]


@dataclass(frozen=True)
class SpecKey:
    """One key of a MultiArchPolicy's ``spec``."""

    name: str
    #: The section of the Policy it belongs to; None: the policy's own (failurePolicy).
    section: Section | None
    #: The fields of that section the key fills: one, or several that ``read`` gives as a
    #: tuple (``platforms`` gives the platforms and the node selectors that tell them apart).
    fields: tuple[str, ...]
    read: Reader
    #: The default as a policy would write it; None: the key's absence, which means none.
    default: object
    #: What the key says, in Markdown: docs/policy.md's table shows it.
    doc: str
    #: How a KRM ConfigMap's string data gives it (None: only a MultiArchPolicy can).
    configmap: ConfigMapForm | None = None
    #: Keys whose values ``read`` uses: they come before it in :data:`SPEC`.
    needs: tuple[str, ...] = ()


def policy_from_object(document: object, source: str, *, base_dir: Path | None = None) -> Policy:
    """Validate a MultiArchPolicy object (already parsed) and build the Policy. Relative paths
    in it are relative to ``base_dir``, else to the directory of the file ``source`` names."""
    where = Where(source, (), base_dir)
    if not isinstance(document, Mapping):
        raise where.error("expected a MultiArchPolicy object (a YAML mapping)")
    check_keys(document, {"apiVersion", "kind", "metadata", "spec"}, where)
    if document.get("apiVersion") != API_VERSION or document.get("kind") != KIND:
        raise where.error(
            f"expected apiVersion: {API_VERSION} and kind: {KIND}, got "
            f"apiVersion: {document.get('apiVersion')!r}, kind: {document.get('kind')!r}"
        )
    spec = document.get("spec", {})
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise (where / "spec").error("expected a mapping")
    return policy_from_spec(spec, source, base_dir=base_dir)


def policy_from_spec(
    spec: Mapping[str, object], source: str, *, base_dir: Path | None = None
) -> Policy:
    """The Policy a ``spec`` mapping says: each key of :data:`SPEC` it gives, read in the
    table's order; the defaults for the others."""
    root = Where(source, ("spec",), base_dir)
    check_keys(spec, SPEC_KEYS, root)
    _refuse_non_finite(spec, root)
    policy = Policy(source=source)
    for key in SPEC:
        if key.name not in spec:
            continue
        value = key.read(spec[key.name], root / key.name, policy)
        values = value if len(key.fields) > 1 else (value,)
        changes = dict(zip(key.fields, values, strict=True))
        if key.section is None:
            policy = replace(policy, **changes)
        else:
            section = replace(getattr(policy, key.section), **changes)
            policy = replace(policy, **{key.section: section})
    return policy


def _refuse_non_finite(spec: Mapping[str, object], root: Where) -> None:
    """No number of a policy may be infinite or not a number (YAML's ``.inf``, ``.nan``): no
    key means one (a byte budget, a deadline, seconds), and each reader's ``> 0`` lets them
    through. Walked with a stack, naming the key."""
    pending: list[tuple[object, Where]] = [(spec, root)]
    while pending:
        value, where = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise where.error(f"expected a finite number, got {value!r}")
        if isinstance(value, Mapping):
            pending.extend((item, where / str(key)) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((item, where / position) for position, item in enumerate(value))


def _choice(allowed: tuple[str, ...]) -> Reader:
    """A key whose value is one of ``allowed``."""

    def read(value: object, where: Where, _read: Policy) -> str:
        if value not in allowed:
            raise where.error(f"expected one of {', '.join(allowed)}, got {value!r}")
        return str(value)

    return read


def _annotate(value: object, where: Where, _read: Policy) -> bool:
    return _flag(value, where)


def _node_labels(value: object, where: Where, _read: Policy) -> tuple[NodeLabelRule, ...]:
    return read_node_labels(value, where)


def _repin_digests(value: object, where: Where, _read: Policy) -> bool:
    return _flag(value, where)


def _fallback_platforms(value: object, where: Where, _read: Policy) -> tuple[Platform, ...]:
    return tuple(dict.fromkeys(_platform_list(value or [], where)))


def _lock(value: object, where: Where, _read: Policy) -> tuple[Path | None, ImageLock | None]:
    """``spec.lock``: a lock file's path, or the lock file's content written out."""
    if isinstance(value, Mapping):
        try:
            # The lock's own messages name where it is written out: policy.yaml: spec.lock: ...
            return None, lock_from_object(value, str(where))
        except LockFileError as exc:
            raise PolicyError(str(exc)) from exc
    if value is not None and not isinstance(value, str):
        raise where.error(
            "expected a file path string, or a lock file's content "
            "(apiVersion, kind: ImageLock, images)"
        )
    return (where.file(value) if value else None), None


def _cache(value: object, where: Where, _read: Policy) -> CacheSettings:
    """``spec.cache``: a shared cache level's URL, CA, key file or key, and run budget."""
    cache = value or {}
    if not isinstance(cache, Mapping):
        raise where.error("expected a mapping with url (and ca, keyFile or key)")
    check_keys(cache, {"url", "ca", "keyFile", "key", "budget"}, where)
    url, ca = cache.get("url"), cache.get("ca")
    key_file, key = cache.get("keyFile"), cache.get("key")
    if key_file is not None and (not isinstance(key_file, str) or not key_file):
        raise (where / "keyFile").error("expected the path of a file")
    if key is not None and (not isinstance(key, str) or len(key.strip()) < 16):
        # The message never quotes the value: it is a secret.
        raise (where / "key").error(
            "expected a string of at least 16 characters "
            "(better: keyFile, a file kept out of the repository)"
        )
    if key_file is not None and key is not None:
        raise where.error("give keyFile or key, not both")
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://"))
    ):
        raise (where / "url").error("expected a redis://, rediss:// or unix:// URL")
    if ca is not None and not isinstance(ca, str):
        raise (where / "ca").error("expected a path to a PEM CA bundle")
    budget = cache.get("budget")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int | float) or budget <= 0
    ):
        raise (where / "budget").error("expected seconds (a number > 0)")
    return CacheSettings(
        url,
        where.file(ca) if ca else None,
        where.file(key_file) if key_file else None,
        key,
        float(budget) if budget is not None else None,
    )


def _stale_if_error(value: object, where: Where, _read: Policy) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise where.error("expected seconds (a number >= 0; 0 disables)")
    return float(value)


def _injections(value: object, where: Where, _read: Policy) -> tuple[Injection, ...]:
    injections = []
    for position, item in enumerate(_listed(value, where)):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with name, images, when")
        check_keys(item, {"name", "images", "when", "unless"}, here)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise (here / "name").error("expected a non-empty string")
        images = _image_list(item.get("images"), here / "images")
        if not images:
            raise (here / "images").error("list the images it injects")
        injections.append(
            Injection(
                name,
                images,
                _conditions(item.get("when"), here / "when"),
                _conditions(item.get("unless"), here / "unless"),
            )
        )
    return tuple(injections)


def _conditions(value: object, where: Where) -> Conditions:
    if value is None:
        return Conditions()
    if not isinstance(value, Mapping):
        raise where.error("expected namespaceLabels, podLabels and/or podAnnotations")
    check_keys(value, {"namespaceLabels", "podLabels", "podAnnotations"}, where)
    maps = [
        _string_map(value.get(key), where / key)
        for key in ("namespaceLabels", "podLabels", "podAnnotations")
    ]
    return Conditions(*maps)


def _string_map(value: object, where: Where) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        raise where.error('expected a mapping of strings (quote values like "true")')
    return dict(value)


def _namespace_labels(value: object, where: Where, _read: Policy) -> dict[str, Mapping[str, str]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping of namespace -> labels")
    return {str(name): _string_map(labels, where / str(name)) for name, labels in value.items()}


def _verify(value: object, where: Where, _read: Policy) -> VerifySettings:
    if value is None:
        return VerifySettings()
    if not isinstance(value, Mapping):
        raise where.error(
            "expected a mapping like {mode: warn} (mode: off, warn "
            "or enforce; maxBytes, maxExpandedBytes, deadline)"
        )
    check_keys(value, {"mode", "maxBytes", "maxExpandedBytes", "deadline"}, where)
    defaults = VerifySettings()
    mode = value.get("mode", defaults.mode)
    if mode is False:
        mode = "off"  # YAML 1.1, as the policy is read, takes an unquoted off for false
    if mode not in VERIFY_MODES:
        raise (where / "mode").error(f"expected one of {', '.join(VERIFY_MODES)}, got {mode!r}")
    numbers: dict[str, float] = {}
    for key, default in (
        ("maxBytes", defaults.max_bytes),
        ("maxExpandedBytes", defaults.max_expanded_bytes),
        ("deadline", defaults.deadline),
    ):
        number = value.get(key, default)
        if (
            isinstance(number, bool)
            or not isinstance(number, int | float)
            or not math.isfinite(number)
            or number <= 0
        ):
            raise (where / key).error(f"expected a number above 0, got {number!r}")
        numbers[key] = number
    return VerifySettings(
        cast(VerifyMode, mode),
        int(numbers["maxBytes"]),
        int(numbers["maxExpandedBytes"]),
        float(numbers["deadline"]),
    )


def _platform_list(value: object, where: Where) -> list[Platform]:
    if isinstance(value, str):
        value = [item for item in (part.strip() for part in value.split(",")) if item]
    if not isinstance(value, list):
        raise where.error("expected a list of platforms like linux/arm64")
    platforms = []
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise (where / position).error("expected a platform string")
        try:
            platforms.append(Platform.parse(item))
        except InvalidPlatformError as exc:
            raise (where / position).error(str(exc)) from exc
    return platforms


def _cluster_platforms(
    value: object, where: Where, _read: Policy
) -> tuple[tuple[Platform, ...], dict[Platform, dict[str, str]]]:
    """``spec.platforms``: platform strings, or ``{platform, nodeSelector}`` mappings naming the
    node labels that tell a platform's nodes apart (arm variants share kubernetes.io/arch)."""
    platforms: list[Platform] = []
    selectors: dict[Platform, dict[str, str]] = {}
    if not isinstance(value, list):
        platforms = _platform_list(value, where)
    for position, item in enumerate(value if isinstance(value, list) else ()):
        here = where / position
        if not isinstance(item, Mapping):
            platforms.append(_one_platform(item, here))
            continue
        check_keys(item, {"platform", "nodeSelector"}, here)
        platform = _one_platform(item.get("platform"), here / "platform")
        selector = item.get("nodeSelector") or {}
        if not isinstance(selector, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k for k, v in selector.items()
        ):
            raise (here / "nodeSelector").error(
                'expected a mapping of node label to value, like {example.com/arm-variant: "v7"}'
            )
        platforms.append(platform)
        if selector:
            selectors[platform] = dict(selector)
    if not platforms:
        raise where.error("list at least one node platform")
    return tuple(dict.fromkeys(platforms)), selectors


def _one_platform(value: object, where: Where) -> Platform:
    if not isinstance(value, str):
        raise where.error("expected a platform string, or {platform, nodeSelector}")
    try:
        return Platform.parse(value)
    except InvalidPlatformError as exc:
        raise where.error(str(exc)) from exc


def _platform_key(
    text: object, where: Where, platforms: tuple[Platform, ...], unlisted: str = ""
) -> Platform:
    """A platform as a mapping's key (tolerations, preferences): one of ``spec.platforms``
    (``unlisted``: what the message adds when it is not)."""
    try:
        platform = Platform.parse(str(text))
    except InvalidPlatformError as exc:
        raise where.error(str(exc)) from exc
    if platform not in platforms:
        raise where.error(f"{platform} is not in spec.platforms{unlisted}")
    return platform


def _tolerations(
    value: object, where: Where, read: Policy
) -> dict[Platform, tuple[Toleration, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping from platform to a list of tolerations")
    result: dict[Platform, tuple[Toleration, ...]] = {}
    for platform_text, items in value.items():
        here = where / str(platform_text)
        platform = _platform_key(
            platform_text,
            here,
            read.scheduling.platforms,
            "; list it there or remove these tolerations",
        )
        entries = [] if items is None else items
        if not isinstance(entries, list):
            raise here.error("expected a list of tolerations")
        result[platform] = tuple(
            _toleration(item, here / position) for position, item in enumerate(entries)
        )
    return result


def _toleration(value: object, where: Where) -> Toleration:
    if not isinstance(value, Mapping):
        raise where.error("expected a toleration mapping")
    check_keys(value, {"key", "operator", "value", "effect", "tolerationSeconds"}, where)
    for key in ("key", "operator", "value", "effect"):
        if key in value and not isinstance(value[key], str):
            raise (where / key).error("expected a string")
    operator = str(value.get("operator", "Equal"))
    if operator not in TOLERATION_OPERATORS:
        raise (where / "operator").error(f"expected Equal or Exists, got {operator!r}")
    effect = str(value.get("effect", ""))
    if effect and effect not in TAINT_EFFECTS:
        raise (where / "effect").error(
            f"expected one of {', '.join(TAINT_EFFECTS)}, got {effect!r}"
        )
    key, toleration_value = str(value.get("key", "")), str(value.get("value", ""))
    if operator == "Exists" and toleration_value:
        raise (where / "value").error("must be empty when operator is Exists")
    if not key and operator != "Exists":
        raise (where / "key").error("an empty key needs operator Exists")
    seconds = value.get("tolerationSeconds")
    if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
        raise (where / "tolerationSeconds").error("expected an integer")
    if seconds is not None and effect != "NoExecute":
        raise (where / "tolerationSeconds").error("only valid with effect NoExecute")
    return Toleration(key, operator, toleration_value, effect, seconds)


def _overrides(value: object, where: Where, _read: Policy) -> tuple[Override, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error("expected a list of {image, platforms}")
    overrides = []
    for position, item in enumerate(value):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with image and platforms")
        check_keys(item, {"image", "platforms"}, here)
        image = item.get("image")
        if not isinstance(image, str) or not image:
            raise (here / "image").error("expected a glob string")
        platforms = _platform_list(item.get("platforms"), here / "platforms")
        # Matched against normalised references, so normalised as they are (issue 36):
        # {image: acme/app:1.0} and nginx:* as users write them, not only docker.io/...
        overrides.append(Override(normalised_glob(image), frozenset(platforms), written=image))
    return tuple(overrides)


def _preferences(value: object, where: Where, read: Policy) -> dict[Platform, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping from platform to weight, like {linux/arm64: 80}")
    preferences: dict[Platform, int] = {}
    for platform_text, weight in value.items():
        here = where / str(platform_text)
        platform = _platform_key(platform_text, here, read.scheduling.platforms)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise here.error(
                f"expected a weight from 1 to 100 (the scheduler's range), got {weight!r}"
            )
        preferences[platform] = weight
    return preferences


def _exclusions(value: object, where: Where, _read: Policy) -> Exclusions:
    if value is None:
        return Exclusions()
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping with namespaces and kinds")
    check_keys(value, {"namespaces", "kinds", "namespaceSelector"}, where)
    lists = {}
    for key in ("namespaces", "kinds"):
        items = value.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise (where / key).error("expected a list of strings")
        lists[key] = frozenset(items)
    selector = value.get("namespaceSelector")
    return Exclusions(
        lists["namespaces"],
        lists["kinds"],
        parse_label_selector(selector, where / "namespaceSelector")
        if selector is not None
        else None,
    )


def _registries(value: object, where: Where, _read: Policy) -> dict[str, RegistrySettings]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping from registry host")
    registries = {}
    for host, settings in value.items():
        here = where / str(host)
        if not isinstance(host, str) or not host or "/" in host:
            raise here.error("expected a registry host like registry.internal:5000")
        entry = {} if settings is None else settings
        if not isinstance(entry, Mapping):
            raise here.error("expected a mapping")
        check_keys(entry, {"mirror", "insecure", "ca"}, here)
        mirror = entry.get("mirror")
        if mirror is not None:
            try:
                parts = urlsplit(mirror) if isinstance(mirror, str) else None
            except ValueError:  # e.g. an unclosed IPv6 bracket
                parts = None
            if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                raise (here / "mirror").error(
                    "expected an http(s) URL like https://mirror.internal"
                )
        insecure = entry.get("insecure")
        if insecure is not None and not isinstance(insecure, bool):
            raise (here / "insecure").error("expected true or false")
        ca = entry.get("ca")
        if ca is not None and not isinstance(ca, str):
            raise (here / "ca").error("expected a path to a PEM CA bundle")
        ca_path = here.file(ca) if ca else None
        if ca_path is not None and not ca_path.is_file():
            raise (here / "ca").error(f"CA bundle {ca_path} not found")
        registries[canonical_registry(host)] = RegistrySettings(
            mirror.rstrip("/") if isinstance(mirror, str) else None, insecure, ca_path
        )
    return registries


#: The keys of ``spec``, in the order they are read (and docs/policy.md lists them).
SPEC: tuple[SpecKey, ...] = (
    SpecKey(
        "platforms",
        "scheduling",
        ("platforms", "node_selectors"),
        _cluster_platforms,
        default=["linux/amd64", "linux/arm64"],
        configmap="list",
        doc="the node platforms the cluster has (`os/arch[/variant]`); an entry may be "
        "`{platform, nodeSelector}`, the node labels that tell that platform's nodes apart "
        "([scheduling.md](scheduling.md))",
    ),
    SpecKey(
        "tolerations",
        "scheduling",
        ("tolerations",),
        _tolerations,
        default={
            "linux/arm64": [
                {
                    "key": "kubernetes.io/arch",
                    "operator": "Equal",
                    "value": "arm64",
                    "effect": "NoSchedule",
                }
            ]
        },
        configmap="yaml",
        needs=("platforms",),
        doc="per platform of `platforms`, the tolerations a pod gets when all its images run "
        "there (`operator` Equal or Exists, `effect` NoSchedule, PreferNoSchedule or "
        "NoExecute, `tolerationSeconds` only with NoExecute)",
    ),
    SpecKey(
        "nodeAffinity",
        "scheduling",
        ("node_affinity",),
        _choice(NODE_AFFINITY_MODES),
        default="required",
        configmap="string",
        doc="`required` (a required node affinity term), `preferred` (a preferred term) or `none`",
    ),
    SpecKey(
        "failurePolicy",
        None,
        ("failure_policy",),
        _choice(FAILURE_POLICIES),
        default="Ignore",
        configmap="string",
        doc="`Ignore`: fail open, a warning for each image that cannot be resolved; `Fail`: "
        "such an image fails the run (exit 1)",
    ),
    SpecKey(
        "overrides",
        "resolution",
        ("overrides",),
        _overrides,
        default=None,
        configmap="yaml",
        doc="`[{image: GLOB, platforms: [...]}]`: platforms declared instead of looked up, the "
        "glob normalised as references are (`nginx:*` is `docker.io/library/nginx:*`) and "
        "matched against the normalised reference (`docker.io/library/nginx:1.27`); one that "
        "matches no image of the run is a warning "
        "([below](#specoverrides-globs-as-image-names-are-written))",
    ),
    SpecKey(
        "exclude",
        "scope",
        ("exclude",),
        _exclusions,
        default=None,
        doc="`namespaces` (names or globs), `kinds`, `namespaceSelector` (on the stream's "
        "Namespace documents): pods left alone",
    ),
    SpecKey(
        "mode",
        "scope",
        ("mode",),
        _choice(MODES),
        default="optOut",
        configmap="string",
        doc='`optIn`: only pods annotated `kmultiarch.dev/enabled: "true"`',
    ),
    SpecKey(
        "preferences",
        "scheduling",
        ("preferences",),
        _preferences,
        default=None,
        configmap="yaml",
        needs=("platforms",),
        doc="`{PLATFORM: WEIGHT}` (1-100): a preferred term toward a platform for pods that "
        "run on several",
    ),
    SpecKey(
        "fallbackPlatforms",
        "resolution",
        ("fallback_platforms",),
        _fallback_platforms,
        default=None,
        configmap="list",
        doc="where an image that cannot be resolved is taken to run, with a warning",
    ),
    SpecKey(
        "repinDigests",
        "resolution",
        ("repin_digests",),
        _repin_digests,
        default=False,
        configmap="yaml",
        doc="`true`: `mutate` and the KRM function write an image pinned to one platform's "
        "manifest of its tag's index (`NAME:TAG@DIGEST`, `platform-pinned-digest`) with the "
        "index digest, and decide the pod on the index, as `fix --repin` does "
        "([fix.md](fix.md#--repin-digests-pinned-to-one-platforms-manifest)); only the image "
        "fields of the pods in scope are rewritten: other text writing the same reference (a "
        "ConfigMap's `data`, a skipped or excluded workload, a Tekton parameter) is left as it "
        "is, with an `info` finding naming its lines",
    ),
    SpecKey(
        "annotate",
        "scheduling",
        ("annotate",),
        _annotate,
        default=False,
        configmap="yaml",
        doc="changed pod templates get `kmultiarch.dev/platforms`",
    ),
    SpecKey(
        "nodeLabels",
        "scheduling",
        ("node_labels",),
        _node_labels,
        default=None,
        configmap="yaml",
        doc="`[{key, values: [GLOB], platforms: [...]}]` (or `architectures: [...]`): node "
        "labels whose values fix the nodes' platform, before the built-in table "
        "(instance types, Karpenter, GKE; [scheduling.md](scheduling.md#node-labels-that-fix-"
        "the-architecture)); the first entry matching a value wins, `platforms: []` makes it "
        "say nothing",
    ),
    SpecKey(
        "podSpecs",
        "scope",
        ("pod_specs",),
        _pod_specs,
        default=None,
        configmap="yaml",
        doc="per kind: `path` (a pod spec, `*` for every item), or `placements` (objects "
        "holding `affinity`/`tolerations`/`nodeSelector`, with the pointers of their images), "
        "`operatorImages`, `defaultImages`, `imageParameters` (`tekton`: a run's parameters "
        "filled into its images): kinds the built-in tables lack, or more for a kind they know "
        "([operators.md](operators.md))",
    ),
    SpecKey(
        "injections",
        "scope",
        ("injections",),
        _injections,
        default=None,
        configmap="yaml",
        doc="`[{name, images, when, unless}]`: sidecars admission webhooks inject (Istio, "
        "Linkerd, OpenTelemetry, Vault), judged with the pods they match; `when`/`unless` "
        "hold `namespaceLabels`, `podLabels`, `podAnnotations` "
        "([operators.md](operators.md#injected-sidecars))",
    ),
    SpecKey(
        "namespaceLabels",
        "scope",
        ("namespace_labels",),
        _namespace_labels,
        default=None,
        configmap="yaml",
        doc="`{NAMESPACE: {KEY: VALUE}}`: the labels of namespaces the stream does not carry, "
        "for `injections` (a Namespace document of the stream wins)",
    ),
    SpecKey(
        "lock",
        "resolution",
        ("lock", "embedded_lock"),
        _lock,
        default=None,
        configmap="string",
        doc="a lock file (`kmultiarch lock`) used by every command, or the lock file's content "
        "written out under the key (`{apiVersion, kind: ImageLock, images}`: for a Kptfile "
        "pipeline, whose functions see no files) ([lock.md](lock.md))",
    ),
    SpecKey(
        "registries",
        "resolution",
        ("registries",),
        _registries,
        default=None,
        configmap="yaml",
        doc="per registry host: `mirror` (URL), `insecure` (plain HTTP), `ca` (a PEM CA "
        "bundle) ([registries.md](registries.md))",
    ),
    SpecKey(
        "staleIfError",
        "resolution",
        ("stale_if_error",),
        _stale_if_error,
        default=int(DEFAULT_STALE_IF_ERROR),
        doc="seconds past its TTL a cached tag answer may serve when revalidating it fails; "
        "`0` disables ([registries.md](registries.md))",
    ),
    SpecKey(
        "verify",
        "resolution",
        ("verify",),
        _verify,
        default={"mode": "off"},
        doc="whether the program each image starts is checked against the platforms its "
        "registry claims: `mode` `off`, `warn` (a `platform-mismatch` warning) or `enforce` "
        "(the lying platform is dropped before the decision; an error under `failurePolicy: "
        "Fail`), and per platform manifest `maxBytes` (default 67108864), `maxExpandedBytes` "
        "(1073741824) and `deadline` (30 seconds); `--verify MODE` wins over `mode` "
        "([verify.md](verify.md#in-the-pipeline-specverify-and---verify))",
    ),
    SpecKey(
        "cache",
        "resolution",
        ("cache",),
        _cache,
        default=None,
        doc="a shared cache level: `url` (`redis://`, `rediss://`, `unix://`), `ca` (a PEM CA "
        "bundle for `rediss://`), and what signs its entries: `keyFile` (a file holding the "
        "key, relative to the policy) or `key` (the key itself, at least 16 characters: it "
        "puts the secret in the policy, so only for a policy kept secret); `--cache-url`, "
        "`--cache-key-file` and `$KMULTIARCH_CACHE_KEY` win, and the policy's key goes with "
        "the policy's URL only; `budget`: seconds a run may spend waiting for the level, all "
        "operations together (default 2), after which it goes on without it, with one warning "
        "([cache.md](cache.md))",
    ),
)

#: The names :data:`SPEC` declares: any other key of ``spec`` is refused.
SPEC_KEYS = frozenset(key.name for key in SPEC)
