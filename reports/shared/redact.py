"""Secrets by value: what is left of a setting's value once credentials are taken out.

A name-based rule alone misses secrets under innocent names:
TORCH_HOME=https://user:S3CR3T@host, NCCL_DEBUG_FILE=/tmp/x?token=abc. So a value is also
scanned: the password of a URL's `user:password@` and the value of a query parameter whose
name looks like a credential are replaced by REDACTED; the rest of the value (host, path)
stays, since that is what a reader of the report needs to see.
"""

from __future__ import annotations

import re

REDACTED = "<redacted>"
# a name that says its value is a credential (upper-cased before matching). PSK: NCCL_IB_PSK
# and friends (pre-shared keys); SIG: signed URLs' signatures.
SECRET_NAME_WORDS = ("PASS", "PWD", "TOKEN", "SECRET", "KEY", "CRED", "AUTH", "PSK", "SIG", "SESSION")

# scheme://user:password@host -> scheme://user:<redacted>@host (and user@ alone is kept)
_URL_CRED = re.compile(r"(?P<pre>[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:)[^/@\s]*(?=@)")
# ?token=...&key=... (also ;-separated and #fragment parameters)
_QUERY = re.compile(r"(?P<pre>[?&;#](?P<name>[^=&;#?\s]+)=)(?P<val>[^&;#\s]*)")


def secret_name(name: str) -> bool:
    """True when `name` says it holds a credential (NCCL_IB_PSK, X_API_KEY, TOKEN ...)."""
    up = name.upper()
    return any(word in up for word in SECRET_NAME_WORDS)


def redact_value(value: str) -> str:
    """`value` with URL passwords and credential-named query parameters replaced."""
    out = _URL_CRED.sub(lambda m: m["pre"] + REDACTED, value)
    return _QUERY.sub(
        lambda m: m["pre"] + REDACTED if secret_name(m["name"]) and m["val"] else m[0],
        out,
    )


def redact(name: str, value: object) -> str:
    """What a report may show of the setting `name`=`value`."""
    if secret_name(name):
        return REDACTED
    return redact_value(str(value))
