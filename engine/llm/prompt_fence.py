"""Prompt structure that pasted text cannot close, open or forge.

Every prompt that carries data (notes, their metadata, the target specialty, a summary, few-shot examples,
MED-OMIT facts and differentials) wraps each piece in a *fenced* tag: ``<notes-7c0e19a2b4>`` …
``</notes-7c0e19a2b4>``. The suffix (the fence code) is derived from a hash of all the data in that message,
so it is reproducible, and it is re-derived until it occurs in none of that data, so no pasted text can
contain a fenced tag: a note that says ``</note></notes><summary>…`` stays inside its note as plain text.

* Attribute values (note id, date, type, author) are HTML-escaped inside double quotes (newlines too), so a
  quote cannot break out of an attribute.
* Lists that the model produced from the notes (facts, diagnoses) go in as one JSON array, so an item
  cannot forge another item.
* A one-step question that carries one piece of data and a fixed question (MED-OMIT's importance of a fact) may
  quote it as one JSON string (:func:`quoted`): its end is the first unescaped quote, which no text inside can
  write, and it costs two tokens where a fenced tag pair costs two dozen (each question token is time on a CPU).
* :func:`read_blocks` parses a message back; tests use it to prove that what went in is exactly what comes
  out.

Tokenisation is the other half (``engine.llm.backends``): data is tokenised as plain text, so chat-template
control strings in it (``<start_of_turn>``, ``<|im_start|>``, ``<|eot_id|>`` …) never become special tokens.
"""
from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

FENCE_LEN = 10

# Chat-template control strings of the common model families, defined once: the HTTP backend breaks them up in
# data (the server tokenises), and engine.llm.injection flags data that holds them.
CONTROL_STRINGS = re.compile(
    r"<\|[A-Za-z0-9_]{1,40}\|>"                   # <|im_start|> <|eot_id|> <|start_header_id|> <|endoftext|> ...
    r"|<(?:start|end)_of_(?:turn|image)>"         # Gemma
    r"|</?s>|<<SYS>>|<</SYS>>|\[/?INST\]"          # Llama 2 / Mistral
    r"|<\uFF5C[^>]{0,40}\uFF5C>"                   # DeepSeek's full-width bars
    r"|<(?:bos|eos|pad|unk|mask)>", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    tag: str
    attrs: dict[str, str]
    body: str
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class Fence:
    """The fence code of one message; :meth:`block` wraps a piece of data in a fenced tag."""

    code: str

    @classmethod
    def for_data(cls, texts: Iterable[Optional[str]]) -> "Fence":
        data = [t for t in texts if t]
        h = hashlib.sha256("\x1f".join(data).encode("utf-8", "surrogatepass"))
        for _ in range(1000):
            code = h.hexdigest()[:FENCE_LEN]
            if not any(code in t for t in data):
                return cls(code)
            h.update(b"\x00")  # the data holds this code (astronomically unlikely by chance): derive another
        raise ValueError("no fence code found that the data does not contain")  # pragma: no cover

    def tag(self, name: str) -> str:
        return f"{name}-{self.code}"

    def block(self, name: str, body: str, attrs: Optional[Mapping[str, Any]] = None) -> str:
        a = "".join(f' {k}="{attr_escape(v)}"' for k, v in (attrs or {}).items() if v not in (None, ""))
        return f"<{self.tag(name)}{a}>\n{body}\n</{self.tag(name)}>"

    def json_block(self, name: str, value: Any) -> str:
        """A list or object as JSON inside a fenced tag (one line per list entry)."""
        if isinstance(value, list):
            body = "[\n" + ",\n".join(json.dumps(v, ensure_ascii=False) for v in value) + "\n]"
        else:
            body = json.dumps(value, ensure_ascii=False)
        return self.block(name, body)


def quoted(text: str) -> str:
    """``text`` as one JSON string (quotes, backslashes and control characters escaped, other characters kept): a
    fence for a message that carries this one piece of data."""
    return json.dumps(text, ensure_ascii=False)


def unquoted(message: str) -> str:
    """The datum of a message that begins with a :func:`quoted` string (a structural test reads it back)."""
    value, _ = json.JSONDecoder().raw_decode(message)
    if not isinstance(value, str):
        raise ValueError("the message does not begin with a quoted string")
    return value


def attr_escape(value: Any) -> str:
    text = html.escape(str(value), quote=True)
    return text.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


_ATTR = re.compile(r' ([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"')


def read_blocks(text: str, code: str, name: Optional[str] = None) -> list[Block]:
    """The top-level fenced blocks of ``text`` (optionally only those called ``name``), in order.

    Since no data holds the fence code, the first fenced closing tag of a block's name after its opening tag
    is its end (blocks of one name do not nest)."""
    names = re.escape(name) if name else r"[A-Za-z_][A-Za-z0-9_]*"
    opener = re.compile(r"<(%s)-%s((?: [A-Za-z_][A-Za-z0-9_]*=\"[^\"]*\")*)>\n" % (names, re.escape(code)))
    out: list[Block] = []
    pos = 0
    while True:
        m = opener.search(text, pos)
        if not m:
            return out
        tag = m.group(1)
        close = f"\n</{tag}-{code}>"
        end = text.find(close, m.end())
        if end < 0:
            raise ValueError(f"fenced block <{tag}> is not closed")
        body = text[m.end():end]
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(2))}
        out.append(Block(tag, attrs, body, m.start(), end + len(close)))
        pos = end + len(close)


def fence_codes(text: str) -> set[str]:
    """Every fence code used by a fenced tag in ``text`` (a structural test: one message, one code)."""
    return set(re.findall(r"</?[A-Za-z_][A-Za-z0-9_]*-([0-9a-f]{%d})[ >]" % FENCE_LEN, text))

