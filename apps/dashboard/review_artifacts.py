"""What the decision screens add to ``artifact_facts`` (an artifact by its manifest, the
digest secondary): the names a submission gives its artifacts, and which stored bytes were
since found corrupted (R13.1-05) — a check that passed describes the artifact as it was
when checked, and the review page says so beside it. One query for any number of digests;
no byte is read here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from apps.artifacts.models import Blob


def output_names(outputs: Mapping[str, object]) -> dict[str, str]:
    """A submission's ``outputs`` (name -> digest) turned round: digest -> its names."""
    names: dict[str, list[str]] = {}
    for name, digest in outputs.items():
        names.setdefault(str(digest), []).append(str(name))
    return {digest: ", ".join(shown) for digest, shown in names.items()}


def corrupted_since(digests: Iterable[str]) -> dict[str, datetime]:
    """Each of ``digests`` whose stored bytes a read found not to match, with when."""
    wanted = list(dict.fromkeys(digests))
    if not wanted:
        return {}
    return dict(
        Blob.objects.filter(digest__in=wanted, corrupted_at__isnull=False).values_list(
            "digest", "corrupted_at"
        )
    )
