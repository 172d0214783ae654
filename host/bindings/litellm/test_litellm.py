"""The real `litellm` (PyPI, pinned by host/bindings/test.sh) fetches proem's
prompt from a live `proem serve` through LiteLLM's Generic Prompt
Management API, and sends it to a model: a mocked OpenAI-compatible one on
loopback that records each request and answers a canned completion. The
system message LiteLLM sends must be `proem build --format openai`'s, byte
for byte.

PROEM_BIN names the `proem` executable, PROEM_REPO the repository.
"""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

NOW = "2026-11-21T09:30:00Z"


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run these tests with host/bindings/test.sh", pytrace=False)
    return value


class Model(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat completions endpoint that records bodies."""

    requests = []

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        Model.requests.append(json.loads(self.rfile.read(min(length, 1 << 24))))
        body = json.dumps({
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "mocked"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def model():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture(scope="module")
def proem(tmp_path_factory):
    repo = env("PROEM_REPO")
    token_file = tmp_path_factory.mktemp("token") / "token"
    token_file.write_text("s3cret-token-of-some-length\n")
    os.chmod(token_file, 0o600)
    server = subprocess.Popen(
        [env("PROEM_BIN"), "serve", f"{repo}/examples/marlow", f"{repo}/examples/atlas",
         "--listen", "127.0.0.1:0", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert line.startswith("listening on "), line
        yield line.removeprefix("listening on ").strip(), "s3cret-token-of-some-length"
    finally:
        server.terminate()
        server.wait(timeout=20)


def cli_openai(agent, *flags):
    out = subprocess.run(
        [env("PROEM_BIN"), "build", f"{env('PROEM_REPO')}/examples/{agent}", "--format", "openai", *flags],
        capture_output=True, check=True, timeout=120,
    )
    return json.loads(out.stdout)["messages"][0]["content"]


CASES = [
    ("marlow", {"now": NOW}, ["--now", NOW]),
    ("marlow", {"now": NOW, "channel": "telegram", "chat_kind": "group", "group_title": "Lab & co"},
     ["--now", NOW, "--channel", "telegram", "--chat-kind", "group", "--group-title", "Lab & co"]),
    ("atlas", {"now": NOW, "model": "gpt-5", "owners": "alice", "heartbeat": "true", "timezone": "Asia/Tokyo"},
     ["--now", NOW, "--model", "gpt-5", "--owner", "alice", "--heartbeat", "--timezone", "Asia/Tokyo"]),
]


@pytest.mark.parametrize("agent, params, flags", CASES)
def test_litellm_sends_the_system_message_proem_build_prints(proem, model, agent, params, flags):
    import litellm
    from litellm.integrations.generic_prompt_management import GenericPromptManager

    url, token = proem
    # What a proxy's `prompts:` entry makes of `prompt_integration:
    # generic_prompt_management` with these litellm_params.
    manager = GenericPromptManager(api_base=url, api_key=token, prompt_id=agent,
                                   additional_provider_specific_query_params=params)
    litellm.callbacks = [manager]
    Model.requests.clear()
    response = litellm.completion(
        model="openai/gpt-4o",
        api_base=model,
        api_key="not-a-real-key",
        prompt_id=agent,
        messages=[{"role": "user", "content": "hello"}],
    )
    assert response.choices[0].message.content == "mocked"
    assert len(Model.requests) == 1
    sent = Model.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"], sent
    assert sent[0]["content"] == cli_openai(agent, *flags)
    assert sent[1]["content"] == "hello"


def test_a_wrong_token_or_a_bad_parameter_fails_the_completion(proem, model):
    import litellm
    from litellm.integrations.generic_prompt_management import GenericPromptManager

    url, _ = proem
    for manager in (
        GenericPromptManager(api_base=url, api_key="wrong", prompt_id="marlow"),
        GenericPromptManager(api_base=url, api_key=proem[1], prompt_id="marlow",
                             additional_provider_specific_query_params={"chanel": "x"}),
        GenericPromptManager(api_base=url, api_key=proem[1], prompt_id="nobody"),
    ):
        litellm.callbacks = [manager]
        Model.requests.clear()
        with pytest.raises(Exception):
            litellm.completion(model="openai/gpt-4o", api_base=model, api_key="x", prompt_id=manager.prompt_id,
                               messages=[{"role": "user", "content": "hello"}])
        assert Model.requests == [], "a completion went to the model without proem's prompt"
