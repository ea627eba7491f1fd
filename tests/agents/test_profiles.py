import pytest

from agents.messages import Usage
from agents.profiles import ModelProfile, cost_usd, profile_for
from agents.providers import parse_spec
from infra.errors import ConfigError


@pytest.mark.parametrize("spec,family,edit,variant", [
    ("openai:gpt-5", "gpt-5", "apply_patch", "gpt"),
    ("openai:gpt-5.1", "gpt-5", "apply_patch", "gpt"),
    ("openai:gpt-5-mini", "gpt-5-mini", "apply_patch", "gpt"),
    ("openai:gpt-5-codex", "gpt-5-codex", "apply_patch", "gpt"),
    ("openai:gpt-4.1-2025-04-14", "gpt-4.1", "apply_patch", "gpt"),
    ("openai:gpt-4.1-mini", "gpt-4.1-mini", "apply_patch", "gpt"),
    ("openai:o3", "o3", "apply_patch", "gpt"),
    ("openai:o4-mini", "o4-mini", "apply_patch", "gpt"),
    ("openai:codex-mini-latest", "codex-mini", "apply_patch", "gpt"),
    ("anthropic:claude-sonnet-4-5", "claude-sonnet-4", "str_replace", "claude"),
    ("anthropic:claude-sonnet-4-20250514", "claude-sonnet-4", "str_replace", "claude"),
    ("anthropic:claude-opus-4-1", "claude-opus-4", "str_replace", "claude"),
    ("anthropic:claude-opus-4-5", "claude-opus-4.5", "str_replace", "claude"),
    ("anthropic:claude-haiku-4-5", "claude-haiku-4", "str_replace", "claude"),
    ("anthropic:claude-3-5-sonnet-latest", "claude-3-5-sonnet", "str_replace", "claude"),
    ("anthropic:claude-3-5-haiku-20241022", "claude-3-5-haiku", "str_replace", "claude"),
    ("openai-compatible:http://localhost:8000/v1#Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder", "str_replace",
     "open"),
    ("openai-compatible:http://localhost:8000/v1#qwen2.5-coder:32b", "qwen2.5-coder", "str_replace", "open"),
    ("openai-compatible:http://localhost:8000/v1#deepseek-ai/DeepSeek-V3", "deepseek", "str_replace", "open"),
    ("openai-compatible:http://localhost:11434/v1#llama3.3:70b", "llama", "str_replace", "open"),
    ("openai-compatible:http://localhost:8000/v1#meta-llama/Llama-3.1-8B-Instruct", "llama", "str_replace", "open"),
    ("scripted:examples/calc/solo.jsonl", "scripted", "str_replace", "test"),
])
def test_known_families(spec, family, edit, variant):
    p = profile_for(parse_spec(spec))
    assert (p.family, p.edit_tool, p.prompt_variant, p.known) == (family, edit, variant, True)
    assert p.context_window > p.max_output_tokens > 0
    assert p.price_source


def test_unknown_models_get_safe_defaults():
    p = profile_for(parse_spec("openai:some-future-model"))
    assert not p.known and p.family == "unknown-openai" and p.edit_tool == "apply_patch"
    assert p.input_usd_per_mtok > 0 and p.output_usd_per_mtok > 0  # never "free" by accident
    q = profile_for(parse_spec("openai-compatible:http://h:1/v1#my-finetune"))
    assert not q.known and q.edit_tool == "str_replace" and q.context_window == 32_768
    a = profile_for(parse_spec("anthropic:claude-next"))
    assert a.edit_tool == "str_replace" and a.output_usd_per_mtok > 0


def test_scripted_has_a_tiny_window_for_compaction_tests():
    p = profile_for(parse_spec("scripted:x.jsonl"))
    assert p.context_window <= 8192 and cost_usd(p, Usage(input_tokens=10**6, output_tokens=10**6)) == 0


def test_overrides():
    p = profile_for(parse_spec("openai:gpt-5"), {"edit_tool": "str_replace", "context_window": 50_000})
    assert p.edit_tool == "str_replace" and p.context_window == 50_000 and p.family == "gpt-5"
    with pytest.raises(ConfigError, match="edit_tool"):
        profile_for(parse_spec("openai:gpt-5"), {"edit_tool": "udiff"})
    with pytest.raises(ConfigError, match="window_size"):
        profile_for(parse_spec("openai:gpt-5"), {"window_size": 1})


def test_cost_openai_with_cache():
    p = profile_for(parse_spec("openai:gpt-5"))
    u = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=100_000)
    # 600k uncached x 1.25 + 400k cached x 0.125 + 100k x 10, per million
    assert cost_usd(p, u) == pytest.approx(0.75 + 0.05 + 1.0)


def test_cost_anthropic_cache_write_and_read():
    p = profile_for(parse_spec("anthropic:claude-sonnet-4-5"))
    u = Usage(input_tokens=300_000, cached_input_tokens=100_000, cache_creation_input_tokens=100_000,
              output_tokens=10_000)
    # 100k uncached x 3 + 100k read x 0.3 + 100k written x 3.75 + 10k x 15
    assert cost_usd(p, u) == pytest.approx(0.3 + 0.03 + 0.375 + 0.15)


def test_cost_never_negative_on_odd_usage():
    p = ModelProfile(family="x", input_usd_per_mtok=1, output_usd_per_mtok=1)
    assert cost_usd(p, Usage(input_tokens=5, cached_input_tokens=50)) >= 0
    assert p.prompt_budget_tokens == p.context_window - p.max_output_tokens
