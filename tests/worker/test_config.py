"""The worker's TOML configuration (issue 14 §7): what a valid file gives, and a clear error
naming the key for everything a bad one gets wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from missionweave.protocol.signing import (
    b64url_encode,
    generate_private_key,
    private_key_seed,
    public_key_text,
)
from missionweave.worker.config import ConfigError, load_config, load_key

VALID = """
agent_id = "w2"
key_file = "w2.key"
authority_url = "http://127.0.0.1:8000/"
state_dir = "state"
python_path = ["."]

[agent_card]
version = "3"
max_concurrency = 2
capabilities = [{ id = "text.summarise", version = "1" }]

[groups.g-research]
weight = 2.5
quota = 1
org_priority_class = "high"

[groups.g-ops]

[handlers]
"text.summarise" = "tests.worker.fake_work:summarise"

[progress]
max_interval_s = 30
min_interval_s = 2

[leases]
ttl_s = 120
offline_grace_s = 300
"""


def _write(tmp_path: Path, text: str, key: bool = True) -> Path:
    if key:
        seed = private_key_seed(generate_private_key())
        (tmp_path / "w2.key").write_text(b64url_encode(seed) + "\n")
    path = tmp_path / "worker.toml"
    path.write_text(text)
    return path


def test_a_valid_config_gives_every_setting_with_paths_beside_the_file(tmp_path: Path) -> None:
    """Relative paths resolve against the config's folder; the stream URL is the
    authority's ws:// twin; each group keeps its weight, quota and class (R0-06, R11.1-07)."""
    config = load_config(_write(tmp_path, VALID))
    assert config.agent_id == "w2"
    assert config.key_file == tmp_path / "w2.key"
    assert config.state_dir == tmp_path / "state"
    assert config.python_path == (tmp_path / ".",)
    assert config.authority_url == "http://127.0.0.1:8000"
    assert config.stream_url == "ws://127.0.0.1:8000"
    assert config.agent_card.version == "3"
    assert config.agent_card.capabilities == frozenset({("text.summarise", "1")})
    research = config.groups["g-research"]
    assert (research.weight, research.quota, research.org_priority_class) == (2.5, 1, "high")
    assert config.groups["g-ops"].weight == 1.0
    assert config.handlers == {"text.summarise": "tests.worker.fake_work:summarise"}
    assert (config.progress.max_interval_s, config.progress.min_interval_s) == (30, 2)
    assert (config.leases.ttl_s, config.leases.offline_grace_s) == (120, 300)
    assert config.private_key() is not None


def test_slots_default_to_the_agent_cards_max_concurrency(tmp_path: Path) -> None:
    """R11.1-11: the Agent Card declares the maximum concurrency; ``slots`` may lower it."""
    assert load_config(_write(tmp_path, VALID)).slots == 2
    assert load_config(_write(tmp_path, "slots = 1\n" + VALID)).slots == 1


def test_an_empty_stream_url_follows_the_groups_by_polling(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, 'stream_url = ""\n' + VALID)).stream_url is None


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (('agent_id = "w2"', ""), "agent_id", "is required"),
        (('agent_id = "w2"', 'agent_id = "w 2"'), "agent_id", "not a valid id"),
        (("weight = 2.5", "wieght = 2.5"), "groups.g-research.wieght", "unknown key"),
        (("weight = 2.5", "weight = 0"), "groups.g-research.weight", "must be a number"),
        (("quota = 1", "quota = -1"), "groups.g-research.quota", "at least 0"),
        (('"high"', '"urgent"'), "groups.g-research.org_priority_class", "one of"),
        (
            ('"tests.worker.fake_work:summarise"', '"tests.worker.fake_work"'),
            "handlers.text.summarise",
            "import path",
        ),
        (("http://127.0.0.1:8000/", "ftp://x"), "authority_url", "a URL"),
        (("max_concurrency = 2", "max_concurrency = 0"), "agent_card.max_concurrency", "at least"),
        (("ttl_s = 120", "ttl_s = 7200"), "leases.ttl_s", "at most 3600"),
        (("offline_grace_s = 300", "offline_grace_s = 901"), "leases.offline_grace_s", "900"),
        (("min_interval_s = 2", "min_interval_s = 40"), "progress.min_interval_s", "exceed"),
        (("[groups.g-ops]", "[groups.g-ops]\nshare = 1"), "groups.g-ops.share", "unknown key"),
    ],
)
def test_a_bad_config_is_refused_naming_the_key(
    tmp_path: Path, change: tuple[str, str], path: str, message: str
) -> None:
    """A typo must not silently change a group's share: every bad key is a ``ConfigError``
    naming its dotted path, before the worker starts."""
    text = VALID.replace(*change, 1)
    with pytest.raises(ConfigError) as refused:
        load_config(_write(tmp_path, text))
    assert refused.value.path == path
    assert message in str(refused.value)


def test_a_config_without_groups_or_handlers_is_refused(tmp_path: Path) -> None:
    groups = VALID[VALID.index("[groups.g-research]") : VALID.index("[handlers]")]
    with pytest.raises(ConfigError, match="groups: is required"):
        load_config(_write(tmp_path, VALID.replace(groups, "")))
    with pytest.raises(ConfigError, match="at least one group"):
        load_config(_write(tmp_path, VALID.replace(groups, "[groups]\n")))
    with pytest.raises(ConfigError, match="handlers: is required"):
        load_config(_write(tmp_path, VALID.split("[handlers]", maxsplit=1)[0]))


def test_a_missing_or_broken_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no config file"):
        load_config(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(_write(tmp_path, "agent_id = "))


def test_the_key_file_holds_a_seed_or_a_pem_key(tmp_path: Path) -> None:
    """The agent's Ed25519 key: the base64url seed, or PEM PKCS#8; anything else refused."""
    key = generate_private_key()
    seed = tmp_path / "seed.key"
    seed.write_text(b64url_encode(private_key_seed(key)))
    pem = tmp_path / "key.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    expected = public_key_text(key.public_key())
    assert public_key_text(load_key(seed).public_key()) == expected
    assert public_key_text(load_key(pem).public_key()) == expected
    garbage = tmp_path / "garbage.key"
    garbage.write_text("not a key")
    with pytest.raises(ConfigError, match="neither"):
        load_key(garbage)
    with pytest.raises(ConfigError, match="cannot read"):
        load_key(tmp_path / "absent.key")
