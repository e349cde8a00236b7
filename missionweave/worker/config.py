"""The Worker's TOML configuration (issue 14 §7), read with the standard library's ``tomllib``.

One file says who the worker is and what it may do: its agent id and key file, the authority
it talks to, where its durable state lives, the groups it serves (each with an optional
weight, quota and organisation priority class, R0-06, R11.1-07), its Agent Card (whose
``max_concurrency`` is the default slot count, R11.1-11), the task handlers as import paths,
and the cadences of progress (R11.4-03), lease renewal (R11.3-03) and offline grace
(R11.5-04). Example::

    agent_id = "w2"
    key_file = "w2.key"                 # base64url Ed25519 seed, or a PEM PKCS#8 key
    authority_url = "http://127.0.0.1:8000"
    state_dir = "state"                 # relative paths are relative to this file
    python_path = ["."]                 # optional: where the handlers' modules are
    presence_s = 30                     # optional: Presence at least this often (R11.1-11)
    isolation = "process"               # optional: "thread" (default) or a process per slot
    slot_uid_base = 200000              # optional: as root, slot lane n runs as uid base + n

    [agent_card]
    version = "1"
    max_concurrency = 2
    capabilities = [{ id = "text.summarise", version = "1" }]

    [groups.g-research]
    weight = 2.0
    quota = 1
    org_priority_class = "high"

    [handlers]
    "text.summarise" = "mypackage.tasks:summarise"   # found on sys.path, after python_path

    [resources]                         # optional: named amounts contracts may need
    gpu = 1

Why strict: a typo in a key (``wieght``) would otherwise silently give a group the default
share. Every unknown key, missing field and value of the wrong type is a ``ConfigError``
naming its dotted path, so a bad config fails at start, never halfway through a run. Handler
import paths are checked for shape here and imported by ``handlers.HandlerTable``.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from missionweave.protocol.identifiers import is_id
from missionweave.protocol.offline import MAX_GRACE
from missionweave.protocol.signing import b64url_decode, private_key_from_seed
from missionweave.protocol.work.checks import MAX_LEASE_TTL_S, MIN_LEASE_TTL_S

from .resources import DESCRIPTIVE
from .scheduler import ORG_PRIORITY_CLASSES

#: how a slot's handler runs (``isolation``): a thread of the worker, or a process of its own
ISOLATIONS = ("thread", "process")
DEFAULT_SLOT_UID_BASE = 200000
#: the highest uid a slot may get: far from (uid_t)-1 and 16-bit tools' limits alike
MAX_SLOT_UID = 2**31 - 1
#: ``module.path:function``: what a handler entry must look like
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*\Z")


class ConfigError(ValueError):
    """A configuration the worker refuses to start with; ``path`` is the dotted key."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """One group this worker serves: its share of slot time and the policy's class (R0-06)."""

    weight: float = 1.0
    quota: int | None = None
    org_priority_class: str = "normal"


@dataclass(frozen=True, slots=True)
class AgentCard:
    """What this worker's Agent Card declares (R11.1-11, R13.1-03). The authority keeps the
    registered card but serves it to no agent, so the worker is told it here."""

    version: str
    max_concurrency: int
    capabilities: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True, slots=True)
class ProgressCadence:
    """When to report progress (R11.4-03): at each milestone (a meaningful checkpoint), when
    the estimate moves by more than ``estimate_shift_s`` or ``estimate_shift_fraction`` of the
    time left, or confidence by ``confidence_shift``, at once when blocked — never more often
    than ``min_interval_s`` except when blocked — and at least every ``max_interval_s``."""

    max_interval_s: float = 60.0
    min_interval_s: float = 5.0
    estimate_shift_s: float = 120.0
    estimate_shift_fraction: float = 0.2
    confidence_shift: float = 0.2


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """``ttl_s`` is asked of ``work.start`` and ``lease.renew`` (the authority's default
    without it); a lease is renewed once less than ``renew_fraction`` of its length is left
    (R11.3-03). ``offline_grace_s`` is how long past the lease's expiry reversible work may go
    on without the authority (R11.5-04), at most the protocol's ``MAX_GRACE``."""

    ttl_s: int | None = None
    renew_fraction: float = 0.5
    offline_grace_s: float = 120.0


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """Queue capacity for admission control (R10.3-08)."""

    max_queued: int = 1000
    max_queued_per_group: int | None = None


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """Everything one ``missionweave-worker`` process needs, checked (see the module doc)."""

    agent_id: str
    key_file: Path
    authority_url: str
    state_dir: Path
    agent_card: AgentCard
    groups: Mapping[str, GroupConfig]
    handlers: Mapping[str, str]
    #: the websocket base URL; ``None`` follows the groups by polling the REST log instead
    stream_url: str | None = None
    #: the authority's public key (wire.md §1), pinned; else read once from ``GET /authority``
    authority_key: str | None = None
    slots_override: int | None = None
    progress: ProgressCadence = field(default_factory=ProgressCadence)
    leases: LeasePolicy = field(default_factory=LeasePolicy)
    admission: AdmissionLimits = field(default_factory=AdmissionLimits)
    #: folders put first on ``sys.path`` before the handlers are imported
    python_path: tuple[Path, ...] = ()
    #: how often the control loop looks at queues, leases and progress when nothing wakes it
    tick_s: float = 0.2
    #: how long a shutdown waits for active handlers to reach a checkpoint
    shutdown_timeout_s: float = 30.0
    #: how often each group's signed head is read and held to the one kept (issue 33 §2)
    head_check_s: float = 30.0
    #: Presence (R11.1-11): at least this often, and on a change (``presence``)
    presence_s: float = 30.0
    #: named amounts this worker has (``[resources]``): what contracts' resources draw on
    resources: Mapping[str, float] = field(default_factory=dict)
    #: ``thread`` (slots are threads) or ``process`` (a process per slot: ``isolation``)
    isolation: str = "thread"
    #: as root in process mode, slot ``lane`` runs as uid and gid ``slot_uid_base + lane``
    slot_uid_base: int = DEFAULT_SLOT_UID_BASE

    @property
    def slots(self) -> int:
        """The slot count: the config's, else the Agent Card's ``max_concurrency`` (R11.1-11)."""
        return self.slots_override or self.agent_card.max_concurrency

    def private_key(self) -> Ed25519PrivateKey:
        return load_key(self.key_file)


# --- reading --------------------------------------------------------------------------------


def load_config(path: str | Path) -> WorkerConfig:
    """Read and check the TOML file at ``path``; relative paths inside it are resolved
    against its directory."""
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("", f"no config file at {path}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError("", f"{path} is not valid TOML: {error}") from None
    return parse_config(document, base_dir=path.resolve().parent)


def parse_config(document: Mapping[str, Any], *, base_dir: Path) -> WorkerConfig:
    """A checked ``WorkerConfig`` from a parsed TOML document."""
    top = _Table(document, "")
    agent_id = top.text("agent_id")
    if not is_id(agent_id):
        raise ConfigError("agent_id", "not a valid id (letters, digits, '-', '_', '.')")
    key_file = _path(base_dir, top.text("key_file"))
    authority_url = _url(top.text("authority_url"), "authority_url", ("http://", "https://"))
    state_dir = _path(base_dir, top.text("state_dir"))
    config = WorkerConfig(
        agent_id=agent_id,
        key_file=key_file,
        authority_url=authority_url,
        state_dir=state_dir,
        agent_card=_agent_card(top),
        groups=_groups(top),
        handlers=_handlers(top),
        python_path=tuple(
            _path(base_dir, _string(entry, f"python_path[{index}]"))
            for index, entry in enumerate(top.list("python_path", default=[]))
        ),
        stream_url=_stream_url(top),
        authority_key=top.text("authority_key", required=False),
        slots_override=top.integer("slots", minimum=1, required=False),
        progress=_progress(top),
        leases=_leases(top),
        admission=_admission(top),
        tick_s=top.number("tick_s", default=0.2, low=0.01, high=60.0),
        shutdown_timeout_s=top.number("shutdown_timeout_s", default=30.0, low=0.0, high=3600.0),
        head_check_s=top.number("head_check_s", default=30.0, low=0.1, high=86400.0),
        resources=_resources(top),
        presence_s=top.number("presence_s", default=30.0, low=1.0, high=3600.0),
        isolation=_isolation(top),
        slot_uid_base=top.integer("slot_uid_base", minimum=1000, required=False)
        or DEFAULT_SLOT_UID_BASE,
    )
    top.done()
    if config.slot_uid_base + config.slots - 1 > MAX_SLOT_UID:
        raise ConfigError("slot_uid_base", f"its slots' uids must stay at most {MAX_SLOT_UID}")
    return config


def load_key(path: Path) -> Ed25519PrivateKey:
    """The agent's Ed25519 key: a file holding the base64url seed (as ``MWP_AUTHORITY_KEY``)
    or a PEM PKCS#8 private key."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ConfigError("key_file", f"cannot read {path}: {error.strerror}") from None
    if raw.lstrip().startswith(b"-----BEGIN"):
        try:
            key = load_pem_private_key(raw, password=None)
        except (ValueError, TypeError) as error:
            raise ConfigError("key_file", f"{path} is not a usable PEM key: {error}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ConfigError("key_file", f"{path} is not an Ed25519 key")
        return key
    try:
        seed = b64url_decode(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        seed = b""
    if len(seed) != 32:
        raise ConfigError("key_file", f"{path} holds neither a 32-byte base64url seed nor PEM")
    return private_key_from_seed(seed)


# --- sections -------------------------------------------------------------------------------


def _agent_card(top: _Table) -> AgentCard:
    card = top.table("agent_card")
    version = card.text("version")
    max_concurrency = card.integer("max_concurrency", minimum=1)
    capabilities: set[tuple[str, str]] = set()
    for index, entry in enumerate(card.list("capabilities", default=[])):
        where = f"agent_card.capabilities[{index}]"
        item = _Table(entry, where) if isinstance(entry, dict) else None
        if item is None:
            raise ConfigError(where, "a capability is a table {id, version}")
        capabilities.add((item.text("id"), item.text("version")))
        item.done()
    card.done()
    return AgentCard(version, max_concurrency, frozenset(capabilities))


def _groups(top: _Table) -> dict[str, GroupConfig]:
    groups = top.table("groups")
    found: dict[str, GroupConfig] = {}
    for name in list(groups.keys()):
        if not is_id(name):
            raise ConfigError(f"groups.{name}", "not a valid group id")
        entry = groups.table(name)
        quota = entry.integer("quota", minimum=0, required=False)
        org_class = entry.text("org_priority_class", required=False) or "normal"
        if org_class not in ORG_PRIORITY_CLASSES:
            raise ConfigError(
                f"groups.{name}.org_priority_class", f"one of {', '.join(ORG_PRIORITY_CLASSES)}"
            )
        found[name] = GroupConfig(
            weight=entry.number("weight", default=1.0, low=1e-6, high=1e6),
            quota=quota,
            org_priority_class=org_class,
        )
        entry.done()
    groups.done()
    if not found:
        raise ConfigError("groups", "name at least one group this worker serves")
    return found


def _handlers(top: _Table) -> dict[str, str]:
    handlers = top.table("handlers")
    found: dict[str, str] = {}
    for kind in list(handlers.keys()):
        target = handlers.text(kind)
        if not _IMPORT_PATH.match(target):
            raise ConfigError(f"handlers.{kind}", "an import path 'package.module:function'")
        found[kind] = target
    handlers.done()
    if not found:
        raise ConfigError("handlers", "name at least one task handler")
    return found


def _isolation(top: _Table) -> str:
    value = top.text("isolation", required=False)
    if value is None:
        return "thread"
    if value not in ISOLATIONS:
        raise ConfigError("isolation", f"one of {', '.join(ISOLATIONS)}")
    return value


def _stream_url(top: _Table) -> str | None:
    """``stream_url`` given, ``""`` for REST polling, else the authority's ws:// twin."""
    value = top.text("stream_url", required=False)
    if value == "":
        return None
    if value is not None:
        return _url(value, "stream_url", ("ws://", "wss://"))
    base = top.raw.get("authority_url", "")
    if isinstance(base, str) and base.startswith("http"):
        return "ws" + base[len("http") :].rstrip("/")
    return None


def _progress(top: _Table) -> ProgressCadence:
    section = top.table("progress", required=False)
    defaults = ProgressCadence()
    cadence = ProgressCadence(
        max_interval_s=section.number("max_interval_s", defaults.max_interval_s, 0.01, 86400),
        min_interval_s=section.number("min_interval_s", defaults.min_interval_s, 0.0, 86400),
        estimate_shift_s=section.number("estimate_shift_s", defaults.estimate_shift_s, 0.0, 1e9),
        estimate_shift_fraction=section.number(
            "estimate_shift_fraction", defaults.estimate_shift_fraction, 0.0, 1.0
        ),
        confidence_shift=section.number("confidence_shift", defaults.confidence_shift, 0.0, 1.0),
    )
    section.done()
    if cadence.min_interval_s > cadence.max_interval_s:
        raise ConfigError("progress.min_interval_s", "must not exceed progress.max_interval_s")
    return cadence


def _leases(top: _Table) -> LeasePolicy:
    section = top.table("leases", required=False)
    defaults = LeasePolicy()
    policy = LeasePolicy(
        ttl_s=section.integer(
            "ttl_s", minimum=MIN_LEASE_TTL_S, maximum=MAX_LEASE_TTL_S, required=False
        ),
        renew_fraction=section.number("renew_fraction", defaults.renew_fraction, 0.05, 0.95),
        offline_grace_s=section.number(
            "offline_grace_s", defaults.offline_grace_s, 0.0, MAX_GRACE.total_seconds()
        ),
    )
    section.done()
    return policy


def _resources(top: _Table) -> dict[str, float]:
    """``[resources]``: name = amount, e.g. ``gpu = 1`` (R10.3-08, R11.1-09; ``resources``).
    The contract's descriptive names are not amounts a worker has."""
    section = top.table("resources", required=False)
    found: dict[str, float] = {}
    for name in list(section.keys()):
        if name in DESCRIPTIVE:
            raise ConfigError(f"resources.{name}", "describes an item, not what a worker has")
        found[name] = section.number(name, default=0.0, low=0.0, high=1e12)
    section.done()
    return found


def _admission(top: _Table) -> AdmissionLimits:
    section = top.table("admission", required=False)
    limits = AdmissionLimits(
        max_queued=section.integer("max_queued", minimum=1, required=False) or 1000,
        max_queued_per_group=section.integer("max_queued_per_group", minimum=1, required=False),
    )
    section.done()
    return limits


# --- checked access to one table -----------------------------------------------------------


class _Table:
    """One TOML table, read key by key; ``done`` refuses whatever key was never read."""

    def __init__(self, raw: Mapping[str, Any], path: str) -> None:
        self.raw = raw
        self.path = path
        self._read: set[str] = set()

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def keys(self) -> list[str]:
        return list(self.raw)

    def _get(self, key: str, required: bool) -> Any:
        self._read.add(key)
        if key not in self.raw:
            if required:
                raise ConfigError(self._where(key), "is required")
            return None
        return self.raw[key]

    def text(self, key: str, *, required: bool = True) -> Any:
        value = self._get(key, required)
        if value is not None and not isinstance(value, str):
            raise ConfigError(self._where(key), "must be a string")
        return value

    def integer(
        self, key: str, *, minimum: int, maximum: int | None = None, required: bool = True
    ) -> Any:
        value = self._get(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(self._where(key), f"must be an integer of at least {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(self._where(key), f"must be at most {maximum}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = self._get(key, False)
        if value is None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not low <= value <= high
        ):
            raise ConfigError(self._where(key), f"must be a number from {low:g} to {high:g}")
        return float(value)

    def list(self, key: str, default: list[Any]) -> list[Any]:
        value = self._get(key, False)
        if value is None:
            return default
        if not isinstance(value, list):
            raise ConfigError(self._where(key), "must be a list")
        return value

    def table(self, key: str, *, required: bool = True) -> _Table:
        value = self._get(key, required)
        if value is None:
            return _Table({}, self._where(key))
        if not isinstance(value, dict):
            raise ConfigError(self._where(key), "must be a table")
        return _Table(value, self._where(key))

    def done(self) -> None:
        unknown = sorted(set(self.raw) - self._read)
        if unknown:
            raise ConfigError(self._where(unknown[0]), "unknown key")


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(where, "must be a string")
    return value


def _path(base_dir: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base_dir / path


def _url(value: str, where: str, schemes: tuple[str, ...]) -> str:
    if not value.startswith(schemes) or len(value) <= len(schemes[0]):
        raise ConfigError(where, f"a URL starting with {' or '.join(schemes)}")
    return value.rstrip("/")
