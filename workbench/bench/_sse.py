"""Incremental decoder for SGLang's native ``/generate`` server-sent-event stream.

SGLang streams ``data: <compact JSON>\\n\\n`` per chunk and ends with
``data: [DONE]\\n\\n``; an error mid-stream is sent as ``data: {"error": {...}}``
followed by ``[DONE]`` (``srt/entrypoints/http_server.py``, 0.4.6 to 0.5.23). Network reads split that
byte stream anywhere: inside a line, inside a ``\\r\\n`` pair, inside a multi-byte
UTF-8 character. :class:`SSEDecoder` buffers bytes and returns whole events, so the
one streaming loop in :mod:`workbench.bench._client` (and anything else that reads a
``/generate`` stream) never parses lines itself.

The framing follows the WHATWG server-sent-events rules: lines end with ``\\n``,
``\\r\\n`` or ``\\r``; a blank line dispatches the event; several ``data:`` lines of
one event are joined with ``\\n``; one space after the colon is dropped; lines
starting with ``:`` are comments; other fields (``event``, ``id``, ``retry``) are
ignored. The decoder is pure: no I/O, no clock.

Example::

    decoder = SSEDecoder()
    for piece in (b'data: {"text": "a"', b'}\\n\\ndata: [DO', b'NE]\\n\\n'):
        for event in decoder.feed(piece):
            ...  # StreamEvent(kind="chunk", data={"text": "a"}), then kind="done"
    decoder.close()  # [] here; reports a truncated stream otherwise
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Literal

_loads: Callable[[str | bytes], Any]
_OrjsonError: type[ValueError]
try:  # SGLang depends on orjson, so a GPU host's environment has it; the standard library otherwise
    from orjson import JSONDecodeError as _OrjsonError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - exercised where orjson is absent
    _loads, _OrjsonError = json.loads, json.JSONDecodeError

__all__ = ["EventKind", "SSEDecoder", "StreamEvent", "decode_all"]

#: ``chunk``: a JSON object from the server; ``done``: the ``[DONE]`` sentinel;
#: ``error``: a ``{"error": ...}`` object; ``invalid``: data that is neither
#: (not JSON, not an object, not UTF-8, or an event cut off at end of stream).
EventKind = Literal["chunk", "done", "error", "invalid"]

DONE_SENTINEL = "[DONE]"


@dataclasses.dataclass(frozen=True)
class StreamEvent:
    """One decoded event of a ``/generate`` stream.

    Attributes:
        kind: what the event is (see :data:`EventKind`).
        data: the decoded JSON object for ``chunk`` and ``error`` events, else None.
        raw: the event's data text as received (data lines joined with ``\\n``).
        problem: for ``invalid`` events, why the data could not be used; else None.
    """

    kind: EventKind
    data: dict[str, Any] | None
    raw: str
    problem: str | None = None

    def error_message(self) -> str:
        """Human-readable message of an ``error`` event (``error.message`` or the raw JSON)."""
        if self.data is None:
            return self.problem or self.raw
        err = self.data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        return json.dumps(err)


def _classify(raw: str) -> StreamEvent:
    """Turn one event's data text into a :class:`StreamEvent`."""
    text = raw.strip()
    if text == DONE_SENTINEL:
        return StreamEvent("done", None, raw)
    try:
        obj = _loads(text)
    except (_OrjsonError, json.JSONDecodeError):
        try:  # the standard library's message names where the text broke
            json.loads(text)
        except json.JSONDecodeError as exc:
            return StreamEvent("invalid", None, raw, f"data is not JSON ({exc.msg} at char {exc.pos})")
        obj = json.loads(text)  # orjson refused what the standard library reads (e.g. NaN): take it
    if not isinstance(obj, dict):
        return StreamEvent("invalid", None, raw, f"data is JSON {type(obj).__name__}, expected an object")
    if "error" in obj:
        return StreamEvent("error", obj, raw)
    return StreamEvent("chunk", obj, raw)


class SSEDecoder:
    """Feed raw bytes of an SSE response; get back complete :class:`StreamEvent` objects.

    Not thread-safe; use one decoder per response. Memory held is the unfinished
    tail (at most one partial line plus the data lines of one pending event).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data_lines: list[str] = []
        self._has_data = False
        self._skip_lf = False  # the previous feed ended with '\r'; a leading '\n' pairs with it
        self._undecodable: str | None = None
        self._closed = False

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """Add ``chunk`` (any length, split anywhere) and return the events it completed.

        Args:
            chunk: the next bytes of the response body.

        Returns:
            Events completed by this chunk, in stream order (often empty).

        Raises:
            ValueError: the decoder was already closed.
        """
        if self._closed:
            raise ValueError("SSEDecoder.feed() called after close()")
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        self._buffer.extend(chunk)
        events: list[StreamEvent] = []
        if not self._has_data and b"\r" not in chunk:
            self._feed_simple(events)  # SGLang's framing: whole "data: ...\n\n" events, LF only
        return self._feed_lines(events)

    def _feed_simple(self, events: list[StreamEvent]) -> None:
        """Take every complete single-line ``data:`` event off the buffer's front (the common case).

        Stops at the first event that is anything else (a comment, another field, several data
        lines, no blank line yet), which the line-by-line path then handles by the full rules.
        """
        buf = self._buffer
        start, n = 0, len(buf)
        while start < n:
            end = buf.find(b"\n\n", start)
            if end == -1 or not buf.startswith(b"data:", start):
                break
            line = bytes(buf[start + 5 : end])
            if b"\n" in line:
                break
            if line[:1] == b" ":
                line = line[1:]
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                break
            events.append(_classify(text))
            start = end + 2
        if start:
            del buf[:start]

    def _feed_lines(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """The WHATWG line-by-line rules over what is left in the buffer."""
        buf = self._buffer
        start = 0
        n = len(buf)
        while start < n:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, nxt = lf, lf + 1
            elif cr + 1 < n:
                end, nxt = cr, cr + 2 if buf[cr + 1] == 0x0A else cr + 1
            else:  # '\r' is the last byte: a '\n' may follow in the next chunk
                end, nxt = cr, cr + 1
                self._skip_lf = True
            self._line(bytes(buf[start:end]), events)
            start = nxt
        del buf[:start]
        return events

    def close(self) -> list[StreamEvent]:
        """Signal end of stream; return an ``invalid`` event if an event was cut off.

        Per the SSE rules an event without its terminating blank line is not
        dispatched; for a benchmark that is a truncated response, so it is
        reported instead of being silently dropped.

        Returns:
            ``[]`` for a cleanly ended stream, else one ``invalid`` event.
        """
        if self._closed:
            return []
        self._closed = True
        leftover = bytes(self._buffer).strip()
        if not self._has_data and not leftover:
            return []
        pending = "\n".join(self._data_lines)
        if leftover:
            pending += ("\n" if pending else "") + leftover.decode("utf-8", errors="replace")
        return [StreamEvent("invalid", None, pending, "stream ended inside an event (no blank line after it)")]

    def _line(self, line: bytes, events: list[StreamEvent]) -> None:
        if not line:
            if self._has_data:
                raw = "\n".join(self._data_lines)
                if self._undecodable is not None:
                    events.append(StreamEvent("invalid", None, raw, self._undecodable))
                else:
                    events.append(_classify(raw))
            self._data_lines = []
            self._has_data = False
            self._undecodable = None
            return
        if line[:1] == b":":
            return  # comment
        field, sep, value = line.partition(b":")
        if field != b"data":
            return  # event / id / retry / unknown fields carry nothing we use
        if sep and value[:1] == b" ":
            value = value[1:]
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = value.decode("utf-8", errors="replace")
            self._undecodable = f"data is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        self._data_lines.append(text)
        self._has_data = True


def decode_all(body: bytes) -> list[StreamEvent]:
    """Decode a whole SSE body at once (convenience for tests and saved streams)."""
    decoder = SSEDecoder()
    return decoder.feed(body) + decoder.close()
