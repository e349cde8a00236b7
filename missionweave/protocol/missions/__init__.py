"""Missions: the aggregate (``model``), their own life (``lifecycle``), child missions linked
across groups (``children``), and how events change them (``evolvers``)."""
