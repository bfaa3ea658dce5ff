"""Code RL Lab's client for ``coderl serve``: the lab's scorer as reward functions for TRL and veRL.

One file, Python 3.8+, standard library only: copy it next to the training script (``coderl
export`` does). The scorer runs each completion against its task's tests in the lab's sandbox
and rewards it as ``coderl score`` does; this module only moves completions there and rewards
back. README.md beside this file has the usage.

- ``CoderlClient``: POST /v1/score, /get_reward, /v1/suites; GET /healthz, /readyz, /metrics.
  Retries 429 and 503 (honouring Retry-After, bounded) and connection errors; any other error
  raises ``CoderlHTTPError`` carrying the server's ``error`` and ``field``.
- ``trl_reward``: a TRL GRPOTrainer reward function (the reward's total).
- ``make_component_rewards``: one TRL reward function per reward component, all served by one
  scorer call per batch.
- ``verl_compute_score`` (and ``verl_compute_score_batch``): veRL's custom_reward_function.

Environment: CODERL_SERVE_URL (default http://127.0.0.1:8000), CODERL_SERVE_TOKEN (the bearer
token), CODERL_SUITE (optional: the suite the task ids belong to; unset, the server's --suite).
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import logging
import os
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

__version__ = "0.1.0"
__all__ = [
    "COMPONENTS",
    "CoderlClient",
    "CoderlConnectionError",
    "CoderlError",
    "CoderlHTTPError",
    "completion_from_code",
    "configure",
    "default_client",
    "extract_code",
    "make_component_rewards",
    "to_completion",
    "trl_reward",
    "verl_compute_score",
    "verl_compute_score_batch",
]

DEFAULT_URL = "http://127.0.0.1:8000"
#: The reward components `coderl serve` returns (src/reward/reward.ts computeReward), in its order.
COMPONENTS = ("test_pass", "all_pass", "ast_valid", "lint", "complexity", "length")
#: Statuses retried: busy (429), a proxy's bad gateway (502), draining or starting (503).
RETRY_STATUSES = (429, 502, 503)
_HASH = re.compile(r"^[0-9a-fA-F]{64}$")
log = logging.getLogger("coderl_client")

CompletionLike = Union[Tuple[str, str], Dict[str, str]]


class CoderlError(Exception):
    """Anything this client raises about the scorer."""


class CoderlHTTPError(CoderlError):
    """The scorer answered with an error status; ``error`` and ``field`` are its JSON's."""

    def __init__(self, method: str, path: str, status: int, body: Any, text: str, retry_after: Optional[float] = None):
        self.method, self.path, self.status = method, path, status
        self.body = body if isinstance(body, dict) else None
        self.error = self.body.get("error") if self.body else (text.strip()[:500] or None)
        self.field = self.body.get("field") if self.body else None
        self.retry_after = retry_after
        where = "" if not self.field or str(self.error or "").startswith(str(self.field)) else " (field %s)" % self.field
        super().__init__("coderl serve answered %d to %s %s: %s%s" % (status, method, path, self.error, where))


class CoderlConnectionError(CoderlError):
    """The scorer could not be reached (after the retries)."""


def _retry_after(headers: Any, body: Any) -> Optional[float]:
    """Retry-After in seconds (a number or an HTTP date), else the body's retry_after_s."""
    value = headers.get("Retry-After") if headers is not None else None
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    if isinstance(body, dict) and isinstance(body.get("retry_after_s"), (int, float)):
        return max(0.0, float(body["retry_after_s"]))
    return None


class CoderlClient:
    """A client of one ``coderl serve``.

    url, token, suite default to CODERL_SERVE_URL, CODERL_SERVE_TOKEN and CODERL_SUITE. ``suite``
    names the suite the task ids belong to: a built-in name (or a suite file the server loaded
    with --suite, by the path it was given), the 64 hex digits of an uploaded suite, or a local
    JSONL file, sent by its SHA-256 and uploaded when the server lacks it. None: the request names
    no suite and the server uses its own --suite.

    timeout: seconds per HTTP request. retries: how many times a 429/502/503 answer or a connection
    error is retried; the wait is the server's Retry-After when it gives one, else exponential from
    ``backoff`` with jitter, never more than ``max_backoff``. batch_size: completions per request
    (the server refuses more than its --queue; a refusal naming the limit lowers it).
    on_retry(attempt, delay_s, error) is called before each wait.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        suite: Optional[str] = None,
        timeout: float = 300.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        batch_size: int = 256,
        reward: Optional[Dict[str, float]] = None,
        on_retry: Optional[Callable[[int, float, Exception], None]] = None,
    ):
        self.url = (url or os.environ.get("CODERL_SERVE_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else (os.environ.get("CODERL_SERVE_TOKEN") or None)
        self.suite = suite if suite is not None else (os.environ.get("CODERL_SUITE") or None)
        self.timeout, self.retries, self.backoff, self.max_backoff = timeout, retries, backoff, max_backoff
        self.batch_size, self.reward, self.on_retry = batch_size, reward, on_retry
        self._cache = OrderedDict()  # type: OrderedDict[str, List[dict]]
        self._cache_lock = threading.Lock()
        self._files = {}  # type: Dict[str, Tuple[float, bytes, str]]

    def __repr__(self) -> str:
        return "CoderlClient(%r, suite=%r, token=%s)" % (self.url, self.suite, "set" if self.token else "none")

    # --- HTTP -----------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, str]] = None,
                 raw: Optional[bytes] = None, content_type: str = "application/json",
                 retries: Optional[int] = None, text: bool = False) -> Any:
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode("utf-8"))
        headers = {"Accept": "application/json", "User-Agent": "coderl-client/" + __version__}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        retries = self.retries if retries is None else retries
        attempt = 0
        while True:
            try:
                req = urllib.request.Request(url, data=data, method=method, headers=headers)
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = resp.read()
                if text:
                    return payload.decode("utf-8")
                try:
                    return json.loads(payload.decode("utf-8")) if payload else None
                except ValueError as e:
                    raise CoderlError("%s %s: the answer is not JSON: %r" % (method, path, payload[:200])) from e
            except urllib.error.HTTPError as e:
                payload_text = e.read().decode("utf-8", "replace")
                try:
                    parsed = json.loads(payload_text)
                except ValueError:
                    parsed = None
                err = CoderlHTTPError(method, path, e.code, parsed, payload_text, _retry_after(e.headers, parsed))
                if e.code not in RETRY_STATUSES or attempt >= retries:
                    raise err from None
                delay = self._delay(attempt, err.retry_after)
                error = err  # type: Exception
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, OSError) as e:
                reason = getattr(e, "reason", e)
                if attempt >= retries:
                    raise CoderlConnectionError(
                        "cannot reach coderl serve at %s (%s %s): %s; tried %d time(s)" % (self.url, method, path, reason, attempt + 1)
                    ) from e
                delay = self._delay(attempt, None)
                error = e
            log.warning("coderl serve: %s %s: %s; retry %d/%d in %.1f s", method, path, error, attempt + 1, retries, delay)
            if self.on_retry is not None:
                self.on_retry(attempt + 1, delay, error)
            time.sleep(delay)
            attempt += 1

    def _delay(self, attempt: int, retry_after: Optional[float]) -> float:
        if retry_after is not None:
            return min(self.max_backoff, retry_after)
        return min(self.max_backoff, self.backoff * (2 ** attempt)) * random.uniform(0.5, 1.0)

    # --- endpoints ------------------------------------------------------------------------------

    def health(self) -> dict:
        """GET /healthz: {"status": "ok"} while the process is up."""
        return self._request("GET", "/healthz")

    def ready(self) -> bool:
        """GET /readyz: True once the sandbox workers are warm, False while starting or draining."""
        try:
            self._request("GET", "/readyz", retries=0)
            return True
        except CoderlHTTPError as e:
            if e.status == 503:
                return False
            raise

    def wait_ready(self, timeout: float = 120.0, interval: float = 0.5) -> None:
        """Waits until /readyz is 200 (connection errors count as not ready yet)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.ready():
                    return
            except CoderlConnectionError:
                pass
            if time.monotonic() > deadline:
                raise CoderlError("coderl serve at %s was not ready within %.0f s" % (self.url, timeout))
            time.sleep(interval)

    def metrics(self) -> str:
        """GET /metrics: the Prometheus text."""
        return self._request("GET", "/metrics", text=True)

    def upload_suite(self, tasks: Any) -> str:
        """POST /v1/suites: a JSONL file's path, JSONL text or bytes, or a list of task dicts; returns the suite_hash.

        The hash is the SHA-256 of the bytes sent, so a later request can name the suite by it
        (``CoderlClient(suite=hash)``) on any replica that holds it.
        """
        if isinstance(tasks, (list, tuple)):
            data = json.dumps(list(tasks)).encode("utf-8")
        elif isinstance(tasks, bytes):
            data = tasks
        elif isinstance(tasks, str) and "\n" not in tasks and not tasks.lstrip().startswith(("{", "[")):
            with open(tasks, "rb") as f:
                data = f.read()
        elif isinstance(tasks, os.PathLike):
            with open(tasks, "rb") as f:
                data = f.read()
        else:
            data = str(tasks).encode("utf-8")
        answer = self._request("POST", "/v1/suites", raw=data, content_type="application/x-ndjson")
        return answer["suite_hash"]

    def _file(self, path: str) -> Tuple[bytes, str]:
        mtime = os.path.getmtime(path)
        known = self._files.get(path)
        if known is None or known[0] != mtime:
            with open(path, "rb") as f:
                data = f.read()
            known = (mtime, data, hashlib.sha256(data).hexdigest())
            self._files[path] = known
        return known[1], known[2]

    def _suite_ref(self, suite: Optional[str]) -> Tuple[Dict[str, str], Optional[bytes]]:
        """The request's suite field, and the bytes to upload if the server lacks the hash."""
        if suite is None:
            return {}, None
        if _HASH.match(suite):
            return {"suite_hash": suite.lower()}, None
        if os.path.isfile(suite):
            data, digest = self._file(suite)
            return {"suite_hash": digest}, data
        return {"suite": suite}, None

    def _with_suite(self, suite: Optional[str], send: Callable[[Dict[str, str]], Any]) -> Any:
        ref, data = self._suite_ref(self.suite if suite is None else suite)
        try:
            return send(ref)
        except CoderlHTTPError as e:
            if data is None or e.status != 404 or e.field not in ("suite_hash", "suite"):
                raise
            log.info("coderl serve lacks suite %s: uploading it", ref.get("suite_hash"))
            self._request("POST", "/v1/suites", raw=data, content_type="application/x-ndjson")
            return send(ref)

    def score_response(self, completions: Sequence[CompletionLike], suite: Optional[str] = None,
                       tasks: Optional[List[dict]] = None, reward: Optional[Dict[str, float]] = None) -> dict:
        """One POST /v1/score: {"records": [...], "summary": {...}} as the server answers."""
        body = {"completions": _completion_list(completions)}  # type: Dict[str, Any]
        reward = self.reward if reward is None else reward
        if reward is not None:
            body["reward"] = reward
        if tasks is not None:
            return self._request("POST", "/v1/score", dict(body, tasks=tasks))
        return self._with_suite(suite, lambda ref: self._request("POST", "/v1/score", dict(body, **ref)))

    def score(self, completions: Iterable[CompletionLike], suite: Optional[str] = None,
              tasks: Optional[List[dict]] = None, reward: Optional[Dict[str, float]] = None) -> List[dict]:
        """The records `coderl score` writes, one per completion, in order.

        completions: (task_id, completion) pairs or {"task_id", "completion"} dicts; the program
        that runs is the task's prompt + completion. Sent in requests of batch_size; each
        record's ``index`` is its position in ``completions``.
        """
        items = _completion_list(list(completions))
        records = []  # type: List[dict]
        at = 0
        while at < len(items):
            chunk = items[at:at + max(1, self.batch_size)]
            try:
                answer = self.score_response(chunk, suite=suite, tasks=tasks, reward=reward)
            except CoderlHTTPError as e:
                m = re.search(r"at most (\d+) items", str(e.error or ""))
                if e.status == 400 and e.field == "completions" and m and int(m.group(1)) < len(chunk):
                    self.batch_size = int(m.group(1))
                    continue
                raise
            for r in answer["records"]:
                r["index"] = at + r["index"]
            records.extend(answer["records"])
            at += len(chunk)
        return records

    def score_cached(self, completions: Sequence[CompletionLike], suite: Optional[str] = None) -> List[dict]:
        """score(), remembered for the last few batches by their content: the component reward
        functions each ask for the same batch, and only the first asks the server."""
        items = _completion_list(completions)
        key = hashlib.sha256(
            json.dumps([suite if suite is not None else self.suite, self.reward, items], sort_keys=True).encode("utf-8")
        ).hexdigest()
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            records = self.score(items, suite=suite)
            self._cache[key] = records
            while len(self._cache) > 8:
                self._cache.popitem(last=False)
            return records

    def get_reward(self, query: Sequence[str], prompts: Sequence[str], labels: Sequence[Any],
                   suite: Optional[str] = None) -> dict:
        """POST /get_reward, OpenRLHF's protocol: {"rewards", "scores", "extra_logs"}; ``suite`` goes as ?suite=."""

        def send(ref: Dict[str, str]) -> dict:
            name = ref.get("suite") or ref.get("suite_hash")
            body = {"query": list(query), "prompts": list(prompts), "labels": list(labels)}
            return self._request("POST", "/get_reward", body, query={"suite": name} if name else None)

        return self._with_suite(suite, send)


def _completion_list(completions: Iterable[CompletionLike]) -> List[Dict[str, str]]:
    out = []
    for i, c in enumerate(completions):
        if isinstance(c, dict):
            task_id, completion = c.get("task_id"), c.get("completion")
        elif isinstance(c, (tuple, list)) and len(c) == 2:
            task_id, completion = c
        else:
            raise TypeError("completions[%d]: expected (task_id, completion) or {'task_id', 'completion'}, got %r" % (i, c))
        if not isinstance(task_id, str) or not isinstance(completion, str):
            raise TypeError("completions[%d]: task_id and completion must be strings, got %r, %r"
                            % (i, type(task_id).__name__, type(completion).__name__))
        out.append({"task_id": task_id, "completion": completion})
    return out


_default = None  # type: Optional[CoderlClient]
_default_lock = threading.Lock()


def default_client() -> CoderlClient:
    """The client the reward functions use: configure()'s, or one from the environment."""
    global _default
    with _default_lock:
        if _default is None:
            _default = CoderlClient()
        return _default


def configure(client: Optional[CoderlClient] = None, **kwargs: Any) -> CoderlClient:
    """Sets the reward functions' client: ``configure(url=..., token=..., suite=...)`` or ``configure(client)``."""
    global _default
    with _default_lock:
        _default = client if client is not None else CoderlClient(**kwargs)
        return _default


# --- from a model's reply to the completion the scorer runs -------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.S)
_OPEN_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$")
_TAGS = {
    "python": ("python", "py", "python3"),
    "javascript": ("javascript", "js", "node", "nodejs", "jsx", "mjs", "cjs"),
}


def code_blocks(text: str) -> List[Tuple[str, str]]:
    """The fenced code blocks of a Markdown reply as (tag, code); an unclosed last block runs to the end."""
    lines = text.splitlines(True)
    blocks = []
    i = 0
    while i < len(lines):
        m = _OPEN_FENCE.match(lines[i].rstrip("\r\n"))
        if not m:
            i += 1
            continue
        fence, tag = m.group(1), m.group(2).lower()
        close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{%d,}[ \t]*$" % len(fence))
        body = []
        i += 1
        while i < len(lines) and not close.match(lines[i].rstrip("\r\n")):
            body.append(lines[i])
            i += 1
        blocks.append((tag, "".join(body)))
        i += 1
    return blocks


def extract_code(text: str, language: Optional[str] = None, entry_point: Optional[str] = None) -> str:
    """The code of a chat reply: reasoning in <think>...</think> dropped; of its fenced blocks, the
    first that defines ``entry_point``, else the first tagged with the language, else the first;
    the whole text when it has no fence."""
    text = _THINK.sub("", text)
    blocks = code_blocks(text)
    if not blocks:
        return text
    if entry_point and language in _TAGS:
        for _, code in blocks:
            if _header(code, language, entry_point):
                return code
    for tag, code in blocks:
        if tag in _TAGS.get(language or "", ()):
            return code
    return blocks[0][1]


def _skip_string(code: str, i: int, language: str) -> int:
    """The index after the string or comment starting at i (i itself when there is none)."""
    c = code[i]
    if language == "python" and c == "#" or language == "javascript" and code.startswith("//", i):
        j = code.find("\n", i)
        return len(code) if j < 0 else j
    if language == "javascript" and code.startswith("/*", i):
        j = code.find("*/", i + 2)
        return len(code) if j < 0 else j + 2
    if c in "'\"" or language == "javascript" and c == "`":
        quote = c * 3 if language == "python" and code.startswith(c * 3, i) else c
        j = i + len(quote)
        while j < len(code):
            if code[j] == "\\":
                j += 2
            elif code.startswith(quote, j):
                return j + len(quote)
            elif code[j] == "\n" and len(quote) == 1 and c != "`":
                return j
            else:
                j += 1
        return len(code)
    return i


def _close(code: str, i: int, language: str) -> int:
    """The index of the bracket closing the one at i, or -1."""
    depth = 0
    while i < len(code):
        j = _skip_string(code, i, language)
        if j != i:
            i = j
            continue
        if code[i] in "([{":
            depth += 1
        elif code[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _header(code: str, language: str, name: str) -> Optional[Tuple[int, int]]:
    """Where the definition of ``name`` starts in ``code`` and where its body starts, or None."""
    n = re.escape(name)
    if language == "python":
        m = re.search(r"^[ \t]*(?:async[ \t]+)?def[ \t]+%s[ \t]*(?=\()" % n, code, re.M)
        if not m:
            return None
        end = _close(code, m.end(), language)
        j = end + 1 if end >= 0 else -1
        while 0 < j < len(code) and code[j] != ":":  # the return annotation
            j = _close(code, j, language) + 1 if code[j] in "([{" else j + 1
        if j <= 0 or j >= len(code):
            return None
        return m.start(), j + 1
    m = re.search(r"^[ \t]*(?:export[ \t]+)?(?:(?:async[ \t]+)?function[ \t]*\*?[ \t]*%s[ \t]*(?=\()|(?:const|let|var)[ \t]+%s[ \t]*=)"
                  % (n, n), code, re.M)
    if not m:
        return None
    i = m.end()
    ws = re.compile(r"\s*")
    i = ws.match(code, i).end()
    for word in ("async", "function"):
        if re.match(word + r"\b", code[i:]):
            i = ws.match(code, i + len(word)).end()
    if code.startswith("*", i):
        i = ws.match(code, i + 1).end()
    ident = re.compile(r"[A-Za-z_$][\w$]*")
    if not code.startswith("(", i):  # a named function expression, or a single arrow parameter
        im = ident.match(code, i)
        i = ws.match(code, im.end()).end() if im else i
    if code.startswith("(", i):
        end = _close(code, i, language)
        if end < 0:
            return None
        i = ws.match(code, end + 1).end()
    if code.startswith("=>", i):
        i = ws.match(code, i + 2).end()
    return (m.start(), i + 1) if code.startswith("{", i) else None


def _entry_point(prompt: str, language: str) -> Optional[str]:
    """The function a prompt declares last (as the lab's suite loader finds a HumanEval-X entry point)."""
    if language == "python":
        names = re.findall(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)[ \t]*\(", prompt, re.M)
    else:
        names = [a or b for a, b in re.findall(
            r"^\s*(?:(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=|(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\()", prompt, re.M)]
    return names[-1] if names else None


def _guess_language(text: str) -> str:
    return "python" if re.search(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(", text, re.M) else "javascript"


def _into_body(before: str, body: str, language: str) -> str:
    """Code the reply had before its function, moved to the start of the function's body so it stays in scope."""
    lines = before.rstrip().splitlines()
    while lines and lines[-1].lstrip().startswith("@"):  # the function's decorators: they cannot apply here
        lines.pop()
    if not "".join(lines).strip():
        return body
    if language == "python":
        first = next((l for l in body.splitlines() if l.strip() and not l.lstrip().startswith("#")), "")
        indent = first[: len(first) - len(first.lstrip())] or "    "
        return "".join((indent + l if l.strip() else "") + "\n" for l in lines) + body
    return "\n".join(lines) + "\n" + body


def completion_from_code(code: str, prompt: Optional[str] = None, language: Optional[str] = None,
                         entry_point: Optional[str] = None) -> str:
    """The completion the scorer runs for a reply's code, so that ``prompt + completion`` runs.

    The scorer runs the task's prompt (which ends inside the function: after Python's docstring,
    after JavaScript's opening brace) followed by the completion, as the lab does. A chat model
    asked for "the whole function" repeats the function's header, so:

    1. The code holds the prompt (stripped) verbatim: the completion is what follows it. This is
       exactly what the lab scores in its chat format, where the assistant's turn is opened with
       the prompt.
    2. Else the code defines ``entry_point`` itself (its own header, e.g. without the docstring
       or with other type hints): the completion is the function's body after that header; for
       JavaScript the body runs to the function's closing brace, which now closes the prompt's.
    3. Else the code has no header: it is taken as the continuation it is.

    In 1 and 2, code before the function (imports, helpers) is moved to the start of the body,
    re-indented for Python, so it stays in scope; code after the function is kept as it is.
    Without ``prompt`` (veRL's compute_score gets only the response) rule 2 applies; without
    ``entry_point`` it is read from the prompt.
    """
    language = language or _guess_language(prompt or code)
    if not entry_point and prompt:
        entry_point = _entry_point(prompt, language)
    stripped = (prompt or "").strip()
    if stripped:
        at = code.find(stripped)
        if at >= 0:
            rest = code[at + len(stripped):]
            if prompt is not None and prompt.endswith("\n"):
                rest = rest[2:] if rest.startswith("\r\n") else rest[1:] if rest.startswith("\n") else rest
            return _into_body(code[:at], rest, language)
    found = _header(code, language, entry_point) if entry_point else None
    if found:
        start, body = found
        rest = code[body:]
        if language == "python":
            nl = rest.find("\n")
            inline, rest = (rest, "") if nl < 0 else (rest[:nl], rest[nl + 1:])
            if inline.strip() and not inline.strip().startswith("#"):  # def f(x): return x
                rest = "    " + inline.strip() + "\n" + rest
        else:
            rest = rest[1:] if rest.startswith("\n") else rest
        return _into_body(code[:start], rest, language)
    return code


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _task_prompt(prompt: Any, language: Optional[str]) -> Optional[str]:
    """The task's code prompt in a TRL prompt: a chat prompt's last user turn holds it in a code block."""
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            return None
        text = _message_text(users[-1])
        blocks = code_blocks(text)
        if not blocks:
            return None
        tagged = [c for t, c in blocks if t in _TAGS.get(language or "", ())]
        return (tagged or [blocks[-1][1]])[0]
    if isinstance(prompt, str):
        blocks = code_blocks(prompt)
        return blocks[-1][1] if blocks else prompt
    return None


def to_completion(completion: Any, prompt: Any = None, language: Optional[str] = None,
                  entry_point: Optional[str] = None, prompt_format: Optional[str] = None) -> str:
    """A trainer's completion as the scorer's completion.

    A completion-format sample (a string, prompt_format not 'chat') is the continuation of the
    prompt and goes as it is. A chat sample (a list of messages, or prompt_format 'chat') goes
    through extract_code (the assistant's content, its code block) and completion_from_code.
    """
    if isinstance(completion, (list, dict)):
        messages = completion if isinstance(completion, list) else [completion]
        assistant = [m for m in messages if not isinstance(m, dict) or m.get("role", "assistant") == "assistant"]
        text = "".join(_message_text(m) for m in assistant)
        chat = True
    else:
        text = "" if completion is None else str(completion)
        chat = prompt_format == "chat"
    if not chat:
        return text
    task_prompt = _task_prompt(prompt, language)
    if language is None:
        language = _guess_language(task_prompt or text)
    if not entry_point and task_prompt:
        entry_point = _entry_point(task_prompt, language)
    return completion_from_code(extract_code(text, language, entry_point), task_prompt, language, entry_point)


# --- TRL ------------------------------------------------------------------------------------------


def _column(kwargs: Dict[str, Any], name: str, n: int) -> List[Any]:
    values = kwargs.get(name)
    return list(values) if values is not None else [None] * n


def _trl_records(client: Optional[CoderlClient], prompts: Any, completions: Sequence[Any],
                 kwargs: Dict[str, Any]) -> List[Optional[dict]]:
    """One record per sample (None for a sample without a task id), from one cached scorer call."""
    n = len(completions)
    if kwargs.get("task_id") is None:
        raise CoderlError(
            "the reward function needs a task_id column in the dataset (coderl export writes one): "
            "TRL passes dataset columns to reward functions as keyword lists"
        )
    task_ids = _column(kwargs, "task_id", n)
    languages, entries = _column(kwargs, "language", n), _column(kwargs, "entry_point", n)
    formats = _column(kwargs, "prompt_format", n)
    prompts = list(prompts) if prompts is not None else [None] * n
    items, where = [], []
    for i in range(n):
        if task_ids[i] is None or task_ids[i] == "":
            continue
        items.append((str(task_ids[i]), to_completion(completions[i], prompts[i], languages[i], entries[i], formats[i])))
        where.append(i)
    records = (client or default_client()).score_cached(items) if items else []
    out = [None] * n  # type: List[Optional[dict]]
    for i, r in zip(where, records):
        out[i] = r
    return out


def trl_reward(prompts: Any, completions: Sequence[Any], **kwargs: Any) -> List[Optional[float]]:
    """TRL GRPOTrainer reward function: the scorer's reward total for each completion.

    GRPOTrainer calls it as reward_func(prompts=..., completions=..., completion_ids=..., **columns)
    with the dataset's other columns as lists (task_id, language, entry_point, prompt_format of
    coderl export's rows). Completions are strings, or lists of {role, content} messages for a
    conversational dataset (see to_completion). A sample without a task_id gets None, which TRL
    leaves out of this function's reward. Uses default_client().
    """
    records = _trl_records(None, prompts, completions, kwargs)
    log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
    scored = [r for r in records if r is not None]
    if callable(log_extra):
        log_extra("coderl_verdict", [r["verdict"] if r is not None else "" for r in records])
    if callable(log_metric) and scored:
        log_metric("coderl/pass_rate", sum(1.0 for r in scored if r["passed"]) / len(scored))
    return [float(r["reward"]["total"]) if r is not None else None for r in records]


def _contribution(record: Optional[dict], name: str) -> Optional[float]:
    if record is None:
        return None
    for c in record.get("reward", {}).get("components", []):
        if c["name"] == name:
            return None if c.get("raw") is None else float(c["contribution"])
    return None


def make_component_rewards(client: Optional[CoderlClient] = None,
                           names: Sequence[str] = COMPONENTS) -> List[Callable[..., List[Optional[float]]]]:
    """One TRL reward function per reward component, named after it (TRL logs rewards/<__name__>/mean).

    Each returns the component's contribution (weight x raw, negative for penalties), so with
    GRPOConfig's default reward_weights of 1 their sum is trl_reward's total: use these instead of
    trl_reward, not beside it. A component not measured for a sample (ast_valid, lint and
    complexity for Python) is None there. The functions share the client's batch cache, so the
    whole list costs one scorer call per batch.
    """

    def make(name: str) -> Callable[..., List[Optional[float]]]:
        def reward(prompts: Any, completions: Sequence[Any], **kwargs: Any) -> List[Optional[float]]:
            return [_contribution(r, name) for r in _trl_records(client, prompts, completions, kwargs)]

        reward.__name__ = reward.__qualname__ = name
        reward.__doc__ = "The %s component of coderl serve's reward (a TRL reward function)." % name
        return reward

    return [make(n) for n in names]


# --- veRL -----------------------------------------------------------------------------------------


def verl_result(record: dict) -> Dict[str, float]:
    """veRL's dict result: ``score`` (the reward) and numeric extras, the same keys for every sample
    (veRL gathers each key into reward_extra_info lists of one value per sample). ``acc`` is 1 when
    every test passed (veRL's validation reports acc as its core metric); each component is its
    contribution."""
    out = {
        "score": float(record["reward"]["total"]),
        "acc": 1.0 if record["passed"] else 0.0,
        "tests_passed": float(record["tests_passed"]),
        "tests_total": float(record["tests_total"]),
    }
    for name in COMPONENTS:
        out[name] = _contribution(record, name) or 0.0
    return out


def _verl_item(solution_str: Any, ground_truth: Any, extra_info: Any) -> Tuple[str, str]:
    info = extra_info if isinstance(extra_info, dict) else {}
    task_id = ground_truth if isinstance(ground_truth, str) else info.get("task_id", ground_truth)
    completion = to_completion(str(solution_str), None, info.get("language"), info.get("entry_point"), info.get("prompt_format"))
    return str(task_id), completion


def verl_compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None,
                       **kwargs: Any) -> Dict[str, float]:
    """veRL custom_reward_function (custom_reward_function.name=verl_compute_score).

    veRL's reward managers call compute_score(data_source=, solution_str=, ground_truth=,
    extra_info=) per sample: solution_str is the decoded response only, ground_truth the task id
    (reward_model.ground_truth of coderl export's rows), extra_info the row's extra_info (language,
    entry_point, prompt_format: a chat-format response goes through to_completion). Uses
    default_client().
    """
    return verl_result(default_client().score([_verl_item(solution_str, ground_truth, extra_info)])[0])


def verl_compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                             extra_infos: Optional[Sequence[Any]] = None, **kwargs: Any) -> List[Dict[str, float]]:
    """The same for veRL's batch reward manager (reward_model.reward_manager=batch): one scorer call per batch."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    items = [_verl_item(s, g, e) for s, g, e in zip(solution_strs, ground_truths, infos)]
    return [verl_result(r) for r in default_client().score(items)]
