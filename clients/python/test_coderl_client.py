"""Tests of coderl_client.py (python3 -m unittest -v clients/python/test_coderl_client.py).

Three parts:
- ExtractionTest: a model's reply to the completion the scorer runs (no server).
- FakeServerTest: the HTTP behaviour (retries, Retry-After, errors, batching, the batch cache)
  against a scripted http.server on 127.0.0.1.
- RealServerTest: everything against a real `coderl serve` at CODERL_TEST_SERVE_URL (token in
  CODERL_TEST_SERVE_TOKEN): the reward functions give the rewards of /v1/score's own records,
  asked for here with plain urllib. Skipped when the variable is unset; src/serve/python-client.test.ts
  starts a server and runs this file with it set (and counts that nothing was skipped).
"""

import gzip
import hashlib
import http.server
import json
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import coderl_client as cc  # noqa: E402

logging.getLogger("coderl_client").addHandler(logging.NullHandler())  # the retries' warnings: not in the test output

REPO = os.path.dirname(os.path.dirname(HERE))
SERVE_URL = os.environ.get("CODERL_TEST_SERVE_URL")
SERVE_TOKEN = os.environ.get("CODERL_TEST_SERVE_TOKEN")


def load_tasks(name, n):
    with gzip.open(os.path.join(REPO, "data", "benchmarks", name + ".jsonl.gz"), "rt", encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(n), f)]


PY = load_tasks("humaneval-python", 2)
JS = load_tasks("humaneval-x-js", 2)
JS_ENTRY = ["hasCloseElements", "separateParenGroups"]


def chat_prompt(task, language):
    """The user turn coderl export writes for a chat run (src/export/rows.ts chatUserMessage)."""
    name, tag = ("Python", "python") if language == "python" else ("JavaScript", "javascript")
    return [{
        "role": "user",
        "content": "Complete the following %s function. Reply with the whole function in one code block.\n\n```%s\n%s\n```"
        % (name, tag, task["prompt"].rstrip()),
    }]


def reply(text):
    return [{"role": "assistant", "content": text}]


class ExtractionTest(unittest.TestCase):
    def test_completion_format_goes_as_it_is(self):
        text = "  return 1;\n}\n```js\nnot code\n```\n"
        self.assertEqual(cc.to_completion(text, JS[0]["prompt"], "javascript", JS_ENTRY[0], "completion"), text)
        self.assertEqual(cc.to_completion(text), text)

    def test_chat_reply_repeating_the_prompt_is_what_the_lab_scores(self):
        t = PY[0]
        answer = "Here it is:\n```python\n" + t["prompt"] + t["canonical_solution"] + "```\nIt checks every pair."
        got = cc.to_completion(reply(answer), chat_prompt(t, "python"), "python", t["entry_point"], "chat")
        self.assertEqual(got, t["canonical_solution"])
        j = JS[0]
        answer = "```javascript\n" + j["prompt"] + j["canonical_solution"].rstrip() + "\n```"
        got = cc.to_completion(reply(answer), chat_prompt(j, "javascript"), "javascript", None, "chat")
        self.assertEqual(got, j["canonical_solution"].rstrip() + "\n")

    def test_python_reply_with_its_own_header_runs_after_the_prompt(self):
        t = PY[0]
        answer = (
            "<think>Compare every pair.\n```python\ndef wrong(): pass\n```\n</think>\n"
            "```python\nimport itertools\n\ndef gap(a, b):\n    return abs(a - b)\n\n"
            "def has_close_elements(numbers: list,\n                       threshold: float) -> bool:\n"
            "    return any(gap(a, b) < threshold for a, b in itertools.combinations(numbers, 2))\n```"
        )
        for prompt in (chat_prompt(t, "python"), None):
            got = cc.to_completion(reply(answer), prompt, "python", t["entry_point"], "chat")
            self.assertTrue(got.startswith("    import itertools\n"), got)
            scope = {}
            exec(compile(t["prompt"] + got + "\n" + t["test"] + "\ncheck(has_close_elements)\n", "program", "exec"), scope)
        self.assertEqual(cc.completion_from_code("def f(x): return x + 1\n", None, "python", "f"), "    return x + 1\n")

    def test_javascript_reply_with_its_own_header_closes_the_prompts_function(self):
        body = "  return numbers.some((a, i) => numbers.some((b, j) => i !== j && gap(a, b) < threshold));\n}\n"
        for header in ("const hasCloseElements = (numbers, threshold) => {\n", "function hasCloseElements(numbers, threshold) {\n",
                       "export const hasCloseElements = function (numbers, threshold = 0.5) {\n"):
            answer = "```js\nconst gap = (a, b) => Math.abs(a - b);\n" + header + body + "console.log(hasCloseElements([1, 2], 3));\n```"
            got = cc.to_completion(answer, None, "javascript", "hasCloseElements", "chat")
            self.assertEqual(got, "const gap = (a, b) => Math.abs(a - b);\n" + body + "console.log(hasCloseElements([1, 2], 3));\n")

    def test_code_block_choice(self):
        text = "```\nprint(1)\n```\nthen\n~~~python\ndef g():\n    pass\n~~~\n```python\ndef f(x):\n    return x\n"
        self.assertEqual(cc.extract_code(text, "python", "f"), "def f(x):\n    return x\n")  # unclosed: to the end
        self.assertEqual(cc.extract_code(text, "python"), "def g():\n    pass\n")  # the first tagged python
        self.assertEqual(cc.extract_code("no fences\n", "python"), "no fences\n")
        parts = [{"role": "assistant", "content": [{"type": "text", "text": "```js\nconst f = (x) => {\n  return x;\n};\n```"}]}]
        self.assertEqual(cc.to_completion(parts, "const f = (x) => {\n", "javascript"), "  return x;\n};\n")

    def test_a_reply_without_the_header_is_the_continuation(self):
        self.assertEqual(cc.to_completion(reply("```python\n    return 1\n```"), None, "python", "f", "chat"), "    return 1\n")


class Fake(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self):
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
        status, headers, payload = server.handler(self.command, self.path, body, len(server.requests))
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


def fake_records(body):
    """Records shaped as coderl serve's: the total is the completion's length, split in two components."""
    records = []
    for i, c in enumerate(json.loads(body)["completions"]):
        n = float(len(c["completion"]))
        records.append({
            "task_id": c["task_id"], "index": i, "passed": n > 3, "verdict": "passed" if n > 3 else "failed",
            "tests_passed": 1, "tests_total": 2,
            "reward": {"total": n - 0.5, "components": [
                {"name": "test_pass", "raw": 1, "weight": n, "sign": 1, "contribution": n},
                {"name": "all_pass", "raw": 1, "weight": 0.5, "sign": 1, "contribution": 0.0},
                {"name": "lint", "raw": None, "weight": 0.02, "sign": -1, "contribution": 0},
                {"name": "length", "raw": 1, "weight": 0.5, "sign": -1, "contribution": -0.5},
            ]},
        })
    return {"records": records, "summary": {}}


class FakeServerTest(unittest.TestCase):
    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
        self.server.requests = []
        self.server.handler = lambda method, path, body, n: (200, {}, fake_records(body))
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.retries = []
        self._env = {k: os.environ.pop(k, None) for k in ("CODERL_SUITE", "CODERL_SERVE_TOKEN", "CODERL_SERVE_URL")}

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        for k, v in self._env.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v

    def client(self, **kw):
        kw.setdefault("on_retry", lambda attempt, delay, error: self.retries.append((attempt, delay, error)))
        kw.setdefault("backoff", 0.01)
        return cc.CoderlClient(self.url, **kw)

    def sent(self, i=-1):
        return json.loads(self.server.requests[i]["body"])

    def test_429_waits_its_retry_after_bounded_by_max_backoff(self):
        busy = (429, {"Retry-After": "1"}, {"error": "the queue is full", "field": None, "retry_after_s": 1})
        self.server.handler = lambda m, p, b, n: busy if n == 1 else (200, {}, fake_records(b))
        t0 = time.monotonic()
        records = self.client().score([("t", "abcd")])
        self.assertGreaterEqual(time.monotonic() - t0, 1.0)
        self.assertEqual([r["reward"]["total"] for r in records], [3.5])
        self.assertEqual([(a, d, e.status) for a, d, e in self.retries], [(1, 1.0, 429)])
        self.server.handler = lambda m, p, b, n: (429, {"Retry-After": "100"}, {"error": "busy", "field": None}) if n == 3 else (
            200, {}, fake_records(b))
        self.client(max_backoff=0.2).score([("t", "abcd")])
        self.assertEqual(self.retries[-1][1], 0.2)

    def test_503_is_retried_then_raised_with_the_servers_error(self):
        self.server.handler = lambda m, p, b, n: (503, {}, {"error": "the server is shutting down", "field": None})
        with self.assertRaises(cc.CoderlHTTPError) as ctx:
            self.client(retries=2).score([("t", "x")])
        self.assertEqual((ctx.exception.status, ctx.exception.error), (503, "the server is shutting down"))
        self.assertEqual(len(self.server.requests), 3)
        self.assertEqual([a for a, _, _ in self.retries], [1, 2])

    def test_a_400_names_error_and_field_and_is_not_retried(self):
        err = {"error": "completions[0].task_id: 'x' is not in suite s", "field": "completions[0].task_id"}
        self.server.handler = lambda m, p, b, n: (400, {}, err)
        with self.assertRaises(cc.CoderlHTTPError) as ctx:
            self.client().score([("x", "y")])
        e = ctx.exception
        self.assertEqual((e.status, e.field, e.error), (400, "completions[0].task_id", err["error"]))
        self.assertIn("400 to POST /v1/score: completions[0].task_id: 'x' is not in suite s", str(e))
        self.assertEqual((len(self.server.requests), self.retries), (1, []))

    def test_connection_errors_are_retried_then_raised(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        client = cc.CoderlClient("http://127.0.0.1:%d" % port, retries=2, backoff=0.01,
                                 on_retry=lambda a, d, e: self.retries.append(a))
        with self.assertRaises(cc.CoderlConnectionError) as ctx:
            client.health()
        self.assertIn("tried 3 time(s)", str(ctx.exception))
        self.assertEqual(self.retries, [1, 2])

    def test_suite_field_token_and_environment(self):
        self.client().score([{"task_id": "t", "completion": "c"}])
        self.assertEqual(self.sent(), {"completions": [{"task_id": "t", "completion": "c"}]})  # the server's --suite
        self.assertNotIn("Authorization", self.server.requests[-1]["headers"])
        os.environ.update(CODERL_SUITE="humaneval-python", CODERL_SERVE_TOKEN="tok", CODERL_SERVE_URL=self.url)
        cc.CoderlClient(reward={"lint": 0}).score([("t", "c")])
        self.assertEqual(self.sent()["suite"], "humaneval-python")
        self.assertEqual(self.sent()["reward"], {"lint": 0})
        self.assertEqual(self.server.requests[-1]["headers"]["Authorization"], "Bearer tok")
        self.client(suite="AB" * 32).score([("t", "c")])
        self.assertEqual(self.sent()["suite_hash"], "ab" * 32)
        self.assertNotIn("suite", self.sent())

    def test_a_suite_file_goes_by_its_hash_and_is_uploaded_when_missing(self):
        held = set()

        def handler(method, path, body, n):
            if path == "/v1/suites":
                held.add(hashlib.sha256(body).hexdigest())
                return 200, {}, {"suite_hash": hashlib.sha256(body).hexdigest(), "tasks": 1, "task_ids": ["t"]}
            if json.loads(body)["suite_hash"] not in held:
                return 404, {}, {"error": "suite_hash: suite is not on this server", "field": "suite_hash"}
            return 200, {}, fake_records(body)

        self.server.handler = handler
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
            f.write(b'{"task_id": "t"}\n')
        try:
            client = self.client(suite=f.name)
            client.score([("t", "abcd")])
            client.score([("t", "abcd")])
        finally:
            os.unlink(f.name)
        self.assertEqual([r["path"] for r in self.server.requests], ["/v1/score", "/v1/suites", "/v1/score", "/v1/score"])
        self.assertEqual(self.sent()["suite_hash"], hashlib.sha256(b'{"task_id": "t"}\n').hexdigest())

    def test_batches_keep_the_order_and_shrink_to_the_servers_limit(self):
        records = self.client(batch_size=2).score([("t", "x" * i) for i in range(5)])
        self.assertEqual([len(self.sent(i)["completions"]) for i in range(3)], [2, 2, 1])
        self.assertEqual([(r["index"], r["reward"]["total"]) for r in records], [(i, i - 0.5) for i in range(5)])

        def limited(method, path, body, n):
            k = len(json.loads(body)["completions"])
            if k > 3:
                return 400, {}, {"error": "completions: must hold at most 3 items, got %d" % k, "field": "completions"}
            return 200, {}, fake_records(body)

        self.server.handler = limited
        client = self.client()
        self.assertEqual(len(client.score([("t", "x")] * 7)), 7)
        self.assertEqual(client.batch_size, 3)

    def test_component_functions_share_one_call_and_are_named_after_the_components(self):
        client = self.client()
        funcs = cc.make_component_rewards(client)
        self.assertEqual([f.__name__ for f in funcs], list(cc.COMPONENTS))
        kwargs = {"task_id": ["a", None, "b"], "language": ["python"] * 3, "prompt_format": ["completion"] * 3,
                  "completion_ids": [[1], [2], [3]], "trainer_state": object()}
        completions = ["abcde", "zz", "ab"]
        values = {f.__name__: f(prompts=["p"] * 3, completions=completions, **kwargs) for f in funcs}
        self.assertEqual(len(self.server.requests), 1)
        self.assertEqual(self.sent()["completions"], [{"task_id": "a", "completion": "abcde"}, {"task_id": "b", "completion": "ab"}])
        self.assertEqual(values["test_pass"], [5.0, None, 2.0])
        self.assertEqual(values["lint"], [None, None, None])  # not measured: TRL leaves it out
        self.assertEqual(values["complexity"], [None, None, None])  # not in the breakdown
        cc.configure(client)
        self.assertEqual(cc.trl_reward(["p"] * 3, completions, **kwargs), [4.5, None, 1.5])
        self.assertEqual(len(self.server.requests), 1)  # the same batch again: the cache
        cc.trl_reward(["p"] * 3, ["other", "zz", "ab"], **kwargs)
        self.assertEqual(len(self.server.requests), 2)
        with self.assertRaisesRegex(cc.CoderlError, "task_id column"):
            cc.trl_reward(["p"], ["x"])

    def test_verl_result_has_the_same_numeric_keys_for_every_sample(self):
        cc.configure(self.client())
        a = cc.verl_compute_score("coderl/x", "abcde", "t", {"language": "python", "prompt_format": "completion"})
        b = cc.verl_compute_score_batch(["s", "s"], ["ab", "abcdef"], ["t", "u"], [None, {}])
        self.assertEqual(a["score"], 4.5)
        for result in [a] + b:
            self.assertEqual(sorted(result), sorted(["score", "acc", "tests_passed", "tests_total"] + list(cc.COMPONENTS)))
            self.assertTrue(all(isinstance(v, float) for v in result.values()), result)
        self.assertEqual([r["acc"] for r in b], [0.0, 1.0])
        self.assertEqual(len(self.server.requests), 2)


def raw_score(suite, completions):
    """POST /v1/score with plain urllib: the reference the client's answers are checked against."""
    body = json.dumps({"suite": suite, "completions": [{"task_id": t, "completion": c} for t, c in completions]}).encode()
    req = urllib.request.Request(SERVE_URL + "/v1/score", data=body, method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer %s" % SERVE_TOKEN})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())["records"]


def metric(text, name, **labels):
    want = ",".join('%s="%s"' % kv for kv in labels.items())
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if m and m.group(1) == name and (m.group(2) or "") == want:
            return float(m.group(3))
    return 0.0


PY_COMPLETIONS = [
    (PY[0]["task_id"], PY[0]["canonical_solution"]),
    (PY[0]["task_id"], "    return False\n"),
    (PY[1]["task_id"], "    import os\n    os.system('echo pwned')\n    return []\n"),
    (PY[1]["task_id"], "    while True:\n        pass\n"),
]
JS_COMPLETIONS = [
    (JS[0]["task_id"], JS[0]["canonical_solution"]),
    (JS[0]["task_id"], "  return false;\n}\n"),
    (JS[1]["task_id"], "  while (true) {}\n}\n"),
    (JS[1]["task_id"], "  for (;;) console.log('x'.repeat(1000));\n}\n"),
    (JS[1]["task_id"], "  return require('fs').readFileSync('/etc/passwd', 'utf8');\n}\n"),
]


def trl_kwargs(tasks, completions, language, entries, prompt_format):
    by_id = {t["task_id"]: (t, e) for t, e in zip(tasks, entries)}
    return {
        "task_id": [tid for tid, _ in completions],
        "language": [language] * len(completions),
        "entry_point": [by_id[tid][1] for tid, _ in completions],
        "prompt_format": [prompt_format] * len(completions),
        "lab_split": ["rl"] * len(completions),
        "data_source": ["coderl/test"] * len(completions),
    }


@unittest.skipUnless(SERVE_URL, "CODERL_TEST_SERVE_URL is not set (src/serve/python-client.test.ts sets it)")
class RealServerTest(unittest.TestCase):
    def client(self, suite, **kw):
        return cc.CoderlClient(SERVE_URL, token=SERVE_TOKEN, suite=suite, **kw)

    def test_health_and_ready(self):
        c = self.client(None)
        self.assertEqual(c.health(), {"status": "ok"})
        self.assertTrue(c.ready())

    def test_no_suite_field_scores_against_the_servers_suite(self):
        # the server runs with --suite humaneval-python (src/serve/python-client.test.ts)
        client = self.client(None)
        self.assertIsNone(client.suite)
        records = client.score(PY_COMPLETIONS[:2])
        self.assertEqual([r["reward"]["total"] for r in records], [r["reward"]["total"] for r in raw_score("humaneval-python", PY_COMPLETIONS[:2])])

    def test_trl_reward_gives_v1_scores_rewards_honest_failing_and_hostile(self):
        for suite, tasks, completions, language, entries, verdicts in (
            ("humaneval-python", PY, PY_COMPLETIONS, "python", [t["entry_point"] for t in PY], ["passed", "failed", "tampering", "timeout"]),
            ("humaneval-x-js", JS, JS_COMPLETIONS, "javascript", JS_ENTRY, ["passed", "failed", "timeout", "output-limit", "error"]),
        ):
            ref = raw_score(suite, completions)
            self.assertEqual([r["verdict"] for r in ref], verdicts)
            cc.configure(self.client(suite))
            prompts = [next(t["prompt"] for t in tasks if t["task_id"] == tid) for tid, _ in completions]
            got = cc.trl_reward(prompts, [c for _, c in completions], **trl_kwargs(tasks, completions, language, entries, "completion"))
            self.assertEqual(got, [r["reward"]["total"] for r in ref])
            self.assertGreaterEqual(got[0], 1.5)

    def test_chat_completions_score_as_the_code_they_hold(self):
        py, js = PY[0], JS[0]
        own_header = ("```python\nfrom typing import List\n\n\ndef has_close_elements(numbers: List[float], threshold: float) -> bool:\n"
                      "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```")
        for suite, task, language, entry, answers in (
            ("humaneval-python", py, "python", py["entry_point"],
             ["Sure.\n```python\n" + py["prompt"] + py["canonical_solution"] + "```\n", own_header, "```python\n    return None\n```"]),
            ("humaneval-x-js", js, "javascript", JS_ENTRY[0],
             ["```javascript\n" + js["prompt"] + js["canonical_solution"] + "```",
              "```js\nfunction hasCloseElements(numbers, threshold) {\n" + js["canonical_solution"] + "```", "I cannot help."]),
        ):
            cc.configure(self.client(suite))
            n = len(answers)
            kwargs = trl_kwargs([task], [(task["task_id"], a) for a in answers], language, [entry], "chat")
            got = cc.trl_reward([chat_prompt(task, language)] * n, [reply(a) for a in answers], **kwargs)
            ref = raw_score(suite, [(task["task_id"], task["canonical_solution"])] * 2)
            records = cc._trl_records(None, [chat_prompt(task, language)] * n, [reply(a) for a in answers], kwargs)  # cached
            seen = [(r["verdict"], r.get("message")) for r in records]
            self.assertEqual(got[0], ref[0]["reward"]["total"], seen)  # the prompt repeated: the lab's own completion
            self.assertEqual(cc.default_client().score_cached([(task["task_id"], cc.to_completion(
                reply(answers[1]), chat_prompt(task, language), language, entry, "chat"))])[0]["verdict"], "passed")
            self.assertLess(got[2], 0.5)

    def test_component_functions_make_one_call_and_sum_to_the_total(self):
        client = self.client("humaneval-x-js")
        completions = [c for c in JS_COMPLETIONS if "while" not in c[1] and "for (;;)" not in c[1]]
        kwargs = trl_kwargs(JS, completions, "javascript", JS_ENTRY, "completion")
        before = metric(client.metrics(), "coderl_serve_requests_total", endpoint="/v1/score", code="200")
        funcs = cc.make_component_rewards(client)
        values = [f([None] * len(completions), [c for _, c in completions], **kwargs) for f in funcs]
        after = metric(client.metrics(), "coderl_serve_requests_total", endpoint="/v1/score", code="200")
        self.assertEqual(after - before, 1)
        ref = raw_score("humaneval-x-js", completions)
        self.assertEqual([f.__name__ for f in funcs], [c["name"] for c in ref[0]["reward"]["components"]])
        for i, r in enumerate(ref):
            self.assertAlmostEqual(sum(v[i] for v in values), r["reward"]["total"], places=12)
            self.assertEqual([v[i] for v in values], [c["contribution"] for c in r["reward"]["components"]])
        py = cc.make_component_rewards(self.client("humaneval-python"))
        lint = py[3]([None], [PY[0]["canonical_solution"]], task_id=[PY[0]["task_id"]])
        self.assertEqual((py[3].__name__, lint), ("lint", [None]))  # not measured for Python

    def test_verl_compute_score_dict(self):
        cc.configure(self.client("humaneval-python"))
        ref = raw_score("humaneval-python", PY_COMPLETIONS[:2])
        extra = {"split": "train", "index": 0, "task_id": PY[0]["task_id"], "language": "python",
                 "entry_point": PY[0]["entry_point"], "prompt_format": "completion", "lab_split": "rl",
                 "num_turns": None, "rollout_reward_scores": {}}
        results = [cc.verl_compute_score("coderl/humaneval", c, tid, dict(extra)) for tid, c in PY_COMPLETIONS[:2]]
        self.assertEqual([r["score"] for r in results], [r["reward"]["total"] for r in ref])
        self.assertEqual([r["acc"] for r in results], [1.0, 0.0])
        for r, rec in zip(results, ref):
            self.assertEqual(r["tests_total"], float(rec["tests_total"]))
            self.assertEqual(set(r), set(results[0]))
            self.assertTrue(all(isinstance(v, float) for v in r.values()))
        chat = dict(extra, prompt_format="chat")
        answer = "```python\n" + PY[0]["prompt"] + PY[0]["canonical_solution"] + "```"
        self.assertEqual(cc.verl_compute_score("coderl/humaneval", answer, PY[0]["task_id"], chat)["score"], ref[0]["reward"]["total"])
        batch = cc.verl_compute_score_batch(["coderl/humaneval"] * 2, [c for _, c in PY_COMPLETIONS[:2]],
                                            [t for t, _ in PY_COMPLETIONS[:2]], [dict(extra), dict(extra)])
        self.assertEqual(batch, results)

    def test_get_reward_openrlhf(self):
        client = self.client("humaneval-x-js")
        completions = JS_COMPLETIONS[:2]
        prompts = [JS[0]["prompt"]] * 2
        answer = client.get_reward([p + c + "<|endoftext|>" for p, (_, c) in zip(prompts, completions)], prompts,
                                   [t for t, _ in completions])
        ref = raw_score("humaneval-x-js", completions)
        self.assertEqual(answer["rewards"], [r["reward"]["total"] for r in ref])
        self.assertEqual(answer["scores"], [1, 0])

    def test_uploaded_suites_by_hash_and_by_file(self):
        task = {"task_id": "up/1", "language": "python", "prompt": "def inc(x):\n", "entry_point": "inc",
                "tests": "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(%d) == %d\n" % (os.getpid(), os.getpid() + 1)}
        client = self.client(None)
        digest = client.upload_suite([task])
        self.assertEqual(digest, hashlib.sha256(json.dumps([task]).encode()).hexdigest())
        self.assertEqual(self.client(digest).score([("up/1", "    return x + 1\n")])[0]["verdict"], "passed")
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(json.dumps(dict(task, task_id="up/file-%f" % time.time())) + "\n")
        try:
            with open(f.name) as g:
                tid = json.loads(g.read())["task_id"]
            records = self.client(f.name).score([(tid, "    return x + 1\n"), (tid, "    return x\n")])
        finally:
            os.unlink(f.name)
        self.assertEqual([r["verdict"] for r in records], ["passed", "failed"])

    def test_errors_name_the_field(self):
        with self.assertRaises(cc.CoderlHTTPError) as ctx:
            self.client("humaneval-python").score([(PY[0]["task_id"], ""), ("JavaScript/0", "")])
        self.assertEqual((ctx.exception.status, ctx.exception.field), (400, "completions[1].task_id"))
        self.assertIn("is not in suite humaneval-python", ctx.exception.error)

    @unittest.skipUnless(SERVE_TOKEN, "CODERL_TEST_SERVE_TOKEN is not set")
    def test_token_auth(self):
        for token in ("", "wrong"):
            with self.assertRaises(cc.CoderlHTTPError) as ctx:
                cc.CoderlClient(SERVE_URL, token=token, suite="humaneval-python").score([(PY[0]["task_id"], "")])
            self.assertEqual((ctx.exception.status, ctx.exception.field), (401, "authorization"))
        self.assertEqual(cc.CoderlClient(SERVE_URL, token="", retries=0).health(), {"status": "ok"})  # the probe needs none

    def test_a_full_queue_is_retried_after_its_retry_after(self):
        client = self.client("humaneval-x-js")
        text = client.metrics()
        limit = int(metric(text, "coderl_serve_queue_limit", pool="score"))
        workers = int(metric(text, "coderl_serve_workers", pool="score"))
        loop, honest = (JS[1]["task_id"], "  while (true) {}\n}\n"), JS_COMPLETIONS[0]
        first = [loop] * workers + [honest] * (limit - workers)  # the workers busy for a second, the queue full
        done = {}
        worker = threading.Thread(target=lambda: done.setdefault("records", self.client("humaneval-x-js").score(first)))
        worker.start()
        deadline = time.monotonic() + 20
        while metric(client.metrics(), "coderl_serve_queue_depth", pool="score") < limit - workers:
            self.assertLess(time.monotonic(), deadline, "the first request never filled the queue")
            time.sleep(0.02)
        retries = []
        busy = self.client("humaneval-x-js", retries=20, max_backoff=2, on_retry=lambda a, d, e: retries.append((d, e)))
        records = busy.score([honest] * (workers + 1))
        worker.join()
        self.assertTrue(retries and all(isinstance(e, cc.CoderlHTTPError) and e.status == 429 for _, e in retries), retries)
        self.assertTrue(all(1 <= d <= 2 for d, _ in retries), retries)
        self.assertEqual([r["verdict"] for r in records], ["passed"] * (workers + 1))
        self.assertEqual([r["verdict"] for r in done["records"]], ["timeout"] * workers + ["passed"] * (limit - workers))


if __name__ == "__main__":
    unittest.main()
