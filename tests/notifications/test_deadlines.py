"""Which start-by deadlines are worth a reminder (issue 36 §1; R11.3-02): those that wait on
people's approval as soon as they are within the lead time, the others only once half their
start window has gone by without a start (seen in the demo: reminders of work that started
seconds later)."""

from __future__ import annotations

from apps.notifications.deadlines import worth_a_reminder
from tests.notifications.test_recipients import item


def test_an_item_waiting_for_approval_is_worth_a_reminder_at_once() -> None:
    waiting = item(approvals=(), start_window_s=600)
    assert worth_a_reminder(waiting, remaining_s=590)


def test_an_item_waiting_for_its_worker_only_after_half_its_window() -> None:
    ungated = item(contract={**item().contract, "risk": {"class": "low"}}, start_window_s=600)
    assert not worth_a_reminder(ungated, remaining_s=590)
    assert not worth_a_reminder(ungated, remaining_s=301)
    assert worth_a_reminder(ungated, remaining_s=300)


def test_without_a_window_of_its_own_the_default_ten_minutes_count() -> None:
    ungated = item(contract={**item().contract, "risk": {"class": "low"}}, start_window_s=None)
    assert not worth_a_reminder(ungated, remaining_s=400)
    assert worth_a_reminder(ungated, remaining_s=299)
