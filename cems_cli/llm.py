"""OpenAI-compatible chat client for the optional LLM stages of retrieval.

Three promises the rest of CEMS relies on:

* Importing this module is cheap: ``openai`` (~0.7 s to import) is loaded only when a chat call runs.
* Every call is bounded by one wall-clock timeout, whatever the endpoint does (hang, trickle bytes,
  stall in DNS). The SDK is built with ``max_retries=0`` and ``timeout=timeout`` so a hung request costs
  one timeout, and the request also runs on a daemon thread we stop waiting for at the deadline.
* Failure is an answer, not an exception: ``chat_json`` returns ``None`` and the failing stage is logged
  once per process at debug level on the ``cems.llm`` logger.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from cems_cli import defaults

if TYPE_CHECKING:  # pragma: no cover - typing only, never imported at run time here
    from openai import OpenAI

log = logging.getLogger("cems.llm")

DEFAULT_TIMEOUT = defaults.LLM_TIMEOUT
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Local OpenAI-compatible servers (Ollama, llama.cpp, vLLM) need no key, but the SDK refuses to start
# without one; passing a placeholder also stops it from reading OPENAI_API_KEY from the environment.
NO_KEY_PLACEHOLDER = "not-needed"
# Attempts per call: the first, plus one per request parameter the endpoint rejected (see _adapt).
_MAX_ATTEMPTS = 3

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - conventional name for an input type variable


# --------------------------------------------------------------------------- degradation log

_degraded: set[str] = set()
_degraded_lock = threading.Lock()


def note_degraded(stage: str, reason: str) -> None:
    """Record that ``stage`` fell back; log it the first time only, so a dead endpoint can't flood logs."""
    with _degraded_lock:
        first = stage not in _degraded
        _degraded.add(stage)
    if first:
        log.debug("LLM stage %r degraded: %s", stage, reason)


# --------------------------------------------------------------------------- bounded execution


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What one bounded call produced: a value, or the exception it raised."""

    value: T | None = None
    error: Exception | None = None


def run_bounded(
    fn: Callable[[I], T], items: Sequence[I], *, timeout: float, workers: int = 1
) -> list[Outcome[T] | None]:
    """Run ``fn`` over ``items`` on up to ``workers`` threads; return within ``timeout`` seconds.

    Slot ``i`` holds the outcome for ``items[i]``, or ``None`` if it had not finished at the deadline.
    Daemon threads rather than ``concurrent.futures``: the executor joins its workers at interpreter exit,
    so one hung socket would keep a finished CLI command or hook process alive. Abandoned threads end on
    their own socket timeout.
    """
    n = len(items)
    results: list[Outcome[T] | None] = [None] * n
    if n == 0:
        return results
    deadline = time.monotonic() + max(timeout, 0.0)
    pending: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(n):
        pending.put(i)
    finished = 0
    cond = threading.Condition()

    def worker() -> None:
        nonlocal finished
        while True:
            try:
                i = pending.get_nowait()
            except queue.Empty:
                return
            if time.monotonic() >= deadline:
                return  # nobody waits for it any more
            try:
                outcome: Outcome[T] = Outcome(value=fn(items[i]))
            except Exception as exc:  # noqa: BLE001 - every failure is reported, never raised
                outcome = Outcome(error=exc)
            with cond:
                results[i] = outcome
                finished += 1
                cond.notify_all()

    for _ in range(max(1, min(workers, n))):
        threading.Thread(target=worker, name="cems-llm", daemon=True).start()
    with cond:
        cond.wait_for(lambda: finished == n, timeout=max(deadline - time.monotonic(), 0.0))
        # A copy taken under the lock: late finishers must not change what the caller already holds.
        return list(results)


# --------------------------------------------------------------------------- answer parsing

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n?(.*?)```", re.S)
# Cap on start positions tried when digging an object out of prose, so a garbage answer full of
# braces can't cost quadratic time.
_MAX_OBJECT_STARTS = 64


def parse_json_object(text: object) -> dict[str, Any] | None:
    """The JSON object in a model's answer, or ``None``.

    Tolerates reasoning blocks (``<think>…</think>``), Markdown fences and prose around the object.
    A well-formed JSON answer that is not an object (a list, a number) is rejected, not searched.
    """
    if not isinstance(text, str):
        return None
    text = _THINK.sub("", text).strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        whole = json.loads(text)
    except ValueError:
        pass
    else:
        return whole if isinstance(whole, dict) else None
    decoder = json.JSONDecoder()
    start = text.find("{")
    tries = 0
    while start != -1 and tries < _MAX_OBJECT_STARTS:
        tries += 1
        try:
            obj, _end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    return None


# --------------------------------------------------------------------------- client


class JsonChat(Protocol):
    """What capture and summaries ask of a model: an `LLMClient`, or the Claude Code CLI's client."""

    model: str

    @property
    def base_url(self) -> str | None: ...

    def chat_json(
        self, system: str, user: str, *, max_tokens: int = 512, stage: str = "llm"
    ) -> dict | None: ...


class LLMClient:
    """A chat model behind an OpenAI-compatible endpoint, asked for JSON answers."""

    def __init__(
        self, base_url: str | None, api_key: str | None, model: str, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.base_url = (base_url or "").strip() or None
        self.api_key = (api_key or "").strip() or None
        self.model = (model or "").strip()
        self.timeout = float(timeout) if timeout and timeout > 0 else DEFAULT_TIMEOUT
        self._sdk: OpenAI | None = None
        self._sdk_lock = threading.Lock()
        # Request shape, narrowed when an endpoint rejects part of it (see _adapt). Plain attribute
        # writes: concurrent stages may race on them, and either order gives a valid request.
        self._json_mode = True
        self._tokens_param = "max_tokens"  # widest support; newer OpenAI models want max_completion_tokens
        self._send_temperature = True
        # A time.monotonic() moment no call may run past (a search answering a prompt hook): each call gets
        # the smaller of its own timeout and what is left; with nothing left it is not made at all.
        self.deadline: float | None = None

    def until(self, deadline: float | None) -> LLMClient:
        """This client (same SDK client and learned request shape), bounded by `deadline`."""
        import copy

        bounded = copy.copy(self)
        bounded.deadline = deadline
        return bounded

    @property
    def available(self) -> bool:
        """Configured well enough to try a call: an endpoint or key, and a model name."""
        return bool(self.model) and (self.base_url is not None or self.api_key is not None)

    def __repr__(self) -> str:  # never show the key
        return f"LLMClient(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout})"

    def chat_json(self, system: str, user: str, *, max_tokens: int = 512, stage: str = "llm") -> dict | None:
        """Ask once and return the JSON object answered, or ``None`` on any failure.

        Failures (timeout, HTTP error, non-JSON body, no object in the answer) are logged once per
        ``stage`` and never raised.
        """
        if not self.available:
            return None
        try:
            # Built before the clock starts: importing openai is a one-off cost, not endpoint slowness.
            sdk = self._client()
        except Exception as exc:  # noqa: BLE001
            note_degraded(stage, f"cannot build the OpenAI client: {exc!r}")
            return None
        deadline = time.monotonic() + self.timeout
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
            if deadline - time.monotonic() <= 0.05:
                note_degraded(stage, "skipped: the search's deadline leaves no time for it")
                return None
        content: str | None = None
        for _attempt in range(_MAX_ATTEMPTS):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            kwargs = self._request(system, user, max_tokens, remaining)
            [outcome] = run_bounded(lambda kw: _complete(sdk, kw), [kwargs], timeout=remaining)
            if outcome is None:
                note_degraded(stage, f"no answer within {self.timeout:g}s")
                return None
            if outcome.error is None:
                content = outcome.value
                break
            if _is_rejected_request(outcome.error) and self._adapt(str(outcome.error)):
                continue  # the endpoint refused an optional parameter: ask again without it
            note_degraded(stage, f"request failed: {outcome.error!r}")
            return None
        if content is None:
            note_degraded(stage, f"no answer within {self.timeout:g}s")
            return None
        parsed = parse_json_object(content)
        if parsed is None:
            note_degraded(stage, f"answer is not a JSON object: {content[:80]!r}")
        return parsed

    # -- internals

    def _client(self) -> OpenAI:
        with self._sdk_lock:
            if self._sdk is None:
                import openai  # deferred: ~0.7 s, and only LLM stages need it

                self._sdk = openai.OpenAI(
                    base_url=self.base_url or DEFAULT_BASE_URL,
                    api_key=self.api_key or NO_KEY_PLACEHOLDER,
                    timeout=self.timeout,
                    max_retries=0,
                )
            return self._sdk

    def _request(self, system: str, user: str, max_tokens: int, timeout: float) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            self._tokens_param: max_tokens,
            "timeout": timeout,
        }
        if self._send_temperature:
            kwargs["temperature"] = 0  # same query, same expansions: stable results and cache hits
        if self._json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def _adapt(self, error_text: str) -> bool:
        """Drop the request feature a 400 complains about; False when there is nothing left to drop."""
        text = error_text.lower()
        if "max_tokens" in text and self._tokens_param == "max_tokens":
            self._tokens_param = "max_completion_tokens"
            return True
        if "temperature" in text and self._send_temperature:
            self._send_temperature = False
            return True
        if ("response_format" in text or "json" in text) and self._json_mode:
            self._json_mode = False  # the prompts still ask for JSON; parse_json_object copes with prose
            return True
        return False


def _complete(sdk: OpenAI, kwargs: dict[str, Any]) -> str:
    response = sdk.chat.completions.create(**kwargs)
    if isinstance(response, str):
        # The SDK hands back the raw text when the body isn't JSON (a proxy's HTML error page, say).
        raise ValueError(f"non-JSON response body: {response[:80]!r}")
    content = response.choices[0].message.content
    if not isinstance(content, str):
        raise ValueError("answer has no text content")
    return content


def _is_rejected_request(error: Exception) -> bool:
    return getattr(error, "status_code", None) in (400, 422)


def client_from_settings(
    base_url: str | None, api_key: str | None, model: str | None, timeout: float | None
) -> LLMClient | None:
    """The configured client, or ``None`` when no LLM is configured (LLM stages are then skipped).

    Configured means a base URL or an API key (a key alone means api.openai.com), plus a model name.
    """
    client = LLMClient(base_url, api_key, model or "", timeout or DEFAULT_TIMEOUT)
    if not client.available:
        if client.base_url or client.api_key:
            log.debug("LLM endpoint configured without a model name; LLM stages are off")
        return None
    return client


def background_client(
    settings: Any, model: str | None = None, timeout: float | None = None
) -> JsonChat | None:
    """What capture and summaries ask, outside any hook's time: the user's Claude Code CLI when
    `CEMS_LLM_BACKEND=claude-code` (cems_cli/claude_code_llm.py), else the configured endpoint (`model` and
    `timeout` override its settings), else None (deterministic capture, extractive summaries)."""
    if settings.llm_backend == "claude-code":
        from cems_cli.claude_code_llm import client_from_settings as claude_code_client

        return claude_code_client(settings)
    if not settings.llm_configured:
        return None
    model, timeout = model or settings.llm_model, timeout or settings.llm_timeout
    return client_from_settings(settings.llm_base_url, settings.llm_api_key, model, timeout)


def configured_client(settings: Any) -> LLMClient | None:
    """The client of `settings` (CEMS_LLM_*), or None when no LLM is configured: what a search asks (never
    the Claude Code CLI, see background_client)."""
    if not settings.llm_configured:
        return None
    return client_from_settings(
        settings.llm_base_url, settings.llm_api_key, settings.llm_model, settings.llm_timeout
    )
