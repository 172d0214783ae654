"""proem-client: `proem serve`'s HTTP API for Python, standard library only.

    from proem_client import Client

    client = Client("http://127.0.0.1:7878")
    text = client.build("marlow", channel="telegram", now="2026-11-21T09:30:00Z")
    report = client.build("marlow", channel="telegram", format="json")
    print(report.stable_hash, report.tokens.total)

`AsyncClient` has the same methods as coroutines. Every failure is a
`ProemError`. `python -m proem_client URL AGENT [proem build flags]`
prints what `proem build` prints.
"""

from ._client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRIES,
    DEFAULT_RETRY_BUDGET,
    DEFAULT_TIMEOUT,
    AsyncClient,
    BuildResult,
    Client,
    __version__,
)
from ._errors import ProemError
from ._http import Response
from ._turn import Turn
from ._types import (
    Agent,
    AgentConfig,
    AgentPlugin,
    AgentSummary,
    Build,
    Diagnostic,
    File,
    Inspection,
    Plugin,
    Section,
    SectionHash,
    Tokens,
)

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RETRIES",
    "DEFAULT_RETRY_BUDGET",
    "DEFAULT_TIMEOUT",
    "Agent",
    "AgentConfig",
    "AgentPlugin",
    "AgentSummary",
    "AsyncClient",
    "Build",
    "BuildResult",
    "Client",
    "Diagnostic",
    "File",
    "Inspection",
    "Plugin",
    "ProemError",
    "Response",
    "Section",
    "SectionHash",
    "Tokens",
    "Turn",
    "__version__",
]
