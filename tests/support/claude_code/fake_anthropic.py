"""A scripted fake of the Anthropic Messages API, for driving the real Claude Code CLI offline.

    with FakeAnthropic(command="git status") as model:       # ANTHROPIC_BASE_URL=model.root_url
        ...run the CLI...
        model.message_bodies                                  # every /v1/messages body, in order
        model.tool_results                                    # the tool_result blocks the model was sent

What the model answers, per agent request (one that offers tools):

* the next turn queued with ``script(...)``: a string is a text answer (end of turn), a ``ToolUse``
  one tool call;
* then ``responder(body)``, when set;
* then the default rule: a tool_result in the last user message → ``final_text``; a Bash tool offered
  and ``command`` set → one Bash call running ``command``; otherwise ``side_text``.

Requests without tools (the client's side queries: session titles and the like, and every request of a
``--tools ""`` run) get ``side_responder(body)`` when set, else ``side_text``; they never consume the
script. Answers stream as server-sent events when the request
asks for ``stream`` (the CLI always does), else come back as one JSON message.
"""

from __future__ import annotations

import collections
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_openai import ScriptedServer, json_response


@dataclass(frozen=True)
class ToolUse:
    """One tool call the fake model makes (``Bash``: ``{"command": ..., "description": ...}``)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


Turn = str | ToolUse


def _last_user_has_tool_result(body: dict[str, Any]) -> bool:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    content = users[-1].get("content") if users else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _offered_tools(body: dict[str, Any]) -> set[str]:
    return {tool.get("name", "") for tool in body.get("tools") or [] if isinstance(tool, dict)}


class FakeAnthropic(ScriptedServer):
    def __init__(
        self,
        *,
        command: str | None = "echo hello-from-the-fake-model",
        final_text: str = "done.",
        side_text: str = "Fake title",
    ) -> None:
        super().__init__()
        self.command = command
        self.final_text = final_text
        self.side_text = side_text
        self.responder: Callable[[dict[str, Any]], Turn] | None = None
        self.side_responder: Callable[[dict[str, Any]], str] | None = None
        self._turns: collections.deque[Turn] = collections.deque()
        self._ids = itertools.count(1)

    # -- scripting and inspection

    def script(self, *turns: Turn) -> None:
        """Answers for the next agent requests, in order, before ``responder`` and the default rule."""
        with self._lock:
            self._turns.extend(turns)

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests_to("/v1/messages") if isinstance(r.body, dict)]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block sent to the model, once each (later requests repeat the history)."""
        seen: dict[str, dict[str, Any]] = {}
        for body in self.message_bodies:
            for message in body.get("messages") or []:
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        seen.setdefault(str(block.get("tool_use_id")), block)
        return list(seen.values())

    # -- answering

    def _turn_for(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return self.side_responder(body) if self.side_responder is not None else self.side_text
        with self._lock:
            scripted = self._turns.popleft() if self._turns else None
        if scripted is not None:
            return scripted
        if self.responder is not None:
            return self.responder(body)
        if _last_user_has_tool_result(body):
            return self.final_text
        if self.command is not None and "Bash" in _offered_tools(body):
            return ToolUse("Bash", {"command": self.command, "description": "Run the scripted command"})
        return self.side_text

    def route(self, method: str, path: str, body: Any) -> tuple[int, str | bytes, str]:
        if method == "POST" and path == "/v1/messages/count_tokens":
            return json_response({"input_tokens": 42})
        if method == "POST" and path == "/v1/messages" and isinstance(body, dict):
            return self._message(body)
        error = {"type": "not_found_error", "message": f"the fake has no route {method} {path}"}
        return json_response({"type": "error", "error": error}, status=404)

    def _message(self, body: dict[str, Any]) -> tuple[int, str | bytes, str]:
        turn = self._turn_for(body)
        ident = next(self._ids)
        if isinstance(turn, ToolUse):
            block = {
                "type": "tool_use",
                "id": f"toolu_fake_{ident:06d}",
                "name": turn.name,
                "input": turn.input,
            }
            stop_reason = "tool_use"
        else:
            block, stop_reason = {"type": "text", "text": turn}, "end_turn"
        message = {
            "id": f"msg_fake_{ident:06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-fake",
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            return json_response(message)
        return 200, _event_stream(message), "text/event-stream"


def _event_stream(message: dict[str, Any]) -> str:
    """The Messages API's streaming form of ``message``: start, one start/delta/stop per block, end.

    Sent whole with a Content-Length: a client reading server-sent events cannot tell the difference.
    """
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": {**message, "content": [], "stop_reason": None}}),
        ("ping", {}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        else:
            start = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            half = len(arguments) // 2  # partial JSON in pieces, as the real API streams it
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in (arguments[:half], arguments[half:])
            ]
        events.append(("content_block_start", {"index": index, "content_block": start}))
        events += [("content_block_delta", {"index": index, "delta": delta}) for delta in deltas]
        events.append(("content_block_stop", {"index": index}))
    events.append(
        (
            "message_delta",
            {
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(("message_stop", {}))
    return "".join(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events)
