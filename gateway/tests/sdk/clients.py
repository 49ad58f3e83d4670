"""The gateway through the official OpenAI and Anthropic Python SDKs.

Run by gateway/tests/sdks.rs, which starts the gateway and sets GATEWAY_URL and GATEWAY_KEY.
Its models: `assistant` (a scripted answer with an e-mail address, redacted; secrets in
prompts blocked), `leaky` (an answer whose address a guard refuses mid-stream), `tools` (an
upstream that calls a tool) and `busy` (an upstream answering 429). Each check prints its
name; the first failure ends the run with its traceback.
"""

import os
import sys

import anthropic
import openai

URL = os.environ["GATEWAY_URL"]
KEY = os.environ["GATEWAY_KEY"]
SECRET = "my key is sk-abcdefghijklmnopqrstuvwxyz0123456789"
WEATHER_OPENAI = [{
    "type": "function",
    "function": {"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}]
WEATHER_ANTHROPIC = [{"name": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]

oa = openai.OpenAI(base_url=URL + "/v1", api_key=KEY, max_retries=0)
an = anthropic.Anthropic(base_url=URL, api_key=KEY, max_retries=0)
USER = [{"role": "user", "content": "Who can help?"}]


def check(name):
    def run(f):
        f()
        print("ok", name, flush=True)
        return f
    return run


def expect(error, f):
    try:
        f()
    except error as e:
        return e
    raise AssertionError(f"expected {error.__name__}")


@check("openai: an answer, redacted")
def _():
    r = oa.chat.completions.create(model="assistant", messages=USER)
    assert r.choices[0].message.content == "Write to [EMAIL].", r
    assert r.choices[0].finish_reason == "stop"


@check("openai: a stream, redacted as it streams")
def _():
    text, finish = "", None
    for chunk in oa.chat.completions.create(model="assistant", messages=USER, stream=True,
                                            stream_options={"include_usage": True}):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert text == "Write to [EMAIL].", text
    assert finish == "stop"


@check("openai: a refusal before the answer")
def _():
    for stream in (False, True):
        e = expect(openai.BadRequestError, lambda: list(oa.chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": SECRET}], stream=stream)) if stream
            else oa.chat.completions.create(model="assistant", messages=[{"role": "user", "content": SECRET}]))
        assert e.code == "content_filter", e
        assert "blocked by regex-filter" in e.message, e.message


@check("openai: a refusal during the stream")
def _():
    text, finish = "", None
    for chunk in oa.chat.completions.create(model="leaky", messages=USER, stream=True):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert text.startswith("The answer is long enough"), text
    assert "jane@example.com" not in text
    assert finish == "content_filter", finish


@check("openai: tool calls, streamed and not")
def _():
    r = oa.chat.completions.create(model="tools", messages=USER, tools=WEATHER_OPENAI)
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "weather" and call.function.arguments == '{"city":"Paris"}', call
    assert r.choices[0].finish_reason == "tool_calls"
    with oa.chat.completions.stream(model="tools", messages=USER, tools=WEATHER_OPENAI) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.name == "weather", final


@check("openai: the upstream's 429, with its wait")
def _():
    e = expect(openai.RateLimitError, lambda: oa.chat.completions.create(model="busy", messages=USER))
    # What the SDK waits for before a retry.
    assert e.response.headers["retry-after"] == "7", e.response.headers


@check("openai: a wrong key")
def _():
    bad = openai.OpenAI(base_url=URL + "/v1", api_key="pgw-wrong", max_retries=0)
    expect(openai.AuthenticationError, lambda: bad.chat.completions.create(model="assistant", messages=USER))


@check("openai: an oversized body")
def _():
    big = [{"role": "user", "content": "x" * 10_000}]
    e = expect(openai.APIStatusError, lambda: oa.chat.completions.create(model="assistant", messages=big))
    assert e.status_code == 413, e


@check("openai: the model list")
def _():
    ids = sorted(m.id for m in oa.models.list())
    assert ids == ["assistant", "busy", "leaky", "tools"], ids


@check("anthropic: an answer, redacted")
def _():
    r = an.messages.create(model="assistant", max_tokens=100, messages=USER)
    assert r.content[0].text == "Write to [EMAIL].", r
    assert r.stop_reason == "end_turn"


@check("anthropic: a stream, redacted as it streams")
def _():
    with an.messages.stream(model="assistant", max_tokens=100, messages=USER) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Write to [EMAIL].", text
    assert final.stop_reason == "end_turn"


@check("anthropic: a refusal before the answer")
def _():
    e = expect(anthropic.BadRequestError, lambda: an.messages.create(
        model="assistant", max_tokens=100, messages=[{"role": "user", "content": SECRET}]))
    assert "blocked by regex-filter" in e.message, e.message


@check("anthropic: a refusal during the stream")
def _():
    with an.messages.stream(model="leaky", max_tokens=100, messages=USER) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text.startswith("The answer is long enough"), text
    assert final.stop_reason == "refusal", final.stop_reason


@check("anthropic: a tool call")
def _():
    r = an.messages.create(model="tools", max_tokens=100, messages=USER, tools=WEATHER_ANTHROPIC)
    block = r.content[0]
    assert block.type == "tool_use" and block.name == "weather" and block.input == {"city": "Paris"}, r
    assert r.stop_reason == "tool_use"
    with an.messages.stream(model="tools", max_tokens=100, messages=USER, tools=WEATHER_ANTHROPIC) as stream:
        final = stream.get_final_message()
    assert final.content[0].input == {"city": "Paris"}, final


@check("anthropic: the upstream's 429 and a wrong key")
def _():
    e = expect(anthropic.RateLimitError, lambda: an.messages.create(model="busy", max_tokens=100, messages=USER))
    assert e.response.headers["retry-after-ms"] == "7000", e.response.headers
    bad = anthropic.Anthropic(base_url=URL, api_key="pgw-wrong", max_retries=0)
    expect(anthropic.AuthenticationError, lambda: bad.messages.create(model="assistant", max_tokens=100, messages=USER))


print("all checks passed", flush=True)
sys.exit(0)
