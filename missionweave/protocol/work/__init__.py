"""WorkItems: the aggregate (``items``), proposals (``proposals``), the dependency graph
(``dependencies``) with the items told when a dependency ends (``dependents``) and
replacements (``replacements``), how events change a WorkItem (``item_evolvers``), and the
commands of
wire.md §9, one module per stage of a WorkItem's life (``planning``, ``offers``,
``execution``, ``leases``, ``review``; shared checks in ``checks``)."""
