"""WorkItems: the aggregate (``items``), proposals (``proposals``), the dependency graph
(``dependencies``), how events change a WorkItem (``item_evolvers``), and the commands of
wire.md §9, one module per stage of a WorkItem's life (``planning``, ``offers``,
``execution``, ``leases``, ``review``; shared checks in ``checks``)."""
