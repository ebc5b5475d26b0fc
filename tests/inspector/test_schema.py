"""Schemathesis against the inspector's own OpenAPI document, in process (ASGI).

Every operation is fuzzed, the streaming one included: through the ASGI transport its NDJSON
body is read whole, and its documented media type is checked like any other. Checks: no 5xx,
status codes, content types and bodies as documented.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings

from toolwire.inspector import create_app

from ..inspector_kit import AUTH
from ..inspector_kit import settings as inspector_settings

# The test client reaches the app as port 80: a loopback name without a port names it.
HEADERS = AUTH | {"Host": "localhost"}
schema = schemathesis.openapi.from_asgi(
    "/api/openapi.json", create_app(inspector_settings()), headers=HEADERS
)
# A schema-valid provider name can still be one the server does not offer (the factory decides
# at run time); that is a 422 naming it, so 422 counts as a correct answer to valid data too.
schema.config.checks.positive_data_acceptance.expected_statuses = [
    "2xx", "3xx", "401", "403", "404", "409", "422", "429",
]  # fmt: skip


# A body over the 2 MB cap is refused before it is parsed: 413 (documented on every operation)
# is a correct answer to invalid data as well.
schema.config.checks.negative_data_rejection.expected_statuses = [
    "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429",
]  # fmt: skip


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_honours_its_schema(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
    case.call_and_validate(headers=HEADERS)
