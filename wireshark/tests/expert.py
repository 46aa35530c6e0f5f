"""How the dissector's expert info names rules (cqlframe/framing.lua, `describe`), read back.

A finding's message ends in "(RULE)" or "(RULE; sender rule SENDER)": RULE as the receiver
detects it (RECV-2), SENDER the sender's rule behind it where that differs (CRC-2), the same
pair `cqlframe check --json` reports as `rule` and `sender_rule`; then "[spec ANCHOR, ...]",
where the rendered spec states them (framing_v6.html#RULE), as `cqlframe check` prints them. A finding made after its
direction's first framing error, where a receiver has stopped (RECV-11), ends in a further
"[past the framing error ...]".
"""

from __future__ import annotations

import re
from typing import NamedTuple

_RULE = r"[A-Z][A-Z0-9]*-\d+"
_TAG = re.compile(
    rf"\((?P<rule>{_RULE})(?:; sender rule (?P<sender>{_RULE}))?\)"
    r"(?: \[spec (?P<spec>[^\]]*)\])?"
    r"(?P<past> \[past the framing error [^\]]*\])?$")


class Named(NamedTuple):
    rule: str
    sender: str | None
    past: bool
    spec: tuple[str, ...]


def named(message: str) -> Named | None:
    """The rule a finding's message names, or None if it names none in the finding format."""
    m = _TAG.search(message)
    if m is None:
        return None
    spec = tuple(m["spec"].split(", ")) if m["spec"] else ()
    return Named(m["rule"], m["sender"], m["past"] is not None, spec)


def names(messages: list[str], rule: str) -> bool:
    """Whether some message names `rule` as the receiver's rule."""
    return any((n := named(m)) is not None and n.rule == rule for m in messages)
