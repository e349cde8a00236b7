"""The simulated organisation of ``make demo``: its two groups, its agents and its people.

Both sides read it: the server's ``manage.py demo`` registers these agents, groups and
memberships (``apps/demo/cast.py``) and starts one process per agent; the agent processes
(``python -m missionweave.demo``, ``missionweave-worker``) act as them. Pure data.

- **g-demo**, the main group: the missions people own, approve and review.
- **g-demo-lab**, the research lab: where the coordinator delegates the gathering of a
  mission's sources as a child mission (a mission DAG across two groups, R10.2-15..18).

Three workers with different slot counts (R11.1-11): worker 1 serves the main group only,
worker 3 the lab only, worker 2 both — so its scheduler shares its slots between two groups
(R0-03..07), and its schedule disclosures show on both groups' pages.
"""

from __future__ import annotations

from dataclasses import dataclass

ORGANIZATION = "org-demo"
GROUP = "g-demo"
LAB = "g-demo-lab"
GROUPS = {GROUP: "Demo group", LAB: "Research lab"}

#: every demo contract requires this capability: the task kind the workers' handlers serve
TASK_KIND = "text.summarise"


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the organisation: its id, capabilities, slots and roles per group."""

    id: str
    capabilities: tuple[str, ...]
    roles: dict[str, tuple[str, ...]]
    max_concurrency: int = 1

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(self.roles)


COORDINATOR = AgentSpec(
    "demo-coordinator",
    ("mission.plan",),
    {GROUP: ("coordinator",), LAB: ("coordinator",)},
    max_concurrency=2,
)
WORKERS = (
    AgentSpec("demo-worker-1", (TASK_KIND,), {GROUP: ("worker",)}, max_concurrency=1),
    AgentSpec("demo-worker-2", (TASK_KIND,), {GROUP: ("worker",), LAB: ("worker",)}, 2),
    AgentSpec("demo-worker-3", (TASK_KIND,), {LAB: ("worker",)}, max_concurrency=3),
)
#: each group's reviewer agent: the default reviewer the authority asks (R13.2-03 step 3)
REVIEWER = AgentSpec(
    "demo-reviewer", ("text.review",), {GROUP: ("reviewer",), LAB: ("reviewer",)}, 2
)
AGENTS = (COORDINATOR, *WORKERS, REVIEWER)


def workers_of(group: str) -> tuple[AgentSpec, ...]:
    return tuple(worker for worker in WORKERS if group in worker.roles)
