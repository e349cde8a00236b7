"""``InProcessPersona``: the shared ``Persona`` (``missionweave/demo/personas.py``) acting
inside the server's process.

The demo's seed, the tests and the benchmarks build their worlds without HTTP: they open an
agent's session with the same service ``POST /sessions`` calls (wire.md §5, R11.3-10) and
submit its signed envelopes straight to the write path as the ``Caller`` its bearer token
would authenticate. Everything that makes the agent *that* agent — its key, principal,
session body and envelope — is the shared class's; only these two server-side doors are added
here, on the top layer, where the registry and the work app may both be reached.
"""

from __future__ import annotations

from apps.ledger.write_path import Caller
from apps.registry import services
from apps.work import sessions
from missionweave.demo.personas import Persona


class InProcessPersona(Persona):
    @property
    def caller(self) -> Caller:
        """What ``authenticate_bearer`` returns for this agent's session token."""
        return Caller(principal=self.principal, kind="agent", session_epoch=self.session_epoch)

    def open_session(self) -> None:
        """Open a session through the service (replacing the last one: R11.3-10) and learn
        the membership epochs the envelopes must carry."""
        opened = sessions.session_open(body=self.session_body())
        self.token = opened.token
        self.session_epoch = opened.session.epoch
        self.membership_epochs = {
            group: info["epoch"] for group, info in services.memberships_of(self.principal).items()
        }
