import pytest

from agents.providers import parse_spec
from infra.errors import ConfigError


@pytest.mark.parametrize("spec,kind,model,url", [
    ("openai:gpt-5-codex", "openai", "gpt-5-codex", None),
    ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", None),
    ("openai-compatible:http://127.0.0.1:8000/v1#qwen3-coder", "openai-compatible", "qwen3-coder",
     "http://127.0.0.1:8000/v1"),
    ("scripted:examples/calc/solo.jsonl", "scripted", "examples/calc/solo.jsonl", None),
])
def test_valid_specs(spec, kind, model, url):
    s = parse_spec(spec)
    assert (s.kind, s.model, s.base_url) == (kind, model, url)
    assert str(s) == spec
    assert s.is_test_double == (kind == "scripted")


@pytest.mark.parametrize("spec,match", [
    ("gpt-4", "not of the form KIND:NAME"),
    ("", "not of the form"),
    ("mistral:large", "provider 'mistral' is not one of"),
    ("openai:", "names no model"),
    ("openai-compatible:localhost:8000#m", "expected openai-compatible:http"),
    ("openai-compatible:http://host/v1", "expected openai-compatible:http"),
])
def test_bad_specs(spec, match):
    with pytest.raises(ConfigError, match=match):
        parse_spec(spec)
