from mindeval.llm.reasoning import split_reasoning


def test_think_block_removed():
    vis, rea = split_reasoning("<think>plan the reply</think>\nHi there.")
    assert vis == "Hi there." and rea == "plan the reply"


def test_provider_reasoning_first():
    vis, rea = split_reasoning("<think>b</think>x", "a")
    assert vis == "x" and rea == "a\n\nb"


def test_unterminated_think_leaves_no_visible_text():
    vis, rea = split_reasoning("<think>still thinking about")
    assert vis == "" and rea == "still thinking about"


def test_closing_tag_only():
    vis, rea = split_reasoning("reasoning here</think>Answer")
    assert vis == "Answer" and rea == "reasoning here"


def test_no_reasoning():
    assert split_reasoning("plain") == ("plain", None)
