"""The WorkItem commands of wire.md §9, one module per stage of a WorkItem's life."""
