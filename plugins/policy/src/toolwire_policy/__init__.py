"""toolwire-policy: an organisation policy for toolwire, from a TOML file.

Allow and deny tools by name and effect, require approval, constrain
arguments, redact, and keep a JSON-lines audit log of every decision. The
plugin (entry point ``policy`` in ``toolwire.policies``) loads the file named
by ``TOOLWIRE_POLICY``; :class:`PolicyPlugin` and :class:`Policy` use one from code.
"""

from toolwire_policy._approval import (
    APPROVAL_REASON,
    APPROVED,
    APPROVER,
    Verdict,
    approval_key,
)
from toolwire_policy._audit import (
    GENESIS,
    AuditLog,
    ChainReport,
    canonical_json,
    fingerprint,
    read_records,
    verify_log,
)
from toolwire_policy._config import (
    POLICY_ENV,
    REQUIRED_ENV,
    ApprovalsConfig,
    AuditConfig,
    ConstraintRule,
    PolicyConfig,
    PolicyFileError,
    PrincipalRule,
    QuotaRule,
    RedactRule,
    find_policy_file,
    parse_policy_text,
    policy_paths,
    project_trust,
    read_policy_file,
    trust_policy_file,
    trust_store_path,
    untrust_policy_file,
)
from toolwire_policy._notify import Webhook, verify_webhook
from toolwire_policy._plugin import PolicyPlugin
from toolwire_policy._policy import REDACTED, Policy, call_arguments

__version__ = "0.1.0"

__all__ = [
    "APPROVAL_REASON",
    "APPROVED",
    "APPROVER",
    "GENESIS",
    "POLICY_ENV",
    "REDACTED",
    "REQUIRED_ENV",
    "ApprovalsConfig",
    "AuditConfig",
    "AuditLog",
    "ChainReport",
    "ConstraintRule",
    "Policy",
    "PolicyConfig",
    "PolicyFileError",
    "PolicyPlugin",
    "PrincipalRule",
    "QuotaRule",
    "RedactRule",
    "Verdict",
    "Webhook",
    "__version__",
    "approval_key",
    "call_arguments",
    "canonical_json",
    "find_policy_file",
    "fingerprint",
    "parse_policy_text",
    "policy_paths",
    "project_trust",
    "read_policy_file",
    "read_records",
    "trust_policy_file",
    "trust_store_path",
    "untrust_policy_file",
    "verify_log",
    "verify_webhook",
]
