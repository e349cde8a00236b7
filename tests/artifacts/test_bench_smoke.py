"""Smoke test of the artifact benchmark (``benchmarks/artifacts.py``, report section 9):
tiny sizes against the test server; the figures are taken and the section renders and
replaces itself. No speed is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.artifacts import (
    ARTIFACTS_BEGIN,
    ARTIFACTS_END,
    ArtifactsResult,
    measure_artifacts,
    prepare_source,
    splice_artifacts,
)
from missionweave.protocol.canonical import sha256_digest
from tests.factories import World

from .servers import ArtifactServer


@pytest.mark.e2e
def test_a_tiny_artifact_benchmark_uploads_downloads_and_reports(
    fs_server: ArtifactServer, live_world: World, tmp_path: Path
) -> None:
    """R13.1-05: the benchmark's upload stores (201 then 200) and its verified downloads
    return every byte; section 9 renders with the ratios and replaces an older one."""
    source = tmp_path / "source.bin"
    digest = prepare_source(source, 2 * 1024 * 1024 + 3)
    assert digest == sha256_digest(source.read_bytes())

    result = measure_artifacts(
        fs_server.url, live_world.w1.token, source=source, repeat=2, log=lambda _line: None
    )

    assert result.upload_status == [201, 200]
    assert len(result.sha256sum_s) == len(result.download_s) == 2
    assert min(result.upload_s + result.download_s + result.hashlib_s) > 0
    assert ArtifactsResult.from_dict(result.as_dict()) == result
    document = "# Benchmarks\n\n## 8. Replay\n\nx\n\n## Where the time goes\n\ny\n"
    first = splice_artifacts(document, result, "pytest")
    assert first.index("## 8. Replay") < first.index(ARTIFACTS_BEGIN)
    assert first.index(ARTIFACTS_END) < first.index("## Where the time goes")
    assert "| `PUT /api/v1/artifacts/{digest}` |" in first
    again = splice_artifacts(first, result, "pytest again")
    assert again.count(ARTIFACTS_BEGIN) == 1
    assert "`pytest again`" in again
