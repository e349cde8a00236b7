"""Missions: the aggregate (``model``), their own life (``lifecycle``), child missions linked
across groups (``children``), what ending a WorkItem cleans up — its child mission, the items
waiting on it (``cleanup``) — and how events change them (``evolvers``)."""
