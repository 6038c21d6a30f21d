"""Shared constants of the provider tests (importable; conftest.py holds the fixtures)."""

from mindeval.llm.retry import RetryPolicy

SECRET = "sk-test-" + "Z" * 32
ANTHROPIC_SECRET = "sk-ant-test-" + "Y" * 32
# Short waits so the suite stays fast; the bounds under test are the same as in production.
FAST = RetryPolicy(max_retries=4, budget_s=30, base_delay_s=0.05, max_delay_s=0.2)
