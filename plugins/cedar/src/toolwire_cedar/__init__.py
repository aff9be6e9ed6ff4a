"""toolwire-cedar: Cedar policies for toolwire. Every tool call is one Cedar authorization
request (principal, action = the tool's mounted name, resource = where it comes from,
context = its validated arguments and metadata); a permitting policy annotated
``@approval("...")`` asks a person; the plugin (entry point ``cedar`` in
``toolwire.policies``) loads ``TOOLWIRE_CEDAR_POLICY`` and fails closed.
"""

from toolwire_cedar._engine import CedarDecision, CedarPolicy, CedarPolicyError, schema_for
from toolwire_cedar._plugin import AUDIT_ENV, POLICY_ENV, SCHEMA_ENV, CedarPlugin

__version__ = "0.1.0"

__all__ = [
    "AUDIT_ENV",
    "POLICY_ENV",
    "SCHEMA_ENV",
    "CedarDecision",
    "CedarPlugin",
    "CedarPolicy",
    "CedarPolicyError",
    "__version__",
    "schema_for",
]
