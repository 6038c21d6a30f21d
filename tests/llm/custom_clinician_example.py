"""A tiny custom clinician used by the tests (``custom_clinician_example:Echo``)."""


class Echo:
    def __init__(self):
        self.seen = []

    def respond(self, messages):
        self.seen.append(messages)
        assert messages[0]["role"] == "system"
        return {"content": f"I hear you: {messages[-1]['content'][:30]}", "usage": {"prompt_tokens": 3, "completion_tokens": 4}}


def plain(messages):
    return "A plain reply."
