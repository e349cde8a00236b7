"""Artifacts (R13.1): what a group's log records about content-addressed bytes stored elsewhere."""
