"""toolwire-policy: an organisation policy for toolwire, from a TOML file.

Allow and deny tools by name and effect, require approval, constrain
arguments, redact, and keep a JSON-lines audit log of every decision. The
plugin (entry point ``policy`` in ``toolwire.policies``) loads the file named
by ``TOOLWIRE_POLICY``; :class:`PolicyPlugin` and :class:`Policy` use one from code.
"""

import typing as _typing

from toolwire.adapters import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
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
    from toolwire_policy._trail import AuditLogTrail

# Lazy: the command module (read by `toolwire --help`) and the plugin module import only
# what they use.
_LAZY = {
    "APPROVAL_REASON": "toolwire_policy._approval",
    "APPROVED": "toolwire_policy._approval",
    "APPROVER": "toolwire_policy._approval",
    "Verdict": "toolwire_policy._approval",
    "approval_key": "toolwire_policy._approval",
    "GENESIS": "toolwire_policy._audit",
    "AuditLog": "toolwire_policy._audit",
    "ChainReport": "toolwire_policy._audit",
    "canonical_json": "toolwire_policy._audit",
    "fingerprint": "toolwire_policy._audit",
    "read_records": "toolwire_policy._audit",
    "verify_log": "toolwire_policy._audit",
    "AuditLogTrail": "toolwire_policy._trail",
    "POLICY_ENV": "toolwire_policy._config",
    "REQUIRED_ENV": "toolwire_policy._config",
    "ApprovalsConfig": "toolwire_policy._config",
    "AuditConfig": "toolwire_policy._config",
    "ConstraintRule": "toolwire_policy._config",
    "PolicyConfig": "toolwire_policy._config",
    "PolicyFileError": "toolwire_policy._config",
    "PrincipalRule": "toolwire_policy._config",
    "QuotaRule": "toolwire_policy._config",
    "RedactRule": "toolwire_policy._config",
    "find_policy_file": "toolwire_policy._config",
    "parse_policy_text": "toolwire_policy._config",
    "policy_paths": "toolwire_policy._config",
    "project_trust": "toolwire_policy._config",
    "read_policy_file": "toolwire_policy._config",
    "trust_policy_file": "toolwire_policy._config",
    "trust_store_path": "toolwire_policy._config",
    "untrust_policy_file": "toolwire_policy._config",
    "Webhook": "toolwire_policy._notify",
    "verify_webhook": "toolwire_policy._notify",
    "PolicyPlugin": "toolwire_policy._plugin",
    "REDACTED": "toolwire_policy._policy",
    "Policy": "toolwire_policy._policy",
    "call_arguments": "toolwire_policy._policy",
}

__getattr__, __dir__ = _lazy_exports("toolwire_policy", _LAZY, globals())

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
    "AuditLogTrail",
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
