from torchx.util.strings import normalize_str


def test_normalize_str_lowercases_and_drops_invalid_chars() -> None:
    assert normalize_str("Trainer_0") == "trainer0"
    assert normalize_str("my.app-Name!") == "myapp-name"


def test_normalize_str_strips_leading_dashes() -> None:
    assert normalize_str("--_abc-") == "abc-"
    assert normalize_str("") == ""
