"""MissionWeave: the Group Authority server of the MissionWeave Protocol."""
