"""``selectors.spliced``: a page's stored documents spliced between a frame's or a body's
prefix and suffix (wire.md §4 ``GET …/events``, §7 ``EVENTS``) — the same text as joining
them with commas inside the two, for any documents. Pure: no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apps.ledger.selectors import spliced


@given(st.text(), st.lists(st.text()), st.text())
def test_spliced_is_the_documents_joined_inside_prefix_and_suffix(
    prefix: str, documents: list[str], suffix: str
) -> None:
    before = list(documents)
    assert spliced(prefix, documents, suffix) == prefix + ",".join(documents) + suffix
    assert documents == before  # the caller's page is left as it was
