"""toolwire-http: fetch URLs from tools, safely.

``fetch_url`` (GET/HEAD, read-only) and ``http_request`` (other methods, mutating, off
by default), under an allow-list from ``TOOLWIRE_HTTP_ALLOW`` or the TOML file named by
``TOOLWIRE_HTTP_CONFIG``. Private, loopback, link-local and cloud-metadata addresses are
denied by default, checked on the address actually connected to; every redirect is
checked again; a rule's headers (a credential) go only to the URLs that rule matches.
"""

from toolwire_http._errors import HttpConfigError, HttpDenied, HttpError
from toolwire_http._fetch import FetchResult, fetch, html_to_text
from toolwire_http._policy import (
    ALLOW_ENV,
    ALLOW_PRIVATE_ENV,
    CONFIG_ENV,
    METADATA_ADDRESSES,
    HttpPolicy,
    Rule,
    policy_from_env,
)
from toolwire_http._tools import MAX_CHARS, http_toolset, http_toolset_from_env

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "ALLOW_ENV",
    "ALLOW_PRIVATE_ENV",
    "CONFIG_ENV",
    "MAX_CHARS",
    "METADATA_ADDRESSES",
    "FetchResult",
    "HttpConfigError",
    "HttpDenied",
    "HttpError",
    "HttpPolicy",
    "Rule",
    "fetch",
    "html_to_text",
    "http_toolset",
    "http_toolset_from_env",
    "policy_from_env",
]
